// tessera's public C++ API: load a model once, then generate, chat, classify, embed and
// batch_generate. Every call goes through one continuous-batching scheduler that owns the model
// and its KV pool, so concurrent callers (threads, HTTP clients) share forward passes.
//
// Errors: loading throws tessera::Error naming the file, key or tensor at fault. Requests never
// throw for bad input that only concerns them: a request whose options are invalid, whose prompt
// does not fit, or that fails in flight comes back with finish_reason == error and a message;
// the engine and the other requests carry on. prepare() does a request's checks and its
// tokenization once, up front, and throws RequestError naming the field at fault; generate(),
// chat(), batch_generate(), classify() and submit() prepare what they are given themselves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/error.h"
#include "tessera/model_info.h"

namespace tessera {

struct EngineOptions {
  std::string model_dir;
  std::string device = "auto";  // auto (CUDA when available) | cpu | cuda
  std::string dtype = "auto";   // weights in memory: auto (the checkpoint's) | f32 | bf16
  int quantize = 0;             // 4 | 8: quantize a dense checkpoint's matrices at load (MLX
                                // affine, group 64, as `tessera quantize`); 0: as stored
  int context_length = 0;       // positions per sequence; 0: min(max_position_embeddings, 32768)
  size_t memory_limit = 0;      // bytes on the compute device (weights + KV + activations); 0: none
  size_t kv_memory = 0;         // bytes for the KV pool; 0: automatic
  int max_batch_tokens = 0;     // tokens per forward step (prefill chunks + decodes); 0: automatic
  int max_seqs = 0;             // sequences running at once; 0: automatic
  bool prefix_cache = true;     // share KV blocks between prompts with the same prefix
  bool progress = false;        // progress bar on stderr while loading (only if stderr is a tty)
  bool warmup = true;           // on a GPU: prefills of 16..512 tokens and one short request
                                // at load, so that the first real request does not pay for
                                // loading kernels (cuBLASLt's among them) and capturing graphs
};

struct SamplingOptions {
  float temperature = 1.0f;         // 0: greedy, whatever else is set
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // (0, 1]
  float min_p = 0.0f;               // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1: off (transformers / llama.cpp semantics)
  float presence_penalty = 0.0f;    // [-2, 2] (OpenAI semantics)
  float frequency_penalty = 0.0f;   // [-2, 2]
  std::optional<uint64_t> seed;     // one seed, one text; unset: drawn from the clock
  bool logprobs = false;            // report the chosen token's logprob per step
  int top_logprobs = 0;             // and the N most likely alternatives (0..20)
};

// Structured output: the generated text must match (docs/GRAMMAR.md). Tokens that cannot
// continue a match are masked while sampling; EOS is allowed only once the text is a complete
// match, and generation stops by itself when nothing more may follow.
struct OutputConstraint {
  enum class Kind { none, json_object, json_schema, regex, choice, grammar };
  Kind kind = Kind::none;
  std::string text;                  // json_schema: the schema (JSON); regex; grammar: GBNF
  std::vector<std::string> choices;  // choice: the text is exactly one of these
  std::string field;  // the request field it came from, for errors ("response_format")
  // The text must be `prefix` match `suffix`, repeated up to max_count times (-1: no limit)
  // with `separator` between: tool calls in a family's format (Qwen's "<tool_call>\n" JSON
  // "\n</tool_call>", one or more separated by "\n").
  std::string prefix, suffix, separator;
  int max_count = 1;
};

struct GenerateOptions {
  SamplingOptions sampling;
  int max_tokens = 256;  // > 0; with the prompt, within the context length
  // Generate up to the end of the context instead (OpenAI chat's default when max_tokens is not
  // given): prepare() sets max_tokens to what the context leaves after the prompt.
  bool max_tokens_to_context = false;
  int min_tokens = 0;  // EOS and stop tokens are suppressed until this many are generated
  std::vector<std::string> stop;        // stop strings: matched across tokens, not emitted
  std::vector<int32_t> stop_token_ids;  // in addition to the model's EOS set
  bool ignore_eos = false;              // benchmarks: generate exactly max_tokens
  bool add_special_tokens = true;       // text prompts: add BOS as Hugging Face does
  OutputConstraint constraint;          // none: free text
  // Chat only: the tools the chat template offers the model (its `tools` variable), as a JSON
  // array of OpenAI tool objects ({"type": "function", "function": {"name", "description",
  // "parameters"}}); "" for none. A template that does not take tools gets them in the prompt
  // by tessera's convention instead (docs/GRAMMAR.md, "Tool calling").
  std::string tools;
};

struct TokenLogprob {
  int32_t id = 0;
  std::string text;  // the token's own text (may be a partial UTF-8 sequence shown as bytes)
  float logprob = 0.0f;
};

struct StepLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first
};

