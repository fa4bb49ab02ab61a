// The C ABI over tessera::Engine: loading, single generations, model info and stats, the
// tokenizer. Every entry point catches everything.
#include <cstring>
#include <map>
#include <utility>

#include "capi/capi_internal.h"

using tessera::Engine;
using tessera::ErrorKind;
using tessera::GenerateOptions;
using tessera::PreparedRequest;
using namespace tessera::capi;

namespace {

// Runs one request into `out`: prepare (its input's errors become the result's, with
// TESSERA_INVALID_ARGUMENT), then the scheduler. A failure of the call itself (NULL engine,
// malformed options) returns its status, with the message in out->error too.
template <class Prepare>
tessera_status run_generate(tessera_engine* e, const tessera_generate_options* o,
                            tessera_token_callback cb, void* user, tessera_result* out,
                            Prepare&& prepare) {
  if (!out) return TESSERA_INVALID_ARGUMENT;
  std::memset(out, 0, sizeof *out);
  char* err = nullptr;
  tessera_status st = guard(&err, [&] {
    Engine& engine = engine_of(e);
    const GenerateOptions g = to_options(o);
    PieceEnds pieces;
    PreparedRequest req;
    try {
      req = prepare(engine, g);
    } catch (const tessera::Error& re) {
      fill_result(error_result(re.what()), pieces, out, status_of(re.kind()));
      return;
    }
    // On the scheduler's thread: records where each token's text ends, then the caller's.
    auto on_token = [&pieces, cb, user](int32_t id, std::string_view piece) {
      pieces.add(id, piece.size());
      return cb ? cb(user, id, piece.data(), piece.size()) != 0 : true;
    };
    tessera::GenerateResult r = engine.generate(req, on_token, token_of(o ? o->cancel : nullptr));
    fill_result(r, pieces, out);
  });
  if (st != TESSERA_OK) {
    tessera_result_free(out);
    out->finish_reason = "error";
    out->status = st;
    out->error = err;
  } else {
    std::free(err);
  }
  return st;
}

// The call's own arguments at fault: the status, and the message in out->error.
tessera_status call_error(tessera_result* out, const char* message) {
  if (!out) return TESSERA_INVALID_ARGUMENT;
  std::memset(out, 0, sizeof *out);
  out->finish_reason = "error";
  out->status = TESSERA_INVALID_ARGUMENT;
  out->error = static_cast<char*>(std::malloc(std::strlen(message) + 1));
  if (out->error) std::strcpy(out->error, message);
  return TESSERA_INVALID_ARGUMENT;
}

// The (bits, group size) of most weight matrices; (0, 0) when most are dense.
std::pair<int, int> main_format(const tessera::ModelInfo& info) {
  std::map<std::pair<int, int>, int> count;
  for (const auto& f : info.weight_formats) count[{f.bits, f.bits ? f.group_size : 0}] += f.count;
  std::pair<int, int> best{0, 0};
  int most = -1;
  for (const auto& [fmt, n] : count)
    if (n > most) most = n, best = fmt;
  return best;
}

constexpr bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}
static_assert(same(TESSERA_VERSION, TESSERA_PROJECT_VERSION),
              "tessera.h's TESSERA_VERSION differs from CMakeLists.txt's project version");

}  // namespace

