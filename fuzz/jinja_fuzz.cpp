// A chat template (chat/jinja_*.cpp: lexer, parser, evaluator, filters, methods) parsed and
// rendered over a fixed conversation with a system prompt, turns, a tool call and a tool result,
// as the server does for /v1/chat/completions. The render's work budget (jinja_value.h) must
// end a runaway template with an Error, never a hang or an exhausted memory (libFuzzer's
// -timeout and -rss_limit_mb, set by scripts/fuzz.sh, catch both).
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "fuzz_common.h"
#include "tessera/error.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const auto m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi <b>there</b> & 'you'"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "add", "arguments": {"a": 1, "b": [2, 3.5, null, true]}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "4"},
    {"role": "user", "content": [{"type": "text", "text": "Thanks\n\u00e9\u4e2d"}]}
  ])");
  return m;
}

const nlohmann::ordered_json& context() {
  static const auto c = nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "date_string": "05 Mar 2025",
    "tools": [{"type": "function", "function": {"name": "add", "description": "Adds.",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]
  })");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    tessera::ChatTemplate tmpl(source);
    (void)tessera::apply_chat_template(tmpl, messages(), true, context());
    (void)tessera::apply_chat_template(tmpl, messages(), false);
  } catch (const tessera::Error&) {
  }
  return 0;
}
