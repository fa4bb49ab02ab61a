// The interface of the Go + Metal backend tessera replaces, so that its users can switch with
// the same calls: generate(prompt, options) -> text, chat(messages, options) -> text, name(),
// available(). Failures throw tessera::Error with the message the engine gives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera::compat {

struct Options {
  float temperature = 0.8f;
  int max_tokens = 256;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  std::vector<int32_t> stop_tokens;
  std::vector<std::string> stop_strings;
  int64_t seed = -1;  // < 0: random
};

struct Message {
  std::string role, content;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string generate(const std::string& prompt, const Options& options) = 0;
  virtual std::string chat(const std::vector<Message>& messages, const Options& options) = 0;
  virtual std::string name() const = 0;
  virtual bool available() const = 0;
};

// A Backend over a tessera Engine loaded with `opts`. If the model cannot be loaded the backend
// still exists: available() is false, and generate/chat throw the load error.
std::unique_ptr<Backend> make_backend(const EngineOptions& opts);

// The same over an engine the caller already holds (shared with other users).
std::unique_ptr<Backend> make_backend(std::shared_ptr<Engine> engine);

}  // namespace tessera::compat
