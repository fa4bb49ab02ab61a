// ChatTemplate: parse once, render per conversation with the variables transformers passes
// (messages, tools=None, documents=None, add_generation_prompt, special tokens, extra kwargs).
// ref: transformers utils/chat_template_utils.py (render_jinja_template).
#include "chat/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"
#include "core/check.h"
#include "core/json_limits.h"

namespace tessera {

struct ChatTemplate::Impl {
  jinja::Body program;
};

ChatTemplate::ChatTemplate(const std::string& source) : impl_(std::make_unique<Impl>()) {
  impl_->program = jinja::parse_template(jinja::tokenize(source));
}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::json& context) const {
  return render(nlohmann::ordered_json(messages), add_generation_prompt,
                nlohmann::ordered_json(context));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& context) const {
  if (!context.is_null() && !context.is_object())
    fail_arg("chat template context must be a JSON object");
  using jinja::Value;
  Value vars = Value::make_dict();
  vars.dict->set(Value::string("messages"), jinja::from_json(messages));
  vars.dict->set(Value::string("tools"), Value::none());
  vars.dict->set(Value::string("documents"), Value::none());
  vars.dict->set(Value::string("add_generation_prompt"), Value::boolean(add_generation_prompt));
  if (context.is_object())
    for (auto it = context.begin(); it != context.end(); ++it)
      vars.dict->set(Value::string(it.key()), jinja::from_json(it.value()));
  try {
    return jinja::render_program(impl_->program, vars);
  } catch (const jinja::RaisedError& e) {
    fail_arg(e.what());
  } catch (const jinja::RuntimeError& e) {
    fail_arg(std::string("chat template error at ") + e.what());
  }
}

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) fail(ErrorKind::io, "cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_config(const std::filesystem::path& p) {
  return parse_json<nlohmann::ordered_json>(read_text(p), p.string(), ErrorKind::invalid_model);
}

}  // namespace

std::string find_chat_template_source(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path jinja_file = fs::path(dir) / "chat_template.jinja";
  std::error_code ec;
  if (fs::is_regular_file(jinja_file, ec)) return read_text(jinja_file);
  const fs::path cfg_file = fs::path(dir) / "tokenizer_config.json";
  if (!fs::is_regular_file(cfg_file, ec)) return "";
  nlohmann::ordered_json cfg = read_config(cfg_file);
  if (!cfg.is_object() || !cfg.contains("chat_template") || cfg["chat_template"].is_null())
    return "";
  const auto& t = cfg["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    for (const auto& e : t) {
      if (!e.is_object() || !e.contains("name") || !e.contains("template") ||
          !e["name"].is_string() || !e["template"].is_string())
        fail_model(cfg_file.string() +
                   ": chat_template list entries must be {\"name\": str, \"template\": str}");
      if (e["name"] == "default") return e["template"].get<std::string>();
    }
    fail_model(cfg_file.string() +
               ": chat_template lists several templates and none is named \"default\"");
  }
  fail_model(cfg_file.string() + ": chat_template must be a string or a list of templates");
}

nlohmann::ordered_json chat_template_special_tokens(const std::string& dir) {
  namespace fs = std::filesystem;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  const fs::path cfg_file = fs::path(dir) / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::is_regular_file(cfg_file, ec)) return out;
  nlohmann::ordered_json cfg = read_config(cfg_file);
  if (!cfg.is_object()) fail_model(cfg_file.string() + ": expected a JSON object");
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token"}) {
    if (!cfg.contains(key)) continue;
    const auto& v = cfg[key];
    if (v.is_string()) {
      out[key] = v;
    } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
      out[key] = v["content"];
    }
  }
  return out;
}

std::string apply_chat_template(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                bool add_generation_prompt, const nlohmann::ordered_json& context) {
  // transformers 5's apply_chat_template refuses an empty conversation before rendering,
  // whatever the template would do with it.
  if (messages.is_array() && messages.empty())
    fail_arg("Cannot apply chat template to an empty conversation. Provide at least one message.");
  return tmpl.render(messages, add_generation_prompt, context);
}

}  // namespace tessera
