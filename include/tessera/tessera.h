/* tessera's C ABI, for other languages (Go through cgo first). Every function returns a status
 * and never lets a C++ exception or a crash escape for bad input: errors come back as a status
 * plus a message the caller frees with tessera_string_free. Handles are opaque. */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
} tessera_engine_options;

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
} tessera_result;

/* Called for each generated token with the text that became final (len bytes, may be 0; id -1
 * for text released at the end). Return 0 to cancel the request. */
typedef int (*tessera_token_callback)(void* user, int32_t id, const char* piece, size_t len);

void tessera_engine_options_init(tessera_engine_options* o);
void tessera_generate_options_init(tessera_generate_options* o);

tessera_status tessera_engine_load(const tessera_engine_options* o, tessera_engine** out,
                                   char** error);
void tessera_engine_free(tessera_engine* e);

/* Text prompt (BOS added as Hugging Face does) or token ids. `out` must be freed with
 * tessera_result_free. A request-level failure returns TESSERA_OK with finish_reason "error"
 * and the message in out->error; invalid arguments to the call itself return a status. */
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
