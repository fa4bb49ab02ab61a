// The step planner: which sequences one scheduler step runs, and how many tokens each, from the
// sequences' token counts, the KV pool's answers and the step's limits. No backend, model or
// thread: tests/engine/test_step_planner.cpp drives it with plain numbers.
//
// The policy (vLLM's, without priorities):
//  1. Decodes first, oldest admitted first: one token each, either known (one pending token) or
//     still on the device (row inflight_row of the outstanding sample: pipelined steps), unless
//     that token is certainly the sequence's last (nothing is left to compute for it).
//  2. Running prompts not yet computed, in chunks that fill what the budget has left.
//  3. Admissions from the head of the waiting queue, first come first served, while the budget and
//     max_seqs allow: a sequence adopts its cached prefix and its first chunk's blocks must be free
//     now. The first one that does not fit stops admission; it fails instead when nothing is
//     running and nothing else is in the step (then it never will fit).
// A `whole` sequence (a bidirectional model's prompt: each token sees the later ones, which a
// chunk would not have) is never chunked: it runs all its pending tokens in one step or waits
// for a step with room for them; one longer than the whole budget fails (the scheduler refuses
// such a request before it gets here).
// A running sequence whose tokens do not fit preempts the most recently admitted running sequence
// not in this step (by recomputation: its blocks released, it goes back to the head of the queue),
// again until they fit or nothing younger is left; a decode that still does not fit preempts
// itself. A prompt chunk that does not fit waits for the next step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera {

// One sequence as the planner sees it.
struct PlanSeq {
  int id = 0;                // the caller's handle, echoed in the plan
  int tokens = 0;            // known tokens: prompt + generated ids already received
  int computed = 0;          // tokens whose K/V are in the cache
  int64_t admit_order = -1;  // running sequences: larger = admitted later
  // Pipelined steps: the next token is row inflight_row of the outstanding sample (on the device,
  // not counted in tokens); inflight_last: it is certainly the sequence's last token.
  bool inflight = false;
  bool inflight_last = false;
  int inflight_row = -1;
  bool whole = false;  // its pending tokens run in one chunk or not at all

  int pending() const { return tokens - computed; }
};

// The waiting queue, read from the front only as far as admission goes (a long queue costs
// nothing per step).
class WaitingQueue {
 public:
  virtual ~WaitingQueue() = default;
  virtual int size() const = 0;
  virtual PlanSeq at(int i) const = 0;  // i = 0: the head
};

// What the planner asks of the KV pool. The scheduler implements it over SequenceKv; tests over
// block counts. Calls change the pool at once (a later call sees an earlier one's blocks).
class KvLedger {
 public:
  virtual ~KvLedger() = default;
  // Room for n more positions of sequence `id`; false, changing nothing, when the pool is short.
  virtual bool reserve(int id, int n) = 0;
  // Every block of sequence `id` back to the pool (a preemption, an admission that did not fit).
  virtual void release(int id) = 0;
  // A waiting sequence with nothing computed takes the longest cached prefix of its tokens:
  // returns how many tokens it adopted (0 without a prefix cache).
  virtual int adopt_prefix(int id) = 0;
};

struct PlannerState {
  std::vector<PlanSeq> running;  // in admission order (admit_order increasing)
  const WaitingQueue* waiting = nullptr;
  int budget = 0;    // tokens one step may run (max_batch_tokens)
  int max_seqs = 0;  // sequences running at once
};

struct StepPlan {
  struct Chunk {
    int id = 0;
    int tokens = 0;        // new tokens of the sequence in this step's forward
    int sampled_row = -1;  // >= 0: the one token is that row of the outstanding sample
  };
  std::vector<Chunk> batch;    // decodes, then prompt chunks, then admissions' first chunks
  std::vector<int> preempted;  // running -> head of the queue, in this order (each in front)
  std::vector<int> admitted;   // head of the queue -> running, in this order (all in batch)
  std::vector<int> failed;     // taken off the queue: they can never fit the pool

  bool empty() const { return batch.empty() && preempted.empty() && failed.empty(); }
};

// Plans one step. Keeps its working vectors between calls, so that a step allocates nothing.
class StepPlanner {
 public:
  // The plan (valid until the next call). kv sees every reservation the plan makes.
  const StepPlan& plan(const PlannerState& state, KvLedger& kv);

 private:
  struct Running {
    PlanSeq seq;
    bool in_batch = false;
  };
  bool make_room(size_t& i, int n, KvLedger& kv);
  void preempt(size_t i, KvLedger& kv);
  bool has_head() const;
  PlanSeq& head();
  void pop_head();

  StepPlan plan_;
  std::vector<Running> running_;
  std::vector<PlanSeq> front_;  // preempted this step: the queue's new head is front_.back()
  PlanSeq head_;                // the queue entry at next_ once read
  const WaitingQueue* waiting_ = nullptr;
  int next_ = 0;  // entries of *waiting_ taken
  bool head_read_ = false;
};

}  // namespace tessera
