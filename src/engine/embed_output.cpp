#include "engine/embed_output.h"

#include <cmath>

#include "core/dtype.h"
#include "engine/scheduler.h"

namespace tessera {

void EmbedOutput::on_hidden(ComputeBackend& backend, const Tensor& hidden, int row, int pos,
                            int n) {
  if (pos == 0) {  // the prompt (re)starts: a preempted sequence recomputes from position 0
    sum_.assign(static_cast<size_t>(hidden.cols), 0.0);
    rows_ = 0;
  }
  // The rows this pooling reads out of [row, row + n).
  int first = row, count = n;
  if (opts_.pooling == Pooling::cls) {
    if (pos != 0) return;
    count = 1;
  } else if (opts_.pooling == Pooling::last) {
    const int last = prompt_len_ - 1;
    if (last < pos || last >= pos + n) return;
    first = row + (last - pos);
    count = 1;
  }
  const size_t cols = static_cast<size_t>(hidden.cols);
  const size_t bytes = static_cast<size_t>(count) * hidden.row_bytes();
  staging_.resize(bytes);
  backend.copy_to_host(
      staging_.data(),
      static_cast<const char*>(hidden.data) + static_cast<int64_t>(first) * hidden.row_bytes(),
      bytes);
  for (int r = 0; r < count; ++r) {
    const char* src = staging_.data() + static_cast<size_t>(r) * hidden.row_bytes();
    for (size_t c = 0; c < cols; ++c) {
      float v = 0;
      if (hidden.dtype == DType::f32) {
        v = reinterpret_cast<const float*>(src)[c];
      } else if (hidden.dtype == DType::bf16) {
        v = bf16_to_f32(reinterpret_cast<const uint16_t*>(src)[c]);
      } else {
        v = f16_to_f32(reinterpret_cast<const uint16_t*>(src)[c]);
      }
      if (opts_.pooling == Pooling::mean)
        sum_[c] += v;
      else
        sum_[c] = v;
    }
  }
  rows_ += count;
}

void finish_embedding(std::vector<float>& v, const EmbedOptions& o) {
  if (o.dimensions > 0 && static_cast<size_t>(o.dimensions) < v.size())
    v.resize(static_cast<size_t>(o.dimensions));
  if (!o.normalize) return;
  double ss = 0;
  for (float x : v) ss += static_cast<double>(x) * x;
  // torch.nn.functional.normalize's eps (1e-12) keeps a zero vector at zero.
  const double inv = 1.0 / std::max(std::sqrt(ss), 1e-12);
  for (float& x : v) x = static_cast<float>(x * inv);
}

void EmbedOutput::fill(RequestShared& sh, const std::string& error, int prompt_tokens) {
  EmbedResult& e = sh.embedding;
  e.error = error;
  e.prompt_tokens = prompt_tokens;
  if (!error.empty() || sum_.empty() || rows_ == 0) return;
  const double div = opts_.pooling == Pooling::mean ? rows_ : 1;
  e.embedding.resize(sum_.size());
  for (size_t c = 0; c < sum_.size(); ++c) e.embedding[c] = static_cast<float>(sum_[c] / div);
  if (dense_) apply_dense(*dense_, e.embedding);
  finish_embedding(e.embedding, opts_);
}

RequestSpec embed_request(std::vector<int32_t> prompt, const EmbedOptions& o,
                          const std::vector<StDense>* dense,
                          std::shared_ptr<RequestShared> shared) {
  RequestSpec spec;
  const int n = static_cast<int>(prompt.size());
  spec.prompt = std::move(prompt);
  spec.sampling.temperature = 0.0f;  // the one pick is discarded: the cheapest kind
  spec.max_tokens = 1;
  spec.positions_after_prompt = 0;
  spec.output = std::make_unique<EmbedOutput>(o, n, dense);
  spec.shared = std::move(shared);
  return spec;
}

int embedding_size_of(const StPipeline& st, int hidden_size) {
  return st.dense.empty() ? hidden_size : st.dense.back().out;
}

EmbedOptions resolve_embed_options(const EmbedOptions& o, const StPipeline& st, int hidden_size) {
  EmbedOptions r = o;
  const int embedding_size = embedding_size_of(st, hidden_size);
  if (r.pooling == Pooling::automatic)
    r.pooling = st.pooling != Pooling::automatic ? st.pooling : Pooling::last;
  if (r.dimensions < 0 || r.dimensions > embedding_size)
    throw RequestError("dimensions", "'dimensions' must be in [1, " +
                                         std::to_string(embedding_size) + "] (got " +
                                         std::to_string(r.dimensions) + ")");
  return r;
}

Prompt with_st_prompt(const Prompt& p, const EmbedOptions& o, const StPipeline& st) {
  const std::string& name = o.prompt_name.empty() ? st.default_prompt_name : o.prompt_name;
  if (name.empty()) return p;
  const auto* text = std::get_if<std::string>(&p);
  if (!text) {
    if (o.prompt_name.empty()) return p;  // a default prompt applies to text only
    throw RequestError("prompt_name", "'prompt_name' applies to text inputs, not token ids");
  }
  auto it = st.prompts.find(name);
  if (it == st.prompts.end()) {
    std::string have;
    for (const auto& [k, v] : st.prompts) have += (have.empty() ? "" : ", ") + k;
    throw RequestError("prompt_name",
                       "the model has no prompt '" + name + "' (" +
                           (have.empty() ? std::string("it defines none")
                                         : "config_sentence_transformers.json has: " + have) +
                           ")");
  }
  return it->second + *text;
}

std::vector<EmbedResult> run_embed(Scheduler& sched, std::vector<PreparedEmbed> reqs,
                                   const CancelToken& cancel, const std::vector<StDense>* dense) {
  std::vector<std::shared_ptr<RequestShared>> shared;
  std::vector<RequestSpec> specs;
  for (PreparedEmbed& r : reqs) {
    shared.push_back(std::make_shared<RequestShared>());
    shared.back()->cancel = cancel;
    specs.push_back(embed_request(std::move(r.prompt), r.options, dense, shared.back()));
  }
  sched.submit(std::move(specs));
  std::vector<EmbedResult> out;
  for (auto& sh : shared) {
    std::unique_lock<std::mutex> lk(sh->mu);
    sh->cv.wait(lk, [&] { return sh->done; });
    EmbedResult e = std::move(sh->embedding);
    if (e.error.empty() && sh->result.finish_reason == FinishReason::error)
      e.error = sh->result.error;
    if (e.error.empty() && sh->result.finish_reason == FinishReason::cancelled)
      e.error = "cancelled";
    if (e.error.empty() && e.embedding.empty()) e.error = "no hidden state was computed";
    out.push_back(std::move(e));
  }
  return out;
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::automatic:
      return "auto";
    case Pooling::mean:
      return "mean";
    case Pooling::cls:
      return "cls";
    case Pooling::last:
      return "last";
  }
  return "?";
}

}  // namespace tessera
