// Bad input gives a tessera::Error that names the problem: invalid UTF-8 text (with the byte
// offset), missing or malformed tokenizer files, unsupported components.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tessera/error.h"
#include "tokenizer/mini_tokenizer.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tessera::test {
namespace {

using json = nlohmann::json;

// Runs f, expecting an Error of `kind` whose message contains `needle`.
template <class F>
void expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one mentioning \"" << needle << "\")";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, InvalidUtf8NamesTheByteOffset) {
  const Tokenizer& t = real_tokenizer("gemma3");
  expect_error(
      [&] {
        t.encode(
            "ab\xFF"
            "cd",
            true);
      },
      ErrorKind::invalid_argument, "byte offset 2");
  expect_error([&] { t.encode("\xE4\xB8", false); }, ErrorKind::invalid_argument,
               "byte offset 0");  // truncated at the end
  expect_error([&] { t.encode("x\xC0\xAF", false); }, ErrorKind::invalid_argument,
               "byte offset 1");  // overlong
  expect_error([&] { t.encode("\xED\xA0\x80", false); }, ErrorKind::invalid_argument,
               "byte 0xED");  // a UTF-16 surrogate
  expect_error([&] { t.encode("ok \xF4\x90\x80\x80", false); }, ErrorKind::invalid_argument,
               "byte offset 3");  // above U+10FFFF
  for (const char* name : {"llama3", "qwen3"}) {
    expect_error([&] { real_tokenizer(name).encode("<|im_start|>\x80", false); },
                 ErrorKind::invalid_argument, "byte offset 12");
  }
  EXPECT_NO_THROW(t.encode("\xF0\x9F\x98\x80 \xC3\xA9", false));
}

TEST(TokenizerErrors, MissingFiles) {
  expect_error([] { Tokenizer::load("/nonexistent/tokenizer.json"); }, ErrorKind::io,
               "/nonexistent/tokenizer.json");
  std::string empty_dir = MiniTokenizer{}.write() + "/sub";
  std::filesystem::create_directories(empty_dir);
  expect_error([&] { Tokenizer::load(empty_dir); }, ErrorKind::io, "tokenizer.json: no such file");
}

std::string write_file(const std::string& text) {
  std::string dir = MiniTokenizer{}.write();
  std::ofstream(dir + "/tokenizer.json") << text;
  return dir + "/tokenizer.json";
}

TEST(TokenizerErrors, MalformedFiles) {
  expect_error([] { Tokenizer::load(write_file("{\"model\": ")); }, ErrorKind::invalid_model,
               "not valid JSON");
  expect_error([] { Tokenizer::load(write_file("[1, 2]")); }, ErrorKind::invalid_model,
               "expected a JSON object");
  expect_error([] { Tokenizer::load(write_file("{\"version\": \"1.0\"}")); },
               ErrorKind::invalid_model, "missing \"model\"");

  MiniTokenizer m;
  m.vocab = {"a", "b"};
  m.merges = json::array({"a b"});  // "ab" is not in the vocabulary
  expect_error([&] { m.load(); }, ErrorKind::invalid_model, "merge 0: merged token \"ab\"");
  m.merges = json::array({"a b c"});
  expect_error([&] { m.load(); }, ErrorKind::invalid_model, "model.merges: merge 0");
  m.merges = json::array();
  m.pre_tokenizer = {
      {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error([&] { m.load(); }, ErrorKind::invalid_model, "does not compile");
  m.pre_tokenizer = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Sideways"}};
  expect_error([&] { m.load(); }, ErrorKind::invalid_model, "pre_tokenizer.behavior");
  m.pre_tokenizer = nullptr;
  m.add_token("x", true);
  m.added_tokens[0].erase("id");
  expect_error([&] { m.load(); }, ErrorKind::invalid_model, "added_tokens[0]: missing \"id\"");
}

TEST(TokenizerErrors, UnsupportedComponentsAreNamed) {
  MiniTokenizer m;
  m.vocab = {"a"};
  json j = m.to_json();
  j["model"]["type"] = "WordPiece";
  expect_error([&] { Tokenizer::load(write_file(j.dump())); }, ErrorKind::unsupported,
               "model type \"WordPiece\"");
  m.normalizer = {{"type", "Precompiled"}, {"precompiled_charsmap", ""}};
  expect_error([&] { m.load(); }, ErrorKind::unsupported, "normalizer type \"Precompiled\"");
  m.normalizer = nullptr;
  m.pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers", json::array({{{"type", "BertPreTokenizer"}}})}};
  expect_error([&] { m.load(); }, ErrorKind::unsupported, "pre_tokenizer.pretokenizers[0]");
  m.pre_tokenizer = nullptr;
  m.decoder = {{"type", "WordPiece"}, {"prefix", "##"}};
  expect_error([&] { m.load(); }, ErrorKind::unsupported, "decoder type \"WordPiece\"");
  m.decoder = nullptr;
  m.model_extra = {{"dropout", 0.1}};
  expect_error([&] { m.load(); }, ErrorKind::unsupported, "BPE dropout");
}

}  // namespace
}  // namespace tessera::test
