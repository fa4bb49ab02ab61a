/* Compiled as C: the header must be plain C. Runs greedy generations through the C ABI. */
#include <string.h>

#include "tessera/tessera.h"

static int count_pieces(void* user, int32_t id, const char* piece, size_t len) {
  (void)id;
  (void)piece;
  (void)len;
  ++*(int*)user;
  return 1;
}

/* Returns the number of callback calls, or a negative step number on failure. */
int capi_smoke_generate(const char* model_dir, char* text_out, size_t cap) {
  tessera_engine_options eo;
  tessera_engine_options_init(&eo);
  eo.model_dir = model_dir;
  eo.device = "cpu";
  eo.context_length = 128;
  tessera_engine* e = NULL;
  char* err = NULL;
  if (tessera_engine_load(&eo, &e, &err) != TESSERA_OK) {
    tessera_string_free(err);
    return -1;
  }
  tessera_generate_options go;
  tessera_generate_options_init(&go);
  go.temperature = 0;
  go.max_tokens = 5;
  tessera_result r;
  int calls = 0;
  if (tessera_generate(e, "Hello", &go, count_pieces, &calls, &r) != TESSERA_OK) return -2;
  if (strcmp(r.finish_reason, "length") != 0 || r.n_ids != 5) return -3;
  strncpy(text_out, r.text, cap - 1);
  text_out[cap - 1] = 0;
  tessera_result_free(&r);
  tessera_engine_free(e);
  return calls;
}

/* A greedy stream drained from C: the number of token events, or a negative step on failure;
 * the streamed text in text_out. */
int capi_smoke_stream(tessera_engine* e, const char* prompt, int max_tokens, char* text_out,
                      size_t cap) {
  tessera_generate_options go;
  tessera_generate_options_init(&go);
  go.temperature = 0;
  go.max_tokens = max_tokens;
  tessera_stream* s = NULL;
  if (tessera_stream_submit(e, prompt, &go, &s, NULL) != TESSERA_OK) return -1;
  size_t at = 0;
  int tokens = 0;
  tessera_event ev;
  for (;;) {
    if (tessera_stream_next(s, -1, &ev) != TESSERA_OK) return -2;
    if (ev.kind == TESSERA_EVENT_DONE) break;
    ++tokens;
    if (at + ev.piece_len < cap) {
      memcpy(text_out + at, ev.piece, ev.piece_len);
      at += ev.piece_len;
    }
  }
  text_out[at] = 0;
  int ok = ev.result->status == TESSERA_OK;
  tessera_stream_free(s);
  return ok ? tokens : -3;
}
