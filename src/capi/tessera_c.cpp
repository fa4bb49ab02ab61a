// The C ABI over tessera::Engine: every entry point catches everything.
#include "tessera/tessera.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "tessera/engine.h"

struct tessera_engine {
  std::unique_ptr<tessera::Engine> engine;
};

namespace {

using tessera::ErrorKind;

char* dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

tessera_status status_of(ErrorKind k) {
  switch (k) {
    case ErrorKind::invalid_argument:
      return TESSERA_INVALID_ARGUMENT;
    case ErrorKind::invalid_model:
      return TESSERA_INVALID_MODEL;
    case ErrorKind::io:
      return TESSERA_IO;
    case ErrorKind::out_of_memory:
      return TESSERA_OUT_OF_MEMORY;
    case ErrorKind::unsupported:
      return TESSERA_UNSUPPORTED;
    case ErrorKind::cancelled:
      return TESSERA_CANCELLED;
    case ErrorKind::internal:
      return TESSERA_INTERNAL;
  }
  return TESSERA_INTERNAL;
}

// Runs body, mapping exceptions to a status and an error string.
template <class F>
tessera_status guard(char** error, F&& body) {
  if (error) *error = nullptr;
  try {
    body();
    return TESSERA_OK;
  } catch (const tessera::Error& e) {
    if (error) *error = dup(e.what());
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    if (error) *error = dup("out of memory");
    return TESSERA_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    if (error) *error = dup(e.what());
    return TESSERA_INTERNAL;
  } catch (...) {
    if (error) *error = dup("unknown error");
    return TESSERA_INTERNAL;
  }
}

tessera::GenerateOptions to_options(const tessera_generate_options* o) {
  tessera_generate_options d;
  if (!o) {
    tessera_generate_options_init(&d);
    o = &d;
  }
  tessera::GenerateOptions g;
  g.sampling.temperature = o->temperature;
  g.sampling.top_k = o->top_k;
  g.sampling.top_p = o->top_p;
  g.sampling.min_p = o->min_p;
  g.sampling.repetition_penalty = o->repetition_penalty;
  g.sampling.presence_penalty = o->presence_penalty;
  g.sampling.frequency_penalty = o->frequency_penalty;
  if (o->seed >= 0) g.sampling.seed = static_cast<uint64_t>(o->seed);
  g.max_tokens = o->max_tokens;
  g.min_tokens = o->min_tokens;
  for (size_t i = 0; i < o->n_stop; ++i)
    if (o->stop && o->stop[i]) g.stop.emplace_back(o->stop[i]);
  for (size_t i = 0; i < o->n_stop_token_ids; ++i) g.stop_token_ids.push_back(o->stop_token_ids[i]);
  g.ignore_eos = o->ignore_eos != 0;
  return g;
}

tessera::TokenCallback to_callback(tessera_token_callback cb, void* user) {
  if (!cb) return {};
  return [cb, user](int32_t id, std::string_view piece) {
    return cb(user, id, piece.data(), piece.size()) != 0;
  };
}

void fill(const tessera::GenerateResult& r, tessera_result* out) {
  std::memset(out, 0, sizeof *out);
  out->n_ids = r.ids.size();
  out->ids = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (r.ids.size() + 1)));
  if (!out->ids) throw std::bad_alloc();
  std::memcpy(out->ids, r.ids.data(), sizeof(int32_t) * r.ids.size());
  out->text = dup(r.text);
  out->finish_reason = tessera::finish_reason_name(r.finish_reason);
  out->error = r.finish_reason == tessera::FinishReason::error ? dup(r.error) : nullptr;
  const auto& m = r.metrics;
  out->metrics = {m.prompt_tokens,     m.cached_prompt_tokens, m.generated_tokens,
                  m.ttft_ms,           m.prefill_ms,           m.decode_ms,
                  m.total_ms,          m.prefill_tokens_per_s, m.decode_tokens_per_s,
                  m.peak_memory_bytes, m.active_memory_bytes};
}

// Runs one request into `out`; a failure of the call itself also lands in out->error.
template <class F>
tessera_status run_request(tessera_engine* e, tessera_result* out, F&& request) {
  if (!out) return TESSERA_INVALID_ARGUMENT;
  std::memset(out, 0, sizeof *out);
  char* err = nullptr;
  tessera_status st = guard(&err, [&] {
    if (!e || !e->engine) throw tessera::Error(ErrorKind::invalid_argument, "no engine");
    fill(request(*e->engine), out);
  });
  if (st != TESSERA_OK) {
    out->finish_reason = "error";
    out->error = err;
  } else {
    std::free(err);
  }
  return st;
}

