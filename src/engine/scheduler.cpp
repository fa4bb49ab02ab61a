#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include "core/check.h"
#include "engine/batch_builder.h"
#include "engine/output_processor.h"
#include "engine/prefix_cache.h"
#include "engine/request_prep.h"
#include "engine/sample_packing.h"
#include "engine/sequence_grammar.h"

namespace tessera {

using Clock = std::chrono::steady_clock;

namespace {
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

struct Scheduler::Sequence {
  RequestSpec spec;
  std::vector<int32_t> tokens;  // prompt + generated
  int prompt_len = 0;
  int computed = 0;  // tokens whose K/V are in the cache
  std::unique_ptr<SequenceKv> kv;
  std::vector<uint64_t> hashes;  // chain hashes of tokens' full blocks
  int registered = 0;            // blocks registered in the prefix cache
  int generated = 0;             // ids taken into tokens
  PenaltyHistory history;
  uint64_t seed = 0, sample_step = 0;
  int64_t admit_order = -1;
  std::optional<SequenceGrammar> grammar;  // structured output: spec.grammar's state
  int cached_prompt = 0;
  bool started = false;
  Clock::time_point t_submit, t_admit, t_first, t_end;
  // The next token is row inflight_row of the outstanding sample (on the device, not yet in
  // tokens); tag tells a row that still counts from one a preemption has since discarded.
  bool inflight = false;
  int inflight_row = -1;
  uint64_t tag = 0;

  int pending() const { return static_cast<int>(tokens.size()) - computed; }
  // The in-flight token is certainly the last: nothing more to compute for this sequence.
  bool inflight_is_last(int context_length) const {
    return generated + 1 >= spec.max_tokens ||
           static_cast<int>(tokens.size()) + 1 >= context_length;
  }
  bool plain_greedy_now() const {
    return !grammar &&
           plain_greedy_next(spec.sampling, generated, spec.min_tokens, !spec.stop_ids.empty());
  }
};

Scheduler::Scheduler(Model& model, KvPool& pool, const SchedulerOptions& opts)
    : model_(model), pool_(pool), opts_(opts) {
  stats_.kv_blocks_total = pool_.total_blocks_all();
  stats_.kv_block_size = pool_.block_size();
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Scheduler::submit(RequestSpec spec) {
  std::vector<RequestSpec> one;
  one.push_back(std::move(spec));
  submit(std::move(one));
}

void Scheduler::reset_stats() {
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.steps = 0;
  stats_.prompt_tokens = 0;
  stats_.generated_tokens = 0;
  stats_.cached_prompt_tokens = 0;
  stats_.preemptions = 0;
}

void Scheduler::submit(std::vector<RequestSpec> specs) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& s : specs) incoming_.push_back(std::move(s));
  }
  cv_.notify_all();
}

EngineStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lk(stats_mu_);
  EngineStats s = stats_;
  {
    std::lock_guard<std::mutex> lk2(mu_);
    s.waiting += static_cast<int>(incoming_.size());
  }
  const auto& t = memory_tracker(model_.backend().device());
  s.memory_active = t.active();
  s.memory_peak = t.peak();
  s.memory_limit = t.limit();
  return s;
}

void Scheduler::admit_new() {
  std::deque<RequestSpec> fresh;
  {
    std::lock_guard<std::mutex> lk(mu_);
    fresh.swap(incoming_);
  }
  for (auto& spec : fresh) {
    auto s = std::make_unique<Sequence>();
    s->t_submit = Clock::now();
    s->spec = std::move(spec);
    s->tokens = s->spec.prompt;
    s->prompt_len = static_cast<int>(s->tokens.size());
    s->kv = std::make_unique<SequenceKv>(pool_);
    const SamplingOptions& so = s->spec.sampling;
    s->seed = so.seed ? *so.seed
                      : std::random_device{}() ^
                            static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    if (!s->spec.error.empty()) {
      finish(*s, FinishReason::error, s->spec.error);
      continue;
    }
    // Requests that can never run fail at once, before any of their ids index anything.
    std::string why = admission_error(s->tokens, model_.info().vocab_size,
                                      s->prompt_len + s->spec.positions_after_prompt,
                                      opts_.context_length, pool_, opts_.max_batch_tokens);
    if (why.empty() && model_.info().bidirectional)
      why =
          whole_prompt_error(s->prompt_len, opts_.max_batch_tokens, s->spec.output->wants_hidden());
    if (!why.empty()) {
      finish(*s, FinishReason::error, why);
      continue;
    }
    s->history = PenaltyHistory(so, s->tokens);
    if (s->spec.grammar) s->grammar.emplace(s->spec.grammar);
    waiting_.push_back(std::move(s));
  }
}

