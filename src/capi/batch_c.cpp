// The C ABI's many-prompt jobs: batch generation and classification.
#include <algorithm>
#include <chrono>

#include "capi/capi_internal.h"

using tessera::Engine;
using namespace tessera::capi;

namespace {

std::vector<tessera::Prompt> to_prompts(const tessera_prompt* prompts, size_t n) {
  if (n && !prompts) fail_arg("prompts is NULL but n is " + std::to_string(n));
  std::vector<tessera::Prompt> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(to_prompt(prompts[i], i));
  return out;
}

// A stream drained to its end: the pieces' ends as they arrived, then the result.
void drain(tessera::RequestStream& s, tessera_result* out) {
  PieceEnds pieces;
  tessera::RequestStream::Event ev;
  while (s.next(ev, -1)) {
    if (ev.done) {
      fill_result(ev.result, pieces, out);
      return;
    }
    pieces.add(ev.id, ev.piece.size());
  }
}

void fill_classify(const tessera::ClassifyResult& c, tessera_classify_result* out) {
  out->token = c.error.empty() ? c.token : -1;
  out->text = dup(c.text);
  out->logprob = c.logprob;
  out->prompt_tokens = c.prompt_tokens;
  if (!c.logits.empty()) {
    out->logits = alloc_array<float>(c.logits.size());
    std::copy(c.logits.begin(), c.logits.end(), out->logits);
    out->n_logits = c.logits.size();
  }
  if (!c.top_logprobs.empty()) {
    out->top_logprobs = alloc_array<tessera_token_logprob>(c.top_logprobs.size());
    out->n_top_logprobs = c.top_logprobs.size();
    for (size_t k = 0; k < c.top_logprobs.size(); ++k) {
      out->top_logprobs[k].id = c.top_logprobs[k].id;
      out->top_logprobs[k].logprob = c.top_logprobs[k].logprob;
      out->top_logprobs[k].text = dup(c.top_logprobs[k].text);
    }
  }
  if (!c.error.empty()) {
    out->status = status_of_request_error(c.error);
    out->error = dup(c.error);
  }
}

}  // namespace

extern "C" {

// Each prompt goes through prepare() here, so that its own errors carry their status, then all
// are submitted at once (one admission, as Engine::batch_generate's) as streams, which give each
// token's text.
tessera_status tessera_batch_generate(tessera_engine* e, const tessera_prompt* prompts, size_t n,
                                      const tessera_generate_options* o, tessera_batch_results* out,
                                      char** error) {
  if (out) std::memset(out, 0, sizeof *out);
  const auto t0 = std::chrono::steady_clock::now();
  tessera_status st = guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!out) fail_arg("out is NULL");
    const std::vector<tessera::Prompt> ps = to_prompts(prompts, n);
    const tessera::GenerateOptions g = to_options(o);
    engine.validate(g);  // the options are every prompt's: a bad one fails the call
    out->results = alloc_array<tessera_result>(n);
    out->n = n;
    std::vector<tessera::PreparedRequest> reqs;
    std::vector<size_t> at;  // reqs[j] is prompts[at[j]]
    for (size_t i = 0; i < n; ++i) {
      try {
        reqs.push_back(engine.prepare(ps[i], g));
        at.push_back(i);
      } catch (const tessera::Error& re) {
        fill_result(error_result(re.what()), PieceEnds(), &out->results[i], status_of(re.kind()));
      }
    }
    const auto cancel = cancel_state(o ? o->cancel : nullptr);
    if (cancel && cancel->token.cancelled()) {  // as a stream's: nothing submitted
      tessera::GenerateResult r;
      r.finish_reason = tessera::FinishReason::cancelled;
      for (size_t i : at) fill_result(r, PieceEnds(), &out->results[i]);
      reqs.clear();
    }
    std::vector<std::unique_ptr<tessera::RequestStream>> streams = engine.submit(reqs);
    std::vector<std::unique_ptr<Attached>> attached;
    for (auto& s : streams) attached.push_back(std::make_unique<Attached>(cancel, s.get()));
    for (size_t j = 0; j < streams.size(); ++j) drain(*streams[j], &out->results[at[j]]);
    tessera::BatchMetrics m;
    m.requests = static_cast<int>(n);
    for (size_t i = 0; i < n; ++i) {
      m.prompt_tokens += out->results[i].metrics.prompt_tokens;
      m.generated_tokens += out->results[i].metrics.generated_tokens;
    }
    m.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (m.total_ms > 0) {
      m.requests_per_s = m.requests / (m.total_ms / 1e3);
      m.prompt_tokens_per_s = m.prompt_tokens / (m.total_ms / 1e3);
      m.generated_tokens_per_s = m.generated_tokens / (m.total_ms / 1e3);
    }
    m.peak_memory_bytes = engine.stats().memory_peak;
    out->metrics = to_c(m);
  });
  if (st != TESSERA_OK) tessera_batch_results_free(out);
  return st;
}

void tessera_batch_results_free(tessera_batch_results* r) {
  if (!r) return;
  for (size_t i = 0; r->results && i < r->n; ++i) tessera_result_free(&r->results[i]);
  std::free(r->results);
  std::memset(r, 0, sizeof *r);
}

void tessera_classify_options_init(tessera_classify_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->temperature = 0.0f;
  o->top_p = 1.0f;
  o->seed = -1;
  o->add_special_tokens = 1;
}

tessera_status tessera_classify(tessera_engine* e, const tessera_prompt* prompts, size_t n,
                                const tessera_classify_options* o, tessera_classify_results* out,
                                char** error) {
  if (out) std::memset(out, 0, sizeof *out);
  tessera_status st = guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!out) fail_arg("out is NULL");
    tessera_classify_options d;
    if (!o) {
      tessera_classify_options_init(&d);
      o = &d;
    }
    tessera::ClassifyOptions co;
    co.sampling.temperature = o->temperature;
    co.sampling.top_k = o->top_k;
    co.sampling.top_p = o->top_p;
    co.sampling.min_p = o->min_p;
    if (o->seed >= 0) co.sampling.seed = static_cast<uint64_t>(o->seed);
    co.return_logits = o->return_logits != 0;
    co.top_logprobs = o->top_logprobs;
    co.add_special_tokens = o->add_special_tokens != 0;
    tessera::BatchMetrics m;
    const std::vector<tessera::ClassifyResult> rs =
        engine.classify(to_prompts(prompts, n), co, &m, token_of(o->cancel));
    out->results = alloc_array<tessera_classify_result>(rs.size());
    out->n = rs.size();
    for (size_t i = 0; i < rs.size(); ++i) fill_classify(rs[i], &out->results[i]);
    out->metrics = to_c(m);
  });
  if (st != TESSERA_OK) tessera_classify_results_free(out);
  return st;
}

void tessera_classify_results_free(tessera_classify_results* r) {
  if (!r) return;
  for (size_t i = 0; r->results && i < r->n; ++i) {
    tessera_classify_result& c = r->results[i];
    std::free(c.text);
    std::free(c.logits);
    for (size_t k = 0; c.top_logprobs && k < c.n_top_logprobs; ++k)
      std::free(c.top_logprobs[k].text);
    std::free(c.top_logprobs);
    std::free(c.error);
  }
  std::free(r->results);
  std::memset(r, 0, sizeof *r);
}

}  // extern "C"
