#include "engine/output_processor.h"

#include <algorithm>

namespace tessera {

GenerateOutput::Options GenerateOutput::Options::from(const GenerateOptions& g,
                                                      std::vector<int32_t> stop_ids) {
  Options o;
  o.max_tokens = g.max_tokens;
  o.stop_ids = std::move(stop_ids);
  o.stop = g.stop;
  o.logprobs = g.sampling.logprobs;
  o.top_logprobs = g.sampling.top_logprobs;
  return o;
}

void top_logprobs(const SampleOutput& out, int row, int n, const TokenTextFn& text,
                  std::vector<TokenLogprob>& dst) {
  for (int k = 0; k < std::min(out.top_n, n); ++k) {
    const size_t at = static_cast<size_t>(row) * out.top_n + k;
    const int32_t t = out.top_ids[at];
    if (t < 0) break;  // fewer candidates than asked for (top-k, min-p)
    dst.push_back({t, text ? text(t) : "", out.top_logprobs[at]});
  }
}

GenerateOutput::GenerateOutput(Options o) : o_(std::move(o)), stops_(o_.stop) {}

RequestOutput::Taken GenerateOutput::take(RequestShared& sh, int32_t id, const SampleOutput& out,
                                          int row) {
  if (std::find(o_.stop_ids.begin(), o_.stop_ids.end(), id) != o_.stop_ids.end()) {
    stop_token_ = id;
    return {false, FinishReason::stop};
  }
  ids_.push_back(id);
  std::optional<StepLogprobs> lp;
  if (o_.logprobs || o_.top_logprobs > 0) {
    StepLogprobs st;
    st.chosen = {id, o_.token_text ? o_.token_text(id) : "", out.logprobs[row]};
    top_logprobs(out, row, o_.top_logprobs, o_.token_text, st.top);
    logprobs_.push_back(st);
    lp = std::move(st);
  }
  std::string piece = o_.text ? o_.text->push(id) : "";
  std::string emit = stops_.push(piece);
  bool keep = true;
  if (o_.on_token) keep = o_.on_token(id, emit);
  if (sh.stream) {
    std::lock_guard<std::mutex> lk(sh.mu);
    RequestStream::Event ev;
    ev.id = id;
    ev.piece = std::move(emit);
    ev.logprobs = std::move(lp);
    sh.events.push_back(std::move(ev));
    sh.cv.notify_all();
  }
  if (!keep) return {true, FinishReason::cancelled};
  if (stops_.matched()) return {true, FinishReason::stop};
  if (static_cast<int>(ids_.size()) >= o_.max_tokens) return {true, FinishReason::length};
  return {true, std::nullopt};
}

std::string GenerateOutput::release() {
  // Text held back for stop strings goes out unless a stop string ended it.
  std::string tail;
  if (!stops_.matched()) {
    if (o_.text) tail = stops_.push(o_.text->flush());
    tail += stops_.flush();
  }
  if (!tail.empty() && o_.on_token) o_.on_token(-1, tail);
  return tail;
}

void GenerateOutput::fill(RequestShared& sh, const std::string&, int) {
  GenerateResult& r = sh.result;
  r.ids = std::move(ids_);
  r.text = stops_.text();
  if (stops_.matched()) r.stop_string = stops_.matched_stop();
  if (stop_token_) r.stop_token = stop_token_;
  r.logprobs = std::move(logprobs_);
}

RequestSpec generate_request(std::vector<int32_t> prompt, const GenerateOptions& g,
                             std::vector<int32_t> stop_ids, std::unique_ptr<TextStream> text,
                             TokenCallback on_token, TokenTextFn token_text,
                             std::shared_ptr<RequestShared> shared) {
  RequestSpec spec;
  spec.prompt = std::move(prompt);
  spec.sampling = g.sampling;
  spec.max_tokens = g.max_tokens;
  spec.min_tokens = g.min_tokens;
  spec.positions_after_prompt = g.max_tokens;
  spec.stop_ids = stop_ids;
  GenerateOutput::Options o = GenerateOutput::Options::from(g, std::move(stop_ids));
  o.text = std::move(text);
  o.on_token = std::move(on_token);
  o.token_text = std::move(token_text);
  spec.output = std::make_unique<GenerateOutput>(std::move(o));
  spec.shared = std::move(shared);
  return spec;
}

void publish_result(RequestShared& sh, std::string tail) {
  if (sh.stream) {
    if (!tail.empty()) {
      RequestStream::Event ev;
      ev.piece = std::move(tail);
      sh.events.push_back(std::move(ev));
    }
    RequestStream::Event ev;
    ev.done = true;
    ev.result = sh.result;
    sh.events.push_back(std::move(ev));
  }
  sh.done = true;
  sh.cv.notify_all();
}

}  // namespace tessera