void Scheduler::fill_metrics(Sequence& s, Metrics& m) {
  m.prompt_tokens = s.prompt_len;
  m.cached_prompt_tokens = s.cached_prompt;
  m.generated_tokens = s.generated;
  const auto end = s.t_end;
  const auto admit = s.started ? s.t_admit : end;
  const auto first = s.t_first;  // read only when something was generated
  m.queue_ms = ms_between(s.t_submit, admit);
  m.ttft_ms = s.generated == 0 ? 0 : ms_between(s.t_submit, first);
  m.prefill_ms = s.started ? ms_between(admit, s.generated == 0 ? end : first) : 0;
  m.decode_ms = s.generated > 1 ? ms_between(first, end) : 0;
  m.total_ms = ms_between(s.t_submit, end);
  m.prefill_tokens_per_s =
      m.prefill_ms > 0 ? (s.prompt_len - s.cached_prompt) / (m.prefill_ms / 1e3) : 0;
  m.decode_tokens_per_s = m.decode_ms > 0 ? (s.generated - 1) / (m.decode_ms / 1e3) : 0;
  const auto& t = memory_tracker(model_.backend().device());
  m.peak_memory_bytes = t.peak();
  m.active_memory_bytes = t.active();
  m.device = model_.backend().name();
  m.compute = dtype_name(model_.backend().act_dtype());
}

void Scheduler::finish(Sequence& s, FinishReason why, const std::string& error) {
  s.t_end = Clock::now();
  auto& sh = *s.spec.shared;
  std::string tail = s.spec.output->release();
  if (s.kv) s.kv->release_all();
  {  // the gauge as this request leaves it, before the caller can see the result
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.kv_blocks_used = pool_.used_blocks_all();
  }
  std::lock_guard<std::mutex> lk(sh.mu);
  s.spec.output->fill(sh, error, s.prompt_len);
  GenerateResult& r = sh.result;
  r.finish_reason = why;
  r.error = error;
  fill_metrics(s, r.metrics);
  publish_result(sh, std::move(tail));
}

void Scheduler::preempt(Sequence& s) {
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.preemptions;
  }
  // Its blocks went back to the pool when the planner preempted it (KvLedger::release).
  s.inflight = false;  // its outstanding row (if any) no longer counts: it is recomputed
  ++s.tag;
  auto it =
      std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
  TS_ASSERT(it != running_.end());
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

void Scheduler::on_sampled(Sequence& s, int32_t id, const SampleOutput& out, int row) {
  ++s.sample_step;
  if (s.generated == 0) s.t_first = Clock::now();
  const RequestOutput::Taken t = s.spec.output->take(*s.spec.shared, id, out, row);
  if (t.append) {
    s.tokens.push_back(id);
    s.history.add(id);
    ++s.generated;
  }
  if (t.finish)
    finish(s, *t.finish);
  else if (s.grammar && !grammar_take(s, id))
    return;
  else if (static_cast<int>(s.tokens.size()) >= opts_.context_length)
    finish(s, FinishReason::length);
}

bool Scheduler::grammar_take(Sequence& s, int32_t id) {
  std::string error;
  switch (s.grammar->take(id, error)) {
    case SequenceGrammar::Next::more:
      return true;
    case SequenceGrammar::Next::complete:  // nothing may follow: done
      finish(s, FinishReason::stop);
      return false;
    case SequenceGrammar::Next::error:
      finish(s, FinishReason::error, error);
      return false;
  }
  return false;
}

// The planner's view of the scheduler's sequences: ids [0, R) are running_[id] and [R, ...) are
// waiting_[id - R]; KV requests go to the sequences' SequenceKv.
class Scheduler::PlanView final : public WaitingQueue, public KvLedger {
 public:
  explicit PlanView(Scheduler& s) : s_(s), r_(static_cast<int>(s.running_.size())) {}
  Sequence& seq(int id) const { return id < r_ ? *s_.running_[id] : *s_.waiting_[id - r_]; }

  int size() const override { return static_cast<int>(s_.waiting_.size()); }
  PlanSeq at(int i) const override { return s_.plan_seq(*s_.waiting_[i], r_ + i); }

  bool reserve(int id, int n) override { return seq(id).kv->reserve(n); }
  void release(int id) override {
    Sequence& q = seq(id);
    q.kv->release_all();
    q.computed = 0;
    q.registered = 0;
  }
  int adopt_prefix(int id) override {
    Sequence& q = seq(id);
    if (!s_.opts_.prefix_cache || q.spec.output->wants_hidden()) return 0;  // every row pooled
    const int bs = s_.pool_.block_size();
    q.hashes = block_chain_hashes(q.tokens, bs);
    const int got = adopt_cached_prefix(s_.pool_, *q.kv, q.hashes,
                                        (static_cast<int>(q.tokens.size()) - 1) / bs);
    q.computed = got;
    q.registered = got / bs;
    if (!q.started) q.cached_prompt = std::min(got, q.prompt_len);
    return got;
  }

 private:
  Scheduler& s_;
  int r_;
};

PlanSeq Scheduler::plan_seq(const Sequence& s, int id) const {
  PlanSeq p;
  p.id = id;
  p.tokens = static_cast<int>(s.tokens.size());
  p.computed = s.computed;
  p.admit_order = s.admit_order;
  p.inflight = s.inflight;
  p.inflight_last = s.inflight && s.inflight_is_last(opts_.context_length);
  p.inflight_row = s.inflight_row;
  p.whole = model_.info().bidirectional;
  return p;
}

void Scheduler::drop_cancelled() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->spec.shared->cancel.cancelled()) {
      finish(**it, FinishReason::cancelled);
      drop(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->spec.shared->cancel.cancelled()) {
      finish(**it, FinishReason::cancelled);
      drop(std::move(*it));
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

// Carries out the plan's moves between the queues; batch_ gets its chunks' sequences.
void Scheduler::apply(const StepPlan& plan, const PlanView& view) {
  // Ids name positions in the queues as they were: resolve them all before anything moves.
  batch_.clear();
  for (const StepPlan::Chunk& c : plan.batch)
    batch_.push_back({&view.seq(c.id), c.tokens, c.sampled_row});
  moved_.clear();
  for (int id : plan.preempted) moved_.push_back(&view.seq(id));
  const size_t n_preempted = moved_.size();
  for (int id : plan.admitted) moved_.push_back(&view.seq(id));
  const size_t n_admitted = moved_.size() - n_preempted;
  for (int id : plan.failed) moved_.push_back(&view.seq(id));

  auto take_waiting = [&](Sequence* s) {
    auto it =
        std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& p) { return p.get() == s; });
    TS_ASSERT(it != waiting_.end());
    std::unique_ptr<Sequence> owned = std::move(*it);
    waiting_.erase(it);
    return owned;
  };
  for (size_t i = 0; i < n_preempted; ++i) preempt(*moved_[i]);
  for (size_t i = n_preempted; i < n_preempted + n_admitted; ++i) {
    Sequence& s = *moved_[i];
    if (!s.started) {
      s.started = true;
      s.t_admit = Clock::now();
      std::lock_guard<std::mutex> lk(stats_mu_);
      stats_.cached_prompt_tokens += s.cached_prompt;
    }
    s.admit_order = admitted_counter_++;
    running_.push_back(take_waiting(&s));
  }
  for (size_t i = n_preempted + n_admitted; i < moved_.size(); ++i) {
    std::unique_ptr<Sequence> owned = take_waiting(moved_[i]);
    finish(*owned, FinishReason::error, "the request does not fit in the KV pool");
    drop(std::move(owned));
  }
}

bool Scheduler::step() {
  drop_cancelled();  // cancelled requests leave first, waiting or running
  PlanView view(*this);
  PlannerState& state = plan_state_;
  state.running.clear();
  for (size_t i = 0; i < running_.size(); ++i)
    state.running.push_back(plan_seq(*running_[i], static_cast<int>(i)));
  state.waiting = &view;
  state.budget = opts_.max_batch_tokens;
  state.max_seqs = opts_.max_seqs;
  const StepPlan& plan = planner_.plan(state, view);
  apply(plan, view);
  if (batch_.empty()) {
    const bool failed = !plan.failed.empty();
    if (!sample_pending_) return failed;
    collect();  // nothing to run beside it: just take the last sample's ids
    remove_finished();
    return true;
  }
  run_batch();
  return true;
}

void Scheduler::run_batch() {
  // One forward over every chunk. Decoding sequences whose token is still on the device take it
  // from the outstanding sample there (BatchEntry::sampled_row).
  static const int32_t kPlaceholder = 0;
  entries_.assign(batch_.size(), BatchEntry{});
  for (size_t i = 0; i < batch_.size(); ++i) {
    const Chunk& c = batch_[i];
    Sequence& s = *c.seq;
    BatchEntry& e = entries_[i];
    e.kv = s.kv.get();
    if (c.sampled_row >= 0) {
      e.tokens = std::span<const int32_t>(&kPlaceholder, 1);
      e.sampled_row = c.sampled_row;
    } else {
      e.tokens = std::span<const int32_t>(s.tokens).subspan(s.computed, c.tokens);
    }
    e.logits_last = s.computed + c.tokens >= static_cast<int>(s.tokens.size());
  }
  HostBatch hb = build_batch(pool_, entries_);
  hb.causal = !model_.info().bidirectional;
  // The forward picks the greedy ids itself when every row will be sampled plainly, as far as is
  // known now; sample() checks again once the previous step's ids are in (they can end a
  // min_tokens suppression).
  hb.greedy_ids = true;
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (entries_[i].logits_last && !batch_[i].seq->plain_greedy_now()) hb.greedy_ids = false;
    if (batch_[i].seq->spec.output->wants_hidden()) hb.hidden_states = true;
  }
  bool forward_ok = false;
  try {
    const ForwardOutput fo = model_.forward(hb, pool_.layers());
    forward_ok = true;
    for (const Chunk& c : batch_) c.seq->computed += c.tokens;
    // The previous step's ids, while this forward runs on the device.
    collect();
    sample(fo);
    if (hb.hidden_states) hand_hidden(fo);
  } catch (const std::exception& e) {
    // A failed step fails the requests in it, and only them; the previous step's sample was
    // issued before this step and still counts.
    if (!forward_ok) {
      try {
        collect();
      } catch (...) {
      }
    }
    for (const Chunk& c : batch_)
      if (!c.seq->spec.shared->done)
        finish(*c.seq, FinishReason::error, std::string("step failed: ") + e.what());
  }

  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.steps;
    for (const Chunk& c : batch_)
      if (c.seq->computed <= c.seq->prompt_len) stats_.prompt_tokens += c.tokens;
  }
  remove_finished();  // finished sequences leave the batch at once
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.running = static_cast<int>(running_.size());
  stats_.waiting = static_cast<int>(waiting_.size());
  stats_.kv_blocks_used = pool_.used_blocks_all();
}

// Packs a sampler row for every sequence whose last token this forward computed and issues the
// sample; its ids stay on the device for the next step's forward.
void Scheduler::sample(const ForwardOutput& fo) {
  sampled_.clear();
  clear(sb_);
  masks_.clear();
  mask_refs_.clear();
  for (size_t i = 0; i < batch_.size(); ++i) {
    Sequence& s = *batch_[i].seq;
    if (s.spec.shared->done) {
      // Finished by its in-flight token: its row (if any) is sampled for nothing.
      if (entries_[i].logits_last) pack_unused_row(sb_), sampled_.push_back(nullptr);
      continue;
    }
    register_blocks(s);
    if (!entries_[i].logits_last) continue;
    if (s.grammar) {  // structured output: this row's mask
      LogitMask m;
      m.row = static_cast<int>(sampled_.size());
      std::string error;
      if (!s.grammar->mask(m, s.spec.stop_ids, mask_refs_, error)) {
        finish(s, FinishReason::error, error);  // this request only: the others sample
        pack_unused_row(sb_), sampled_.push_back(nullptr);
        continue;
      }
      masks_.push_back(m);
    }
    sampled_.push_back(&s);
    SampleRequest r;
    r.options = &s.spec.sampling;
    r.seed = s.seed;
    r.step = s.sample_step;
    r.history = &s.history;
    r.suppress = suppressed_ids(s.spec.stop_ids, s.generated, s.spec.min_tokens);
    pack_sample_row(r, sb_);
  }
  if (sampled_.empty()) return;
  const Tensor& logits = fo.logits;
  Tensor rows = logits.rows_from(0, static_cast<int64_t>(sampled_.size()));
  // The forward's greedy ids serve only if every row still samples plainly (a row's state can
  // change with the ids collected since, e.g. min_tokens reached).
  bool greedy = fo.greedy_ids != nullptr && masks_.empty();
  for (const SampleParams& p : sb_.rows) greedy = greedy && plain_greedy(p);
  // Constrained rows, masked in place while the forward's logits are still this step's.
  if (!masks_.empty()) model_.backend().mask_logits(rows, masks_);
  model_.backend().sample_async(rows, sb_, greedy ? fo.greedy_ids : nullptr);
  sample_pending_ = true;
  for (size_t r = 0; r < sampled_.size(); ++r) {
    Sequence* s = sampled_[r];
    if (!s) continue;
    s->inflight = true;
    s->inflight_row = static_cast<int>(r);
    outstanding_.push_back({s, static_cast<int>(r), s->tag});
    // Logits asked for are copied now, before the next forward reuses their buffer.
    s->spec.output->on_logits(model_.backend(), logits, static_cast<int>(r));
  }
}

