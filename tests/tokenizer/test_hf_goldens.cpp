// Exactness against Hugging Face tokenizers: ids (with and without special tokens) and both
// decodes for every corpus line, for Gemma 3, Llama 3 and Qwen 3, against the goldens made by
// scripts/fixtures/tokenizer_goldens.py; and the incremental detokenizer against decode.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "tokenizer/tokenizer_fixtures.h"

namespace tessera::test {
namespace {

std::string show(const std::vector<int32_t>& v) {
  return nlohmann::json(v).dump();
}
std::string quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class HfGoldens : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGoldens, IdsAndDecodesMatchEveryCorpusLine) {
  const std::string name = GetParam();
  const Tokenizer& tok = real_tokenizer(name);
  const auto& texts = corpus();
  std::vector<Golden> gold = goldens(name);
  ASSERT_FALSE(gold.empty());
  ASSERT_EQ(gold.size(), texts.size()) << "goldens_" << name << ".jsonl does not match the corpus";
  int failures = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const Golden& g = gold[i];
    std::vector<int32_t> ids = tok.encode(texts[i], true);
    std::vector<int32_t> plain = tok.encode(texts[i], false);
    std::string dec = tok.decode(g.ids, false), dec_skip = tok.decode(g.ids, true);
    bool ok =
        ids == g.ids && plain == g.ids_plain && dec == g.decoded && dec_skip == g.decoded_skip;
    if (ok) continue;
    if (++failures > 8) continue;  // report the first few in full
    ADD_FAILURE() << name << " corpus line " << i + 1 << " " << quote(texts[i])
                  << (ids == g.ids ? ""
                                   : "\n  ids      " + show(ids) + "\n  expected " + show(g.ids))
                  << (plain == g.ids_plain
                          ? ""
                          : "\n  plain    " + show(plain) + "\n  expected " + show(g.ids_plain))
                  << (dec == g.decoded
                          ? ""
                          : "\n  decode   " + quote(dec) + "\n  expected " + quote(g.decoded))
                  << (dec_skip == g.decoded_skip ? ""
                                                 : "\n  skip     " + quote(dec_skip) +
                                                       "\n  expected " + quote(g.decoded_skip));
  }
  EXPECT_EQ(failures, 0) << failures << " of " << texts.size() << " corpus lines differ";
}

TEST_P(HfGoldens, IncrementalDetokenizerConcatenationEqualsDecode) {
  const std::string name = GetParam();
  const Tokenizer& tok = real_tokenizer(name);
  int failures = 0;
  for (const std::string& text : corpus()) {
    std::vector<int32_t> ids = tok.encode(text, true);
    for (bool skip : {false, true}) {
      IncrementalDetokenizer d(tok, skip);
      std::string streamed;
      for (int32_t id : ids) streamed += d.push(id);
      streamed += d.flush();
      std::string whole = tok.decode(ids, skip);
      if (streamed != whole && ++failures <= 5) {
        ADD_FAILURE() << name << " skip=" << skip << " " << quote(text) << "\n  streamed "
                      << quote(streamed) << "\n  decode   " << quote(whole);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(HfGoldens, ConcurrentEncodesGiveTheSameIds) {
  // The word cache and per-thread scratch buffers are shared by every caller of one Tokenizer.
  const std::string name = GetParam();
  const Tokenizer& tok = real_tokenizer(name);
  std::vector<Golden> gold = goldens(name);
  ASSERT_EQ(gold.size(), corpus().size());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = t; i < corpus().size(); i += (t % 2) + 1) {
          if (tok.encode(corpus()[i], true) != gold[i].ids) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfGoldens, ::testing::Values("gemma3", "llama3", "qwen3"));

}  // namespace
}  // namespace tessera::test
