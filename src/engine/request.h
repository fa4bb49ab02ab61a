// A request as the scheduler runs it: its prompt and sampling, what it makes of its sampled ids
// (RequestOutput: the generate path in output_processor.h, classify's in classify_output.h) and
// the state it shares with its caller.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "grammar/token_mask.h"
#include "tessera/engine.h"

namespace tessera {

// The state a caller and the scheduler share.
struct RequestShared {
  std::mutex mu;
  std::condition_variable cv;
  bool stream = false;  // queue events for RequestStream::next
  std::deque<RequestStream::Event> events;
  bool done = false;
  GenerateResult result;
  ClassifyResult classify;
  EmbedResult embedding;
  CancelToken cancel;
};

// What a request makes of the ids sampled for it. Called on the scheduler thread only.
class RequestOutput {
 public:
  virtual ~RequestOutput() = default;

  struct Taken {
    bool append = false;                 // the id joins the sequence (its K/V computed next)
    std::optional<FinishReason> finish;  // the request ends with it
  };
  // The id sampled for the request: row `row` of `out`.
  virtual Taken take(RequestShared& sh, int32_t id, const SampleOutput& out, int row) = 0;
  // The logits row the request's pick is drawn from ([1, vocab] at row `row` of `logits`), before
  // the next forward reuses its buffer.
  virtual void on_logits(ComputeBackend& backend, const Tensor& logits, int row) {}
  // Embeddings (embed_output.h): the request wants its rows' final hidden states, every prompt
  // position computed by its own forward (no prefix-cache adoption), and gets them per chunk:
  // rows [row, row + n) of `hidden` ([T, hidden] after the final norm) are prompt positions
  // [pos, pos + n). A chunk at position 0 starts the prompt over (after a preemption).
  virtual bool wants_hidden() const { return false; }
  virtual void on_hidden(ComputeBackend& backend, const Tensor& hidden, int row, int pos, int n) {}
  // The request ends: text held back goes to the token callback; returns it for the stream.
  virtual std::string release() = 0;
  // Under sh.mu: the request's own part of its result.
  virtual void fill(RequestShared& sh, const std::string& error, int prompt_tokens) = 0;
};

struct RequestSpec {
  std::vector<int32_t> prompt;
  SamplingOptions sampling;  // as the sampler applies it (classify: with its logprobs)
  int max_tokens = 1;        // ids the request takes at most (classify: its one pick)
  int min_tokens = 0;        // stop_ids are suppressed until this many ids are generated
  // Positions the request may hold beyond its prompt: max_tokens for a generation, 0 for classify
  // (its pick never enters the cache).
  int positions_after_prompt = 0;
  std::vector<int32_t> stop_ids;
  // Structured output: the compiled constraint its sampled tokens must follow (null: none). The
  // scheduler masks each pick to the tokens the grammar allows, EOS (stop_ids) only once the
  // output is complete, and ends the request when nothing more may follow.
  std::shared_ptr<grammar::TokenGrammar> grammar;
  std::string error;  // non-empty: the request fails at admission with this message
  std::unique_ptr<RequestOutput> output;
  std::shared_ptr<RequestShared> shared;
};

}  // namespace tessera
