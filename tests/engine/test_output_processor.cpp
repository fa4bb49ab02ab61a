// Output processing without a model: what sampled ids become for a generation (stop ids, stop
// strings across tokens, max_tokens, the callback's cancel, held-back text, streaming events,
// logprobs) and for classify (the pick, its logprobs, the logits row, the error).
#include <gtest/gtest.h>

#include <map>

#include "backend/backend.h"
#include "engine/classify_output.h"
#include "engine/output_processor.h"

namespace tessera {
namespace {

// Each id's text is fixed; no UTF-8 subtleties here (tests/tokenizer covers the detokenizer).
class FixedText final : public TextStream {
 public:
  explicit FixedText(std::map<int32_t, std::string> t) : t_(std::move(t)) {}
  std::string push(int32_t id) override { return t_[id]; }
  std::string flush() override { return ""; }

 private:
  std::map<int32_t, std::string> t_;
};

// A sampler output of `rows` rows where row r picked ids[r] with logprob -0.5 - r and its top
// alternatives are 100 + k with logprob -k (a -1 id ends the list early in row 1).
SampleOutput sample_output(const std::vector<int32_t>& ids, int top_n) {
  SampleOutput out;
  out.ids = ids;
  out.top_n = top_n;
  for (size_t r = 0; r < ids.size(); ++r) {
    out.logprobs.push_back(-0.5f - static_cast<float>(r));
    for (int k = 0; k < top_n; ++k) {
      out.top_ids.push_back(r == 1 && k == 1 ? -1 : 100 + k);
      out.top_logprobs.push_back(-static_cast<float>(k));
    }
  }
  return out;
}

struct Gen {
  RequestShared sh;
  std::unique_ptr<GenerateOutput> out;
  std::vector<std::pair<int32_t, std::string>> calls;
  bool cancel_at_third = false;

