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
  // The CPU computes in f32 whatever the weights are held in (the tiny model's are bf16).
  EXPECT_EQ(r.metrics.compute, "f32");
  EXPECT_EQ(e->info().compute_dtype, DType::f32);
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

// The error prepare() throws, or nothing.
template <class F>
std::optional<RequestError> prepare_error(F&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return e;
  }
  return std::nullopt;
}

TEST(Engine, PrepareTokenizesOnceAndRunsAsGenerate) {
  auto e = tiny_engine();
  GenerateOptions g = greedy(6);
  g.stop_token_ids = {7};
  const PreparedRequest req = e->prepare(std::string("Tell me a story"), g);
  EXPECT_EQ(req.prompt, e->tokenize("Tell me a story", true));
  std::vector<int32_t> stops = e->eos_token_ids();
  stops.push_back(7);
  EXPECT_EQ(req.stop_ids, stops);
  EXPECT_EQ(req.options.max_tokens, 6);
  // The prepared request runs as the prompt it came from.
  const GenerateResult a = e->generate(req);
  const GenerateResult b = e->generate(std::string("Tell me a story"), g);
  ASSERT_NE(a.finish_reason, FinishReason::error) << a.error;
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.text, b.text);
  g.ignore_eos = true;
  EXPECT_EQ(e->prepare(std::vector<int32_t>{2, 5}, g).stop_ids, std::vector<int32_t>{7});
  // A stream of a prepared request gives the same ids.
  auto s = e->submit(req);
  RequestStream::Event ev;
  std::vector<int32_t> streamed;
  while (s->next(ev, 10000) && !ev.done)
    if (ev.id >= 0) streamed.push_back(ev.id);
  EXPECT_EQ(streamed, a.ids);
}

TEST(Engine, PrepareRendersChatAndFillsTheContext) {
  auto e = tiny_engine();
  const std::vector<ChatMessage> m = {{"user", "Hi"}};
  GenerateOptions g = greedy(8);
  g.max_tokens_to_context = true;
  const PreparedRequest req = e->prepare(m, g);
  EXPECT_EQ(req.prompt, e->tokenize(e->apply_chat_template(m, true), false));
  EXPECT_FALSE(req.options.add_special_tokens);
  EXPECT_FALSE(req.options.max_tokens_to_context);
  EXPECT_EQ(req.options.max_tokens, e->context_length() - static_cast<int>(req.prompt.size()));
  auto bad = prepare_error([&] { e->prepare({{"user", "a"}, {"user", "b"}}, greedy(4)); });
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field(), "messages");
  EXPECT_NE(std::string(bad->what()).find("the chat template rejected the messages"),
            std::string::npos)
      << bad->what();
}

TEST(Engine, PrepareErrorsNameTheField) {
  auto e = tiny_engine();  // context 512
  GenerateOptions g = greedy(8);
  g.sampling.top_p = 0;
  EXPECT_EQ(prepare_error([&] { e->prepare(std::string("x"), g); })->field(), "top_p");
  auto vocab = prepare_error([&] { e->prepare(std::vector<int32_t>{2, 10'000'000}, greedy(4)); });
  ASSERT_TRUE(vocab);
  EXPECT_EQ(vocab->field(), "prompt");
  auto long_prompt = prepare_error([&] { e->prepare(std::vector<int32_t>(600, 5), greedy(4)); });
  ASSERT_TRUE(long_prompt);
  EXPECT_EQ(long_prompt->field(), "prompt");
  EXPECT_EQ(long_prompt->code(), "context_length_exceeded");
  auto many = prepare_error([&] { e->prepare(std::vector<int32_t>{2, 5}, greedy(512)); });
  ASSERT_TRUE(many);
  EXPECT_EQ(many->field(), "max_tokens");
  EXPECT_EQ(many->code(), "context_length_exceeded");
  // generate() reports the same errors as its result.
  const GenerateResult r = e->generate(std::vector<int32_t>(600, 5), greedy(4));
  EXPECT_EQ(r.finish_reason, FinishReason::error);
  EXPECT_EQ(r.error, long_prompt->what());
  auto s = e->submit(std::vector<int32_t>(600, 5), greedy(4));
  RequestStream::Event ev;
  ASSERT_TRUE(s->next(ev, 1000));
  EXPECT_TRUE(ev.done);
  EXPECT_EQ(ev.result.finish_reason, FinishReason::error);
}

TEST(Engine, PreparedClassifyRunsAsClassify) {
  auto e = tiny_engine();
  ClassifyOptions o;
  o.top_logprobs = 2;
  const std::vector<Prompt> prompts = {std::string("Hello"), std::vector<int32_t>{2, 10, 20}};
  std::vector<PreparedClassify> reqs;
  for (const auto& p : prompts) reqs.push_back(e->prepare(p, o));
  const auto a = e->classify(reqs);
  const auto b = e->classify(prompts, o);
  ASSERT_EQ(a.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].error.empty()) << a[i].error;
    EXPECT_EQ(a[i].token, b[i].token);
    EXPECT_EQ(a[i].top_logprobs.size(), 2u);
    EXPECT_EQ(a[i].prompt_tokens, static_cast<int>(reqs[i].prompt.size()));
  }
  auto too_long = prepare_error([&] { e->prepare(std::vector<int32_t>(513, 5), o); });
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->code(), "context_length_exceeded");
  // A prompt's own error is its result's; the others run.
  const auto mixed = e->classify({std::vector<int32_t>{2, 10'000'000}, std::string("Hello")}, o);
  EXPECT_NE(mixed[0].error.find("outside the vocabulary"), std::string::npos);
  EXPECT_EQ(mixed[1].token, b[0].token);
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
  // A limit that holds the weights but leaves a small KV pool still loads and runs. The peak is
  // the process's: earlier tests' engines (test_embed.cpp's) must not count.
  memory_tracker(Device::cpu).reset_peak();
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
