#include "engine/dev_api.h"

#include <filesystem>

#include <memory>

#include "chat/chat_template.h"
#include "core/memory.h"
#include "engine/direct_runner.h"
#include "engine/select_backend.h"
#include "io/gguf.h"
#include "io/model_dir.h"
#include "models/model.h"
#include "tokenizer/gguf_tokenizer.h"

namespace tessera::dev {

namespace {

// Members in this order so that the model goes first, then its files, then the backend.
struct LoadedModel {
  std::unique_ptr<ComputeBackend> backend;
  std::unique_ptr<ModelDir> dir;
  std::unique_ptr<Model> model;
};

LoadedModel load(const std::string& dir, const std::string& device, const std::string& dtype,
                 int quantize_bits) {
  LoadedModel m;
  m.backend = select_backend(device);
  m.dir = std::make_unique<ModelDir>(dir);
  LoadOptions o;
  o.dtype = dtype;
  o.quantize_bits = quantize_bits;
  m.model = load_model(*m.dir, *m.backend, o);
  return m;
}

}  // namespace

ModelSummary describe_model(const std::string& dir, const std::string& dtype, int quantize_bits) {
  LoadedModel m = load(dir, "cpu", dtype, quantize_bits);
  ModelSummary s;
  s.info = m.model->info();
  const KvSpec& kv = m.model->kv_spec();
  s.kv_bytes_per_token =
      2ull * s.info.num_layers * kv.num_kv_heads * kv.head_dim * dtype_size(kv.dtype);
  return s;
}

std::vector<std::vector<float>> logits(const std::string& dir, const std::string& device,
                                       const std::string& dtype, const std::vector<int32_t>& ids,
                                       bool all_positions, int quantize_bits) {
  LoadedModel m = load(dir, device, dtype, quantize_bits);
  validate_tokens(ids, m.model->info().vocab_size);
  DirectRunner runner(*m.model, static_cast<int>(ids.size()));
  std::vector<std::vector<int32_t>> seqs{ids};
  return runner.step(seqs, all_positions)[0];
}

struct LogitsSession::Impl {
  LoadedModel m;
  std::unique_ptr<DirectRunner> runner;
  int context = 0;
};

LogitsSession::LogitsSession(const std::string& dir, const std::string& device,
                             const std::string& dtype, int quantize_bits)
    : impl_(std::make_unique<Impl>()) {
  impl_->m = load(dir, device, dtype, quantize_bits);
}
LogitsSession::~LogitsSession() = default;
const ModelInfo& LogitsSession::info() const {
  return impl_->m.model->info();
}
std::string LogitsSession::device_name() const {
  return impl_->m.backend->name();
}
void LogitsSession::reset(int max_context) {
  if (!impl_->runner || impl_->context != max_context) {
    impl_->runner.reset();  // its KV pool first
    impl_->runner = std::make_unique<DirectRunner>(*impl_->m.model, max_context);
    impl_->context = max_context;
  }
  impl_->runner->reset();
}
std::vector<std::vector<float>> LogitsSession::step(const std::vector<int32_t>& ids,
                                                    bool all_positions) {
  if (!impl_->runner) fail_arg("LogitsSession: step() before reset()");
  const std::vector<std::vector<int32_t>> seqs{ids};
  return impl_->runner->step(seqs, all_positions)[0];
}

namespace {
// A GGUF file's template: the files beside it, else its tokenizer.chat_template (as the engine).
bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}
std::string beside(const std::string& path) {
  const std::string d = std::filesystem::path(path).parent_path().string();
  return d.empty() ? "." : d;
}
}  // namespace

std::string chat_template_source(const std::string& dir) {
  if (is_gguf_file(dir)) {
    std::string source = find_chat_template_source(beside(dir));
    if (source.empty()) {
      GgufFile f(dir);
      source = f.get_string("tokenizer.chat_template", "");
    }
    if (source.empty()) fail_model(dir + ": no chat template (no tokenizer.chat_template)");
    return source;
  }
  std::string source = find_chat_template_source(dir);
  if (source.empty())
    fail_model(dir +
               ": no chat template (tokenizer_config.json has no \"chat_template\" "
               "and there is no chat_template.jinja)");
  return source;
}

std::string render_chat_template(const std::string& source, const std::string& dir,
                                 const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt) {
  ChatTemplate tmpl(source);
  nlohmann::ordered_json context;
  if (is_gguf_file(dir) && !std::filesystem::exists(beside(dir) + "/tokenizer_config.json")) {
    GgufFile f(dir);  // bos_token / eos_token as the engine gives them (engine.cpp load_files)
    const auto tok = tokenizer_from_gguf(f);
    context = {{"bos_token", tok->bos_token()}, {"eos_token", tok->eos_token()}};
  } else {
    context = chat_template_special_tokens(is_gguf_file(dir) ? beside(dir) : dir);
  }
  return apply_chat_template(tmpl, messages, add_generation_prompt, context);
}

nlohmann::json read_json_file(const std::string& path) {
  return tessera::read_json_file(path);
}

std::string format_bytes(size_t bytes) {
  return tessera::format_bytes(bytes);
}

}  // namespace tessera::dev
