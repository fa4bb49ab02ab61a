// Classify's own path through the scheduler: a prompt prefilled with logits for its last row
// only, one pick (by the request's sampling; argmax by default) reported with its logprob, the
// top alternatives and optionally the whole logits row; nothing is generated and no KV is kept.
#pragma once

#include "engine/output_processor.h"
#include "engine/request.h"

namespace tessera {

class ClassifyOutput final : public RequestOutput {
 public:
  ClassifyOutput(int top_logprobs, bool return_logits, TokenTextFn token_text)
      : top_logprobs_(top_logprobs),
        return_logits_(return_logits),
        token_text_(std::move(token_text)) {}

  Taken take(RequestShared& sh, int32_t id, const SampleOutput& out, int row) override;
  void on_logits(ComputeBackend& backend, const Tensor& logits, int row) override;
  std::string release() override { return {}; }
  void fill(RequestShared& sh, const std::string& error, int prompt_tokens) override;

 private:
  int top_logprobs_;
  bool return_logits_;
  TokenTextFn token_text_;
  std::vector<float> logits_;
};

// A classify request for the scheduler: the prompt's ids and the options as validated.
RequestSpec classify_request(std::vector<int32_t> prompt, const ClassifyOptions& o,
                             TokenTextFn token_text, std::shared_ptr<RequestShared> shared);

}  // namespace tessera