tessera_status run_generate(tessera_engine* e, const tessera::Prompt& p,
                            const tessera_generate_options* o, tessera_token_callback cb,
                            void* user, tessera_result* out) {
  return run_request(e, out, [&](tessera::Engine& engine) {
    return engine.generate(p, to_options(o), to_callback(cb, user));
  });
}

}  // namespace

extern "C" {

void tessera_engine_options_init(tessera_engine_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->prefix_cache = 1;
}

void tessera_generate_options_init(tessera_generate_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->temperature = 0.8f;
  o->top_k = 40;
  o->top_p = 0.95f;
  o->min_p = 0.05f;
  o->repetition_penalty = 1.0f;
  o->seed = -1;
  o->max_tokens = 256;
}

tessera_status tessera_engine_load(const tessera_engine_options* o, tessera_engine** out,
                                   char** error) {
  if (out) *out = nullptr;
  return guard(error, [&] {
    if (!o || !out || !o->model_dir)
      throw tessera::Error(ErrorKind::invalid_argument, "options, model_dir and out are required");
    tessera::EngineOptions eo;
    eo.model_dir = o->model_dir;
    if (o->device) eo.device = o->device;
    if (o->dtype) eo.dtype = o->dtype;
    eo.context_length = o->context_length;
    eo.memory_limit = o->memory_limit;
    eo.kv_memory = o->kv_memory;
    eo.max_batch_tokens = o->max_batch_tokens;
    eo.max_seqs = o->max_seqs;
    eo.prefix_cache = o->prefix_cache != 0;
    auto h = std::make_unique<tessera_engine>();
    h->engine = tessera::Engine::load(eo);
    *out = h.release();
  });
}

void tessera_engine_free(tessera_engine* e) {
  delete e;
}

tessera_status tessera_generate(tessera_engine* e, const char* prompt,
                                const tessera_generate_options* o, tessera_token_callback cb,
                                void* user, tessera_result* out) {
  if (!prompt) return TESSERA_INVALID_ARGUMENT;
  return run_generate(e, tessera::Prompt(std::string(prompt)), o, cb, user, out);
}

tessera_status tessera_generate_tokens(tessera_engine* e, const int32_t* ids, size_t n,
                                       const tessera_generate_options* o, tessera_token_callback cb,
                                       void* user, tessera_result* out) {
  if (!ids && n) return TESSERA_INVALID_ARGUMENT;
  return run_generate(e, tessera::Prompt(std::vector<int32_t>(ids, ids + n)), o, cb, user, out);
}

tessera_status tessera_chat(tessera_engine* e, const char* const* roles,
                            const char* const* contents, size_t n,
                            const tessera_generate_options* o, tessera_token_callback cb,
                            void* user, tessera_result* out) {
  if (n && (!roles || !contents)) return TESSERA_INVALID_ARGUMENT;
  return run_request(e, out, [&](tessera::Engine& engine) {
    std::vector<tessera::ChatMessage> m;
    for (size_t i = 0; i < n; ++i) {
      if (!roles[i] || !contents[i])
        throw tessera::Error(ErrorKind::invalid_argument,
                             "message " + std::to_string(i) + " is NULL");
      m.push_back({roles[i], contents[i]});
    }
    return engine.chat(m, to_options(o), to_callback(cb, user));
  });
}

void tessera_result_free(tessera_result* r) {
  if (!r) return;
  std::free(r->ids);
  std::free(r->text);
  std::free(r->error);
  std::memset(r, 0, sizeof *r);
}

tessera_status tessera_tokenize(tessera_engine* e, const char* text, int add_special, int32_t** ids,
                                size_t* n, char** error) {
  if (ids) *ids = nullptr;
  if (n) *n = 0;
  return guard(error, [&] {
    if (!e || !e->engine || !text || !ids || !n)
      throw tessera::Error(ErrorKind::invalid_argument, "engine, text, ids and n are required");
    auto v = e->engine->tokenize(text, add_special != 0);
    *ids = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (v.size() + 1)));
    if (!*ids) throw std::bad_alloc();
    std::memcpy(*ids, v.data(), sizeof(int32_t) * v.size());
    *n = v.size();
  });
}

tessera_status tessera_detokenize(tessera_engine* e, const int32_t* ids, size_t n, char** text,
                                  char** error) {
  if (text) *text = nullptr;
  return guard(error, [&] {
    if (!e || !e->engine || !text || (!ids && n))
      throw tessera::Error(ErrorKind::invalid_argument, "engine, ids and text are required");
    *text = dup(e->engine->detokenize(std::vector<int32_t>(ids, ids + n)));
  });
}

void tessera_ids_free(int32_t* ids) {
  std::free(ids);
}
void tessera_string_free(char* s) {
  std::free(s);
}

}  // extern "C"
