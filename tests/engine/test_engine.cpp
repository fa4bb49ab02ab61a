// The public Engine and compat APIs on a tiny Gemma 3 with the real tokenizer: text in and out,
// chat through the template, the EOS set, streaming, memory limits, bad options.
#include <gtest/gtest.h>

#include "core/memory.h"
#include "tessera/compat.h"
#include "tessera/engine.h"
#include "tiny_model.h"

namespace tessera {
namespace {

std::unique_ptr<Engine> tiny_engine(size_t memory_limit = 0) {
  EngineOptions o;
  o.model_dir = testing::tiny_gemma_with_tokenizer();
  o.device = "cpu";
  o.context_length = 512;
  o.memory_limit = memory_limit;
  return Engine::load(o);
}

GenerateOptions greedy(int n) {
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = n;
  return g;
}

TEST(Engine, EosSetCoversGenerationConfigAndEndOfTurn) {
  auto e = tiny_engine();
  auto eos = e->eos_token_ids();
  auto has = [&](int32_t id) { return std::find(eos.begin(), eos.end(), id) != eos.end(); };
  EXPECT_TRUE(has(1));                                             // generation_config.json / <eos>
  EXPECT_TRUE(has(*e->tokenize("<end_of_turn>", false).begin()));  // Gemma chat end of turn
  EXPECT_TRUE(has(106));
}

TEST(Engine, TextRoundTripAndStreamingPiecesConcatenate) {
  auto e = tiny_engine();
  std::string streamed;
  int calls = 0;
  auto r =
      e->generate(std::string("Tell me a story"), greedy(20), [&](int32_t, std::string_view p) {
        streamed += p;
        ++calls;
        return true;
      });
  ASSERT_NE(r.finish_reason, FinishReason::error) << r.error;
  EXPECT_EQ(streamed, r.text);
  EXPECT_GE(calls, static_cast<int>(r.ids.size()));
  EXPECT_EQ(r.text, e->detokenize(r.ids));
  EXPECT_EQ(r.metrics.prompt_tokens, static_cast<int>(e->tokenize("Tell me a story", true).size()));
  EXPECT_EQ(e->tokenize("Tell me a story", true)[0], 2);  // BOS added as Hugging Face does
  EXPECT_GT(r.metrics.peak_memory_bytes, 0u);
  EXPECT_GE(r.metrics.peak_memory_bytes, r.metrics.active_memory_bytes);
}

TEST(Engine, SubmitStreamsTheSameTokensAsGenerate) {
  auto e = tiny_engine();
  auto want = e->generate(std::string("Hello"), greedy(12));
  auto s = e->submit(std::string("Hello"), greedy(12));
  std::vector<int32_t> ids;
  std::string text;
  RequestStream::Event ev;
  while (s->next(ev, 10000)) {
    if (ev.done) {
      EXPECT_EQ(ev.result.ids, want.ids);
      break;
    }
    if (ev.id >= 0) ids.push_back(ev.id);
    text += ev.piece;
  }
  EXPECT_EQ(ids, want.ids);
  EXPECT_EQ(text, want.text);
}

TEST(Engine, BatchPromptsShareTheFirstStep) {
  // batch_generate hands its prompts to the scheduler together: one step prefills all four and
  // samples each one's only token, whatever the scheduler thread was doing when they arrived;
  // and no second forward runs, since each sampled token is its sequence's last by length (the
  // pipelined scheduler does not schedule a sequence whose in-flight token ends it).
  auto e = tiny_engine();
  GenerateOptions g = greedy(1);
  g.ignore_eos = true;
  std::vector<Prompt> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(std::vector<int32_t>{2, 10 + i, 20 + i, 30 + i});
  const auto res = e->batch_generate(prompts, g);
  ASSERT_EQ(res.size(), 4u);
  for (const auto& r : res) EXPECT_EQ(r.ids.size(), 1u) << r.error;
  const EngineStats st = e->stats();
  EXPECT_EQ(st.steps, 1);
  EXPECT_EQ(st.prompt_tokens, 16);
  EXPECT_EQ(st.generated_tokens, 4);
}

TEST(Engine, ChatUsesTheTemplate) {
  auto e = tiny_engine();
  std::vector<ChatMessage> m = {{"user", "Hi"}};
  const std::string prompt = e->apply_chat_template(m, true);
  EXPECT_EQ(prompt, "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  auto r = e->chat(m, greedy(8));
  ASSERT_NE(r.finish_reason, FinishReason::error) << r.error;
  // The chat prompt is tokenized without adding a second BOS.
  EXPECT_EQ(r.metrics.prompt_tokens, static_cast<int>(e->tokenize(prompt, false).size()));
  auto bad = e->chat({{"user", "a"}, {"user", "b"}}, greedy(4));
  EXPECT_EQ(bad.finish_reason, FinishReason::error);
  EXPECT_FALSE(bad.error.empty());
}

TEST(Engine, InvalidOptionsFailTheRequestOnly) {
  auto e = tiny_engine();
  GenerateOptions g = greedy(8);
  g.sampling.top_p = 0;
  auto r = e->generate(std::string("x"), g);
  EXPECT_EQ(r.finish_reason, FinishReason::error);
  EXPECT_NE(r.error.find("top_p"), std::string::npos);
  g = greedy(8);
  g.min_tokens = 9;
  EXPECT_THROW(e->validate(g), Error);
  EXPECT_EQ(e->generate(std::string("x"), greedy(4)).finish_reason, FinishReason::length);
}

TEST(Engine, MemoryLimitFailsCleanlyAtLoad) {
  try {
    tiny_engine(10 << 20);  // 10 MiB: the weights alone take ~67 MiB
    FAIL() << "loaded under a 10 MiB limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("memory limit exceeded"), std::string::npos) << e.what();
  }
  memory_tracker(Device::cpu).set_limit(0);
  // A limit that holds the weights but leaves a small KV pool still loads and runs.
  auto e = tiny_engine(120 << 20);
  EXPECT_EQ(e->generate(std::string("x"), greedy(4)).finish_reason, FinishReason::length);
  EXPECT_LE(e->stats().memory_peak, size_t{120} << 20);
  memory_tracker(Device::cpu).set_limit(0);
}

TEST(Compat, BackendInterface) {
  EngineOptions o;
  o.model_dir = testing::tiny_gemma_with_tokenizer();
  o.device = "cpu";
  o.context_length = 256;
  auto b = compat::make_backend(o);
  EXPECT_TRUE(b->available());
  EXPECT_NE(b->name().find("Gemma3ForCausalLM"), std::string::npos);
  compat::Options opt;
  opt.temperature = 0;
  opt.max_tokens = 6;
  const std::string a = b->generate("Hello", opt);
  EXPECT_EQ(a, b->generate("Hello", opt));
  EXPECT_NO_THROW(b->chat({{"user", "Hi"}}, opt));
  opt.top_p = 2;
  EXPECT_THROW(b->generate("Hello", opt), Error);
  o.model_dir = "/does/not/exist";
  auto missing = compat::make_backend(o);
  EXPECT_FALSE(missing->available());
  EXPECT_THROW(missing->generate("x", {}), Error);
}

}  // namespace
}  // namespace tessera
