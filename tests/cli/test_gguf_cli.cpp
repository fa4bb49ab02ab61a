// A GGUF file alone through the CLI (issue 26): `tessera generate` on llama.cpp-made files
// (tests/fixtures/gguf_models) gives transformers' greedy continuations, with the file's own
// tokenizer and EOS; `tessera classify` takes the file too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "models/fixtures.h"
#include "process_temp.h"

namespace tessera {
namespace {

using testing::ids_arg;
using testing::run_tessera;

std::vector<testing::ModelFixture> gguf_fixtures() {
  return testing::load_model_fixtures(std::string(TESSERA_SOURCE_DIR) +
                                      "/tests/fixtures/gguf_models");
}

TEST(GgufCli, GenerateMatchesTransformers) {
  const auto fixtures = gguf_fixtures();
  ASSERT_GE(fixtures.size(), 10u);
  for (const auto& f : fixtures) {
    for (size_t s = 0; s < f.sequences.size(); ++s) {
      for (bool min : {false, true}) {
        const auto& want = min ? f.greedy_min[s] : f.greedy[s];
        auto r = run_tessera("generate --model " + f.dir + "/model.gguf --device cpu --tokens " +
                             ids_arg(f.sequences[s]) + " --temperature 0 --max-tokens 12" +
                             (min ? " --min-tokens 12" : "") + " --json");
        ASSERT_EQ(r.status, 0) << f.name << ": " << r.err;
        auto j = nlohmann::json::parse(r.out);
        std::vector<int32_t> expect = want;
        if (j["finish_reason"] == "stop") expect.pop_back();  // the EOS transformers appended
        EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), expect)
            << f.name << " sequence " << s << (min ? " min" : "");
        EXPECT_EQ(j["finish_reason"], !min && want.size() < 12 ? "stop" : "length") << f.name;
      }
    }
  }
}

TEST(GgufCli, ClassifyTakesTheFile) {
  const auto fixtures = gguf_fixtures();
  ASSERT_FALSE(fixtures.empty());
  const auto& f = fixtures.front();
  const std::string dir = testing::process_temp_dir("tessera_cli");
  std::filesystem::create_directories(dir);
  const std::string in = dir + "/gguf_classify.jsonl";
  std::ofstream(in) << "{\"tokens\": " << nlohmann::json(f.sequences[0]).dump() << "}\n";
  auto r = run_tessera("classify --model " + f.dir + "/model.gguf --device cpu --input " + in);
  ASSERT_EQ(r.status, 0) << r.err;
  // The next token at the end of the prompt: the first greedy token.
  EXPECT_EQ(nlohmann::json::parse(r.out.substr(0, r.out.find('\n')))["token"], f.greedy[0][0]);
}

}  // namespace
}  // namespace tessera
