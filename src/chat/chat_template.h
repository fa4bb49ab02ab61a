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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The default chat template of a model or tokenizer directory: tokenizer_config.json's
// "chat_template" (a string, or a list of {name, template} where "default" wins), else
// chat_template.jinja. Returns "" when there is none.
std::string find_chat_template_source(const std::string& dir);

}  // namespace tessera
