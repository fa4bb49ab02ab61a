#include "engine/step_planner.h"

#include <algorithm>

namespace tessera {

bool StepPlanner::has_head() const {
  return !front_.empty() || (waiting_ && next_ < waiting_->size());
}

PlanSeq& StepPlanner::head() {
  if (!front_.empty()) return front_.back();
  if (!head_read_) {
    head_ = waiting_->at(next_);
    head_read_ = true;
  }
  return head_;
}

void StepPlanner::pop_head() {
  if (!front_.empty()) {
    front_.pop_back();
  } else {
    ++next_;
    head_read_ = false;
  }
}

void StepPlanner::preempt(size_t i, KvLedger& kv) {
  PlanSeq s = running_[i].seq;
  kv.release(s.id);
  s.computed = 0;
  s.inflight = false;  // its outstanding row no longer counts: the token is recomputed
  front_.push_back(s);
  plan_.preempted.push_back(s.id);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
}

// Reserves n positions for running_[i], preempting younger sequences not in this step while the
// pool is short; i follows the sequence if an entry before it goes. False when nothing younger is
// left to preempt.
bool StepPlanner::make_room(size_t& i, int n, KvLedger& kv) {
  for (;;) {
    if (kv.reserve(running_[i].seq.id, n)) return true;
    const int64_t order = running_[i].seq.admit_order;
    size_t victim = running_.size();
    for (size_t j = 0; j < running_.size(); ++j) {
      const Running& r = running_[j];
      if (j != i && !r.in_batch && r.seq.admit_order > order &&
          (victim == running_.size() || r.seq.admit_order > running_[victim].seq.admit_order))
        victim = j;
    }
    if (victim == running_.size()) return false;
    preempt(victim, kv);
    if (victim < i) --i;
  }
}

const StepPlan& StepPlanner::plan(const PlannerState& state, KvLedger& kv) {
  plan_.batch.clear();
  plan_.preempted.clear();
  plan_.admitted.clear();
  plan_.failed.clear();
  running_.clear();
  for (const PlanSeq& s : state.running) running_.push_back({s, false});
  front_.clear();
  waiting_ = state.waiting;
  next_ = 0;
  head_read_ = false;
  int budget = state.budget;

  // 1. Decodes: one pending token each (known, or in flight on the device), oldest first.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    const PlanSeq& s = running_[i].seq;
    const bool on_device = s.inflight && !s.inflight_last;
    if ((s.pending() != 1 && !on_device) || running_[i].in_batch) {
      ++i;
      continue;
    }
    if (!make_room(i, 1, kv)) {
      preempt(i, kv);  // the youngest waits for blocks; its place in running_ is gone
      continue;
    }
    Running& r = running_[i];
    r.in_batch = true;
    plan_.batch.push_back({r.seq.id, 1, on_device ? r.seq.inflight_row : -1});
    --budget;
    ++i;
  }

  // 2. Prompts already started, in chunks.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const PlanSeq& s = running_[i].seq;
    if (running_[i].in_batch || s.pending() <= 0 || s.inflight) continue;
    const int n = std::min(s.pending(), budget);
    if (s.whole && n < s.pending()) continue;  // waits for a step with room for all of it
    if (!make_room(i, n, kv)) continue;
    running_[i].in_batch = true;
    plan_.batch.push_back({running_[i].seq.id, n, -1});
    budget -= n;
  }

  // 3. Admissions, first come first served.
  while (budget > 0 && has_head() && static_cast<int>(running_.size()) < state.max_seqs) {
    PlanSeq& h = head();
    if (h.computed == 0) h.computed = kv.adopt_prefix(h.id);
    const int n = std::min(h.pending(), budget);
    if (h.whole && n < h.pending()) {
      if (h.pending() <= state.budget) break;  // a later step has room for all of it
      kv.release(h.id);
      h.computed = 0;
      plan_.failed.push_back(h.id);  // no step ever has
      pop_head();
      continue;
    }
    if (!kv.reserve(h.id, n)) {
      kv.release(h.id);
      h.computed = 0;
      if (running_.empty() && plan_.batch.empty()) {
        plan_.failed.push_back(h.id);  // nothing else holds blocks: it never fits
        pop_head();
        continue;
      }
      break;  // first come, first served: wait for blocks
    }
    plan_.admitted.push_back(h.id);
    plan_.batch.push_back({h.id, n, -1});
    running_.push_back({h, true});
    budget -= n;
    pop_head();
  }
  return plan_;
}

}  // namespace tessera
