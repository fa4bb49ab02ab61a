/* tessera's C ABI, for other languages (Go through cgo first). Every function returns a status
 * and never lets a C++ exception or a crash escape for bad input: errors come back as a status
 * plus a message the caller frees with tessera_string_free. Handles are opaque.
 *
 * Threads: an engine may be used from any number of threads at once (every request goes through
 * one continuous-batching scheduler, which batches them). A stream is consumed by one thread at a
 * time; tessera_stream_cancel and tessera_cancel_trigger may be called from any thread.
 *
 * Memory: what a call returns through an out-parameter belongs to the caller and is freed with
 * the matching *_free function; pointers marked "borrowed" stay valid as long as their owner. */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; tessera_version() is the library's (they differ when a program
 * runs against another build than it was compiled with). Minor versions before 1.0 may change
 * the ABI. */
#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 2
#define TESSERA_VERSION_PATCH 0
#define TESSERA_VERSION "0.2.0"

typedef enum {
  TESSERA_OK = 0,
  TESSERA_INVALID_ARGUMENT = 1,
  TESSERA_INVALID_MODEL = 2,
  TESSERA_IO = 3,
  TESSERA_OUT_OF_MEMORY = 4,
  TESSERA_UNSUPPORTED = 5,
  TESSERA_CANCELLED = 6,
  TESSERA_INTERNAL = 7
} tessera_status;

/* "MAJOR.MINOR.PATCH" of the library (static storage). */
const char* tessera_version(void);
/* A static name for a status ("ok", "invalid_argument", ...; "unknown" for other values). */
const char* tessera_status_name(tessera_status s);

typedef struct tessera_engine tessera_engine;

typedef struct {
  const char* model_dir;
  const char* device;       /* "auto" | "cpu" | "cuda"; NULL: auto */
  const char* dtype;        /* "auto" | "f32" | "bf16"; NULL: auto */
  int32_t context_length;   /* 0: automatic */
  uint64_t memory_limit;    /* bytes; 0: none */
  uint64_t kv_memory;       /* bytes; 0: automatic */
  int32_t max_batch_tokens; /* 0: automatic */
  int32_t max_seqs;         /* 0: automatic */
  int32_t prefix_cache;     /* non-zero: share KV between prompts with the same prefix */
  int32_t quantize; /* 4 | 8: quantize a dense checkpoint's matrices at load; 0: as stored */
  int32_t warmup;   /* non-zero (the default): warm a GPU up at load */
} tessera_engine_options;

/* A cancel handle: set it from any thread and every request it was given to ends at the
 * scheduler's next step (generations with the tokens they have, classifications not yet run
 * with TESSERA_CANCELLED). One handle may serve several requests; it cannot be reset. */
typedef struct tessera_cancel tessera_cancel;

typedef struct {
  float temperature; /* 0: greedy */
  int32_t top_k;
  float top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
  int64_t seed; /* < 0: from the clock */
  int32_t max_tokens, min_tokens;
  const char* const* stop; /* stop strings */
  size_t n_stop;
  const int32_t* stop_token_ids;
  size_t n_stop_token_ids;
  int32_t ignore_eos;
  int32_t add_special_tokens; /* text prompts: add BOS as Hugging Face does (default 1) */
  tessera_cancel* cancel;     /* NULL: only the token callback (or freeing a stream) cancels */
  /* Structured output (docs/GRAMMAR.md): constraint_kind "json_object", "json_schema" (constraint:
   * the schema as JSON), "regex" (constraint: the pattern, matched in full) or "grammar"
   * (constraint: GBNF); NULL: free text. A bad constraint is TESSERA_INVALID_ARGUMENT naming it. */
  const char* constraint_kind;
  const char* constraint;
} tessera_generate_options;

typedef struct {
  int32_t prompt_tokens, cached_prompt_tokens, generated_tokens;
  double ttft_ms, prefill_ms, decode_ms, total_ms, prefill_tokens_per_s, decode_tokens_per_s;
  uint64_t peak_memory_bytes, active_memory_bytes;
} tessera_metrics;