extern "C" {

const char* tessera_version(void) {
  return TESSERA_VERSION;
}

const char* tessera_status_name(tessera_status status) {
  // Read as the int a C caller passed: any int is valid C, but loading one outside the enum's
  // values as the C++ enum is undefined (UBSan, scripts/sanitize.sh).
  int s = 0;
  std::memcpy(&s, &status, sizeof s);
  switch (s) {
    case TESSERA_OK:
      return "ok";
    case TESSERA_INVALID_ARGUMENT:
      return "invalid_argument";
    case TESSERA_INVALID_MODEL:
      return "invalid_model";
    case TESSERA_IO:
      return "io";
    case TESSERA_OUT_OF_MEMORY:
      return "out_of_memory";
    case TESSERA_UNSUPPORTED:
      return "unsupported";
    case TESSERA_CANCELLED:
      return "cancelled";
    case TESSERA_INTERNAL:
      return "internal";
  }
  return "unknown";
}

void tessera_engine_options_init(tessera_engine_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->prefix_cache = 1;
  o->warmup = 1;
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
  o->add_special_tokens = 1;
}

tessera_status tessera_engine_load(const tessera_engine_options* o, tessera_engine** out,
                                   char** error) {
  if (out) *out = nullptr;
  return guard(error, [&] {
    if (!o || !out || !o->model_dir) fail_arg("options, model_dir and out are required");
    tessera::EngineOptions eo;
    eo.model_dir = o->model_dir;
    if (o->device) eo.device = o->device;
    if (o->dtype) eo.dtype = o->dtype;
    if (o->context_length < 0 || o->max_batch_tokens < 0 || o->max_seqs < 0)
      fail_arg("context_length, max_batch_tokens and max_seqs must be >= 0 (0: automatic)");
    if (o->quantize != 0 && o->quantize != 4 && o->quantize != 8)
      fail_arg("quantize must be 0, 4 or 8, not " + std::to_string(o->quantize));
    eo.context_length = o->context_length;
    eo.memory_limit = o->memory_limit;
    eo.kv_memory = o->kv_memory;
    eo.max_batch_tokens = o->max_batch_tokens;
    eo.max_seqs = o->max_seqs;
    eo.prefix_cache = o->prefix_cache != 0;
    eo.quantize = o->quantize;
    eo.warmup = o->warmup != 0;
    auto h = std::make_unique<tessera_engine>();
    h->engine = Engine::load(eo);
    h->device = h->engine->device_name();
    h->eos = h->engine->eos_token_ids();
    *out = h.release();
  });
}

void tessera_engine_free(tessera_engine* e) {
  try {
    delete e;
  } catch (...) {  // a destructor that throws would terminate: nothing may leave the ABI
  }
}

tessera_cancel* tessera_cancel_new(void) {
  try {
    auto c = std::make_unique<tessera_cancel>();
    c->state = std::make_shared<CancelState>();
    return c.release();
  } catch (...) {
    return nullptr;
  }
}

void tessera_cancel_trigger(tessera_cancel* c) {
  if (c && c->state) c->state->trigger();
}

int tessera_cancel_is_triggered(const tessera_cancel* c) {
  return c && c->state && c->state->token.cancelled() ? 1 : 0;
}

void tessera_cancel_free(tessera_cancel* c) {
  delete c;
}

tessera_status tessera_generate(tessera_engine* e, const char* prompt,
                                const tessera_generate_options* o, tessera_token_callback cb,
                                void* user, tessera_result* out) {
  if (!prompt) return call_error(out, "prompt is NULL");
  return run_generate(e, o, cb, user, out, [&](Engine& engine, const GenerateOptions& g) {
    return engine.prepare(tessera::Prompt(std::string(prompt)), g);
  });
}

tessera_status tessera_generate_tokens(tessera_engine* e, const int32_t* ids, size_t n,
                                       const tessera_generate_options* o, tessera_token_callback cb,
                                       void* user, tessera_result* out) {
  if (!ids && n) return call_error(out, "ids is NULL but n is not 0");
  return run_generate(e, o, cb, user, out, [&](Engine& engine, const GenerateOptions& g) {
    return engine.prepare(tessera::Prompt(std::vector<int32_t>(ids, ids + n)), g);
  });
}

tessera_status tessera_chat(tessera_engine* e, const char* const* roles,
                            const char* const* contents, size_t n,
                            const tessera_generate_options* o, tessera_token_callback cb,
                            void* user, tessera_result* out) {
  if (n && (!roles || !contents)) return call_error(out, "roles and contents are required");
  for (size_t i = 0; i < n; ++i)
    if (!roles[i] || !contents[i]) return call_error(out, "a message's role or content is NULL");
  return run_generate(e, o, cb, user, out, [&](Engine& engine, const GenerateOptions& g) {
    std::vector<tessera::ChatMessage> m;
    for (size_t i = 0; i < n; ++i) m.push_back({roles[i], contents[i]});
    return engine.prepare(m, g);
  });
}

void tessera_result_free(tessera_result* r) {
  if (!r) return;
  std::free(r->ids);
  std::free(r->text);
  std::free(r->error);
  std::free(r->piece_ends);
  std::memset(r, 0, sizeof *r);
}

tessera_status tessera_model_info_get(tessera_engine* e, tessera_model_info* out, char** error) {
  if (out) std::memset(out, 0, sizeof *out);
  return guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!out) fail_arg("out is NULL");
    const tessera::ModelInfo& i = engine.info();
    out->architecture = i.architecture.c_str();
    out->model_type = i.model_type.c_str();
    out->device = e->device.c_str();
    out->weight_dtype = tessera::dtype_name(i.weight_dtype);
    out->vocab_size = i.vocab_size;
    out->hidden_size = i.hidden_size;
    out->intermediate_size = i.intermediate_size;
    out->num_layers = i.num_layers;
    out->num_heads = i.num_heads;
    out->num_kv_heads = i.num_kv_heads;
    out->head_dim = i.head_dim;
    out->max_position_embeddings = i.max_position_embeddings;
    out->context_length = engine.context_length();
    out->sliding_window = i.sliding_window;
    out->tied_embeddings = i.tied_embeddings;
    const auto [bits, group] = main_format(i);
    out->quant_bits = bits;
    out->quant_group_size = group;
    out->parameter_count = i.parameter_count;
    out->weight_bytes = i.weight_bytes;
    out->eos_token_ids = e->eos.data();
    out->n_eos_token_ids = e->eos.size();
    out->bos_token_id = i.bos_token_id;
    out->has_tokenizer = engine.has_tokenizer();
    out->has_chat_template = engine.has_chat_template();
  });
}

tessera_status tessera_engine_stats_get(tessera_engine* e, tessera_engine_stats* out,
                                        char** error) {
  if (out) std::memset(out, 0, sizeof *out);
  return guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!out) fail_arg("out is NULL");
    const tessera::EngineStats s = engine.stats();
    *out = {s.running,       s.waiting,       s.kv_blocks_used,   s.kv_blocks_total,
            s.kv_block_size, s.memory_active, s.memory_peak,      s.memory_limit,
            s.steps,         s.prompt_tokens, s.generated_tokens, s.cached_prompt_tokens,
            s.preemptions};
  });
}

tessera_status tessera_tokenize(tessera_engine* e, const char* text, int add_special, int32_t** ids,
                                size_t* n, char** error) {
  if (ids) *ids = nullptr;
  if (n) *n = 0;
  return guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!text || !ids || !n) fail_arg("text, ids and n are required");
    auto v = engine.tokenize(text, add_special != 0);
    *ids = alloc_array<int32_t>(v.size());
    std::copy(v.begin(), v.end(), *ids);
    *n = v.size();
  });
}

tessera_status tessera_detokenize(tessera_engine* e, const int32_t* ids, size_t n, char** text,
                                  char** error) {
  if (text) *text = nullptr;
  return guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!text || (!ids && n)) fail_arg("ids and text are required");
    *text = dup(engine.detokenize(std::vector<int32_t>(ids, ids + n)));
  });
}

void tessera_ids_free(int32_t* ids) {
  std::free(ids);
}
void tessera_string_free(char* s) {
  std::free(s);
}

}  // extern "C"
