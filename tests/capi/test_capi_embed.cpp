// tessera_embed: equal to the C++ API's Engine::embed, options carried over (pooling,
// normalisation, dimensions), a prompt's failure its own, options out of range failing the call.
#include <cmath>

#include "capi_fixture.h"
#include "tessera/engine.h"

namespace tessera {
namespace {

using testing::CEngine;
using testing::ids_prompt;
using testing::text_prompt;

TEST(CApiEmbed, EqualsTheCppApi) {
  CEngine ce;
  const int32_t size = tessera_embedding_size(ce.get());
  EXPECT_GT(size, 0);
  EXPECT_EQ(tessera_embedding_size(nullptr), 0);
  const std::vector<int32_t> ids = {2, 651, 1045, 18};
  const tessera_prompt prompts[] = {text_prompt("And it came to pass"), ids_prompt(ids)};
  tessera_embed_options eo;
  tessera_embed_options_init(&eo);
  EXPECT_EQ(eo.normalize, 1);
  eo.pooling = TESSERA_POOLING_MEAN;
  eo.dimensions = 16;
  tessera_embed_results out;
  char* err = nullptr;
  ASSERT_EQ(tessera_embed(ce.get(), prompts, 2, &eo, &out, &err), TESSERA_OK) << err;
  ASSERT_EQ(out.n, 2u);
  EXPECT_EQ(out.metrics.requests, 2);

  EngineOptions o;
  o.model_dir = testing::tiny_en_dir();
  o.device = "cpu";
  o.context_length = 256;
  auto e = Engine::load(o);
  EXPECT_EQ(e->embedding_size(), size);
  EmbedOptions opts;
  opts.pooling = Pooling::mean;
  opts.dimensions = 16;
  const auto want = e->embed({std::string("And it came to pass"), ids}, opts);
  for (size_t i = 0; i < 2; ++i) {
    const tessera_embed_result& r = out.results[i];
    ASSERT_EQ(r.status, TESSERA_OK) << r.error;
    EXPECT_EQ(r.error, nullptr);
    EXPECT_EQ(r.prompt_tokens, want[i].prompt_tokens);
    ASSERT_EQ(r.n_embedding, 16u);
    for (size_t k = 0; k < 16; ++k) EXPECT_FLOAT_EQ(r.embedding[k], want[i].embedding[k]);
  }
  tessera_embed_results_free(&out);
  EXPECT_EQ(out.results, nullptr);
}

TEST(CApiEmbed, PromptErrorsArePerPromptAndOptionErrorsFailTheCall) {
  CEngine ce;
  const std::vector<int32_t> bad = {2, 99999999};
  const tessera_prompt prompts[] = {ids_prompt(bad), text_prompt("Hello")};
  tessera_embed_results out;
  char* err = nullptr;
  ASSERT_EQ(tessera_embed(ce.get(), prompts, 2, nullptr, &out, &err), TESSERA_OK);
  EXPECT_EQ(out.results[0].status, TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(out.results[0].embedding, nullptr);
  EXPECT_NE(std::string(out.results[0].error).find("99999999"), std::string::npos);
  ASSERT_EQ(out.results[1].status, TESSERA_OK);
  double ss = 0;
  for (size_t k = 0; k < out.results[1].n_embedding; ++k)
    ss += out.results[1].embedding[k] * out.results[1].embedding[k];
  EXPECT_NEAR(std::sqrt(ss), 1.0, 1e-5);  // normalised by default
  tessera_embed_results_free(&out);

  tessera_embed_options eo;
  tessera_embed_options_init(&eo);
  eo.dimensions = tessera_embedding_size(ce.get()) + 1;
  EXPECT_EQ(tessera_embed(ce.get(), prompts, 2, &eo, &out, &err), TESSERA_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("dimensions"), std::string::npos);
  tessera_string_free(err);
  EXPECT_EQ(out.results, nullptr);
  tessera_embed_options_init(&eo);
  eo.pooling = static_cast<tessera_pooling>(9);
  EXPECT_EQ(tessera_embed(ce.get(), prompts, 2, &eo, &out, &err), TESSERA_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("pooling"), std::string::npos);
  tessera_string_free(err);
  tessera_embed_options_init(&eo);
  EXPECT_EQ(eo.prompt_name, nullptr);
  eo.prompt_name = "query";  // tiny-en is no sentence-transformers directory: no prompts
  EXPECT_EQ(tessera_embed(ce.get(), prompts, 2, &eo, &out, &err), TESSERA_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("prompt 'query'"), std::string::npos) << err;
  tessera_string_free(err);
  EXPECT_EQ(tessera_embed(nullptr, prompts, 2, nullptr, &out, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
}

}  // namespace
}  // namespace tessera
