// The step planner on plain numbers: a pool of fixed-size blocks, sequences as token counts.
// Decode-first ordering, chunked prefill, first-come-first-served admission, preemption of the
// most recently admitted, never-fits failures, max_seqs and the pipelined in-flight rules.
#include <gtest/gtest.h>

#include <map>

#include "engine/step_planner.h"

namespace tessera {
namespace {

// A pool of `total` blocks of `bs` positions; each sequence holds ceil(len / bs) blocks.
class FakePool final : public KvLedger {
 public:
  FakePool(int total, int bs = 4) : free_(total), bs_(bs) {}
  // A sequence that already holds `len` positions.
  void hold(int id, int len) {
    free_ -= blocks(len);
    len_[id] = len;
  }
  void cache(int id, int tokens) { cached_[id] = tokens; }  // adopt_prefix's answer

  bool reserve(int id, int n) override {
    const int more = blocks(len_[id] + n) - blocks(len_[id]);
    if (more > free_) return false;
    free_ -= more;
    len_[id] += n;
    return true;
  }
  void release(int id) override {
    free_ += blocks(len_[id]);
    len_[id] = 0;
    released.push_back(id);
  }
  int adopt_prefix(int id) override {
    const int got = cached_.count(id) ? cached_[id] : 0;
    hold(id, got);
    return got;
  }
  int free_blocks() const { return free_; }
  int held(int id) { return len_[id]; }
  std::vector<int> released;

