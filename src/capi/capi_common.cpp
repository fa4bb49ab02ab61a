// The C ABI's shared pieces: cancel states, conversions, result filling.
#include <algorithm>

#include "capi/capi_internal.h"

namespace tessera::capi {

void CancelState::trigger() {
  std::lock_guard<std::mutex> lk(mu);
  token.cancel();
  for (RequestStream* s : streams) s->cancel();
}

void CancelState::attach(RequestStream* s) {
  std::lock_guard<std::mutex> lk(mu);
  streams.push_back(s);
  if (token.cancelled()) s->cancel();  // triggered before the request was submitted
}

void CancelState::detach(RequestStream* s) {
  std::lock_guard<std::mutex> lk(mu);
  streams.erase(std::remove(streams.begin(), streams.end(), s), streams.end());
}

Attached::Attached(std::shared_ptr<CancelState> c, RequestStream* s) : c_(std::move(c)), s_(s) {
  if (c_ && s_) c_->attach(s_);
}

Attached::~Attached() {
  if (c_ && s_) c_->detach(s_);
}

std::shared_ptr<CancelState> cancel_state(const tessera_cancel* c) {
  return c ? c->state : nullptr;
}

CancelToken token_of(const tessera_cancel* c) {
  return c && c->state ? c->state->token : CancelToken();
}

char* dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
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

tessera_status status_of_request_error(const std::string& m) {
  if (m == "cancelled") return TESSERA_CANCELLED;  // a classification that never ran
  if (m.find("KV") != std::string::npos) return TESSERA_OUT_OF_MEMORY;
  if (m.rfind("step failed", 0) == 0) return TESSERA_INTERNAL;
  return TESSERA_INVALID_ARGUMENT;
}

void fail_arg(const std::string& what) {
  throw Error(ErrorKind::invalid_argument, what);
}

Engine& engine_of(tessera_engine* e) {
  if (!e || !e->engine) fail_arg("no engine (NULL handle)");
  return *e->engine;
}

GenerateOptions to_options(const tessera_generate_options* o) {
  tessera_generate_options d;
  if (!o) {
    tessera_generate_options_init(&d);
    o = &d;
  }
  GenerateOptions g;
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
  if (o->n_stop && !o->stop) fail_arg("stop is NULL but n_stop is " + std::to_string(o->n_stop));
  for (size_t i = 0; i < o->n_stop; ++i) {
    if (!o->stop[i]) fail_arg("stop[" + std::to_string(i) + "] is NULL");
    g.stop.emplace_back(o->stop[i]);
  }
  if (o->n_stop_token_ids && !o->stop_token_ids)
    fail_arg("stop_token_ids is NULL but n_stop_token_ids is " +
             std::to_string(o->n_stop_token_ids));
  g.stop_token_ids.assign(o->stop_token_ids, o->stop_token_ids + o->n_stop_token_ids);
  g.ignore_eos = o->ignore_eos != 0;
  g.add_special_tokens = o->add_special_tokens != 0;
  if (o->constraint_kind) {
    const std::string k = o->constraint_kind;
    using K = OutputConstraint::Kind;
    g.constraint.kind = k == "json_object"   ? K::json_object
                        : k == "json_schema" ? K::json_schema
                        : k == "regex"       ? K::regex
                        : k == "grammar"     ? K::grammar
                                             : K::none;
    if (g.constraint.kind == K::none)
      fail_arg("constraint_kind must be json_object, json_schema, regex or grammar (got '" + k +
               "')");
    if (g.constraint.kind != K::json_object && !o->constraint)
      fail_arg("constraint is NULL but constraint_kind is " + k);
    if (o->constraint) g.constraint.text = o->constraint;
    g.constraint.field = "constraint";
  }
  return g;
}

Prompt to_prompt(const tessera_prompt& p, size_t i) {
  if (p.text) return Prompt(std::string(p.text));
  if (!p.ids && p.n_ids)
    fail_arg("prompts[" + std::to_string(i) + "]: ids is NULL but n_ids is " +
             std::to_string(p.n_ids));
  return Prompt(std::vector<int32_t>(p.ids, p.ids + p.n_ids));
}

GenerateResult error_result(const std::string& message) {
  GenerateResult r;
  r.finish_reason = FinishReason::error;
  r.error = message;
  return r;
}

void fill_result(const GenerateResult& r, const PieceEnds& pieces, tessera_result* out,
                 tessera_status prepare_status) {
  std::memset(out, 0, sizeof *out);
  out->finish_reason = finish_reason_name(r.finish_reason);
  switch (r.finish_reason) {
    case FinishReason::stop:
    case FinishReason::length:
      out->status = TESSERA_OK;
      break;
    case FinishReason::cancelled:
      out->status = TESSERA_CANCELLED;
      break;
    case FinishReason::error:
      out->status =
          prepare_status != TESSERA_OK ? prepare_status : status_of_request_error(r.error);
      break;
  }
  out->n_ids = r.ids.size();
  out->ids = alloc_array<int32_t>(r.ids.size());
  std::copy(r.ids.begin(), r.ids.end(), out->ids);
  out->text = dup(r.text);
  out->piece_ends = alloc_array<size_t>(r.ids.size());
  // One end per id; a text without pieces (no tokenizer) ends every piece at 0. Clamped, as a
  // stop string's text never reaches the result.
  for (size_t i = 0; i < r.ids.size(); ++i) {
    size_t end = i < pieces.ends.size() ? pieces.ends[i] : (i ? out->piece_ends[i - 1] : 0);
    out->piece_ends[i] = std::min(end, r.text.size());
  }
  if (r.finish_reason == FinishReason::error) out->error = dup(r.error);
  const Metrics& m = r.metrics;
  out->metrics = {m.prompt_tokens,     m.cached_prompt_tokens, m.generated_tokens,
                  m.ttft_ms,           m.prefill_ms,           m.decode_ms,
                  m.total_ms,          m.prefill_tokens_per_s, m.decode_tokens_per_s,
                  m.peak_memory_bytes, m.active_memory_bytes};
}

tessera_batch_metrics to_c(const BatchMetrics& m) {
  return {m.requests,       m.prompt_tokens,       m.generated_tokens,       m.total_ms,
          m.requests_per_s, m.prompt_tokens_per_s, m.generated_tokens_per_s, m.peak_memory_bytes};
}

}  // namespace tessera::capi
