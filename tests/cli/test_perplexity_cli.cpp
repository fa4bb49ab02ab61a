// `tessera perplexity` and the shipped model (models/tessera-tiny-en) against transformers:
// the strided perplexity of the committed held-out excerpt and each window's NLL (within 0.1%),
// greedy continuations (ids), and tessera's tokenizer on the trained tokenizer.json. The
// expected values come from scripts/train/train.py on the GPU machine: the bf16 checkpoint
// loaded in f32, on the CPU, eager attention (tests/fixtures/tessera-tiny-en/expected.json).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using testing::run_tessera;
using testing::shell_quote;

const std::string kSrc = TESSERA_SOURCE_DIR;
const std::string kModel = kSrc + "/models/tessera-tiny-en";
const std::string kFixtures = kSrc + "/tests/fixtures/tessera-tiny-en";

nlohmann::json expected() {
  std::ifstream f(kFixtures + "/expected.json");
  EXPECT_TRUE(f.good()) << kFixtures << "/expected.json";
  return nlohmann::json::parse(f);
}

std::string excerpt_args(const nlohmann::json& ex) {
  return "perplexity --model " + kModel + " --text " + kFixtures + "/heldout_excerpt.txt" +
         " --context " + std::to_string(ex["context"].get<int>()) + " --stride " +
         std::to_string(ex["stride"].get<int>());
}

TEST(PerplexityCli, HeldOutExcerptMatchesTransformers) {
  const auto ex = expected()["excerpt"];
  auto r = run_tessera(excerpt_args(ex) + " --device cpu --dtype f32 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"], ex["tokens"]);
  EXPECT_EQ(j["scored"], ex["scored"]);
  const double want = ex["perplexity"].get<double>();
  EXPECT_NEAR(j["perplexity"].get<double>(), want, 1e-3 * want);
  const auto& got_w = j["windows"];
  const auto& want_w = ex["windows"];
  ASSERT_EQ(got_w.size(), want_w.size());
  for (size_t i = 0; i < want_w.size(); ++i) {
    EXPECT_EQ(got_w[i]["begin"], want_w[i]["begin"]) << "window " << i;
    EXPECT_EQ(got_w[i]["end"], want_w[i]["end"]) << "window " << i;
    EXPECT_EQ(got_w[i]["scored"], want_w[i]["scored"]) << "window " << i;
    const double nll = want_w[i]["nll"].get<double>();
    EXPECT_NEAR(got_w[i]["nll"].get<double>(), nll, 1e-3 * std::abs(nll)) << "window " << i;
  }
}

// The default path keeps the weights in bf16 as stored and rounds some operands to bf16 on the
// way (measured on this excerpt: perplexity 0.055% under transformers' f32 value, the worst
// window's NLL 0.075% off), so it gets 0.5%: it checks the text output and that this path
// computes the same model, not the f32 path's exactness.
TEST(PerplexityCli, TextOutputWithStoredBf16Weights) {
  const auto ex = expected()["excerpt"];
  auto r = run_tessera(excerpt_args(ex) + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  double ppl = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "perplexity %lf", &ppl), 1) << r.out;
  const double want = ex["perplexity"].get<double>();
  EXPECT_NEAR(ppl, want, 5e-3 * want);
  EXPECT_NE(r.out.find("tokens scored " + std::to_string(ex["scored"].get<int>())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("windows " + std::to_string(ex["windows"].size())), std::string::npos)
      << r.out;
}

// Quantized weights (issue 25's quality bounds): 8-bit within +0.5% and 4-bit g64 within +5% of
// the bf16 model's perplexity (transformers' f32 value), quantized at load (--quantize) and, for
// 4-bit, by `tessera quantize` into a directory that then loads as an MLX one: the same quantizer,
// so the same perplexity to the printed digits.
double perplexity_of(const std::string& args) {
  auto r = run_tessera(args + " --device cpu --json");
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  if (r.status != 0) return NAN;
  return nlohmann::json::parse(r.out)["perplexity"].get<double>();
}