typedef struct {
  int32_t* ids; /* generated ids */
  size_t n_ids;
  char* text;                /* NUL-terminated UTF-8 */
  const char* finish_reason; /* "stop" | "length" | "cancelled" | "error" (static storage) */
  char* error;               /* NULL unless finish_reason is "error" */
  tessera_metrics metrics;
  /* The status of the request: TESSERA_OK ("stop", "length"), TESSERA_CANCELLED, or the
   * error's (TESSERA_INVALID_ARGUMENT for the request's own input, TESSERA_OUT_OF_MEMORY when it
   * can never fit the KV pool, TESSERA_INTERNAL for a failed step). */
  tessera_status status;
  /* n_ids entries: the end offset in text of what was final once ids[i] was generated, so
   * ids[i]'s text is text[piece_ends[i-1] .. piece_ends[i]) (from 0 for i = 0). A piece may be
   * empty (UTF-8 still incomplete, text held back for a stop string); text past
   * piece_ends[n_ids-1] was released when generation ended. */
  size_t* piece_ends;
} tessera_result;

/* Called for each generated token with the text that became final (len bytes, may be 0; id -1
 * for text released at the end). Return 0 to cancel the request. */
typedef int (*tessera_token_callback)(void* user, int32_t id, const char* piece, size_t len);

void tessera_engine_options_init(tessera_engine_options* o);
void tessera_generate_options_init(tessera_generate_options* o);

tessera_status tessera_engine_load(const tessera_engine_options* o, tessera_engine** out,
                                   char** error);
/* Cancels what is still running on the engine and waits for it; no other call on the engine may
 * be in flight or follow. */
void tessera_engine_free(tessera_engine* e);

/* NULL only when out of memory. */
tessera_cancel* tessera_cancel_new(void);
void tessera_cancel_trigger(tessera_cancel* c);
int tessera_cancel_is_triggered(const tessera_cancel* c);
/* May be freed while requests given it still run: they keep what they need. */
void tessera_cancel_free(tessera_cancel* c);

/* Text prompt (BOS added as Hugging Face does) or token ids. `out` must be freed with
 * tessera_result_free. A request-level failure returns TESSERA_OK with finish_reason "error",
 * the message in out->error and out->status; invalid arguments to the call itself return a
 * status (out->error holds the message then too). */
tessera_status tessera_generate(tessera_engine* e, const char* prompt,
                                const tessera_generate_options* o, tessera_token_callback cb,
                                void* user, tessera_result* out);
tessera_status tessera_generate_tokens(tessera_engine* e, const int32_t* ids, size_t n,
                                       const tessera_generate_options* o, tessera_token_callback cb,
                                       void* user, tessera_result* out);
/* Messages as parallel arrays of roles and contents, rendered with the model's chat template. */
tessera_status tessera_chat(tessera_engine* e, const char* const* roles,
                            const char* const* contents, size_t n,
                            const tessera_generate_options* o, tessera_token_callback cb,
                            void* user, tessera_result* out);
void tessera_result_free(tessera_result* r);

/* ---- Many prompts at once: batch generation and classification ---- */

/* One prompt: text (when text is not NULL) or n_ids token ids. */
typedef struct {
  const char* text;
  const int32_t* ids;
  size_t n_ids;
} tessera_prompt;

typedef struct {
  int32_t requests, prompt_tokens, generated_tokens;
  double total_ms, requests_per_s, prompt_tokens_per_s, generated_tokens_per_s;
  uint64_t peak_memory_bytes;
} tessera_batch_metrics;

typedef struct {
  tessera_result* results; /* n, in the prompts' order */
  size_t n;
  tessera_batch_metrics metrics;
} tessera_batch_results;

/* Decodes the prompts together, each with the options' stop conditions. Options out of range
 * fail the call (TESSERA_INVALID_ARGUMENT and a message); each prompt's own failure (a bad
 * prompt, one that does not fit) is its result's. A cancelled batch returns TESSERA_OK with every
 * unfinished result "cancelled", holding the tokens it had. Free `out` with
 * tessera_batch_results_free. */
