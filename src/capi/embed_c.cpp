// The C ABI's embeddings: tessera_embed over Engine::embed, one result per prompt.
#include <cstring>

#include "capi/capi_internal.h"

using tessera::Engine;
using namespace tessera::capi;

namespace {

tessera::Pooling to_pooling(int p) {
  switch (p) {
    case TESSERA_POOLING_AUTO:
      return tessera::Pooling::automatic;
    case TESSERA_POOLING_MEAN:
      return tessera::Pooling::mean;
    case TESSERA_POOLING_CLS:
      return tessera::Pooling::cls;
    case TESSERA_POOLING_LAST:
      return tessera::Pooling::last;
  }
  fail_arg("pooling must be TESSERA_POOLING_AUTO, _MEAN, _CLS or _LAST (got " + std::to_string(p) +
           ")");
}

}  // namespace

extern "C" {

void tessera_embed_options_init(tessera_embed_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->pooling = TESSERA_POOLING_AUTO;
  o->normalize = 1;
  o->add_special_tokens = 1;
}

int32_t tessera_embedding_size(const tessera_engine* e) {
  if (!e || !e->engine) return 0;
  return e->engine->embedding_size();
}

tessera_status tessera_embed(tessera_engine* e, const tessera_prompt* prompts, size_t n,
                             const tessera_embed_options* o, tessera_embed_results* out,
                             char** error) {
  if (out) std::memset(out, 0, sizeof *out);
  tessera_status st = guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!out) fail_arg("out is NULL");
    if (n && !prompts) fail_arg("prompts is NULL but n is " + std::to_string(n));
    tessera_embed_options d;
    if (!o) {
      tessera_embed_options_init(&d);
      o = &d;
    }
    tessera::EmbedOptions eo;
    // A C caller may store any int in the enum; loading such a value as the C++ enum is
    // undefined (UBSan, scripts/sanitize.sh), so it is read as the int it is.
    static_assert(sizeof(tessera_pooling) == sizeof(int));
    int pooling = 0;
    std::memcpy(&pooling, &o->pooling, sizeof pooling);
    eo.pooling = to_pooling(pooling);
    eo.normalize = o->normalize != 0;
    eo.dimensions = o->dimensions;
    eo.add_special_tokens = o->add_special_tokens != 0;
    if (o->prompt_name) eo.prompt_name = o->prompt_name;
    std::vector<tessera::Prompt> ps;
    for (size_t i = 0; i < n; ++i) ps.push_back(to_prompt(prompts[i], i));
    tessera::BatchMetrics m;
    const std::vector<tessera::EmbedResult> rs = engine.embed(ps, eo, &m, token_of(o->cancel));
    out->results = alloc_array<tessera_embed_result>(rs.size());
    out->n = rs.size();
    for (size_t i = 0; i < rs.size(); ++i) {
      tessera_embed_result& r = out->results[i];
      r.prompt_tokens = rs[i].prompt_tokens;
      if (!rs[i].error.empty()) {
        r.status = status_of_request_error(rs[i].error);
        r.error = dup(rs[i].error);
        continue;
      }
      r.embedding = alloc_array<float>(rs[i].embedding.size());
      std::copy(rs[i].embedding.begin(), rs[i].embedding.end(), r.embedding);
      r.n_embedding = rs[i].embedding.size();
    }
    out->metrics = to_c(m);
  });
  if (st != TESSERA_OK) tessera_embed_results_free(out);
  return st;
}

void tessera_embed_results_free(tessera_embed_results* r) {
  if (!r) return;
  for (size_t i = 0; r->results && i < r->n; ++i) {
    std::free(r->results[i].embedding);
    std::free(r->results[i].error);
  }
  std::free(r->results);
  std::memset(r, 0, sizeof *r);
}

}  // extern "C"