 private:
  int blocks(int len) const { return (len + bs_ - 1) / bs_; }
  int free_;
  int bs_;
  std::map<int, int> len_, cached_;
};

class Queue final : public WaitingQueue {
 public:
  std::vector<PlanSeq> seqs;
  mutable int reads = 0;
  int size() const override { return static_cast<int>(seqs.size()); }
  PlanSeq at(int i) const override {
    ++reads;
    return seqs[i];
  }
};

PlanSeq running(int id, int tokens, int computed, int64_t order) {
  PlanSeq s;
  s.id = id;
  s.tokens = tokens;
  s.computed = computed;
  s.admit_order = order;
  return s;
}

PlanSeq waiting(int id, int tokens) {
  return running(id, tokens, 0, -1);
}

// A decoding sequence whose next token is on the device (row `row` of the last sample).
PlanSeq on_device(int id, int tokens, int64_t order, int row, bool last = false) {
  PlanSeq s = running(id, tokens, tokens, order);
  s.inflight = true;
  s.inflight_row = row;
  s.inflight_last = last;
  return s;
}

using Chunks = std::vector<std::tuple<int, int, int>>;  // id, tokens, sampled_row
Chunks chunks(const StepPlan& p) {
  Chunks out;
  for (const auto& c : p.batch) out.emplace_back(c.id, c.tokens, c.sampled_row);
  return out;
}

struct Planning {
  PlannerState state;
  Queue queue;
  FakePool pool;
  StepPlanner planner;
  explicit Planning(int blocks, int budget = 16, int max_seqs = 8) : pool(blocks) {
    state.waiting = &queue;
    state.budget = budget;
    state.max_seqs = max_seqs;
  }
  void run(PlanSeq s) {
    pool.hold(s.id, s.computed);
    state.running.push_back(s);
  }
  const StepPlan& plan() { return planner.plan(state, pool); }
};

TEST(StepPlanner, DecodesFirstThenPromptChunksThenAdmissions) {
  Planning t(100, /*budget=*/16);
  t.run(running(1, 20, 8, 0));  // a prompt half computed, admitted first
  t.run(running(2, 9, 8, 1));   // decoding: one known token pending
  t.run(on_device(3, 12, 2, /*row=*/5));
  t.queue.seqs = {waiting(4, 10), waiting(5, 10)};
  const StepPlan& p = t.plan();
  // Decodes in admission order (the on-device one takes its token from sample row 5), then the
  // prompt's chunk of 12, then what is left of the budget (2) for the head of the queue.
  EXPECT_EQ(chunks(p), (Chunks{{2, 1, -1}, {3, 1, 5}, {1, 12, -1}, {4, 2, -1}}));
  EXPECT_EQ(p.admitted, std::vector<int>{4});
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_TRUE(p.failed.empty());
  EXPECT_EQ(t.pool.held(4), 2);
}

TEST(StepPlanner, DecodesSpendTheBudgetBeforePrompts) {
  Planning t(100, /*budget=*/2);
  t.run(running(1, 30, 4, 0));
  t.run(running(2, 9, 8, 1));
  t.run(running(3, 9, 8, 2));
  t.queue.seqs = {waiting(4, 10)};
  const StepPlan& p = t.plan();
  EXPECT_EQ(chunks(p), (Chunks{{2, 1, -1}, {3, 1, -1}}));
  EXPECT_TRUE(p.admitted.empty());
}

TEST(StepPlanner, LongPromptIsChunkedAcrossSteps) {
  Planning t(100, /*budget=*/16);
  t.queue.seqs = {waiting(1, 40)};
  EXPECT_EQ(chunks(t.plan()), (Chunks{{1, 16, -1}}));
  t.queue.seqs.clear();
  t.state.running = {running(1, 40, 16, 0)};
  EXPECT_EQ(chunks(t.plan()), (Chunks{{1, 16, -1}}));
  t.state.running = {running(1, 40, 32, 0)};
  EXPECT_EQ(chunks(t.plan()), (Chunks{{1, 8, -1}}));
}

// A bidirectional model's prompts (PlanSeq::whole) run in one chunk or wait: one that does not
// fit what the step has left waits for the next step (first come, first served: the queue
// behind it waits too); one longer than the whole budget fails.
TEST(StepPlanner, WholePromptsAreNeverChunked) {
  auto whole = [](int id, int tokens) {
    PlanSeq s = waiting(id, tokens);
    s.whole = true;
    return s;
  };
  Planning t(100, /*budget=*/16);
  t.queue.seqs = {whole(1, 10), whole(2, 10), whole(3, 2)};
  const StepPlan& p = t.plan();
  EXPECT_EQ(chunks(p), (Chunks{{1, 10, -1}}));  // 6 left: 2 waits, and 3 behind it
  EXPECT_EQ(p.admitted, std::vector<int>{1});
  EXPECT_TRUE(p.failed.empty());
  EXPECT_EQ(t.pool.held(2), 0);

  Planning u(100, /*budget=*/16);
  u.queue.seqs = {whole(1, 16), whole(2, 17), waiting(3, 40)};
  EXPECT_EQ(chunks(u.plan()), (Chunks{{1, 16, -1}}));
  u.queue.seqs = {whole(2, 17), waiting(3, 40)};
  const StepPlan& q = u.plan();
  EXPECT_EQ(q.failed, std::vector<int>{2});  // 17 > 16: no step ever has room
  EXPECT_EQ(chunks(q), (Chunks{{3, 16, -1}}));
  EXPECT_EQ(u.pool.held(2), 0);

  // A started whole prompt (cannot come from the planner itself) is not continued in part.
  Planning v(100, /*budget=*/16);
  PlanSeq r = running(1, 30, 10, 0);
  r.whole = true;
  v.run(r);
  EXPECT_TRUE(chunks(v.plan()).empty());
}

TEST(StepPlanner, InFlightLastTokenIsNotScheduledAgain) {
  // Pipelined steps: a sequence whose in-flight token ends it by length runs no forward for it.
  Planning t(100);
  t.run(on_device(1, 10, 0, 0, /*last=*/true));
  t.run(on_device(2, 10, 1, 1));
  EXPECT_EQ(chunks(t.plan()), (Chunks{{2, 1, 1}}));
}

TEST(StepPlanner, CachedPrefixIsNotComputedAgain) {
  Planning t(100, /*budget=*/16);
  t.pool.cache(1, 8);
  t.queue.seqs = {waiting(1, 12), waiting(2, 6)};
  const StepPlan& p = t.plan();
  // 8 of 12 tokens adopted: a chunk of 4, which leaves the budget for the next prompt whole.
  EXPECT_EQ(chunks(p), (Chunks{{1, 4, -1}, {2, 6, -1}}));
  EXPECT_EQ(p.admitted, (std::vector<int>{1, 2}));
}

TEST(StepPlanner, WaitingIsFirstComeFirstServed) {
  // The head needs more blocks than are free now: it waits, and so does the small request behind
  // it that would fit.
  Planning t(/*blocks=*/6, /*budget=*/64);
  t.run(running(1, 9, 8, 0));  // 2 blocks, decoding
  t.queue.seqs = {waiting(2, 20), waiting(3, 4)};
  const StepPlan& p = t.plan();
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, -1}}));
  EXPECT_TRUE(p.admitted.empty());
  EXPECT_TRUE(p.failed.empty());
  EXPECT_EQ(t.pool.held(2), 0);  // its attempt gave its blocks back
  EXPECT_EQ(t.pool.free_blocks(), 3);
}

