#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "engine/batch_builder.h"
#include "engine/prefix_cache.h"
#include "engine/stop_checker.h"

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
  std::vector<int32_t> generated;
  std::unique_ptr<StopChecker> stops;
  std::unordered_map<int32_t, int> out_counts;
  std::unordered_set<int32_t> seen;
  std::vector<StepLogprobs> logprobs;
  uint64_t seed = 0, sample_step = 0;
  int64_t admit_order = -1;
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
    if (spec.kind == RequestKind::classify) return true;
    return static_cast<int>(generated.size()) + 1 >= spec.gen.max_tokens ||
           static_cast<int>(tokens.size()) + 1 >= context_length;
  }
  const SamplingOptions& sampling() const {
    return spec.kind == RequestKind::classify ? spec.cls.sampling : spec.gen.sampling;
  }
  // Whether the next pick is plain greedy (backend.h plain_greedy), as far as is known before the
  // in-flight id arrives (collecting it can only end a min_tokens suppression, never start one).
  bool plain_greedy_now() const {
    if (spec.kind == RequestKind::classify) return false;
    const SamplingOptions& so = sampling();
    return so.temperature <= 0.0f && so.repetition_penalty == 1.0f && so.presence_penalty == 0.0f &&
           so.frequency_penalty == 0.0f && !so.logprobs && so.top_logprobs <= 0 &&
           (static_cast<int>(generated.size()) >= spec.gen.min_tokens || spec.stop_ids.empty());
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
    s->stops = std::make_unique<StopChecker>(s->spec.gen.stop);
    const auto& so = s->sampling();
    s->seed = so.seed ? *so.seed
                      : std::random_device{}() ^
                            static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    for (int32_t t : s->tokens) s->seen.insert(t);
    if (!s->spec.error.empty()) {
      finish(*s, FinishReason::error, s->spec.error);
      continue;
    }
    // Requests that can never run fail at once.
    std::string why;
    const int ctx = opts_.context_length;
    const int need =
        s->prompt_len + (s->spec.kind == RequestKind::generate ? s->spec.gen.max_tokens : 0);
    if (s->prompt_len == 0) {
      why = "the prompt is empty";
    } else if (need > ctx) {
      why = "the request needs " + std::to_string(need) + " positions (" +
            std::to_string(s->prompt_len) + " prompt tokens + " +
            std::to_string(need - s->prompt_len) + " max tokens) but the context length is " +
            std::to_string(ctx);
    } else {
      for (int g = 0; g < pool_.num_groups(); ++g)
        if (pool_.blocks_needed(g, need, opts_.max_batch_tokens) > pool_.total_blocks(g))
          why = "the request needs more KV blocks (" +
                std::to_string(pool_.blocks_needed(g, need, opts_.max_batch_tokens)) +
                ") than the whole pool holds (" + std::to_string(pool_.total_blocks(g)) +
                "); raise the KV memory or shorten the request";
    }
    if (!why.empty()) {
      finish(*s, FinishReason::error, why);
      continue;
    }
    waiting_.push_back(std::move(s));
  }
}

void Scheduler::fill_metrics(Sequence& s, Metrics& m) {
  m.prompt_tokens = s.prompt_len;
  m.cached_prompt_tokens = s.cached_prompt;
  m.generated_tokens = static_cast<int>(s.generated.size());
  const auto end = s.t_end;
  const auto admit = s.started ? s.t_admit : end;
  const auto first = s.generated.empty() && s.spec.kind == RequestKind::generate ? end : s.t_first;
  m.queue_ms = ms_between(s.t_submit, admit);
  m.ttft_ms = s.generated.empty() ? 0 : ms_between(s.t_submit, first);
  m.prefill_ms = s.started ? ms_between(admit, s.generated.empty() ? end : first) : 0;
  m.decode_ms = s.generated.size() > 1 ? ms_between(first, end) : 0;
  m.total_ms = ms_between(s.t_submit, end);
  m.prefill_tokens_per_s =
      m.prefill_ms > 0 ? (s.prompt_len - s.cached_prompt) / (m.prefill_ms / 1e3) : 0;
  m.decode_tokens_per_s = m.decode_ms > 0 ? (s.generated.size() - 1) / (m.decode_ms / 1e3) : 0;
  const auto& t = memory_tracker(model_.backend().device());
  m.peak_memory_bytes = t.peak();
  m.active_memory_bytes = t.active();
  m.device = model_.backend().name();
}