tessera_status tessera_batch_generate(tessera_engine* e, const tessera_prompt* prompts, size_t n,
                                      const tessera_generate_options* o, tessera_batch_results* out,
                                      char** error);
void tessera_batch_results_free(tessera_batch_results* r);

typedef struct {
  float temperature; /* 0 (the default): the argmax */
  int32_t top_k;
  float top_p, min_p;
  int64_t seed;               /* < 0: from the clock */
  int32_t return_logits;      /* non-zero: the full logits row at each prompt's last position */
  int32_t top_logprobs;       /* 0..20 */
  int32_t add_special_tokens; /* text prompts: add BOS (default 1) */
  tessera_cancel* cancel;
} tessera_classify_options;

typedef struct {
  int32_t id;
  float logprob;
  char* text; /* the token's own text */
} tessera_token_logprob;

typedef struct {
  int32_t token; /* -1 when this prompt failed */
  char* text;
  float logprob;
  float* logits; /* n_logits (the vocabulary) when return_logits, else NULL */
  size_t n_logits;
  tessera_token_logprob* top_logprobs; /* most likely first */
  size_t n_top_logprobs;
  int32_t prompt_tokens;
  tessera_status status; /* TESSERA_OK, or this prompt's failure (TESSERA_CANCELLED: not run) */
  char* error;           /* NULL unless status is not TESSERA_OK */
} tessera_classify_result;

typedef struct {
  tessera_classify_result* results;
  size_t n;
  tessera_batch_metrics metrics;
} tessera_classify_results;

void tessera_classify_options_init(tessera_classify_options* o);
/* One forward per prompt: the next token at its last position. Options out of range fail the
 * call (TESSERA_INVALID_ARGUMENT and a message); a prompt's own failure is its result's. */
tessera_status tessera_classify(tessera_engine* e, const tessera_prompt* prompts, size_t n,
                                const tessera_classify_options* o, tessera_classify_results* out,
                                char** error);
void tessera_classify_results_free(tessera_classify_results* r);

typedef enum {
  TESSERA_POOLING_AUTO = 0, /* the last token's state (a causal decoder's) */
  TESSERA_POOLING_MEAN = 1,
  TESSERA_POOLING_CLS = 2, /* the first position's */
  TESSERA_POOLING_LAST = 3
} tessera_pooling;

typedef struct {
  tessera_pooling pooling;
  int32_t normalize;          /* non-zero (the default): unit L2 norm, after the truncation */
  int32_t dimensions;         /* > 0: keep the first N values (Matryoshka truncation); 0: all */
  int32_t add_special_tokens; /* text prompts: add BOS (default 1) */
  const char* prompt_name;    /* a sentence-transformers prompt before text prompts; NULL: the
                                 model's default, if any */
  tessera_cancel* cancel;
} tessera_embed_options;

typedef struct {
  float* embedding; /* n_embedding values; NULL when this prompt failed */
  size_t n_embedding;
  int32_t prompt_tokens;
  tessera_status status; /* TESSERA_OK, or this prompt's failure (TESSERA_CANCELLED: not run) */
  char* error;           /* NULL unless status is not TESSERA_OK */
} tessera_embed_result;

typedef struct {
  tessera_embed_result* results;
  size_t n;
  tessera_batch_metrics metrics;
} tessera_embed_results;

void tessera_embed_options_init(tessera_embed_options* o);
/* The length of an embedding without truncation (the model's hidden size); 0 for NULL. */
int32_t tessera_embedding_size(const tessera_engine* e);
/* One prefill per prompt, the final hidden states pooled (Engine::embed). Options out of range
 * fail the call (TESSERA_INVALID_ARGUMENT naming "dimensions"); a prompt's own failure is its
 * result's. Free `out` with tessera_embed_results_free. */
tessera_status tessera_embed(tessera_engine* e, const tessera_prompt* prompts, size_t n,
                             const tessera_embed_options* o, tessera_embed_results* out,
                             char** error);
void tessera_embed_results_free(tessera_embed_results* r);

/* ---- Pull-style streams: a binding takes tokens on its own thread, no callback into it ---- */

