// Embeddings' own path through the scheduler: a prompt prefilled like classify's (one pick at
// its last row, discarded; nothing generated, no KV kept), whose rows' final hidden states
// (after the model's final norm, as transformers' last_hidden_state) are pooled as they are
// computed, chunk by chunk: the mean over every prompt position, the first position's (CLS) or
// the last's. Then a sentence-transformers model's Dense layers, the Matryoshka truncation and
// the L2 normalisation.
// ref: sentence-transformers models/Pooling.py (pooling_mode_mean_tokens, _cls_token,
// _lasttoken), models/Normalize.py; vLLM's pooler (LAST + normalize for decoder embeddings).
#pragma once

#include "engine/request.h"
#include "engine/sentence_transformers.h"

namespace tessera {

class EmbedOutput final : public RequestOutput {
 public:
  // dense: a sentence-transformers model's Dense layers, applied to the pooled vector (may be
  // null; it outlives the request: the engine holds it).
  EmbedOutput(const EmbedOptions& o, int prompt_len, const std::vector<StDense>* dense)
      : opts_(o), prompt_len_(prompt_len), dense_(dense) {}

  Taken take(RequestShared&, int32_t, const SampleOutput&, int) override {
    return {false, FinishReason::stop};
  }
  bool wants_hidden() const override { return true; }
  void on_hidden(ComputeBackend& backend, const Tensor& hidden, int row, int pos, int n) override;
  std::string release() override { return {}; }
  void fill(RequestShared& sh, const std::string& error, int prompt_tokens) override;

 private:
  EmbedOptions opts_;
  int prompt_len_;
  const std::vector<StDense>* dense_;
  std::vector<double> sum_;  // mean: the running sum; cls / last: the row itself
  int rows_ = 0;             // rows summed (mean)
  std::vector<char> staging_;
};

// The pooled vector's last steps, in sentence-transformers' order of modules: truncation to
// `dimensions` (its truncate_dim), then the L2 normalisation. A zero vector stays zero.
void finish_embedding(std::vector<float>& v, const EmbedOptions& o);

// An embed request for the scheduler; o.pooling must be resolved (not automatic).
RequestSpec embed_request(std::vector<int32_t> prompt, const EmbedOptions& o,
                          const std::vector<StDense>* dense, std::shared_ptr<RequestShared> shared);

// The length of the model's embeddings: its hidden size, or its last Dense layer's output.
int embedding_size_of(const StPipeline& st, int hidden_size);

// Checks the options against the model's embedding size and resolves automatic pooling (the
// sentence-transformers config's, else the last token). Throws RequestError naming
// "dimensions".
EmbedOptions resolve_embed_options(const EmbedOptions& o, const StPipeline& st, int hidden_size);

// The prompt as sentence-transformers' encode(prompt_name=...) tokenizes it: the named prompt's
// text (o.prompt_name, else the model's default_prompt_name) before a text prompt; token ids as
// they are. Throws RequestError naming "prompt_name" for a name the model does not define, or
// one given with token ids.
Prompt with_st_prompt(const Prompt& p, const EmbedOptions& o, const StPipeline& st);

class Scheduler;

// Submits every request at once (they batch with each other and with everything else) and waits
// for all; a cancelled or failed request reports its error in its own result.
std::vector<EmbedResult> run_embed(Scheduler& sched, std::vector<PreparedEmbed> reqs,
                                   const CancelToken& cancel, const std::vector<StDense>* dense);

}  // namespace tessera
