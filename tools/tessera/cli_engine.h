// Options shared by the commands that run a model through tessera::Engine (generate, chat,
// classify, batch, serve), and their translation into the public API's option structs.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera::cli {

struct EngineArgs {
  std::string model, device = "auto", dtype = "auto";
  int context = 0, batch_tokens = 0, max_seqs = 0, quantize = 0;
  std::string memory_limit, kv_memory;
  bool no_prefix_cache = false;
  bool no_warmup = false;
};
void add_engine_options(CLI::App* cmd, EngineArgs& a);
// --quantize 4|8 (the commands that load a model without the engine take it too).
void add_quantize_option(CLI::App* cmd, int& bits);
// `one_sequence`: the command runs one sequence at a time (generate, chat), so without
// --max-seqs the engine is sized for one, not for a server's batch: the KV pool and the sampler's
// rows for 256 sequences held 24 GiB of a GPU for a single prompt.
std::unique_ptr<Engine> load_engine(const EngineArgs& a, bool one_sequence = false);

struct SamplerArgs {
  float temperature = 0.8f, top_p = 0.95f, min_p = 0.05f, repeat_penalty = 1.0f;
  float presence_penalty = 0.0f, frequency_penalty = 0.0f;
  int top_k = 40;
  // As typed: "" (from the clock) or a decimal in [0, 2^64); anything else is refused, not
  // quietly taken as "from the clock" (issue #29: --seed -5 was).
  std::string seed;
};
// defaults: llama.cpp's sampler defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05).
void add_sampler_options(CLI::App* cmd, SamplerArgs& a);
SamplingOptions to_sampling(const SamplerArgs& a);

struct GenerateArgs {
  SamplerArgs sampler;
  int max_tokens = 256, min_tokens = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // Structured output (docs/GRAMMAR.md): at most one of them.
  std::string json_schema_file, grammar_file, regex;
  bool json_object = false;
  std::vector<std::string> choices;
};
void add_generate_options(CLI::App* cmd, GenerateArgs& a);
// Checks the flags before a model loads, in the flags' names; Engine::prepare checks the request
// again against the model (context, vocabulary).
GenerateOptions to_generate(const GenerateArgs& a);

// "4G", "512M", "1024K" or plain bytes; throws Error(invalid_argument) naming the option.
size_t parse_bytes(const std::string& s, const char* option);

// Prints one call's metrics as one line on stderr.
void print_metrics(const Metrics& m);
nlohmann::json metrics_json(const Metrics& m);

}  // namespace tessera::cli
