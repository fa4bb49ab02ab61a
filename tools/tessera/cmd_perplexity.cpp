// tessera perplexity --model DIR --text FILE [--context N] [--stride N] [--json]
//
// Token-level perplexity of a long text in sliding windows, as Hugging Face's strided recipe
// (ref: transformers docs, "Perplexity of fixed-length models"): windows of `context` tokens
// start every `stride` tokens; the first window scores every token but its first, each later one
// only the tokens that no earlier window scored (its last `stride`, or fewer at the end), with
// the rest of the window as context. Every token after the first is scored exactly once.
// log-softmax is taken in double on the host from the engine's f32 logits.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "cli_engine.h"
#include "engine/dev_api.h"

namespace tessera::cli {
namespace {

struct Window {
  int64_t begin = 0, end = 0;  // token range [begin, end) fed to the model
  int64_t scored = 0;          // targets at the window's last `scored` positions
  double nll = 0;              // their summed negative log-likelihood (nats)
};

// -log softmax(row)[target], in double.
double token_nll(const std::vector<float>& row, int32_t target) {
  double mx = -INFINITY;
  for (float v : row) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - mx);
  return -(static_cast<double>(row[static_cast<size_t>(target)]) - mx - std::log(sum));
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::io, "--text: cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void progress(size_t done, size_t total, double nll, int64_t scored) {
  const int width = 30;
  const int fill = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\rperplexity [%.*s%*s] %zu/%zu windows, %.4f so far", fill,
               "##############################", width - fill, "", done, total,
               scored ? std::exp(nll / static_cast<double>(scored)) : 0.0);
  std::fflush(stderr);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "token-level perplexity of a text file");
  struct Args {
    std::string model, text, device = "auto", dtype = "auto";
    int quantize = 0;
    int context = 0, stride = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model", a->model, "Hugging Face model directory (with tokenizer.json)")
      ->required();
  cmd->add_option("--text", a->text, "a UTF-8 text file, scored as one token sequence with BOS")
      ->required();
  cmd->add_option("--context", a->context,
                  "tokens per window (default: the model's positions, at most 1,024)");
  cmd->add_option("--stride", a->stride, "tokens between window starts (default: context / 2)");
  cmd->add_flag("--json", a->json,
                "print {\"perplexity\", \"nll\", \"scored\", \"windows\": [...], ...}");
  cmd->add_option("--device", a->device, "auto | cpu | cuda");
  cmd->add_option("--dtype", a->dtype, "weight dtype in memory: auto | f32 | bf16");
  add_quantize_option(cmd, a->quantize);
  cmd->callback([a] {
    run_command([&] {
      const std::string text = read_text(a->text);
      dev::LogitsSession m(a->model, a->device, a->dtype, a->quantize);
      const ModelInfo& info = m.info();
      auto tok = Tokenizer::load(a->model);
      const std::vector<int32_t> ids = tok->encode(text, true);
      if (ids.size() < 2)
        fail_arg("--text: '" + a->text + "' has fewer than two tokens; nothing to score");

      int context = a->context;
      if (context == 0) context = std::min(info.max_position_embeddings, 1024);
      if (context < 2) fail_arg("--context must be at least 2");
      if (info.max_position_embeddings > 0 && context > info.max_position_embeddings)
        fail_arg("--context " + std::to_string(context) + " exceeds the model's " +
                 std::to_string(info.max_position_embeddings) + " positions");
      const int stride = a->stride ? a->stride : std::max(context / 2, 1);
      if (stride < 1 || stride > context)
        fail_arg("--stride must be in [1, --context] (got " + std::to_string(stride) + ")");

      std::vector<Window> windows;
      const auto n = static_cast<int64_t>(ids.size());
      for (int64_t begin = 0, prev_end = 0;; begin += stride) {
        Window w;
        w.begin = begin;
        w.end = std::min<int64_t>(begin + context, n);
        w.scored = std::min(w.end - prev_end, w.end - begin - 1);
        windows.push_back(w);
        prev_end = w.end;
        if (w.end == n) break;
      }

      // Logits rows per forward: the whole window for a small vocabulary, fewer for a large one
      // (Gemma's 262,144 entries are 1 MiB a row), so host memory stays near 64 MiB.
      const int64_t rows_per_chunk = std::clamp<int64_t>(
          (int64_t{64} << 20) / (int64_t{4} * std::max(info.vocab_size, 1)), 1, context);
      const bool tty = isatty(2);
      const auto t0 = std::chrono::steady_clock::now();
      double total = 0;
      int64_t scored = 0;
      for (size_t wi = 0; wi < windows.size(); ++wi) {
        Window& w = windows[wi];
        m.reset(context);
        // Positions [begin, first) predict nothing scored: fed for their KV only. Position
        // p >= first - 1 predicts token p + 1.
        const int64_t first = w.end - w.scored;  // index of the first scored token
        std::vector<std::vector<int32_t>> chunk(1);
        for (int64_t p = w.begin; p < first - 1; p += rows_per_chunk) {
          const int64_t e = std::min(p + rows_per_chunk, first - 1);
          chunk[0].assign(ids.begin() + p, ids.begin() + e);
          m.step(chunk[0], false);
        }
        for (int64_t p = first - 1; p < w.end - 1; p += rows_per_chunk) {
          const int64_t e = std::min(p + rows_per_chunk, w.end - 1);
          chunk[0].assign(ids.begin() + p, ids.begin() + e);
          auto rows = m.step(chunk[0], true);
          for (int64_t q = p; q < e; ++q)
            w.nll += token_nll(rows[static_cast<size_t>(q - p)], ids[static_cast<size_t>(q + 1)]);
        }
        total += w.nll;
        scored += w.scored;
        if (tty) progress(wi + 1, windows.size(), total, scored);
      }
      if (tty) std::fprintf(stderr, "\n");
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double ppl = std::exp(total / static_cast<double>(scored));
      if (a->json) {
        nlohmann::json wj = nlohmann::json::array();
        for (const auto& w : windows)
          wj.push_back({{"begin", w.begin}, {"end", w.end}, {"scored", w.scored}, {"nll", w.nll}});
        nlohmann::json j = {{"perplexity", ppl},  {"nll", total},
                            {"scored", scored},   {"tokens", n},
                            {"context", context}, {"stride", stride},
                            {"seconds", secs},    {"device", m.device_name()},
                            {"windows", wj}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf(
            "perplexity %.4f\ntokens scored %lld of %lld\nwindows %zu (context %d, "
            "stride %d)\n",
            ppl, static_cast<long long>(scored), static_cast<long long>(n), windows.size(), context,
            stride);
        std::fprintf(stderr, "%.2f s, %.0f tokens/s\n", secs, static_cast<double>(scored) / secs);
      }
      return 0;
    });
  });
}

}  // namespace tessera::cli
