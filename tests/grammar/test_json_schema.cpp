#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace tessera::testing {
namespace {

TEST(JsonSchema, ObjectWithRequiredAndOptionalInOrder) {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"},
    "b":{"type":"string"},"c":{"type":"boolean"}},"required":["a","c"],
    "additionalProperties":false})");
  EXPECT_TRUE(matches(g, R"({"a":1,"c":true})"));
  EXPECT_TRUE(matches(g, R"({"a":-20,"b":"x","c":false})"));
  EXPECT_TRUE(matches(g, "{ \"a\": 1,\n\"c\": true }"));
  EXPECT_FALSE(matches(g, R"({"a":1})"));                 // c is required
  EXPECT_FALSE(matches(g, R"({"c":true,"a":1})"));        // the order of properties
  EXPECT_FALSE(matches(g, R"({"a":1,"c":true,"d":1})"));  // no additional properties
  EXPECT_FALSE(matches(g, R"({"a":01,"c":true})"));       // no leading zero
  EXPECT_FALSE(matches(g, "{  \"a\":1,\"c\":true}"));     // at most one blank
}

TEST(JsonSchema, AllOptionalPropertiesNeedNoComma) {
  auto g = schema(R"({"type":"object","properties":{"x":{"type":"null"},"y":{"type":"null"}}})");
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_TRUE(matches(g, R"({"y":null})"));
  EXPECT_TRUE(matches(g, R"({"x":null,"y":null})"));
  EXPECT_FALSE(matches(g, R"({,"y":null})"));
  EXPECT_FALSE(matches(g, R"({"x":null,})"));
}

TEST(JsonSchema, StringsEscapesUnicodeAndLengths) {
  auto g = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(matches(g, R"("ab")"));
  EXPECT_TRUE(matches(g, "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\""));  // 3 code points
  EXPECT_TRUE(matches(g, R"("\n\u00e9")"));                             // escapes count as one
  EXPECT_FALSE(matches(g, R"("a")"));
  EXPECT_FALSE(matches(g, R"("abcd")"));
  EXPECT_FALSE(matches(g, "\"a\nb\""));  // a raw control character
  EXPECT_FALSE(matches(g, R"("\q1")"));  // no such escape
  EXPECT_FALSE(matches(g, R"("\u12g4")"));
  EXPECT_TRUE(matches(g, R"("\ud83d\ude00a")"));  // a surrogate pair is one character
  EXPECT_FALSE(matches(g, R"("\ud83d\ude00")"));
  EXPECT_FALSE(matches(g, R"("\ud83d")"));  // a lone surrogate is refused
  EXPECT_FALSE(matches(g, R"("\ude00x")"));
}

TEST(JsonSchema, NumbersEdgeCases) {
  auto n = schema(R"({"type":"number"})");
  for (const char* ok : {"0", "-0", "1.5", "-12.25e-3", "3E+10", "1e5", "0.0001"})
    EXPECT_TRUE(matches(n, ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "+1", "1e", "--1", "1.2.3", "NaN", "1e123"})
    EXPECT_FALSE(matches(n, bad)) << bad;
  auto i = schema(R"({"type":"integer"})");
  EXPECT_TRUE(matches(i, "-42"));
  EXPECT_FALSE(matches(i, "4.2"));
  EXPECT_TRUE(matches(i, "1234567890123456"));
  EXPECT_FALSE(matches(i, "12345678901234567"));  // bounded: 16 digits
}

// Every integer in a window around the bounds, against the bounds, for bounds of every sign.
TEST(JsonSchema, IntegerMinimumAndMaximumAreExact) {
  const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> cases = {
      {R"("minimum":0,"maximum":250)", {0, 250}},
      {R"("minimum":-37,"maximum":1204)", {-37, 1204}},
      {R"("minimum":-1000,"maximum":-99)", {-1000, -99}},
      {R"("exclusiveMinimum":9,"exclusiveMaximum":101)", {10, 100}},
      {R"("minimum":7.5,"maximum":19.5)", {8, 19}},
      {R"("minimum":120)", {120, 1000000}},
      {R"("maximum":-5)", {-1000000, -5}},
  };
  for (const auto& [kw, range] : cases) {
    auto g = schema(R"({"type":"integer",)" + kw + "}");
    for (int64_t v = -1300; v <= 1300; ++v) {
      const bool in = v >= range.first && v <= range.second;
      ASSERT_EQ(matches(g, std::to_string(v)), in) << kw << " value " << v;
    }
    EXPECT_FALSE(matches(g, "-0")) << kw;
    EXPECT_FALSE(matches(g, "0" + std::to_string(range.second))) << kw;  // no leading zero
  }
  auto big = schema(R"({"type":"integer","minimum":0,"maximum":9007199254740991})");  // zod's int
  EXPECT_TRUE(matches(big, "9007199254740991"));
  EXPECT_FALSE(matches(big, "9007199254740992"));
  EXPECT_FALSE(matches(big, "-1"));
}