void Scheduler::finish(Sequence& s, FinishReason why, const std::string& error) {
  s.t_end = Clock::now();
  auto& sh = *s.spec.shared;
  // Release text held back for stop strings unless a stop string ended it.
  std::string tail;
  if (s.spec.kind == RequestKind::generate && !s.stops->matched()) {
    if (s.spec.text) tail = s.stops->push(s.spec.text->flush());
    tail += s.stops->flush();
  }
  if (!tail.empty() && s.spec.on_token) s.spec.on_token(-1, tail);
  if (s.kv) s.kv->release_all();
  {  // the gauge as this request leaves it, before the caller can see the result
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.kv_blocks_used = pool_.used_blocks_all();
  }
  std::lock_guard<std::mutex> lk(sh.mu);
  if (s.spec.kind == RequestKind::classify) {
    sh.classify.error = error;
    sh.classify.prompt_tokens = s.prompt_len;
  }
  GenerateResult& r = sh.result;
  r.ids = s.generated;
  r.text = s.stops->text();
  r.finish_reason = why;
  r.error = error;
  if (s.stops->matched()) r.stop_string = s.stops->matched_stop();
  r.logprobs = std::move(s.logprobs);
  fill_metrics(s, r.metrics);
  if (sh.stream) {
    if (!tail.empty()) {
      RequestStream::Event ev;
      ev.piece = tail;
      sh.events.push_back(std::move(ev));
    }
    RequestStream::Event ev;
    ev.done = true;
    ev.result = r;
    sh.events.push_back(std::move(ev));
  }
  sh.done = true;
  sh.cv.notify_all();
}

void Scheduler::preempt(Sequence& s) {
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.preemptions;
  }
  s.kv->release_all();
  s.computed = 0;
  s.registered = 0;
  s.inflight = false;  // its outstanding row (if any) no longer counts: it is recomputed
  ++s.tag;
  auto it =
      std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
  TS_ASSERT(it != running_.end());
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

void Scheduler::on_sampled(Sequence& s, int32_t id, const SampleOutput& out, int row) {
  auto& sh = *s.spec.shared;
  ++s.sample_step;
  if (s.spec.kind == RequestKind::classify) {
    ClassifyResult& c = sh.classify;
    c.token = id;
    c.text = opts_.token_text ? opts_.token_text(id) : "";
    if (!out.logprobs.empty()) c.logprob = out.logprobs[row];
    for (int k = 0; k < std::min(out.top_n, s.spec.cls.top_logprobs); ++k) {
      const int32_t t = out.top_ids[static_cast<size_t>(row) * out.top_n + k];
      if (t < 0) break;
      c.top_logprobs.push_back({t, opts_.token_text ? opts_.token_text(t) : "",
                                out.top_logprobs[static_cast<size_t>(row) * out.top_n + k]});
    }
    finish(s, FinishReason::stop);
    return;
  }
  if (s.generated.empty()) s.t_first = Clock::now();
  const GenerateOptions& g = s.spec.gen;
  if (std::find(s.spec.stop_ids.begin(), s.spec.stop_ids.end(), id) != s.spec.stop_ids.end()) {
    sh.result.stop_token = id;
    finish(s, FinishReason::stop);
    return;
  }
  s.generated.push_back(id);
  s.tokens.push_back(id);
  s.seen.insert(id);
  ++s.out_counts[id];
  std::optional<StepLogprobs> lp;
  if (g.sampling.logprobs || g.sampling.top_logprobs > 0) {
    StepLogprobs st;
    st.chosen = {id, opts_.token_text ? opts_.token_text(id) : "", out.logprobs[row]};
    for (int k = 0; k < std::min(out.top_n, g.sampling.top_logprobs); ++k) {
      const int32_t t = out.top_ids[static_cast<size_t>(row) * out.top_n + k];
      if (t < 0) break;
      st.top.push_back({t, opts_.token_text ? opts_.token_text(t) : "",
                        out.top_logprobs[static_cast<size_t>(row) * out.top_n + k]});
    }
    s.logprobs.push_back(st);
    lp = st;
  }
  std::string piece = s.spec.text ? s.spec.text->push(id) : "";
  std::string emit = s.stops->push(piece);
  bool keep = true;
  if (s.spec.on_token) keep = s.spec.on_token(id, emit);
  if (sh.stream) {
    std::lock_guard<std::mutex> lk(sh.mu);
    RequestStream::Event ev;
    ev.id = id;
    ev.piece = std::move(emit);
    ev.logprobs = std::move(lp);
    sh.events.push_back(std::move(ev));
    sh.cv.notify_all();
  }
  if (!keep) {
    finish(s, FinishReason::cancelled);
  } else if (s.stops->matched()) {
    finish(s, FinishReason::stop);
  } else if (static_cast<int>(s.generated.size()) >= g.max_tokens ||
             static_cast<int>(s.tokens.size()) >= opts_.context_length) {
    finish(s, FinishReason::length);
  }
}