TEST(StepPlanner, AdmissionReadsOnlyTheHeadOfTheQueue) {
  Planning t(100, /*budget=*/8, /*max_seqs=*/2);
  for (int i = 0; i < 1000; ++i) t.queue.seqs.push_back(waiting(i, 4));
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.admitted, (std::vector<int>{0, 1}));  // max_seqs
  EXPECT_LE(t.queue.reads, 3);
}

TEST(StepPlanner, MaxSeqsLimitsAdmissions) {
  Planning t(100, /*budget=*/64, /*max_seqs=*/3);
  t.run(running(1, 9, 8, 0));
  t.run(running(2, 9, 8, 1));
  t.queue.seqs = {waiting(3, 4), waiting(4, 4), waiting(5, 4)};
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.admitted, std::vector<int>{3});
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, -1}, {2, 1, -1}, {3, 4, -1}}));
}

TEST(StepPlanner, PoolExhaustedPreemptsTheMostRecentlyAdmitted) {
  // Three decoding sequences, each at a block boundary (its next token needs a new block), and
  // one free block. The oldest takes it; the second's block comes from preempting the youngest;
  // the youngest is gone from the step. Preempted sequences go to the head of the queue.
  Planning t(/*blocks=*/7, /*budget=*/16);
  t.run(running(1, 9, 8, 0));  // 2 blocks each
  t.run(running(2, 9, 8, 1));
  t.run(running(3, 9, 8, 2));
  t.queue.seqs = {waiting(4, 4)};
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.preempted, std::vector<int>{3});
  ASSERT_FALSE(t.pool.released.empty());
  EXPECT_EQ(t.pool.released.front(), 3);  // its blocks went back before 2 reserved
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, -1}, {2, 1, -1}}));
  // The preempted sequence is now first in line (ahead of 4); it does not fit, so nothing is
  // admitted behind it either.
  EXPECT_TRUE(p.admitted.empty());
  EXPECT_TRUE(p.failed.empty());
}

TEST(StepPlanner, TheYoungestGoesFirstNotTheNextInAge) {
  // The oldest needs a block and three younger sequences could give theirs: the most recently
  // admitted one goes, and the two in between decode.
  Planning t(/*blocks=*/8, /*budget=*/16);
  t.run(running(1, 9, 8, 0));  // at a block boundary
  t.run(running(2, 7, 6, 1));
  t.run(running(3, 7, 6, 2));
  t.run(running(4, 7, 6, 3));
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.preempted, std::vector<int>{4});
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, -1}, {2, 1, -1}, {3, 1, -1}}));
}

TEST(StepPlanner, YoungestDecodeWithNoRoomPreemptsItself) {
  // No free block; only the youngest needs one. Nothing is younger, so it preempts itself and the
  // older sequences decode untouched.
  Planning t(/*blocks=*/6, /*budget=*/16);
  t.run(running(1, 7, 6, 0));
  t.run(running(2, 7, 6, 1));
  t.run(running(3, 9, 8, 2));
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.preempted, std::vector<int>{3});
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, -1}, {2, 1, -1}}));
}

TEST(StepPlanner, SequencesInTheStepAreNotPreempted) {
  // 1 and 2 decode; 3 (a prompt) then needs two more blocks: its only candidates are younger than
  // it, and 4, the one younger sequence, goes; the sequences already in the step stay.
  Planning t(/*blocks=*/8, /*budget=*/16);
  t.run(running(1, 7, 6, 0));
  t.run(running(2, 7, 6, 1));
  t.run(running(3, 16, 8, 2));
  t.run(running(4, 4, 4, 3));
  // 2 + 2 + 2 + 1 = 7 blocks held, 1 free; 3's chunk of 8 needs 2.
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.preempted, std::vector<int>{4});
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, -1}, {2, 1, -1}, {3, 8, -1}}));
}

TEST(StepPlanner, PromptChunkThatDoesNotFitWaitsForTheNextStep) {
  // The oldest running prompt cannot grow and has no younger sequence to preempt: it is skipped,
  // not preempted, and a younger decode still runs.
  Planning t(/*blocks=*/4, /*budget=*/16);
  t.run(running(1, 20, 8, 0));
  t.run(running(2, 5, 4, 1));  // decoding into a new block: takes the one free block
  const StepPlan& p = t.plan();
  EXPECT_EQ(chunks(p), (Chunks{{2, 1, -1}}));
  EXPECT_TRUE(p.preempted.empty());
}

TEST(StepPlanner, PreemptedOnDeviceTokenIsRecomputed) {
  // The youngest has a token in flight when it is preempted: it goes back to the queue with
  // nothing computed and no token on the device, and is admitted again in the same step as a
  // prompt of its known tokens once the blocks it gave back allow.
  Planning t(/*blocks=*/4, /*budget=*/5);
  t.run(on_device(1, 8, 0, /*row=*/0));  // 2 blocks each; the next position needs a third
  t.run(on_device(2, 8, 1, /*row=*/1));
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.preempted, std::vector<int>{2});
  EXPECT_EQ(p.admitted, std::vector<int>{2});
  // 1 decodes its on-device token; 2 recomputes from position 0, a chunk of what the budget left.
  EXPECT_EQ(chunks(p), (Chunks{{1, 1, 0}, {2, 4, -1}}));
}

TEST(StepPlanner, RequestThatCanNeverFitFails) {
  // Nothing runs and the head's first chunk does not fit the whole pool: it fails, and the next
  // request is admitted in the same step.
  Planning t(/*blocks=*/2, /*budget=*/64);
  t.queue.seqs = {waiting(1, 20), waiting(2, 4)};
  const StepPlan& p = t.plan();
  EXPECT_EQ(p.failed, std::vector<int>{1});
  EXPECT_EQ(p.admitted, std::vector<int>{2});
  EXPECT_EQ(chunks(p), (Chunks{{2, 4, -1}}));
}

TEST(StepPlanner, RequestThatMayFitLaterWaitsWhileOthersRun) {
  Planning t(/*blocks=*/3, /*budget=*/64);
  t.run(running(1, 5, 4, 0));
  t.queue.seqs = {waiting(2, 20)};
  const StepPlan& p = t.plan();
  EXPECT_TRUE(p.failed.empty());
  EXPECT_TRUE(p.admitted.empty());
}

TEST(StepPlanner, EmptyStateGivesAnEmptyPlan) {
  Planning t(10);
  EXPECT_TRUE(t.plan().empty());
  t.state.waiting = nullptr;
  EXPECT_TRUE(t.plan().empty());
}

}  // namespace
}  // namespace tessera