TEST(PerplexityCli, QuantizedWeightsStayWithinTheQualityBounds) {
  const auto ex = expected()["excerpt"];
  const double bf16 = ex["perplexity"].get<double>();
  const double q8 = perplexity_of(excerpt_args(ex) + " --quantize 8");
  const double q4 = perplexity_of(excerpt_args(ex) + " --quantize 4");
  EXPECT_LT(q8, bf16 * 1.005) << "8-bit";
  EXPECT_GT(q8, bf16 * 0.995) << "8-bit";
  EXPECT_LT(q4, bf16 * 1.05) << "4-bit g64";
  EXPECT_GT(q4, bf16 * 0.99) << "4-bit g64";
  EXPECT_GT(q4, q8) << "4 bits should lose more than 8";

  const std::string out = ::testing::TempDir() + "tessera_tiny_q4";
  auto r = run_tessera("quantize --model " + kModel + " --out " + out + " --bits 4");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string dir_args = "perplexity --model " + out + " --text " + kFixtures +
                               "/heldout_excerpt.txt --context " +
                               std::to_string(ex["context"].get<int>()) + " --stride " +
                               std::to_string(ex["stride"].get<int>());
  EXPECT_DOUBLE_EQ(perplexity_of(dir_args), q4);
  r = run_tessera("info --model " + out + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["quantized"], true);
  int quantized_classes = 0;
  for (const auto& f : info["weight_formats"])
    if (f["bits"] == 4 && f["group_size"] == 64) ++quantized_classes;
  EXPECT_GE(quantized_classes, 8) << r.out;  // q/k/v/o, gate/up/down, the embedding
  // Quantizing a quantized directory is refused with a clear error.
  r = run_tessera("quantize --model " + out + " --out " + out + "_again");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already quantized"), std::string::npos) << r.err;
  r = run_tessera(excerpt_args(ex) + " --device cpu --quantize 7");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--quantize"), std::string::npos) << r.err;
}

TEST(PerplexityCli, GreedyContinuationsMatchTransformers) {
  const auto fx = expected();  // kept alive: a range-for over expected()["greedy"] would dangle
  ASSERT_EQ(fx["greedy"].size(), 5u);
  for (const auto& g : fx["greedy"]) {
    const auto want = g["ids"].get<std::vector<int32_t>>();
    auto r =
        run_tessera("generate --model " + kModel + " --device cpu --dtype f32 --prompt " +
                    shell_quote(g["prompt"].get<std::string>()) + " --temperature 0 --max-tokens " +
                    std::to_string(want.size()) + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["metrics"]["prompt_tokens"], g["prompt_ids"].size()) << g["prompt"];
    std::vector<int32_t> expect = want;
    // transformers keeps the EOS that stopped it; tessera reports it as finish_reason stop.
    if (j["finish_reason"] == "stop") expect.pop_back();
    EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), expect) << g["prompt"];
  }
}

TEST(PerplexityCli, TokenizerEncodesAsHuggingFace) {
  auto tok = Tokenizer::load(kModel);
  const auto fx = expected();
  ASSERT_GE(fx["tokenizer"].size(), 40u);
  for (const auto& t : fx["tokenizer"]) {
    const std::string text = t["text"];
    EXPECT_EQ(tok->encode(text, true), t["ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tok->encode(text, false), t["ids_no_special"].get<std::vector<int32_t>>()) << text;
  }
  const auto& ex = fx["excerpt"];
  std::ifstream f(kFixtures + "/heldout_excerpt.txt", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(tok->encode(text, true), ex["ids"].get<std::vector<int32_t>>());
}

TEST(PerplexityCli, BadInputFailsCleanly) {
  const std::string text = kFixtures + "/heldout_excerpt.txt";
  const std::string base = "perplexity --model " + kModel + " --device cpu ";
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--text /nonexistent/x.txt", "--text: cannot read '/nonexistent/x.txt'"},
      {"--text " + text + " --context 1", "--context must be at least 2"},
      {"--text " + text + " --context 100000", "exceeds the model's"},
      {"--text " + text + " --context 64 --stride 65", "--stride must be in [1, --context]"},
      {"--text " + text + " --stride -2", "--stride must be in [1, --context]"},
      {"--text " + text + " --dtype f8", "unknown dtype 'f8'"},
  };
  for (const auto& c : cases) {
    auto r = run_tessera(base + c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  auto r = run_tessera("perplexity --model /nonexistent/model --text " + text);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << r.err;
  r = run_tessera("perplexity --text " + text);  // --model missing: CLI11's usage error
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera
