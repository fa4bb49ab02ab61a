#include "engine/request_prep.h"

#include "engine/kv_pool.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"

namespace tessera {

namespace {
[[noreturn]] void bad(const std::string& field, const std::string& msg,
                      const std::string& code = "") {
  throw RequestError(field, msg, code);
}
}  // namespace

void validate_sampling_options(const SamplingOptions& s) {
  if (!std::isfinite(s.temperature) || s.temperature < 0)
    bad("temperature",
        "temperature must be a finite number >= 0 (got " + std::to_string(s.temperature) + ")");
  if (s.top_k < 0)
    bad("top_k", "top_k must be >= 0 (0 disables it; got " + std::to_string(s.top_k) + ")");
  if (!(s.top_p > 0 && s.top_p <= 1))
    bad("top_p", "top_p must be in (0, 1] (got " + std::to_string(s.top_p) + ")");
  if (!(s.min_p >= 0 && s.min_p <= 1))
    bad("min_p", "min_p must be in [0, 1] (got " + std::to_string(s.min_p) + ")");
  if (!(s.repetition_penalty > 0) || !std::isfinite(s.repetition_penalty))
    bad("repetition_penalty",
        "repetition_penalty must be > 0 (got " + std::to_string(s.repetition_penalty) + ")");
  if (!(s.presence_penalty >= -2 && s.presence_penalty <= 2))
    bad("presence_penalty",
        "presence_penalty must be in [-2, 2] (got " + std::to_string(s.presence_penalty) + ")");
  if (!(s.frequency_penalty >= -2 && s.frequency_penalty <= 2))
    bad("frequency_penalty",
        "frequency_penalty must be in [-2, 2] (got " + std::to_string(s.frequency_penalty) + ")");
  if (s.top_logprobs < 0 || s.top_logprobs > 20)
    bad("top_logprobs",
        "top_logprobs must be in [0, 20] (got " + std::to_string(s.top_logprobs) + ")");
}

void check_generate_options(const GenerateOptions& g, int context_length, int vocab_size) {
  validate_sampling_options(g.sampling);
  if (!g.max_tokens_to_context) {
    if (g.max_tokens <= 0)
      bad("max_tokens", "max_tokens must be positive (got " + std::to_string(g.max_tokens) + ")");
    if (g.max_tokens > context_length)
      bad("max_tokens", "max_tokens " + std::to_string(g.max_tokens) +
                            " exceeds the context length " + std::to_string(context_length));
  }
  if (g.min_tokens < 0)
    bad("min_tokens", "min_tokens must be >= 0 (got " + std::to_string(g.min_tokens) + ")");
  if (!g.max_tokens_to_context && g.min_tokens > g.max_tokens)
    bad("min_tokens", "min_tokens (" + std::to_string(g.min_tokens) + ") exceeds max_tokens (" +
                          std::to_string(g.max_tokens) + ")");
  for (int32_t id : g.stop_token_ids)
    if (id < 0 || id >= vocab_size)
      bad("stop_token_ids", "stop token id " + std::to_string(id) + " is outside the vocabulary");
  for (const auto& s : g.stop)
    if (s.empty()) bad("stop", "stop strings must not be empty");
}

void check_classify_options(const ClassifyOptions& o) {
  validate_sampling_options(o.sampling);
  if (o.top_logprobs < 0 || o.top_logprobs > 20)
    bad("top_logprobs",
        "top_logprobs must be in [0, 20] (got " + std::to_string(o.top_logprobs) + ")");
}

std::string token_range_error(std::span<const int32_t> ids, int vocab_size) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size)
      return "token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
             " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")";
  return "";
}

void check_prompt_ids(std::span<const int32_t> ids, int vocab_size, const std::string& field) {
  if (ids.empty()) bad(field, "the token list is empty");
  if (std::string why = token_range_error(ids, vocab_size); !why.empty()) bad(field, why);
}

void check_tokenized_ids(std::span<const int32_t> ids, int vocab_size, const std::string& field,
                         const Tokenizer& tokenizer) {
  for (int32_t id : ids)
    if (id < 0 || id >= vocab_size)
      bad(field, "the text holds token '" + tokenizer.id_to_token(id) + "' (id " +
                     std::to_string(id) + "), which is past the model's vocabulary [0, " +
                     std::to_string(vocab_size) +
                     "): the tokenizer has added tokens that the model has no embedding for");
}

int resolve_max_tokens(const GenerateOptions& g, int prompt_tokens, int context_length,
                       const std::string& field) {
  int max_tokens = g.max_tokens;
  if (g.max_tokens_to_context) {
    max_tokens = context_length - prompt_tokens;
    if (max_tokens < 1) check_context(prompt_tokens, 1, context_length, field);
    if (g.min_tokens > max_tokens)
      bad("min_tokens", "min_tokens (" + std::to_string(g.min_tokens) + ") exceeds max_tokens (" +
                            std::to_string(max_tokens) + ", what the context leaves)");
  }
  return max_tokens;
}

void check_context(int prompt_tokens, int max_tokens, int context_length,
                   const std::string& field) {
  if (prompt_tokens + max_tokens <= context_length) return;
  const std::string what = field == "messages" ? "messages" : "prompt";
  bad(prompt_tokens >= context_length ? field : "max_tokens",
      "This model's maximum context length is " + std::to_string(context_length) +
          " tokens. However, you requested " + std::to_string(prompt_tokens + max_tokens) +
          " tokens (" + std::to_string(prompt_tokens) + " in the " + what + ", " +
          std::to_string(max_tokens) + " for the completion). Please reduce the length of the " +
          what + " or the completion.",
      "context_length_exceeded");
}

void check_classify_context(int prompt_tokens, int context_length) {
  if (prompt_tokens > context_length)
    bad("prompt",
        "the prompt has " + std::to_string(prompt_tokens) + " tokens but the context length is " +
            std::to_string(context_length),
        "context_length_exceeded");
}

void check_whole_prompt(int prompt_tokens, int step_tokens) {
  if (prompt_tokens > step_tokens)
    bad("input",
        "the input has " + std::to_string(prompt_tokens) +
            " tokens but this model's attention is bidirectional, so an input runs whole in one "
            "step of at most " +
            std::to_string(step_tokens) + " tokens (--batch-tokens)",
        "context_length_exceeded");
}

void check_not_embedding_only(bool bidirectional, const std::string& what) {
  if (bidirectional)
    bad("model",
        "this model's attention is bidirectional (use_bidirectional_attention: an embedding "
        "model): it only embeds, it cannot " +
            what);
}

std::vector<int32_t> stop_ids_for(const GenerateOptions& g, std::span<const int32_t> eos) {
  std::vector<int32_t> ids;
  if (!g.ignore_eos) ids.assign(eos.begin(), eos.end());
  for (int32_t id : g.stop_token_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

// Why a request can never run (empty when it can): an empty prompt, more positions than the
// context, or more KV blocks than the whole pool holds.
std::string admission_error(std::span<const int32_t> prompt, int vocab, int need, int context,
                            const KvPool& pool, int step_tokens) {
  const int prompt_len = static_cast<int>(prompt.size());
  if (prompt_len == 0) return "the prompt is empty";
  if (std::string why = token_range_error(prompt, vocab); !why.empty()) return "prompt: " + why;
  if (need > context)
    return "the request needs " + std::to_string(need) + " positions (" +
           std::to_string(prompt_len) + " prompt tokens + " + std::to_string(need - prompt_len) +
           " max tokens) but the context length is " + std::to_string(context);
  std::string why;
  for (int g = 0; g < pool.num_groups(); ++g)
    if (pool.blocks_needed(g, need, step_tokens) > pool.total_blocks(g))
      why = "the request needs more KV blocks (" +
            std::to_string(pool.blocks_needed(g, need, step_tokens)) +
            ") than the whole pool holds (" + std::to_string(pool.total_blocks(g)) +
            "); raise the KV memory or shorten the request";
  return why;
}

std::string whole_prompt_error(int prompt_len, int step_tokens, bool embedding) {
  if (!embedding)
    return "this model has bidirectional attention (use_bidirectional_attention: an embedding "
           "model): it only embeds";
  if (prompt_len > step_tokens)
    return "the input has " + std::to_string(prompt_len) +
           " tokens but a bidirectional model's input runs whole in one step of at most " +
           std::to_string(step_tokens) + " tokens (--batch-tokens)";
  return "";
}

}  // namespace tessera
