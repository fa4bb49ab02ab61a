// tessera::compat::Backend: the replaced engine's interface over tessera::Engine.
#include "tessera/compat.h"

#include "core/check.h"

namespace tessera::compat {
namespace {

GenerateOptions to_options(const Options& o) {
  GenerateOptions g;
  g.sampling.temperature = o.temperature;
  g.sampling.top_k = o.top_k;
  g.sampling.top_p = o.top_p;
  g.sampling.min_p = o.min_p;
  g.sampling.repetition_penalty = o.repeat_penalty;
  if (o.seed >= 0) g.sampling.seed = static_cast<uint64_t>(o.seed);
  g.max_tokens = o.max_tokens;
  g.stop = o.stop_strings;
  g.stop_token_ids = o.stop_tokens;
  return g;
}

std::string text_or_throw(const GenerateResult& r) {
  if (r.finish_reason == FinishReason::error) fail_arg(r.error);
  return r.text;
}

class EngineBackend final : public Backend {
 public:
  explicit EngineBackend(std::shared_ptr<Engine> e) : engine_(std::move(e)) {}
  explicit EngineBackend(std::string load_error) : load_error_(std::move(load_error)) {}

  std::string generate(const std::string& prompt, const Options& o) override {
    return text_or_throw(engine().generate(prompt, to_options(o)));
  }
  std::string chat(const std::vector<Message>& messages, const Options& o) override {
    std::vector<ChatMessage> m;
    for (const auto& x : messages) m.push_back({x.role, x.content});
    return text_or_throw(engine().chat(m, to_options(o)));
  }
  std::string name() const override {
    return engine_
               ? "tessera (" + engine_->info().architecture + ", " + engine_->device_name() + ")"
               : "tessera";
  }
  bool available() const override { return engine_ != nullptr; }

 private:
  Engine& engine() {
    if (!engine_) fail(ErrorKind::invalid_model, "the model failed to load: " + load_error_);
    return *engine_;
  }
  std::shared_ptr<Engine> engine_;
  std::string load_error_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const EngineOptions& opts) {
  try {
    return std::make_unique<EngineBackend>(std::shared_ptr<Engine>(Engine::load(opts)));
  } catch (const std::exception& e) {
    return std::make_unique<EngineBackend>(std::string(e.what()));
  }
}

std::unique_ptr<Backend> make_backend(std::shared_ptr<Engine> engine) {
  return std::make_unique<EngineBackend>(std::move(engine));
}

}  // namespace tessera::compat
