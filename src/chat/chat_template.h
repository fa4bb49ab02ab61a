// Chat templates: the Jinja subset that Hugging Face chat templates use (Gemma 3, Llama 3.x,
// Qwen 2.5/3), rendered byte-identically to transformers' apply_chat_template(tokenize=False).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera {

class ChatTemplate {
 public:
  // Parses `source`; throws Error(invalid_model) with the line and column of a syntax error.
  explicit ChatTemplate(const std::string& source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // messages: [{"role": ..., "content": ...}, ...]; context: extra variables (bos_token,
  // eos_token, tools, ...). Throws Error(invalid_argument) with the template's message when it
  // calls raise_exception (e.g. roles that do not alternate) or fails at run time.
  std::string render(const nlohmann::json& messages, bool add_generation_prompt,
                     const nlohmann::json& context = nlohmann::json::object()) const;
  // The same with JSON objects that keep their key order, as Python dicts do: `tojson` of tools
  // and tool-call arguments prints keys in the order given (nlohmann::json sorts them).
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& context) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The default chat template of a model or tokenizer directory: tokenizer_config.json's
// "chat_template" (a string, or a list of {name, template} where "default" wins), else
// chat_template.jinja. Returns "" when there is none. Where both exist, chat_template.jinja
// wins, as in transformers' from_pretrained. Throws Error(invalid_model) for a malformed
// tokenizer_config.json or a template list without a "default" entry.
std::string find_chat_template_source(const std::string& dir);

// The template variables transformers adds from the tokenizer's special tokens
// (bos_token, eos_token, unk_token, pad_token, ...: tokenizer_config.json values that are a
// string or an object with "content"); {} when the directory has no tokenizer_config.json.
nlohmann::ordered_json chat_template_special_tokens(const std::string& dir);

// What transformers' apply_chat_template(tokenize=False) does: its checks on the conversation,
// then the template. Use this (not ChatTemplate::render) to turn a conversation into a prompt.
std::string apply_chat_template(
    const ChatTemplate& tmpl, const nlohmann::ordered_json& messages, bool add_generation_prompt,
    const nlohmann::ordered_json& context = nlohmann::ordered_json::object());

}  // namespace tessera
