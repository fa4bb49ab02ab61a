// Structured output through the public Engine on the random-weight tiny Gemma 3 with the real
// 262k-entry tokenizer: the model is random, so only the grammar makes its outputs valid.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>

#include "schema_fuzz.h"
#include "tessera/engine.h"
#include "tiny_model.h"

namespace tessera {
namespace {

using testing::json;

Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineOptions o;
    o.model_dir = testing::tiny_gemma_with_tokenizer();
    o.device = "cpu";
    o.context_length = 1024;
    return Engine::load(o);
  }();
  return *e;
}

GenerateOptions constrained(OutputConstraint::Kind k, const std::string& text, uint64_t seed) {
  GenerateOptions g;
  g.sampling.temperature = 1.0f;
  g.sampling.seed = seed;
  g.max_tokens = 600;
  g.constraint.kind = k;
  g.constraint.text = text;
  return g;
}

TEST(StructuredOutput, RandomSchemasAtTemperatureOneAllValidate) {
  std::mt19937 rng(2026);
  const int kSchemas = 200, kBatch = 25;
  int done = 0;
  double compile_ms_max = 0;
  for (int b = 0; b < kSchemas / kBatch; ++b) {
    std::vector<json> schemas;
    std::vector<PreparedRequest> reqs;
    for (int i = 0; i < kBatch; ++i) {
      schemas.push_back(testing::random_schema(rng));
      const auto t0 = std::chrono::steady_clock::now();
      reqs.push_back(engine().prepare(
          Prompt{std::string("Reply in JSON:")},
          constrained(OutputConstraint::Kind::json_schema, schemas.back().dump(), 100 + done + i)));
      compile_ms_max = std::max(
          compile_ms_max,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    auto streams = engine().submit(reqs);
    for (int i = 0; i < kBatch; ++i) {
      RequestStream::Event ev;
      do ASSERT_TRUE(streams[i]->next(ev, 600000));
      while (!ev.done);
      const GenerateResult& r = ev.result;
      SCOPED_TRACE("schema " + schemas[i].dump() + "\noutput " + r.text);
      ASSERT_EQ(r.finish_reason, FinishReason::stop) << r.error;
      json v;
      ASSERT_NO_THROW(v = json::parse(r.text));
      EXPECT_EQ(testing::violation(v, schemas[i]), "");
      ++done;
    }
  }
  EXPECT_EQ(done, kSchemas);
  RecordProperty("compile_ms_max", std::to_string(compile_ms_max));
}

TEST(StructuredOutput, RegexChoiceAndGbnfOnGenerateAndChat) {
  auto r =
      engine().generate(Prompt{std::string("Phone:")},
                        constrained(OutputConstraint::Kind::regex, R"(\(\d{3}\) \d{3}-\d{4})", 1));
  ASSERT_EQ(r.finish_reason, FinishReason::stop) << r.error;
  EXPECT_TRUE(std::regex_match(r.text, std::regex(R"(\(\d{3}\) \d{3}-\d{4})"))) << r.text;

  GenerateOptions c = constrained(OutputConstraint::Kind::choice, "", 2);
  c.constraint.choices = {"positive", "negative", "neutral"};
  auto chat = engine().chat({{"user", "Sentiment of: I love it"}}, c);
  ASSERT_EQ(chat.finish_reason, FinishReason::stop) << chat.error;
  EXPECT_TRUE(chat.text == "positive" || chat.text == "negative" || chat.text == "neutral")
      << chat.text;

  auto g =
      engine().generate(Prompt{std::string("List:")},
                        constrained(OutputConstraint::Kind::grammar,
                                    "root ::= item (\", \" item){0,2}\nitem ::= [a-z]{1,5}", 3));
  ASSERT_EQ(g.finish_reason, FinishReason::stop) << g.error;
  EXPECT_TRUE(std::regex_match(g.text, std::regex("[a-z]{1,5}(, [a-z]{1,5}){0,2}"))) << g.text;

  auto o = engine().generate(Prompt{std::string("JSON:")},
                             constrained(OutputConstraint::Kind::json_object, "", 4));
  // Any object: unbounded, so it may run to max_tokens; what came out is a prefix of one.
  ASSERT_NE(o.finish_reason, FinishReason::error) << o.error;
  EXPECT_EQ(o.text.substr(0, 1), "{");
  if (o.finish_reason == FinishReason::stop) EXPECT_NO_THROW((void)json::parse(o.text)) << o.text;
}

TEST(StructuredOutput, GreedyConstrainedAndFreeRowsShareABatch) {
  // A free greedy request gives the same ids beside constrained ones as alone: masks are per
  // sequence.
  GenerateOptions free;
  free.sampling.temperature = 0;
  free.max_tokens = 16;
  free.ignore_eos = true;
  const auto alone = engine().generate(Prompt{std::string("Once upon a time")}, free);
  std::vector<PreparedRequest> reqs;
  for (int i = 0; i < 3; ++i) {
    GenerateOptions g = constrained(OutputConstraint::Kind::regex, "[0-9]{8}", 10 + i);
    g.sampling.temperature = i == 0 ? 0.0f : 1.0f;
    reqs.push_back(engine().prepare(Prompt{std::string("Digits:")}, g));
    reqs.push_back(engine().prepare(Prompt{std::string("Once upon a time")}, free));
  }
  auto streams = engine().submit(reqs);
  for (size_t i = 0; i < streams.size(); ++i) {
    RequestStream::Event ev;
    do ASSERT_TRUE(streams[i]->next(ev, 600000));
    while (!ev.done);
    if (i % 2 == 0) {
      EXPECT_TRUE(std::regex_match(ev.result.text, std::regex("[0-9]{8}"))) << ev.result.text;
      EXPECT_EQ(ev.result.finish_reason, FinishReason::stop);
    } else {
      EXPECT_EQ(ev.result.ids, alone.ids);
    }
  }
}

TEST(StructuredOutput, PreemptedSequencesKeepTheirGrammarState) {
  // A KV pool too small for every sequence at once: the scheduler preempts and recomputes, and
  // each sequence's grammar state (kept with its output) still leads to a valid output.
  EngineOptions o;
  o.model_dir = testing::tiny_gemma_with_tokenizer();
  o.device = "cpu";
  o.context_length = 256;
  o.kv_memory = 256 << 10;  // bytes: a few sequences of this length at once
  o.max_seqs = 16;
  o.prefix_cache = false;
  auto e = Engine::load(o);
  const json schema = {{"type", "array"},
                       {"items", {{"type", "string"}, {"minLength", 3}, {"maxLength", 6}}},
                       {"minItems", 8},
                       {"maxItems", 10}};
  std::vector<PreparedRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerateOptions g = constrained(OutputConstraint::Kind::json_schema, schema.dump(), 50 + i);
    g.max_tokens = 200;
    reqs.push_back(e->prepare(Prompt{std::string("List:")}, g));
  }
  auto streams = e->submit(reqs);
  for (auto& st : streams) {
    RequestStream::Event ev;
    do ASSERT_TRUE(st->next(ev, 600000));
    while (!ev.done);
    ASSERT_EQ(ev.result.finish_reason, FinishReason::stop) << ev.result.error;
    json v;
    ASSERT_NO_THROW(v = json::parse(ev.result.text)) << ev.result.text;
    EXPECT_EQ(testing::violation(v, schema), "") << ev.result.text;
  }
  EXPECT_GT(e->stats().preemptions, 0);
}

TEST(StructuredOutput, BadConstraintsAreRequestErrorsNamingTheField) {
  GenerateOptions g = constrained(OutputConstraint::Kind::json_schema, R"({"type":"strin"})", 1);
  try {
    engine().prepare(Prompt{std::string("x")}, g);
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "response_format");
    EXPECT_NE(std::string(e.what()).find("unknown type 'strin'"), std::string::npos);
  }
  g = constrained(OutputConstraint::Kind::regex, "(ab", 1);
  g.constraint.field = "guided_regex";
  try {
    engine().prepare(Prompt{std::string("x")}, g);
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "guided_regex");
  }
  g.constraint.text = "(a?){0,10000}";  // too ambiguous: refused when prepared, quickly
  try {
    engine().prepare(Prompt{std::string("x")}, g);
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "guided_regex");
    EXPECT_NE(std::string(e.what()).find("too ambiguous"), std::string::npos) << e.what();
  }
  g.constraint.text = "(ab";
  const auto r = engine().generate(Prompt{std::string("x")}, g);  // generate: an error result
  EXPECT_EQ(r.finish_reason, FinishReason::error);
  EXPECT_NE(r.error.find("regex"), std::string::npos);
}

}  // namespace
}  // namespace tessera