typedef struct tessera_stream tessera_stream;

typedef enum {
  TESSERA_EVENT_NONE = 0,  /* the timeout passed first */
  TESSERA_EVENT_TOKEN = 1, /* a generated token (id -1: text released at the end) */
  TESSERA_EVENT_DONE = 2   /* the request ended: result; every later call returns it again */
} tessera_event_kind;

typedef struct {
  tessera_event_kind kind;
  int32_t id;
  const char* piece; /* borrowed until the next call on the stream: piece_len bytes + NUL */
  size_t piece_len;
  const tessera_result* result; /* DONE: borrowed from the stream until it is freed */
} tessera_event;

/* Submits a generation and returns at once. A request whose input is at fault still gets a
 * stream, whose one event is DONE with the error (as a generation's result); only arguments
 * to the call itself (NULL engine, prompt or out) fail it. */
tessera_status tessera_stream_submit(tessera_engine* e, const char* prompt,
                                     const tessera_generate_options* o, tessera_stream** out,
                                     char** error);
tessera_status tessera_stream_submit_tokens(tessera_engine* e, const int32_t* ids, size_t n,
                                            const tessera_generate_options* o, tessera_stream** out,
                                            char** error);
tessera_status tessera_stream_submit_chat(tessera_engine* e, const char* const* roles,
                                          const char* const* contents, size_t n,
                                          const tessera_generate_options* o, tessera_stream** out,
                                          char** error);
/* Waits up to timeout_ms (negative: until an event) for the next event. */
tessera_status tessera_stream_next(tessera_stream* s, int32_t timeout_ms, tessera_event* ev);
/* Any thread: the request ends at the scheduler's next step (its DONE event follows). */
void tessera_stream_cancel(tessera_stream* s);
/* Cancels the request if it is still running and frees the stream. */
void tessera_stream_free(tessera_stream* s);

/* ---- What the engine holds ---- */

typedef struct {
  const char* architecture; /* borrowed from the engine: e.g. "Gemma3ForCausalLM" */
  const char* model_type;   /* e.g. "gemma3_text" */
  const char* device;       /* e.g. "cpu", "cuda:0 (NVIDIA H200)" */
  const char* weight_dtype; /* as held in memory: "f32" | "bf16" | ... */
  int32_t vocab_size, hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, head_dim;
  int32_t max_position_embeddings;
  int32_t context_length; /* positions per sequence on this engine */
  int32_t sliding_window; /* 0: no layer slides */
  int32_t tied_embeddings;
  /* The format of most weight matrices: 0 / 0 when dense, else MLX affine bits and group. */
  int32_t quant_bits, quant_group_size;
  int64_t parameter_count;
  uint64_t weight_bytes;
  const int32_t* eos_token_ids; /* borrowed: the set generation stops on */
  size_t n_eos_token_ids;
  int32_t bos_token_id; /* -1: none */
  int32_t has_tokenizer, has_chat_template;
} tessera_model_info;

/* A snapshot of the scheduler and the device memory. */
typedef struct {
  int32_t running, waiting;
  int32_t kv_blocks_used, kv_blocks_total, kv_block_size;
  uint64_t memory_active, memory_peak, memory_limit; /* bytes; limit 0: none */
  int64_t steps, prompt_tokens, generated_tokens, cached_prompt_tokens, preemptions;
} tessera_engine_stats;

tessera_status tessera_model_info_get(tessera_engine* e, tessera_model_info* out, char** error);
tessera_status tessera_engine_stats_get(tessera_engine* e, tessera_engine_stats* out, char** error);

/* Token ids of `text` (*ids freed with tessera_ids_free); text of ids (freed with
 * tessera_string_free). */
tessera_status tessera_tokenize(tessera_engine* e, const char* text, int add_special, int32_t** ids,
                                size_t* n, char** error);
tessera_status tessera_detokenize(tessera_engine* e, const int32_t* ids, size_t n, char** text,
                                  char** error);
void tessera_ids_free(int32_t* ids);
void tessera_string_free(char* s);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_H */
