// Every token id that reaches the model passes one check (token_range_error, request_prep.h):
// at prepare, and again at the scheduler's admission, which is what a PreparedRequest filled
// by hand meets (it is a public struct). Out-of-range ids used to reach the CPU embedding,
// which has no bounds check (issue #29).
#include <gtest/gtest.h>

#include "engine/request_prep.h"
#include "tessera/engine.h"
#include "tiny_model.h"

namespace tessera {
namespace {

TEST(TokenGuard, OneFunctionNamesTheFirstIdOutside) {
  const std::vector<int32_t> ok = {0, 5, 63}, high = {1, 64, 2}, negative = {-1};
  EXPECT_EQ(token_range_error(ok, 64), "");
  EXPECT_EQ(token_range_error(high, 64),
            "token id 64 at index 1 is outside the vocabulary [0, 64)");
  EXPECT_EQ(token_range_error(negative, 64),
            "token id -1 at index 0 is outside the vocabulary [0, 64)");
}

TEST(TokenGuard, AHandBuiltPreparedRequestFailsAtAdmission) {
  EngineOptions o;
  o.model_dir = testing::tiny_gemma_with_tokenizer();
  o.device = "cpu";
  o.context_length = 256;
  auto e = Engine::load(o);
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 2;
  PreparedRequest req = e->prepare(std::vector<int32_t>{2, 5}, g);
  const int vocab = e->info().vocab_size;
  req.prompt.push_back(vocab + 1000000);  // far: a wild read, not only a NaN
  const std::string why = "prompt: token id " + std::to_string(vocab + 1000000) +
                          " at index 2 is outside the vocabulary [0, " + std::to_string(vocab) +
                          ")";
  const GenerateResult r = e->generate(req);
  EXPECT_EQ(r.finish_reason, FinishReason::error);
  EXPECT_EQ(r.error, why);
  auto s = e->submit(req);
  RequestStream::Event ev;
  while (s->next(ev, 10000) && !ev.done) {
  }
  ASSERT_TRUE(ev.done);
  EXPECT_EQ(ev.result.error, why);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  // The engine goes on serving.
  req.prompt.pop_back();
  EXPECT_NE(e->generate(req).finish_reason, FinishReason::error);
}

}  // namespace
}  // namespace tessera
