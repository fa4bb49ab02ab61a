#include "engine/classify_output.h"

namespace tessera {

RequestOutput::Taken ClassifyOutput::take(RequestShared& sh, int32_t id, const SampleOutput& out,
                                          int row) {
  ClassifyResult& c = sh.classify;
  c.token = id;
  c.text = token_text_ ? token_text_(id) : "";
  if (!out.logprobs.empty()) c.logprob = out.logprobs[row];
  top_logprobs(out, row, top_logprobs_, token_text_, c.top_logprobs);
  return {false, FinishReason::stop};
}

void ClassifyOutput::on_logits(ComputeBackend& backend, const Tensor& logits, int row) {
  if (!return_logits_) return;
  logits_.resize(static_cast<size_t>(logits.cols));
  backend.copy_to_host(logits_.data(),
                       static_cast<const char*>(logits.data) + row * logits.row_bytes(),
                       logits_.size() * sizeof(float));
}

void ClassifyOutput::fill(RequestShared& sh, const std::string& error, int prompt_tokens) {
  ClassifyResult& c = sh.classify;
  c.logits = std::move(logits_);
  c.error = error;
  c.prompt_tokens = prompt_tokens;
}

RequestSpec classify_request(std::vector<int32_t> prompt, const ClassifyOptions& o,
                             TokenTextFn token_text, std::shared_ptr<RequestShared> shared) {
  RequestSpec spec;
  spec.prompt = std::move(prompt);
  // Every pick reports its logprob; the alternatives are classify's own option.
  spec.sampling = o.sampling;
  spec.sampling.logprobs = true;
  spec.sampling.top_logprobs = o.top_logprobs;
  spec.max_tokens = 1;
  spec.positions_after_prompt = 0;
  spec.output =
      std::make_unique<ClassifyOutput>(o.top_logprobs, o.return_logits, std::move(token_text));
  spec.shared = std::move(shared);
  return spec;
}

}  // namespace tessera