// Embeddings' rows (RequestOutput::on_hidden), chunk by chunk in the batch's order, before the
// next forward reuses the buffer.
void Scheduler::hand_hidden(const ForwardOutput& fo) {
  int row = 0;
  for (const Chunk& c : batch_) {
    Sequence& s = *c.seq;
    if (s.spec.output->wants_hidden() && !s.spec.shared->done)
      s.spec.output->on_hidden(model_.backend(), fo.hidden, row, s.computed - c.tokens, c.tokens);
    row += c.tokens;
  }
}

void Scheduler::register_blocks(Sequence& s) {
  if (!opts_.prefix_cache || s.spec.output->wants_hidden()) return;
  // Only blocks whose tokens are all known (an in-flight token's block waits for its id).
  const int bs = pool_.block_size();
  const int full = std::min(s.computed, static_cast<int>(s.tokens.size())) / bs;
  if (static_cast<int>(s.hashes.size()) < full) s.hashes = block_chain_hashes(s.tokens, bs);
  register_full_blocks(pool_, *s.kv, s.hashes, s.registered, full);
  s.registered = std::max(s.registered, full);
}

void Scheduler::remove_finished() {
  for (auto& s : running_)
    if (s->spec.shared->done) drop(std::move(s));
  std::erase_if(running_, [](const auto& s) { return !s; });
}

void Scheduler::drop(std::unique_ptr<Sequence> s) {
  if (sample_pending_) retired_.push_back(std::move(s));
}

void Scheduler::collect() {
  if (!sample_pending_) return;
  sample_pending_ = false;
  collecting_.clear();
  collecting_.swap(outstanding_);
  std::string error;
  try {
    model_.backend().sample_wait(sample_out_);
  } catch (const std::exception& e) {
    error = std::string("sampling failed: ") + e.what();
  }
  // Rows that still count: not finished, not preempted since.
  std::erase_if(collecting_, [](const Outstanding& o) {
    return o.seq->spec.shared->done || !o.seq->inflight || o.seq->tag != o.tag;
  });
  if (error.empty()) {  // counted before the requests can see their results
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.generated_tokens += static_cast<int64_t>(collecting_.size());
  }
  for (const Outstanding& o : collecting_) {
    Sequence& s = *o.seq;
    s.inflight = false;
    if (!error.empty()) {
      finish(s, FinishReason::error, error);
      continue;
    }
    on_sampled(s, sample_out_.ids[o.row], sample_out_, o.row);
  }
  retired_.clear();
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (stop_) break;
      if (incoming_.empty() && waiting_.empty() && running_.empty() && !sample_pending_) {
        cv_.wait(lk, [&] { return stop_ || !incoming_.empty(); });
        if (stop_) break;
      }
    }
    admit_new();
    bool did = step();
    if (!did && !waiting_.empty()) {
      // Waiting for cancellations or new requests: poll briefly.
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(5), [&] { return stop_ || !incoming_.empty(); });
    }
    {
      std::lock_guard<std::mutex> lk(stats_mu_);
      stats_.running = static_cast<int>(running_.size());
      stats_.waiting = static_cast<int>(waiting_.size());
      stats_.kv_blocks_used = pool_.used_blocks_all();
    }
  }
  admit_new();
  try {
    collect();  // leaves the backend with no sample outstanding
  } catch (...) {
  }
  for (auto& s : running_)
    if (!s->spec.shared->done) finish(*s, FinishReason::cancelled, "");
  for (auto& s : waiting_) finish(*s, FinishReason::cancelled, "");
  running_.clear();
  waiting_.clear();
}

}  // namespace tessera
