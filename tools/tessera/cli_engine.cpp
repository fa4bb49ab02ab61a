#include "cli_engine.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/dev_api.h"

namespace tessera::cli {

void add_engine_options(CLI::App* cmd, EngineArgs& a) {
  cmd->add_option("--model", a.model, "Hugging Face model directory")->required();
  cmd->add_option("--device", a.device, "auto | cpu | cuda");
  cmd->add_option("--dtype", a.dtype, "weights in memory: auto | f32 | bf16");
  add_quantize_option(cmd, a.quantize);
  cmd->add_option("--context", a.context, "positions per sequence (default: the model's, capped)");
  cmd->add_option("--memory-limit", a.memory_limit,
                  "bytes tessera may use on the device (e.g. 4G)");
  cmd->add_option("--kv-memory", a.kv_memory, "bytes for the KV cache (e.g. 2G)");
  cmd->add_option("--batch-tokens", a.batch_tokens,
                  "tokens per forward step (prefill chunks + decodes)");
  cmd->add_option("--max-seqs", a.max_seqs, "sequences decoded at once");
  cmd->add_flag("--no-prefix-cache", a.no_prefix_cache, "do not share KV blocks between prompts");
  cmd->add_flag("--no-warmup", a.no_warmup,
                "on a GPU, skip the prefills and the short request run at load (the first "
                "request then pays for loading kernels and capturing the decode graph)");
}

void add_quantize_option(CLI::App* cmd, int& bits) {
  cmd->add_option("--quantize", bits,
                  "4 | 8: quantize the model's dense matrices at load (MLX affine, group 64, as "
                  "`tessera quantize` writes them)");
}

size_t parse_bytes(const std::string& s, const char* option) {
  if (s.empty()) return 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit(end);
  double mult = 1;
  if (unit == "" || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KiB")
    mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else
    fail_arg(std::string(option) + ": '" + s + "' is not a size (use e.g. 4G, 512M or bytes)");
  if (!(v > 0) || !std::isfinite(v))
    fail_arg(std::string(option) + ": size must be positive (got '" + s + "')");
  // Whole bytes: a fraction of one would truncate to 0, which means "no limit" / "automatic"
  // (issue #29: --memory-limit 0.5 did), and a size past 2^63 would overflow the cast.
  const double bytes = std::floor(v * mult);
  if (bytes < 1)
    fail_arg(std::string(option) + ": '" + s + "' is less than one byte (sizes are in bytes " +
             "unless a unit says otherwise: 4G, 512M)");
  if (bytes >= 9.2e18) fail_arg(std::string(option) + ": '" + s + "' is too large");
  return static_cast<size_t>(bytes);
}

std::unique_ptr<Engine> load_engine(const EngineArgs& a, bool one_sequence) {
  EngineOptions o;
  o.model_dir = a.model;
  o.device = a.device;
  o.dtype = a.dtype;
  o.quantize = a.quantize;
  if (a.context < 0) fail_arg("--context must be positive");
  if (a.batch_tokens < 0) fail_arg("--batch-tokens must be positive");
  if (a.max_seqs < 0) fail_arg("--max-seqs must be positive");
  o.context_length = a.context;
  o.max_batch_tokens = a.batch_tokens;
  o.max_seqs = a.max_seqs == 0 && one_sequence ? 1 : a.max_seqs;
  o.memory_limit = parse_bytes(a.memory_limit, "--memory-limit");
  o.kv_memory = parse_bytes(a.kv_memory, "--kv-memory");
  o.prefix_cache = !a.no_prefix_cache;
  o.warmup = !a.no_warmup;
  o.progress = true;
  return Engine::load(o);
}

void add_sampler_options(CLI::App* cmd, SamplerArgs& a) {
  cmd->add_option("--temperature", a.temperature, "0: greedy");
  cmd->add_option("--top-k", a.top_k, "0: off");
  cmd->add_option("--top-p", a.top_p, "(0, 1]; 1: off");
  cmd->add_option("--min-p", a.min_p, "[0, 1]; 0: off");
  cmd->add_option("--repeat-penalty", a.repeat_penalty, "1: off");
  cmd->add_option("--presence-penalty", a.presence_penalty, "[-2, 2]");
  cmd->add_option("--frequency-penalty", a.frequency_penalty, "[-2, 2]");
  cmd->add_option("--seed", a.seed, "random seed (default: from the clock)");
}

SamplingOptions to_sampling(const SamplerArgs& a) {
  SamplingOptions s;
  s.temperature = a.temperature;
  s.top_k = a.top_k;
  s.top_p = a.top_p;
  s.min_p = a.min_p;
  s.repetition_penalty = a.repeat_penalty;
  s.presence_penalty = a.presence_penalty;
  s.frequency_penalty = a.frequency_penalty;
  if (!a.seed.empty()) {
    const bool digits = a.seed.find_first_not_of("0123456789") == std::string::npos;
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = digits ? std::strtoull(a.seed.c_str(), &end, 10) : 0;
    if (!digits || errno == ERANGE || *end != '\0')
      fail_arg("--seed: '" + a.seed +
               "' is not a seed (an integer in [0, 2^64); leave --seed out to seed from the "
               "clock)");
    s.seed = static_cast<uint64_t>(v);
  }
  validate_sampling_options(s);
  return s;
}

void add_generate_options(CLI::App* cmd, GenerateArgs& a) {
  add_sampler_options(cmd, a.sampler);
  cmd->add_option("--max-tokens", a.max_tokens, "tokens to generate at most");
  cmd->add_option("--min-tokens", a.min_tokens, "EOS is suppressed until this many are generated");
  cmd->add_option("--stop", a.stop, "stop string (repeatable); not included in the output");
  cmd->add_flag("--ignore-eos", a.ignore_eos, "generate exactly --max-tokens");
  cmd->add_option("--json-schema", a.json_schema_file,
                  "constrain the output to JSON valid under the schema in FILE");
  cmd->add_flag("--json-object", a.json_object, "constrain the output to a JSON object");
  cmd->add_option("--grammar", a.grammar_file, "constrain the output to the GBNF grammar in FILE");
  cmd->add_option("--regex", a.regex, "constrain the output to match the regex in full");
  cmd->add_option("--choice", a.choices, "constrain the output to one of these (repeatable)");
}

namespace {

std::string read_text_file(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_arg(std::string(option) + ": cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The one constraint the flags ask for; its text is checked when the request is prepared.
OutputConstraint to_constraint(const GenerateArgs& a) {
  std::vector<OutputConstraint> set;
  auto add = [&](OutputConstraint::Kind k, const char* flag, std::string text) {
    OutputConstraint c;
    c.kind = k;
    c.field = flag;
    c.text = std::move(text);
    set.push_back(std::move(c));
  };
  if (!a.json_schema_file.empty())
    add(OutputConstraint::Kind::json_schema, "--json-schema",
        read_text_file(a.json_schema_file, "--json-schema"));
  if (a.json_object) add(OutputConstraint::Kind::json_object, "--json-object", "");
  if (!a.grammar_file.empty())
    add(OutputConstraint::Kind::grammar, "--grammar", read_text_file(a.grammar_file, "--grammar"));
  if (!a.regex.empty()) add(OutputConstraint::Kind::regex, "--regex", a.regex);
  if (!a.choices.empty()) {
    add(OutputConstraint::Kind::choice, "--choice", "");
    set.back().choices = a.choices;
  }
  if (set.size() > 1) fail_arg(set[0].field + " and " + set[1].field + " cannot be given together");
  return set.empty() ? OutputConstraint{} : set[0];
}

}  // namespace

GenerateOptions to_generate(const GenerateArgs& a) {
  GenerateOptions g;
  g.sampling = to_sampling(a.sampler);
  if (a.max_tokens <= 0)
    fail_arg("--max-tokens must be positive (got " + std::to_string(a.max_tokens) + ")");
  if (a.min_tokens < 0)
    fail_arg("--min-tokens must be >= 0 (got " + std::to_string(a.min_tokens) + ")");
  if (a.min_tokens > a.max_tokens)
    fail_arg("--min-tokens (" + std::to_string(a.min_tokens) + ") exceeds --max-tokens (" +
             std::to_string(a.max_tokens) + ")");
  g.max_tokens = a.max_tokens;
  g.min_tokens = a.min_tokens;
  g.stop = a.stop;
  g.ignore_eos = a.ignore_eos;
  g.constraint = to_constraint(a);
  return g;
}

nlohmann::json metrics_json(const Metrics& m) {
  return {{"prompt_tokens", m.prompt_tokens},
          {"cached_prompt_tokens", m.cached_prompt_tokens},
          {"generated_tokens", m.generated_tokens},
          {"queue_ms", m.queue_ms},
          {"ttft_ms", m.ttft_ms},
          {"prefill_ms", m.prefill_ms},
          {"decode_ms", m.decode_ms},
          {"total_ms", m.total_ms},
          {"prefill_tokens_per_s", m.prefill_tokens_per_s},
          {"decode_tokens_per_s", m.decode_tokens_per_s},
          {"peak_memory_bytes", m.peak_memory_bytes},
          {"active_memory_bytes", m.active_memory_bytes},
          {"device", m.device},
          {"compute", m.compute}};
}

void print_metrics(const Metrics& m) {
  // Whatever text went to stdout comes first, also when stdout is a pipe (fully buffered) and
  // both streams end up in one place (`2>&1 | tail`).
  std::fflush(stdout);
  std::fprintf(
      stderr,
      "prompt %d tokens (%d cached) | generated %d tokens | ttft %.1f ms | prefill %.1f ms "
      "(%.1f tok/s) | decode %.1f ms (%.1f tok/s) | total %.1f ms | memory peak %s, active %s "
      "(%s, computed in %s)\n",
      m.prompt_tokens, m.cached_prompt_tokens, m.generated_tokens, m.ttft_ms, m.prefill_ms,
      m.prefill_tokens_per_s, m.decode_ms, m.decode_tokens_per_s, m.total_ms,
      dev::format_bytes(m.peak_memory_bytes).c_str(),
      dev::format_bytes(m.active_memory_bytes).c_str(), m.device.c_str(), m.compute.c_str());
}

}  // namespace tessera::cli
