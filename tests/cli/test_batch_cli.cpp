// `tessera batch` and `tessera classify` on the transformers fixtures: outputs in input order,
// equal to one-at-a-time results; malformed input named by file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../models/fixtures.h"
#include "cli_runner.h"

namespace tessera {
namespace {

using testing::run_tessera;

std::string write_jsonl(const std::string& name, const std::vector<nlohmann::json>& lines) {
  const std::filesystem::path dir = testing::process_temp_dir("tessera_cli_jsonl");
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream f(path);
  for (const auto& l : lines) f << l.dump() << "\n";
  return path.string();
}

std::vector<nlohmann::json> parse_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  return v;
}

TEST(BatchCli, EqualsTransformersGreedyInInputOrder) {
  for (const auto& f : testing::load_model_fixtures()) {
    if (f.name != "gemma3_gqa" && f.name != "qwen3") continue;
    std::vector<nlohmann::json> in;
    // Longest first and repeated, so completion order differs from input order.
    for (int rep = 0; rep < 2; ++rep)
      for (size_t s = f.sequences.size(); s-- > 0;) in.push_back({{"tokens", f.sequences[s]}});
    auto r = run_tessera("batch --model " + f.dir + " --device cpu --input " +
                         write_jsonl("batch_" + f.name + ".jsonl", in) +
                         " --temperature 0 --max-tokens 12 --min-tokens 12 --batch-tokens 16");
    ASSERT_EQ(r.status, 0) << r.err;
    auto out = parse_lines(r.out);
    ASSERT_EQ(out.size(), in.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const size_t s = f.sequences.size() - 1 - i % f.sequences.size();
      EXPECT_EQ(out[i]["ids"].get<std::vector<int32_t>>(), f.greedy_min[s])
          << f.name << " line " << i;
      EXPECT_EQ(out[i]["finish_reason"], "length");
    }
    EXPECT_NE(r.err.find("batch: 6 prompts (0 failed)"), std::string::npos) << r.err;
  }
}

TEST(ClassifyCli, LastPositionLogitsAndTopLogprobs) {
  for (const auto& f : testing::load_model_fixtures()) {
    if (f.name != "llama3" && f.name != "gemma3_legacy") continue;
    std::vector<nlohmann::json> in;
    for (const auto& s : f.sequences) in.push_back({{"tokens", s}});
    auto r = run_tessera("classify --model " + f.dir + " --device cpu --dtype f32 --input " +
                         write_jsonl("classify_" + f.name + ".jsonl", in) +
                         " --logits --top-logprobs 4");
    ASSERT_EQ(r.status, 0) << r.err;
    auto out = parse_lines(r.out);
    ASSERT_EQ(out.size(), f.sequences.size());
    for (size_t s = 0; s < out.size(); ++s) {
      const auto& ref = f.logits[s].back();
      const auto logits = out[s]["logits"].get<std::vector<float>>();
      EXPECT_LE(testing::row_error(logits, ref), 1e-4) << f.name << " prompt " << s;
      EXPECT_EQ(out[s]["token"], std::max_element(ref.begin(), ref.end()) - ref.begin());
      ASSERT_EQ(out[s]["top_logprobs"].size(), 4u);
      EXPECT_EQ(out[s]["top_logprobs"][0]["token"], out[s]["token"]);
    }
    EXPECT_NE(r.err.find("classify: 3 prompts (0 failed)"), std::string::npos) << r.err;
  }
}

TEST(ClassifyCli, MalformedInputNamesTheLine) {
  const auto fx = testing::load_model_fixtures();
  ASSERT_FALSE(fx.empty());
  const std::string path = write_jsonl("classify_bad.jsonl", {nlohmann::json{{"tokens", {2, 3}}},
                                                              nlohmann::json{{"tokens", "nope"}}});
  auto r = run_tessera("classify --model " + fx[0].dir + " --device cpu --input " + path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("classify_bad.jsonl:2: \"tokens\" must be an array"), std::string::npos)
      << r.err;
  write_jsonl("classify_bad.jsonl",
              {nlohmann::json{{"tokens", {2, 3}}}, nlohmann::json{{"tokens", {2, 999999}}}});
  r = run_tessera("classify --model " + fx[0].dir + " --device cpu --input " + path);
  EXPECT_EQ(r.status, 1);  // one prompt failed, the other is still answered
  auto out = parse_lines(r.out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].contains("token"));
  EXPECT_NE(out[1]["error"].get<std::string>().find("outside the vocabulary"), std::string::npos);
}

}  // namespace
}  // namespace tessera
