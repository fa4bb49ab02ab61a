// `tessera generate` and `tessera chat` under --json-schema FILE, --grammar FILE, --regex,
// --choice and --json-object: outputs that match, and clear errors with a non-zero exit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "../engine/tiny_model.h"
#include "cli_runner.h"
#include "process_temp.h"

namespace tessera {
namespace {

using testing::run_tessera;
using testing::shell_quote;

std::string write_file(const std::string& name, const std::string& text) {
  const std::string dir = testing::process_temp_dir("tessera_constraint_cli");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string base() {
  return "generate --model " + testing::tiny_gemma_with_tokenizer() +
         " --device cpu --prompt Hi --temperature 1 --max-tokens 200 ";
}

TEST(ConstraintCli, JsonSchemaGrammarRegexAndChoiceMatch) {
  const std::string schema =
      write_file("s.json",
                 R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9},
      "w":{"enum":["x","y"]}},"required":["n","w"],"additionalProperties":false})");
  for (int seed = 1; seed <= 3; ++seed) {
    auto r = run_tessera(base() + "--seed " + std::to_string(seed) + " --json-schema " + schema);
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_GE(j["n"].get<int>(), 1);
    EXPECT_LE(j["n"].get<int>(), 9);
    EXPECT_TRUE(j["w"] == "x" || j["w"] == "y") << r.out;
  }
  const std::string gbnf = write_file("g.gbnf", "root ::= (\"ab\" | \"cd\"){2}\n");
  auto g = run_tessera(base() + "--grammar " + gbnf);
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_TRUE(std::regex_match(g.out, std::regex("((ab|cd){2})\n?"))) << g.out;
  auto x = run_tessera(base() + "--regex " + shell_quote("[A-Z]{2}[0-9]"));
  ASSERT_EQ(x.status, 0) << x.err;
  EXPECT_TRUE(std::regex_match(x.out, std::regex("[A-Z]{2}[0-9]\n?"))) << x.out;
  auto c = run_tessera(base() + "--choice up --choice down");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_TRUE(c.out == "up\n" || c.out == "down\n" || c.out == "up" || c.out == "down") << c.out;
}

TEST(ConstraintCli, BadConstraintsAreClearErrors) {
  const std::string bad = write_file("bad.json", R"({"type":"integer","multipleOf":3})");
  auto r = run_tessera(base() + "--json-schema " + bad);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unsupported keyword 'multipleOf'"), std::string::npos) << r.err;
  r = run_tessera(base() + "--json-schema /no/such/file.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--json-schema"), std::string::npos) << r.err;
  r = run_tessera(base() + "--regex a --json-object");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("cannot be given together"), std::string::npos) << r.err;
  const std::string g = write_file("bad.gbnf", "root ::= missing\n");
  r = run_tessera(base() + "--grammar " + g);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("undefined rule 'missing'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera
