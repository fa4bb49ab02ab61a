// The C ABI: results equal the C++ API's, and every bad input comes back as a status and a
// message, never an exception or a crash.
#include <gtest/gtest.h>

#include <cstring>

#include "../engine/tiny_model.h"
#include "tessera/engine.h"
#include "tessera/tessera.h"

extern "C" int capi_smoke_generate(const char* model_dir, char* text_out, size_t cap);

namespace tessera {
namespace {

TEST(CApi, GenerateFromCEqualsCpp) {
  const std::string& dir = testing::tiny_gemma_with_tokenizer();
  char text[512];
  int calls = capi_smoke_generate(dir.c_str(), text, sizeof text);
  ASSERT_GT(calls, 0);
  EngineOptions o;
  o.model_dir = dir;
  o.device = "cpu";
  o.context_length = 128;
  auto e = Engine::load(o);
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 5;
  EXPECT_EQ(std::string(text), e->generate(std::string("Hello"), g).text);
}

TEST(CApi, ErrorsAreStatuses) {
  tessera_engine_options eo;
  tessera_engine_options_init(&eo);
  tessera_engine* e = nullptr;
  char* err = nullptr;
  EXPECT_EQ(tessera_engine_load(&eo, &e, &err), TESSERA_INVALID_ARGUMENT);  // no model_dir
  ASSERT_NE(err, nullptr);
  tessera_string_free(err);
  eo.model_dir = "/no/such/dir";
  EXPECT_EQ(tessera_engine_load(&eo, &e, &err), TESSERA_IO);
  EXPECT_NE(std::string(err).find("/no/such/dir"), std::string::npos);
  tessera_string_free(err);
  EXPECT_EQ(e, nullptr);

  const std::string& dir = testing::tiny_gemma_with_tokenizer();
  eo.model_dir = dir.c_str();
  eo.device = "cpu";
  eo.context_length = 64;
  ASSERT_EQ(tessera_engine_load(&eo, &e, &err), TESSERA_OK);
  tessera_generate_options go;
  tessera_generate_options_init(&go);
  go.top_p = 3;  // out of range: a request error, reported in the result
  tessera_result r;
  EXPECT_EQ(tessera_generate(e, "Hi", &go, nullptr, nullptr, &r), TESSERA_OK);
  EXPECT_STREQ(r.finish_reason, "error");
  EXPECT_NE(std::string(r.error).find("top_p"), std::string::npos);
  tessera_result_free(&r);
  const int32_t bad[] = {2, 99999999};
  tessera_generate_options_init(&go);
  EXPECT_EQ(tessera_generate_tokens(e, bad, 2, &go, nullptr, nullptr, &r), TESSERA_OK);
  EXPECT_STREQ(r.finish_reason, "error");
  tessera_result_free(&r);
  EXPECT_EQ(tessera_generate(e, nullptr, &go, nullptr, nullptr, &r), TESSERA_INVALID_ARGUMENT);
  tessera_result_free(&r);  // the message is allocated (LeakSanitizer found it left)
  int32_t* ids = nullptr;
  size_t n = 0;
  EXPECT_EQ(tessera_tokenize(e, "Hello world", 1, &ids, &n, &err), TESSERA_OK);
  char* text = nullptr;
  EXPECT_EQ(tessera_detokenize(e, ids + 1, n - 1, &text, &err), TESSERA_OK);
  EXPECT_STREQ(text, "Hello world");
  tessera_string_free(text);
  tessera_ids_free(ids);
  const char* roles[] = {"user", "user"};
  const char* contents[] = {"a", "b"};
  EXPECT_EQ(tessera_chat(e, roles, contents, 2, &go, nullptr, nullptr, &r), TESSERA_OK);
  EXPECT_STREQ(r.finish_reason, "error");  // the Gemma template rejects non-alternating roles
  tessera_result_free(&r);
  tessera_engine_free(e);
}

}  // namespace
}  // namespace tessera