struct Metrics {
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  int generated_tokens = 0;
  double queue_ms = 0;  // waiting for admission
  double ttft_ms = 0;   // submission to first generated token
  double prefill_ms = 0, decode_ms = 0, total_ms = 0;
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
  size_t peak_memory_bytes = 0;    // tessera's allocator on the compute device, since load
  size_t active_memory_bytes = 0;  // at the end of the call
  std::string device;
  // What the device computes in: "f32" (the CPU) or "bf16" (CUDA: bf16 activations, attention
  // and KV cache, f32 accumulation), whatever the weights are held in.
  std::string compute;
};

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct GenerateResult {
  std::vector<int32_t> ids;  // generated ids only
  std::string text;          // their text, stop string excluded
  FinishReason finish_reason = FinishReason::stop;
  std::string error;                   // when finish_reason == error
  std::optional<int32_t> stop_token;   // the EOS / stop id that ended it (not in ids)
  std::string stop_string;             // the stop string that ended it
  std::vector<StepLogprobs> logprobs;  // one per id when sampling.logprobs
  Metrics metrics;
};

// Set from any thread; the scheduler checks it before every step.
class CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const { flag_->store(true); }
  bool cancelled() const { return flag_->load(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

// Called on the scheduler's thread for every generated token with the text that became final
// (possibly empty: UTF-8 still incomplete, or held back while it may start a stop string), and
// once more with id -1 for text released when generation ends. Keep it short; return false to
// cancel the request.
using TokenCallback = std::function<bool(int32_t id, std::string_view piece)>;

// A call an assistant turn made (OpenAI's tool_calls entry).
struct ToolCall {
  std::string id;         // "call_..."; may be empty
  std::string name;       // the function's name
  std::string arguments;  // a JSON object as text, as OpenAI sends it
};

struct ChatMessage {
  std::string role;  // system | user | assistant | tool | ...
  std::string content;
  std::vector<ToolCall> tool_calls{};  // assistant: the calls it made
  std::string tool_call_id{};          // tool: the call this answers
  std::string name{};                  // tool: the function's name (optional)
};

// A prompt as text (tokenized, BOS added per add_special_tokens) or as token ids.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

struct ClassifyOptions {
  SamplingOptions sampling;    // temperature 0 (the default here) picks the argmax
  bool return_logits = false;  // the full logits row at each prompt's last position
  int top_logprobs = 0;
  bool add_special_tokens = true;
  ClassifyOptions() { sampling.temperature = 0.0f; }
};

struct ClassifyResult {
  int32_t token = -1;
  std::string text;
  float logprob = 0.0f;
  std::vector<float> logits;  // when return_logits
  std::vector<TokenLogprob> top_logprobs;
  std::string error;  // non-empty when this prompt failed (others are unaffected)
  int prompt_tokens = 0;
};

// Embeddings: the model's final hidden states (after its final norm) pooled per prompt.
// ref: sentence-transformers models.Pooling (mean over the prompt's tokens, the first token's
// "cls", the last token's "lasttoken") and models.Normalize (L2).
enum class Pooling { automatic, mean, cls, last };
const char* pooling_name(Pooling p);  // "auto", "mean", "cls", "last"

struct EmbedOptions {
  Pooling pooling = Pooling::automatic;  // automatic: the last token's state (a causal decoder's)
  bool normalize = true;                 // unit L2 norm, after the truncation below
  int dimensions = 0;  // > 0: keep the first N values (Matryoshka truncation); 0: all
  bool add_special_tokens = true;
  // A sentence-transformers model's prompt (config_sentence_transformers.json "prompts", e.g.
  // "query"), put before each text prompt; empty: its default_prompt_name's, if it has one.
  std::string prompt_name;
};

struct EmbedResult {
  std::vector<float> embedding;
  std::string error;  // non-empty when this prompt failed (others are unaffected)
  int prompt_tokens = 0;
};

struct BatchMetrics {
  int requests = 0, prompt_tokens = 0, generated_tokens = 0;
  double total_ms = 0;
  double requests_per_s = 0, prompt_tokens_per_s = 0, generated_tokens_per_s = 0;
  size_t peak_memory_bytes = 0;
};

// A snapshot of the scheduler, for /metrics and the tests.
struct EngineStats {
  int running = 0, waiting = 0;
  int kv_blocks_used = 0, kv_blocks_total = 0;
  int kv_block_size = 0;
  size_t memory_active = 0, memory_peak = 0, memory_limit = 0;
  int64_t steps = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_prompt_tokens = 0;
  int64_t preemptions = 0;  // sequences sent back to the queue because the KV pool ran out
};

// A request in flight, for callers that stream (the server): events arrive in order; the last
// is the result.
class RequestStream {
 public:
  struct Event {
    int32_t id = -1;
    std::string piece;
    std::optional<StepLogprobs> logprobs;
    bool done = false;
    GenerateResult result;  // when done
  };
  virtual ~RequestStream() = default;
  // Waits up to timeout_ms (negative: forever) for the next event; false on timeout.
  virtual bool next(Event& ev, int timeout_ms) = 0;
  virtual void cancel() = 0;
};

// Throws RequestError naming the first option out of range (temperature >= 0, top_k >= 0,
// top_p in (0, 1], min_p in [0, 1], repetition_penalty > 0, presence and frequency penalties in
// [-2, 2], top_logprobs in [0, 20]).
void validate_sampling_options(const SamplingOptions& opts);

// A generation checked and tokenized once (Engine::prepare): what generate() and submit() run.
struct PreparedRequest {
  std::vector<int32_t> prompt;    // token ids: the text (chat: the rendered template) tokenized
  GenerateOptions options;        // as checked; max_tokens resolved; add_special_tokens as used
  std::vector<int32_t> stop_ids;  // the EOS set (unless ignore_eos), then stop_token_ids
};                                // (the stop strings are options.stop)

// A classification checked and tokenized once.
struct PreparedClassify {
  std::vector<int32_t> prompt;
  ClassifyOptions options;
};

// An embedding request checked and tokenized once (pooling resolved).
struct PreparedEmbed {
  std::vector<int32_t> prompt;
  EmbedOptions options;
};

class Engine {
 public:
  // Throws tessera::Error (invalid_model, io, unsupported, out_of_memory, invalid_argument).
  static std::unique_ptr<Engine> load(const EngineOptions& opts);
  virtual ~Engine() = default;

  virtual const ModelInfo& info() const = 0;
  virtual std::string device_name() const = 0;
  virtual int context_length() const = 0;
  virtual bool has_tokenizer() const = 0;
  virtual bool has_chat_template() const = 0;
  // The EOS set generation stops on: generation_config.json's, the tokenizer's and the chat
  // end-of-turn token (<end_of_turn>, <|eot_id|>, <|im_end|>) when the vocabulary has one.
  virtual std::vector<int32_t> eos_token_ids() const = 0;

  // Throws RequestError naming the option at fault.
  virtual void validate(const GenerateOptions& opts) const = 0;
  virtual void validate(const SamplingOptions& opts) const = 0;

  // A request's checks and tokenization, once: the options (as validate), the prompt (token ids
  // within the vocabulary; text through the tokenizer, BOS per add_special_tokens; messages
  // through the chat template, whose special tokens stand as rendered) and, with max_tokens, the
  // context. Throws RequestError naming the field at fault ("prompt" or "messages" for the
  // prompt itself; code "context_length_exceeded" when it does not fit the context).
  virtual PreparedRequest prepare(const Prompt& prompt, const GenerateOptions& opts) const = 0;
  virtual PreparedRequest prepare(const std::vector<ChatMessage>& messages,
                                  const GenerateOptions& opts) const = 0;
  virtual PreparedClassify prepare(const Prompt& prompt, const ClassifyOptions& opts) const = 0;
  // Throws RequestError: "dimensions" outside [1, embedding_size()], "prompt_name" the model
  // does not define, "prompt" as classify's.
  virtual PreparedEmbed prepare(const Prompt& prompt, const EmbedOptions& opts) const = 0;
  // The length of an embedding without truncation (the hidden size).
  virtual int embedding_size() const = 0;

  virtual GenerateResult generate(const PreparedRequest& request,
                                  const TokenCallback& on_token = {},
                                  const CancelToken& cancel = {}) = 0;
  virtual GenerateResult generate(const Prompt& prompt, const GenerateOptions& opts,
                                  const TokenCallback& on_token = {},
                                  const CancelToken& cancel = {}) = 0;
  virtual GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& opts,
                              const TokenCallback& on_token = {},
                              const CancelToken& cancel = {}) = 0;
  virtual std::vector<GenerateResult> batch_generate(const std::vector<Prompt>& prompts,
                                                     const GenerateOptions& opts,
                                                     const CancelToken& cancel = {},
                                                     BatchMetrics* metrics = nullptr) = 0;
  // Throws RequestError for options out of range; a prompt's own errors are its result's. Once
  // `cancel` is set, the prompts not yet classified come back with error "cancelled".
  virtual std::vector<ClassifyResult> classify(const std::vector<Prompt>& prompts,
                                               const ClassifyOptions& opts,
                                               BatchMetrics* metrics = nullptr,
                                               const CancelToken& cancel = {}) = 0;
  virtual std::vector<ClassifyResult> classify(const std::vector<PreparedClassify>& requests,
                                               BatchMetrics* metrics = nullptr,
                                               const CancelToken& cancel = {}) = 0;
  // One prefill per prompt through the scheduler (batched with everything else, no KV kept);
  // a prompt's own errors are its result's, as classify's. Throws RequestError for options out
  // of range (the prompts form checks them first).
  virtual std::vector<EmbedResult> embed(const std::vector<Prompt>& prompts,
                                         const EmbedOptions& opts, BatchMetrics* metrics = nullptr,
                                         const CancelToken& cancel = {}) = 0;
  virtual std::vector<EmbedResult> embed(const std::vector<PreparedEmbed>& requests,
                                         BatchMetrics* metrics = nullptr,
                                         const CancelToken& cancel = {}) = 0;
  // Asynchronous form of generate: never throws for request errors (they arrive as the final
  // event with finish_reason error).
  virtual std::unique_ptr<RequestStream> submit(const PreparedRequest& request) = 0;
  virtual std::unique_ptr<RequestStream> submit(const Prompt& prompt,
                                                const GenerateOptions& opts) = 0;
  // Many requests in one submission, admitted together as batch_generate's are (the C ABI's
  // batch, which needs each token's text): one stream per request, in order.
  virtual std::vector<std::unique_ptr<RequestStream>> submit(
      const std::vector<PreparedRequest>& requests) = 0;

  virtual std::vector<int32_t> tokenize(std::string_view text, bool add_special_tokens) const = 0;
  virtual std::string detokenize(const std::vector<int32_t>& ids) const = 0;
  // The model's chat template applied to messages (throws Error(invalid_argument) when the
  // template rejects them).
  virtual std::string apply_chat_template(const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt) const = 0;

  virtual EngineStats stats() const = 0;
};

}  // namespace tessera
