// The JSON nesting limit every parser shares (core/json_limits.h): the scan counts only the
// brackets outside strings, and a document at the limit still parses.
#include <gtest/gtest.h>

#include <string>

#include "core/json_limits.h"

namespace tessera {
namespace {

std::string nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inner +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonLimits, DepthAtTheLimitParsesOnePastIsRefused) {
  EXPECT_EQ(json_depth_overflow(nested(kMaxJsonDepth)), std::string::npos);
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth), "ok.json"));
  // The (limit + 1)th bracket opens at offset kMaxJsonDepth.
  EXPECT_EQ(json_depth_overflow(nested(kMaxJsonDepth + 1)), static_cast<size_t>(kMaxJsonDepth));
  try {
    parse_json(nested(100000), "deep.json", ErrorKind::invalid_model);
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_EQ(std::string(e.what()), "deep.json: JSON nested deeper than 128 levels (at byte 128)");
  }
}

TEST(JsonLimits, BracketsInStringsDoNotCount) {
  const std::string brackets(1000, '[');
  EXPECT_EQ(json_depth_overflow("{\"k\": \"" + brackets + "\"}"), std::string::npos);
  // An escaped quote does not end the string; an escaped backslash before the quote does.
  EXPECT_EQ(json_depth_overflow("[\"\\\"" + brackets + "\"]"), std::string::npos);
  EXPECT_NE(json_depth_overflow("[\"\\\\\"" + brackets + "\"]"), std::string::npos);
  // Objects count as arrays do, and closing brackets bring the depth back down.
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "{\"a\":[1]},";
  EXPECT_EQ(json_depth_overflow("[" + wide + "1]"), std::string::npos);
  EXPECT_NE(json_depth_overflow(std::string(200, '{')), std::string::npos);
}

TEST(JsonLimits, InvalidJsonNamesTheSource) {
  try {
    parse_json("{\"a\": }", "request.json");
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_EQ(std::string(e.what()).rfind("request.json: not valid JSON: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace tessera
