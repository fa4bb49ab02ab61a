// The developer API: what the CLI's developer commands (info, logits, make-model, tokenize,
// detokenize, chat-template) need of the internals. It is the one header of the engine's internals
// that tools/ includes (scripts/check-layers.py enforces it; the other is the server's entry point,
// server/server.h); everything else the CLI uses is the public API in include/tessera/. A command
// that needs more grows this header (or the public API) on purpose, not by including an internal
// header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"           // fail(), fail_arg(), fail_model(): tessera::Error with a message
#include "core/json_limits.h"     // parse_json(): JSON text with its nesting depth checked
#include "models/mlx_quantize.h"  // quantize: QuantizeOptions, quantize_model_dir()
#include "models/presets.h"       // make-model: MakeModelOptions, make_model()
#include "tessera/model_info.h"
#include "tokenizer/tokenizer.h"  // tokenize, detokenize: the Tokenizer interface

namespace tessera::dev {

// info: a model directory loaded on the CPU with its weights as `dtype` (auto | f32 | bf16).
struct ModelSummary {
  ModelInfo info;
  size_t kv_bytes_per_token = 0;  // K and V of every layer for one position
};
// quantize_bits (4 | 8, 0: off): the dense matrices quantized at load (LoadOptions).
ModelSummary describe_model(const std::string& dir, const std::string& dtype,
                            int quantize_bits = 0);

// logits: one forward over `ids` without the scheduler, on `device` (auto | cpu | cuda, chosen as
// the engine chooses); the logits of the last position, or of every position. Throws
// Error(invalid_argument) for an id outside the vocabulary.
std::vector<std::vector<float>> logits(const std::string& dir, const std::string& device,
                                       const std::string& dtype, const std::vector<int32_t>& ids,
                                       bool all_positions, int quantize_bits = 0);

// perplexity: a model on `device` fed one sequence in chunks without the scheduler
// (DirectRunner). reset(max_context) starts a sequence of up to max_context positions; step()
// appends `ids` to it and returns the logits of its last position, or of every new position.
class LogitsSession {
 public:
  LogitsSession(const std::string& dir, const std::string& device, const std::string& dtype,
                int quantize_bits = 0);
  ~LogitsSession();
  LogitsSession(const LogitsSession&) = delete;
  LogitsSession& operator=(const LogitsSession&) = delete;
  const ModelInfo& info() const;
  std::string device_name() const;
  void reset(int max_context);
  std::vector<std::vector<float>> step(const std::vector<int32_t>& ids, bool all_positions);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// chat-template: the template of `dir` (a model or tokenizer directory: tokenizer_config.json or
// chat_template.jinja); throws Error(invalid_model) when it has none.
std::string chat_template_source(const std::string& dir);
// `source` applied to `messages` (a JSON array of objects) with the special tokens of dir's
// tokenizer_config.json, as transformers' apply_chat_template(tokenize=False) renders it.
std::string render_chat_template(const std::string& source, const std::string& dir,
                                 const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt);

// A JSON file; throws Error(io / invalid_model) naming it.
nlohmann::json read_json_file(const std::string& path);

// "1.50 GiB": the engine's byte format, so that the CLI's figures read like its messages.
std::string format_bytes(size_t bytes);

}  // namespace tessera::dev