TEST(JsonSchema, EnumConstAnyOfTypeArrays) {
  auto g = schema(R"({"type":"object","properties":{
    "e":{"enum":["a b",2,null,{"k":[1]}]},"c":{"const":"fixed"},
    "u":{"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]},
    "t":{"type":["boolean","null"]}},"required":["e","c","u","t"]})");
  EXPECT_TRUE(matches(g, R"({"e":"a b","c":"fixed","u":7,"t":null})"));
  EXPECT_TRUE(matches(g, R"({"e":{"k":[1]},"c":"fixed","u":"z","t":true})"));
  EXPECT_FALSE(matches(g, R"({"e":"a","c":"fixed","u":7,"t":null})"));
  EXPECT_FALSE(matches(g, R"({"e":2,"c":"other","u":7,"t":null})"));
  EXPECT_FALSE(matches(g, R"({"e":2,"c":"fixed","u":"zz","t":null})"));
}

TEST(JsonSchema, ArraysWithCounts) {
  auto g = schema(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})");
  EXPECT_TRUE(matches(g, "[1]"));
  EXPECT_TRUE(matches(g, "[1, 2,\n3]"));
  EXPECT_FALSE(matches(g, "[]"));
  EXPECT_FALSE(matches(g, "[1,2,3,4]"));
  EXPECT_FALSE(matches(g, "[1,]"));
  auto any = schema(R"({"type":"array"})");
  EXPECT_TRUE(matches(any, R"([1,"a",[],{"x":null}])"));
  auto tuple = schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]})");
  EXPECT_TRUE(matches(tuple, R"(["a",1.5])"));
  EXPECT_FALSE(matches(tuple, R"(["a"])"));
}

TEST(JsonSchema, RefsAndRecursion) {
  auto g = schema(R"({"$defs":{"node":{"type":"object","properties":{
    "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
    "required":["v","kids"],"additionalProperties":false}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(matches(g, R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[]}]})"));
  EXPECT_FALSE(matches(g, R"({"v":1,"kids":[{"v":2}]})"));
}

TEST(JsonSchema, PatternsAndFormats) {
  auto p = schema(R"({"type":"string","pattern":"^[a-z]+-\\d{2}$"})");
  EXPECT_TRUE(matches(p, R"("ab-12")"));
  EXPECT_FALSE(matches(p, R"("ab-1")"));
  auto q = schema(R"({"type":"string","pattern":".*"})");  // '.' may not produce a raw quote
  EXPECT_TRUE(matches(q, R"("a b")"));
  EXPECT_FALSE(matches(q, R"("a"b")"));
  auto d = schema(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(matches(d, R"("2024-02-29T13:05:00Z")"));
  EXPECT_FALSE(matches(d, R"("2024-13-01T00:00:00Z")"));
  auto u = schema(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(matches(u, R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST(JsonSchema, JsonObjectIsAnyObject) {
  OutputConstraint c;
  c.kind = OutputConstraint::Kind::json_object;
  auto g = grammar::compile(c);
  EXPECT_TRUE(matches(g, R"({"a":[1,{"b":"\u00e9"}],"c":null})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(matches(g, "[1]"));
  EXPECT_FALSE(matches(g, R"({"a":1,})"));
}

TEST(JsonSchema, UnsupportedOrBadSchemasNameTheLocation) {
  auto err = [](const std::string& s) {
    try {
      schema(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(err(R"({"type":"object","properties":{"age":{"type":"integer","multipleOf":2}}})"),
            "schema at /properties/age: unsupported keyword 'multipleOf'");
  EXPECT_NE(err(R"({"type":"number","minimum":0})").find("integers only"), std::string::npos);
  EXPECT_NE(err(R"({"type":"integer","minimum":5,"maximum":4})").find("no integer"),
            std::string::npos);
  EXPECT_NE(err("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"type":"strin"})").find("unknown type 'strin'"), std::string::npos);
  EXPECT_NE(err(R"({"$ref":"#/$defs/missing"})").find("does not resolve"), std::string::npos);
  EXPECT_NE(err(R"({"type":"object","properties":{},"required":["x"]})").find("'required'"),
            std::string::npos);
  EXPECT_NE(err(R"({"type":"string","maxLength":-1})").find("maxLength"), std::string::npos);
}

}  // namespace
}  // namespace tessera::testing
