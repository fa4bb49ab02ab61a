// Structured output through the C ABI: tessera_generate_options' constraint_kind / constraint.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "../engine/tiny_model.h"
#include "tessera/tessera.h"

namespace tessera {
namespace {

TEST(CApiConstraint, RegexJsonSchemaAndErrors) {
  const std::string& dir = testing::tiny_gemma_with_tokenizer();
  tessera_engine_options eo;
  tessera_engine_options_init(&eo);
  eo.model_dir = dir.c_str();
  eo.device = "cpu";
  eo.context_length = 256;
  tessera_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(tessera_engine_load(&eo, &e, &err), TESSERA_OK) << (err ? err : "");
  tessera_generate_options go;
  tessera_generate_options_init(&go);
  go.temperature = 1.0f;
  go.seed = 3;
  go.max_tokens = 60;
  go.constraint_kind = "regex";
  go.constraint = "[0-9]{3}-[a-z]{2}";
  tessera_result r;
  ASSERT_EQ(tessera_generate(e, "Code:", &go, nullptr, nullptr, &r), TESSERA_OK);
  EXPECT_STREQ(r.finish_reason, "stop");
  EXPECT_TRUE(std::regex_match(std::string(r.text), std::regex("[0-9]{3}-[a-z]{2}"))) << r.text;
  tessera_result_free(&r);

  go.constraint_kind = "json_schema";
  go.constraint = R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})";
  ASSERT_EQ(tessera_generate(e, "JSON:", &go, nullptr, nullptr, &r), TESSERA_OK);
  EXPECT_STREQ(r.finish_reason, "stop");
  const std::string t = r.text;
  EXPECT_TRUE(t == "{\"ok\":true}" || t == "{\"ok\":false}" ||
              t.find("\"ok\":") != std::string::npos)
      << t;
  tessera_result_free(&r);

  go.constraint = R"({"type":"object","properties":{"ok":{"type":"bool"}}})";
  tessera_generate(e, "JSON:", &go, nullptr, nullptr, &r);
  EXPECT_STREQ(r.finish_reason, "error");
  EXPECT_EQ(r.status, TESSERA_INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.error).find("unknown type 'bool'"), std::string::npos) << r.error;
  tessera_result_free(&r);

  go.constraint_kind = "xml";
  tessera_generate(e, "JSON:", &go, nullptr, nullptr, &r);
  EXPECT_STREQ(r.finish_reason, "error");
  EXPECT_NE(std::string(r.error ? r.error : "").find("constraint_kind"), std::string::npos);
  tessera_result_free(&r);
  tessera_engine_free(e);
}

}  // namespace
}  // namespace tessera
