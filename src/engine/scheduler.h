// The continuous-batching scheduler. One thread owns the model and the KV pool; callers submit
// requests through a queue and wait on (or stream from) their request's shared state.
//
// Each step: every decoding sequence contributes its one pending token, then partly prefilled
// prompts and newly admitted ones contribute chunks until the step's token budget
// (max_batch_tokens) is spent; one ragged forward runs them all; one batched sample picks the
// next token of every sequence whose pending tokens are all computed.
//
// Pipelined (vLLM's async scheduling): a step's sample is issued (sample_async) and left on the
// device; the next step is planned and its forward issued with those ids as the decoding
// sequences' inputs (still on the device), and only then does the host wait for the ids and
// process them (stop checks, streaming, penalties for the next sample) while that forward runs.
// So the GPU does not idle while the host turns a step around. The price: a sequence whose
// sampled token ends it (EOS, a stop string, a cancel) has had one more forward row computed for
// nothing; sequences whose next token is their last by length are not scheduled again.
//
// Admission: a request whose prompt plus max_tokens exceeds the context, or whose KV could never
// fit the pool, fails at once with a clear error; otherwise it waits (first come, first served)
// until its first chunk's blocks are free.
// Pool exhausted mid-generation: the most recently admitted running sequence is preempted by
// recomputation (vLLM's policy): its blocks are released and it goes back to the head of the
// queue with prompt + generated tokens as its new prompt; its output so far is kept and
// generation resumes where it stopped. No other request's state is touched.
//
// The units: the step planner decides who runs (step_planner.h); batch_builder.h lays the chunks
// out as one ragged batch; sample_packing.h turns each sampled row's options and history into
// sampler parameters; what a sampled id becomes is the request's RequestOutput (request.h): the
// generation's output processing (output_processor.h) or classify's (classify_output.h). This
// file wires them: plan -> batch -> forward -> collect the previous sample -> sample.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/batch_builder.h"
#include "engine/kv_pool.h"
#include "engine/request.h"
#include "engine/step_planner.h"
#include "models/model.h"
#include "tessera/engine.h"

namespace tessera {

struct SchedulerOptions {
  int max_batch_tokens = 512;
  int max_seqs = 64;
  int context_length = 4096;
  bool prefix_cache = true;
};

class Scheduler {
 public:
  Scheduler(Model& model, KvPool& pool, const SchedulerOptions& opts);
  ~Scheduler();  // cancels what is in flight and joins the thread

  void submit(RequestSpec spec);
  // Several requests at once: the scheduler sees all of them in the same step (a batch's prompts
  // are admitted together, budget permitting, instead of whichever arrived before a step began).
  void submit(std::vector<RequestSpec> specs);
  EngineStats stats() const;
  // Zeroes the counters (steps, tokens, preemptions) for a fresh start after a warm-up.
  void reset_stats();
  const SchedulerOptions& options() const { return opts_; }

 private:
  struct Sequence;
  class PlanView;
  struct Chunk {
    Sequence* seq;
    int tokens;
    int sampled_row;
  };
  void loop();
  bool step();  // false when there was nothing to do
  void drop_cancelled();
  PlanSeq plan_seq(const Sequence& s, int id) const;
  void apply(const StepPlan& plan, const PlanView& view);
  void run_batch();  // one forward over batch_, its sample issued
  void sample(const ForwardOutput& fo);
  void hand_hidden(const ForwardOutput& fo);
  void admit_new();
  void finish(Sequence& s, FinishReason why, const std::string& error = "");
  void preempt(Sequence& s);
  void on_sampled(Sequence& s, int32_t id, const SampleOutput& out, int row);
  // Structured output: follows the grammar with the id taken (false: the request was finished).
  bool grammar_take(Sequence& s, int32_t id);
  void fill_metrics(Sequence& s, Metrics& m);
  // Waits for the outstanding sample and hands its ids to their sequences.
  void collect();
  // Destroys a sequence that left running_ / waiting_, or keeps it until collect() when the
  // outstanding sample may still name it.
  void drop(std::unique_ptr<Sequence> s);
  void remove_finished();  // drop()s the finished sequences of running_
  void register_blocks(Sequence& s);

  Model& model_;
  KvPool& pool_;
  SchedulerOptions opts_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestSpec> incoming_;
  bool stop_ = false;

  // Scheduler-thread state.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  int64_t admitted_counter_ = 0;
  StepPlanner planner_;
  PlannerState plan_state_;
  // This step's sequences and their new tokens, and scratch kept between steps so that a step
  // allocates no more than its HostBatch.
  std::vector<Chunk> batch_;
  std::vector<Sequence*> moved_;
  std::vector<BatchEntry> entries_;
  std::vector<Sequence*> sampled_;  // per sampler row; null: a finished sequence's row
  SampleBatch sb_;
  std::vector<LogitMask> masks_;  // this step's constrained rows
  std::vector<std::shared_ptr<const grammar::TokenMask>> mask_refs_;  // what masks_ points into
  // The sample issued by the last step and not yet waited for: its rows' sequences.
  struct Outstanding {
    Sequence* seq;
    int row;
    uint64_t tag;
  };
  bool sample_pending_ = false;
  std::vector<Outstanding> outstanding_;
  std::vector<Outstanding> collecting_;  // collect()'s
  SampleOutput sample_out_;
  std::vector<std::unique_ptr<Sequence>> retired_;  // dropped while sample_pending_

  // Published for stats().
  mutable std::mutex stats_mu_;
  EngineStats stats_;

  std::thread thread_;
};

}  // namespace tessera
