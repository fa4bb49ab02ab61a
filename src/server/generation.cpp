#include "server/generation.h"

#include <algorithm>

namespace tessera::server {

using Clock = std::chrono::steady_clock;

std::vector<ChoiceSpec> make_choices(const std::vector<PreparedRequest>& prompts, int n) {
  std::vector<ChoiceSpec> out;
  for (size_t p = 0; p < prompts.size(); ++p) {
    for (int i = 0; i < n; ++i) {
      ChoiceSpec c;
      c.index = static_cast<int>(p) * n + i;
      c.prompt = static_cast<int>(p);
      c.request = prompts[p];
      SamplingOptions& so = c.request.options.sampling;
      if (so.seed) so.seed = *so.seed + static_cast<uint64_t>(i);
      out.push_back(std::move(c));
    }
  }
  return out;
}

ChoiceRun::ChoiceRun(ServerState& state, std::string endpoint, std::vector<ChoiceSpec> specs,
                     ConnectionWatch watch, Clock::time_point t_start)
    : state_(state),
      endpoint_(std::move(endpoint)),
      specs_(std::move(specs)),
      watch_(watch),
      t_start_(t_start) {
  const int k = static_cast<int>(specs_.size());
  if (k > state_.opts.max_queue)
    bad_request("this request asks for " + std::to_string(k) +
                    " sequences (prompts x n) but the server runs at most " +
                    std::to_string(state_.opts.max_queue) + " at once (--max-queue)",
                "n");
  if (!state_.try_reserve(k))
    throw ApiError(429,
                   "the server is at capacity (" + std::to_string(state_.opts.max_queue) +
                       " sequences in flight, --max-queue); retry later",
                   "rate_limit_error", "", "queue_full");
  reserved_ = k;
  done_.assign(specs_.size(), 0);
  results_.resize(specs_.size());
  remaining_ = k;
  try {
    streams_.reserve(specs_.size());
    for (const auto& s : specs_) streams_.push_back(state_.engine.submit(s.request));
  } catch (...) {
    // No destructor runs for a half-built run: give the slots back (dropped streams cancel).
    state_.release(reserved_);
    throw;
  }
}

ChoiceRun::~ChoiceRun() {
  if (remaining_ > 0) {
    // Cancelled choices finish at the scheduler's next step; waiting for that (briefly) keeps the
    // metrics whole and the queue slots honest.
    cancel_all();
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    std::vector<Item> items;
    while (remaining_ > 0 && Clock::now() < deadline) {
      items.clear();
      poll(items, 20);
    }
  }
  state_.release(reserved_);
  state_.observe_latency(endpoint_, std::chrono::duration<double>(Clock::now() - t_start_).count());
}

void ChoiceRun::on_done(int c, const GenerateResult& r) {
  done_[c] = 1;
  results_[c] = r;
  --remaining_;
  --reserved_;
  state_.release(1);
  state_.observe_choice(r);
}

void ChoiceRun::poll(std::vector<Item>& out, int timeout_ms) {
  const size_t before = out.size();
  RequestStream::Event ev;
  auto take = [&](int c) {
    const bool fin = ev.done;
    if (fin) on_done(c, ev.result);
    out.push_back({c, std::move(ev)});
    ev = RequestStream::Event{};
    return fin;
  };
  for (size_t c = 0; c < streams_.size(); ++c) {
    if (done_[c]) continue;
    while (streams_[c]->next(ev, 0))
      if (take(static_cast<int>(c))) break;
  }
  if (out.size() > before || remaining_ == 0 || timeout_ms <= 0) return;
  // Nothing ready: block on the first unfinished choice (briefly when others could speak first).
  const auto it = std::find(done_.begin(), done_.end(), 0);
  const int c = static_cast<int>(it - done_.begin());
  const int wait = remaining_ > 1 ? std::min(timeout_ms, 5) : timeout_ms;
  if (streams_[c]->next(ev, wait)) take(c);
}

bool ChoiceRun::should_cancel() const {
  return state_.abort.load() || watch_.peer_closed();
}

void ChoiceRun::cancel_all() {
  cancelled_ = true;
  for (size_t c = 0; c < streams_.size(); ++c)
    if (!done_[c]) streams_[c]->cancel();
}

void ChoiceRun::wait_all() {
  std::vector<Item> items;
  while (remaining_ > 0) {
    if (!cancelled_ && should_cancel()) cancel_all();
    items.clear();
    poll(items, 100);
  }
  if (auto e = first_error()) throw *e;
}

std::optional<ApiError> ChoiceRun::first_error() const {
  for (size_t c = 0; c < results_.size(); ++c) {
    if (!done_[c]) continue;
    const GenerateResult& r = results_[c];
    if (r.finish_reason == FinishReason::error) return api_error_from_failed(r.error);
    if (r.finish_reason == FinishReason::cancelled && cancelled_) {
      if (state_.abort.load())
        return ApiError(503, "the server is shutting down", "server_error", "", "shutting_down");
      return ApiError(499, "the client closed the connection", "invalid_request_error", "",
                      "client_closed");
    }
  }
  return std::nullopt;
}

}  // namespace tessera::server