bool Scheduler::step() {
  // Cancelled requests leave first, waiting or running.
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

  int budget = opts_.max_batch_tokens;
  std::vector<Sequence*> batch;
  std::vector<int> chunks;
  auto in_batch = [&](const Sequence* s) {
    return std::find(batch.begin(), batch.end(), s) != batch.end();
  };
  // Reserves n positions for s, preempting younger sequences not in this step if the pool is
  // short. False when nothing younger is left to preempt.
  auto make_room = [&](Sequence& s, int n) {
    for (;;) {
      if (s.kv->reserve(n)) return true;
      Sequence* victim = nullptr;
      for (auto& r : running_)
        if (r.get() != &s && !in_batch(r.get()) && r->admit_order > s.admit_order &&
            (!victim || r->admit_order > victim->admit_order))
          victim = r.get();
      if (!victim) return false;
      preempt(*victim);
    }
  };

  // 1. Decodes: one pending token each (known, or in flight on the device), oldest first.
  std::vector<int> sampled_rows;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& s = *running_[i];
    const bool on_device = s.inflight && !s.inflight_is_last(opts_.context_length);
    if ((s.pending() != 1 && !on_device) || in_batch(&s)) {
      ++i;
      continue;
    }
    if (!make_room(s, 1)) {
      preempt(s);  // the youngest waits for blocks; its place in running_ is gone
      continue;
    }
    batch.push_back(&s);
    chunks.push_back(1);
    sampled_rows.push_back(on_device ? s.inflight_row : -1);
    --budget;
    ++i;
  }

  // 2. Prompts already started, then 3. new admissions, in chunks.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& s = *running_[i];
    if (in_batch(&s) || s.pending() <= 0 || s.inflight) continue;
    const int n = std::min(s.pending(), budget);
    if (!make_room(s, n)) continue;
    batch.push_back(&s);
    chunks.push_back(n);
    sampled_rows.push_back(-1);
    budget -= n;
  }
  while (budget > 0 && !waiting_.empty() && static_cast<int>(running_.size()) < opts_.max_seqs) {
    Sequence& s = *waiting_.front();
    const int bs = pool_.block_size();
    if (opts_.prefix_cache && s.computed == 0) {
      s.hashes = block_chain_hashes(s.tokens, bs);
      const int got =
          adopt_cached_prefix(pool_, *s.kv, s.hashes, (static_cast<int>(s.tokens.size()) - 1) / bs);
      s.computed = got;
      s.registered = got / bs;
      if (!s.started) {
        s.cached_prompt = std::min(got, s.prompt_len);
        std::lock_guard<std::mutex> lk(stats_mu_);
        stats_.cached_prompt_tokens += s.cached_prompt;
      }
    }
    const int n = std::min(s.pending(), budget);
    if (!s.kv->reserve(n)) {
      s.kv->release_all();
      s.computed = 0;
      if (running_.empty() && batch.empty()) {
        auto owned = std::move(waiting_.front());
        waiting_.pop_front();
        finish(*owned, FinishReason::error, "the request does not fit in the KV pool");
        continue;
      }
      break;  // first come, first served: wait for blocks
    }
    if (!s.started) {
      s.started = true;
      s.t_admit = Clock::now();
    }
    s.admit_order = admitted_counter_++;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    batch.push_back(running_.back().get());
    chunks.push_back(n);
    sampled_rows.push_back(-1);
    budget -= n;
  }
  if (batch.empty()) {
    if (!sample_pending_) return false;
    collect();  // nothing to run beside it: just take the last sample's ids
    remove_finished();
    return true;
  }

  // One forward over every chunk. Decoding sequences whose token is still on the device take it
  // from the outstanding sample there (BatchEntry::sampled_row).
  static const int32_t kPlaceholder = 0;
  std::vector<BatchEntry> entries(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence& s = *batch[i];
    entries[i].kv = s.kv.get();
    if (sampled_rows[i] >= 0) {
      entries[i].tokens = std::span<const int32_t>(&kPlaceholder, 1);
      entries[i].sampled_row = sampled_rows[i];
    } else {
      entries[i].tokens = std::span<const int32_t>(s.tokens).subspan(s.computed, chunks[i]);
    }
    entries[i].logits_last = s.computed + chunks[i] >= static_cast<int>(s.tokens.size());
  }
  HostBatch hb = build_batch(pool_, entries);
  hb.greedy_ids = true;
  for (size_t i = 0; i < batch.size(); ++i)
    if (entries[i].logits_last && !batch[i]->plain_greedy_now()) hb.greedy_ids = false;
  std::vector<Sequence*> sampled;
  SampleBatch sb;
  std::vector<int32_t> rep_ids;
  bool forward_ok = false;
  try {
    const ForwardOutput fo = model_.forward(hb, pool_.layers());
    const Tensor& logits = fo.logits;
    forward_ok = true;
    for (size_t i = 0; i < batch.size(); ++i) batch[i]->computed += chunks[i];
    // The previous step's ids, while this forward runs on the device.
    collect();
    for (size_t i = 0; i < batch.size(); ++i) {
      Sequence& s = *batch[i];
      if (s.spec.shared->done) {
        // Finished by its in-flight token: its row (if any) is sampled for nothing.
        if (entries[i].logits_last) sb.rows.emplace_back(), sampled.push_back(nullptr);
        continue;
      }
      register_blocks(s);
      if (!entries[i].logits_last) continue;
      sampled.push_back(&s);
      const SamplingOptions& so = s.sampling();
      SampleParams p;
      p.temperature = so.temperature;
      p.top_k = so.top_k;
      p.top_p = so.top_p;
      p.min_p = so.min_p;
      p.seed = s.seed;
      p.step = s.sample_step;
      p.repetition_penalty = so.repetition_penalty;
      p.presence_penalty = so.presence_penalty;
      p.frequency_penalty = so.frequency_penalty;
      if (so.repetition_penalty != 1.0f) {
        p.rep_begin = static_cast<int>(sb.penalty_ids.size());
        for (int32_t t : s.seen) sb.penalty_ids.push_back(t), sb.penalty_counts.push_back(0);
        p.rep_count = static_cast<int>(sb.penalty_ids.size()) - p.rep_begin;
      }
      if (so.presence_penalty != 0.0f || so.frequency_penalty != 0.0f) {
        p.freq_begin = static_cast<int>(sb.penalty_ids.size());
        for (auto [t, c] : s.out_counts)
          sb.penalty_ids.push_back(t), sb.penalty_counts.push_back(c);
        p.freq_count = static_cast<int>(sb.penalty_ids.size()) - p.freq_begin;
      }
      if (s.spec.kind == RequestKind::generate &&
          static_cast<int>(s.generated.size()) < s.spec.gen.min_tokens) {
        p.suppress_begin = static_cast<int>(sb.suppress_ids.size());
        sb.suppress_ids.insert(sb.suppress_ids.end(), s.spec.stop_ids.begin(),
                               s.spec.stop_ids.end());
        p.suppress_count = static_cast<int>(s.spec.stop_ids.size());
      }
      p.logprobs = so.logprobs || s.spec.kind == RequestKind::classify;
      p.top_logprobs =
          s.spec.kind == RequestKind::classify ? s.spec.cls.top_logprobs : so.top_logprobs;
      sb.rows.push_back(p);
    }
    if (!sampled.empty()) {
      Tensor rows = logits.rows_from(0, static_cast<int64_t>(sampled.size()));
      // The forward's greedy ids serve only if every row still samples plainly (a row's state
      // can change with the ids collected since, e.g. min_tokens reached).
      bool greedy = fo.greedy_ids != nullptr;
      for (const SampleParams& p : sb.rows) greedy = greedy && plain_greedy(p);
      model_.backend().sample_async(rows, sb, greedy ? fo.greedy_ids : nullptr);
      sample_pending_ = true;
      for (size_t r = 0; r < sampled.size(); ++r) {
        Sequence* s = sampled[r];
        if (!s) continue;
        s->inflight = true;
        s->inflight_row = static_cast<int>(r);
        outstanding_.push_back({s, static_cast<int>(r), s->tag});
        // Logits asked for: copied now, before the next forward reuses their buffer.
        if (s->spec.kind == RequestKind::classify && s->spec.cls.return_logits) {
          auto& dst = s->spec.shared->classify.logits;
          dst.resize(static_cast<size_t>(logits.cols));
          model_.backend().copy_to_host(
              dst.data(), static_cast<const char*>(logits.data) + r * logits.row_bytes(),
              dst.size() * sizeof(float));
        }
      }
    }
  } catch (const std::exception& e) {
    // A failed step fails the requests in it, and only them; the previous step's sample was
    // issued before this step and still counts.
    if (!forward_ok) {
      try {
        collect();
      } catch (...) {
      }
    }
    for (Sequence* s : batch)
      if (!s->spec.shared->done)
        finish(*s, FinishReason::error, std::string("step failed: ") + e.what());
  }

  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.steps;
    for (size_t i = 0; i < batch.size(); ++i)
      if (batch[i]->computed <= batch[i]->prompt_len) stats_.prompt_tokens += chunks[i];
  }
  remove_finished();  // finished sequences leave the batch at once
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.running = static_cast<int>(running_.size());
  stats_.waiting = static_cast<int>(waiting_.size());
  stats_.kv_blocks_used = pool_.used_blocks_all();
  return true;
}

void Scheduler::register_blocks(Sequence& s) {
  if (!opts_.prefix_cache) return;
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
  std::vector<Outstanding> rows;
  rows.swap(outstanding_);
  SampleOutput out;
  std::string error;
  try {
    model_.backend().sample_wait(out);
  } catch (const std::exception& e) {
    error = std::string("sampling failed: ") + e.what();
  }
  // Rows that still count: not finished, not preempted since.
  std::erase_if(rows, [](const Outstanding& o) {
    return o.seq->spec.shared->done || !o.seq->inflight || o.seq->tag != o.tag;
  });
  if (error.empty()) {  // counted before the requests can see their results
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.generated_tokens += static_cast<int64_t>(rows.size());
  }
  for (const Outstanding& o : rows) {
    Sequence& s = *o.seq;
    s.inflight = false;
    if (!error.empty()) {
      finish(s, FinishReason::error, error);
      continue;
    }
    on_sampled(s, out.ids[o.row], out, o.row);
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
