// `tessera tokenize` / `tessera detokenize` as scripts call them: ids and text equal the Hugging
// Face goldens, JSONL in and out in order, and a clear error with exit status 1 for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"
#include "process_temp.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using CliRun = testing::CliResult;
using testing::ids_arg;
using testing::run_tessera;
using testing::shell_quote;

// Removed when the test program exits.
fs::path scratch_dir() {
  const fs::path dir = testing::process_temp_dir("tessera_tok_cli");
  fs::create_directories(dir);
  return dir;
}

TEST(TokenizeCli, TextAndDetokenizeMatchTheGoldens) {
  ASSERT_TRUE(fs::exists(std::string(TESSERA_BINARY_DIR) + "/tessera")) << "build tessera_cli";
  std::vector<Golden> gold = goldens("gemma3");
  ASSERT_EQ(gold.size(), corpus().size());
  std::string dir = fs::path(tokenizer_path("gemma3")).parent_path().string();
  // English, an emoji ZWJ sequence, special tokens inside text, CJK, spaces around <bos>.
  for (size_t i : {125ul, 207ul, 292ul, 193ul, 312ul}) {
    const std::string& text = corpus()[i];
    if (text.find('\0') != std::string::npos) continue;  // cannot be an argument
    CliRun plain = run_tessera("tokenize --tokenizer " + dir + " --text " + shell_quote(text));
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.out, ids_arg(gold[i].ids_plain) + "\n") << text;
    CliRun special = run_tessera("tokenize --tokenizer " + dir +
                                 "/tokenizer.json --special --json --text " + shell_quote(text));
    ASSERT_EQ(special.status, 0) << special.err;
    EXPECT_EQ(json::parse(special.out)["ids"].get<std::vector<int32_t>>(), gold[i].ids);
    CliRun dec = run_tessera("detokenize --tokenizer " + dir + " --ids " + ids_arg(gold[i].ids));
    ASSERT_EQ(dec.status, 0) << dec.err;
    EXPECT_EQ(dec.out, gold[i].decoded + "\n");
    CliRun skip = run_tessera("detokenize --tokenizer " + dir + " --skip-special --json --ids " +
                              ids_arg(gold[i].ids));
    ASSERT_EQ(skip.status, 0) << skip.err;
    EXPECT_EQ(json::parse(skip.out)["text"], gold[i].decoded_skip);
  }
}

TEST(TokenizeCli, JsonlInOrder) {
  std::vector<Golden> gold = goldens("qwen3");
  ASSERT_EQ(gold.size(), corpus().size());
  fs::path in = scratch_dir() / "in.jsonl";
  {
    std::ofstream f(in, std::ios::binary);
    for (const std::string& t : corpus()) f << json{{"text", t}}.dump() << "\n";
  }
  std::string tok = fs::path(tokenizer_path("qwen3")).parent_path().string();
  CliRun r = run_tessera("tokenize --tokenizer " + tok + " --jsonl " + in.string() + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    ASSERT_LT(n, gold.size());
    EXPECT_EQ(json::parse(line)["ids"].get<std::vector<int32_t>>(), gold[n].ids_plain)
        << "line " << n + 1;
    ++n;
  }
  EXPECT_EQ(n, gold.size());
}

TEST(TokenizeCli, BadInputFailsWithAMessage) {
  std::string tok = tokenizer_path("llama3");
  fs::path bad = scratch_dir() / "bad.jsonl";
  std::ofstream(bad) << "{\"text\": \"ok\"}\n{\"txt\": 1}\n";
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"tokenize --tokenizer " + tok, "give one of --text or --jsonl"},
      {"tokenize --tokenizer " + tok + " --text a --jsonl " + bad.string(), "give one of"},
      {"tokenize --tokenizer /nonexistent --text a", "/nonexistent"},
      {"tokenize --tokenizer " + tok + " --text " + shell_quote("a\xff"), "not valid UTF-8"},
      {"tokenize --tokenizer " + tok + " --jsonl " + bad.string(), "bad.jsonl:2"},
      {"tokenize --tokenizer " + tok + " --jsonl /nonexistent.jsonl", "cannot open"},
      {"detokenize --tokenizer " + tok + " --ids 1,x", "'x' is not a token id"},
      {"detokenize --tokenizer " + tok + " --ids 1,-5", "-5 is not a token id"},
      {"detokenize --tokenizer " + tok + " --ids 999999", "vocabulary size 128256"},
  };
  for (const Case& c : cases) {
    CliRun r = run_tessera(c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tessera::test