  explicit Gen(GenerateOptions g, std::vector<int32_t> stop_ids = {1}) {
    GenerateOutput::Options o = GenerateOutput::Options::from(g, std::move(stop_ids));
    o.text = std::make_unique<FixedText>(std::map<int32_t, std::string>{
        {10, "he"}, {11, "llo"}, {12, " wo"}, {13, "rld"}, {14, "!"}});
    o.on_token = [this](int32_t id, std::string_view piece) {
      calls.emplace_back(id, std::string(piece));
      return !(cancel_at_third && calls.size() == 3);
    };
    o.token_text = [](int32_t id) { return "t" + std::to_string(id); };
    out = std::make_unique<GenerateOutput>(std::move(o));
  }
  RequestOutput::Taken take(int32_t id) { return out->take(sh, id, sample_output({id}, 0), 0); }
  void end(const std::string& error = "") {
    std::string tail = out->release();
    std::lock_guard<std::mutex> lk(sh.mu);
    out->fill(sh, error, 4);
    publish_result(sh, std::move(tail));
  }
};

GenerateOptions options(int max_tokens, std::vector<std::string> stop = {}) {
  GenerateOptions g;
  g.max_tokens = max_tokens;
  g.stop = std::move(stop);
  return g;
}

TEST(OutputProcessor, StopIdEndsWithoutBeingOutput) {
  Gen g(options(8), {1, 106});
  auto a = g.take(10);
  EXPECT_TRUE(a.append);
  EXPECT_FALSE(a.finish);
  auto b = g.take(106);
  EXPECT_FALSE(b.append);
  EXPECT_EQ(b.finish, FinishReason::stop);
  g.end();
  EXPECT_EQ(g.sh.result.ids, std::vector<int32_t>{10});
  EXPECT_EQ(g.sh.result.stop_token, 106);
  EXPECT_EQ(g.sh.result.text, "he");
  EXPECT_TRUE(g.sh.done);
}

TEST(OutputProcessor, StopStringAcrossTokensIsCutAndNeverEmitted) {
  Gen g(options(8, {"lo w"}));
  EXPECT_FALSE(g.take(10).finish);  // "he"
  EXPECT_FALSE(g.take(11).finish);  // "llo": "lo" may start the stop string, held back
  auto t = g.take(12);              // " wo": "lo w" matched
  EXPECT_TRUE(t.append);
  EXPECT_EQ(t.finish, FinishReason::stop);
  g.end();
  std::string streamed;
  for (const auto& [id, piece] : g.calls) streamed += piece;
  EXPECT_EQ(streamed, "hel");
  EXPECT_EQ(g.sh.result.text, "hel");
  EXPECT_EQ(g.sh.result.stop_string, "lo w");
  EXPECT_EQ(g.calls.size(), 3u);  // no tail call after a match
}

TEST(OutputProcessor, HeldBackTextIsReleasedAtTheEnd) {
  Gen g(options(2, {"!!"}));
  g.take(13);
  auto t = g.take(14);  // "!" may start "!!": held back; max_tokens reached
  EXPECT_EQ(t.finish, FinishReason::length);
  ASSERT_EQ(g.calls.size(), 2u);
  EXPECT_EQ(g.calls[1].second, "");
  g.end();
  ASSERT_EQ(g.calls.size(), 3u);
  EXPECT_EQ(g.calls[2], (std::pair<int32_t, std::string>{-1, "!"}));
  EXPECT_EQ(g.sh.result.text, "rld!");
  EXPECT_TRUE(g.sh.result.stop_string.empty());
}

TEST(OutputProcessor, MaxTokensAndCancelEndTheRequest) {
  Gen g(options(2));
  EXPECT_FALSE(g.take(10).finish);
  EXPECT_EQ(g.take(11).finish, FinishReason::length);
  Gen c(options(8));
  c.cancel_at_third = true;
  c.take(10);
  c.take(11);
  auto t = c.take(12);
  EXPECT_TRUE(t.append);  // the id was output before the callback asked to stop
  EXPECT_EQ(t.finish, FinishReason::cancelled);
}

TEST(OutputProcessor, StreamEventsCarryPiecesLogprobsThenTheResult) {
  GenerateOptions o = options(3, {"!!"});
  o.sampling.logprobs = true;
  o.sampling.top_logprobs = 2;
  Gen g(o);
  g.sh.stream = true;
  g.out->take(g.sh, 10, sample_output({9, 10}, 3), 1);  // row 1: alternatives cut at the -1
  g.take(14);
  g.end();
  std::vector<RequestStream::Event> ev(g.sh.events.begin(), g.sh.events.end());
  ASSERT_EQ(ev.size(), 4u);  // two tokens, the held-back "!", the result
  EXPECT_EQ(ev[0].id, 10);
  EXPECT_EQ(ev[0].piece, "he");
  ASSERT_TRUE(ev[0].logprobs);
  EXPECT_EQ(ev[0].logprobs->chosen.id, 10);
  EXPECT_EQ(ev[0].logprobs->chosen.text, "t10");
  EXPECT_FLOAT_EQ(ev[0].logprobs->chosen.logprob, -1.5f);
  ASSERT_EQ(ev[0].logprobs->top.size(), 1u);
  EXPECT_EQ(ev[0].logprobs->top[0].id, 100);
  EXPECT_EQ(ev[1].piece, "");
  EXPECT_EQ(ev[2].id, -1);
  EXPECT_EQ(ev[2].piece, "!");
  EXPECT_TRUE(ev[3].done);
  EXPECT_EQ(ev[3].result.ids, (std::vector<int32_t>{10, 14}));
  EXPECT_EQ(ev[3].result.logprobs.size(), 2u);
}

TEST(OutputProcessor, GenerateRequestCarriesTheOptions) {
  GenerateOptions g = options(9);
  g.min_tokens = 3;
  g.sampling.temperature = 0.5f;
  RequestSpec spec = generate_request({2, 3}, g, {1, 7}, nullptr, {}, {}, nullptr);
  EXPECT_EQ(spec.prompt, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(spec.max_tokens, 9);
  EXPECT_EQ(spec.min_tokens, 3);
  EXPECT_EQ(spec.positions_after_prompt, 9);
  EXPECT_EQ(spec.stop_ids, (std::vector<int32_t>{1, 7}));
  EXPECT_FLOAT_EQ(spec.sampling.temperature, 0.5f);
  ASSERT_TRUE(spec.output);
}

TEST(ClassifyOutput, ThePickItsLogprobsAndTheLogitsRow) {
  auto be = make_cpu_backend();
  ClassifyOptions o;
  o.top_logprobs = 2;
  o.return_logits = true;
  RequestSpec spec = classify_request(
      {2, 3, 4}, o, [](int32_t id) { return "t" + std::to_string(id); }, nullptr);
  // Classify picks once, reports logprobs, and keeps nothing in the cache after its prompt.
  EXPECT_EQ(spec.max_tokens, 1);
  EXPECT_EQ(spec.positions_after_prompt, 0);
  EXPECT_TRUE(spec.sampling.logprobs);
  EXPECT_EQ(spec.sampling.top_logprobs, 2);
  EXPECT_FLOAT_EQ(spec.sampling.temperature, 0.0f);

  RequestShared sh;
  std::vector<float> logits = {0.f, 1.f, 2.f, 3.f, 4.f, 5.f};  // two rows of three
  Tensor t;
  t.data = logits.data();
  t.rows = 2;
  t.cols = 3;
  t.stride = 3;
  spec.output->on_logits(*be, t, 1);
  auto taken = spec.output->take(sh, 42, sample_output({7, 42}, 3), 1);
  EXPECT_FALSE(taken.append);
  EXPECT_EQ(taken.finish, FinishReason::stop);
  EXPECT_EQ(spec.output->release(), "");
  spec.output->fill(sh, "", 3);
  EXPECT_EQ(sh.classify.token, 42);
  EXPECT_EQ(sh.classify.text, "t42");
  EXPECT_FLOAT_EQ(sh.classify.logprob, -1.5f);
  ASSERT_EQ(sh.classify.top_logprobs.size(), 1u);  // row 1's list ends at its -1
  EXPECT_EQ(sh.classify.logits, (std::vector<float>{3.f, 4.f, 5.f}));
  EXPECT_EQ(sh.classify.prompt_tokens, 3);
  EXPECT_TRUE(sh.classify.error.empty());

  RequestShared failed;
  RequestSpec other = classify_request({2}, ClassifyOptions{}, {}, nullptr);
  other.output->fill(failed, "step failed: x", 1);
  EXPECT_EQ(failed.classify.error, "step failed: x");
  EXPECT_TRUE(failed.classify.logits.empty());
}

}  // namespace
}  // namespace tessera
