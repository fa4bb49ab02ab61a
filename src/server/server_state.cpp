#include "server/server_state.h"

#include <ctime>

#include "server/api_error.h"

namespace tessera::server {

namespace {
// Seconds; TTFT on a CPU under load reaches seconds, latency tens of seconds.
const std::vector<double> kTtftBounds = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
const std::vector<double> kLatencyBounds = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}  // namespace

ServerState::ServerState(Engine& e, ServerOptions o)
    : engine(e),
      opts(std::move(o)),
      cors(make_cors_policy(opts.allowed_origins, !opts.api_key.empty(),
                            opts.allow_any_origin_with_key)),
      started_unix(static_cast<int64_t>(std::time(nullptr))),
      prompt_tokens_(
          metrics.counter("tessera_prompt_tokens_total", "Prompt tokens of finished requests")),
      generated_tokens_(metrics.counter("tessera_generation_tokens_total", "Tokens generated")),
      ttft_(metrics.histogram("tessera_time_to_first_token_seconds",
                              "Time from submission to the first generated token", kTtftBounds)) {
  Engine* eng = &engine;
  metrics.gauge("tessera_kv_blocks_used", "KV cache blocks referenced by sequences",
                [eng] { return eng->stats().kv_blocks_used; });
  metrics.gauge("tessera_kv_blocks_free",
                "KV cache blocks free (never used or cached and evictable)", [eng] {
                  const auto s = eng->stats();
                  return s.kv_blocks_total - s.kv_blocks_used;
                });
  metrics.gauge("tessera_kv_blocks_total", "KV cache blocks in the pool",
                [eng] { return eng->stats().kv_blocks_total; });
  metrics.gauge("tessera_queue_depth", "Sequences waiting for admission to the scheduler",
                [eng] { return eng->stats().waiting; });
  metrics.gauge("tessera_running_sequences", "Sequences the scheduler is running",
                [eng] { return eng->stats().running; });
  metrics.counter_fn("tessera_preemptions_total",
                     "Sequences preempted since start because the KV pool ran out",
                     [eng] { return static_cast<double>(eng->stats().preemptions); });
  metrics.counter_fn("tessera_scheduler_steps_total", "Forward steps the scheduler ran",
                     [eng] { return static_cast<double>(eng->stats().steps); });
  metrics.gauge("tessera_memory_active_bytes", "Bytes tessera holds on the compute device",
                [eng] { return static_cast<double>(eng->stats().memory_active); });
  metrics.gauge("tessera_server_queued_sequences",
                "Sequences the server has in flight (counted against --max-queue)",
                [this] { return queued(); });
  metrics.gauge("tessera_http_requests_in_flight", "HTTP requests being handled or streamed",
                [this] { return http_in_flight.load(); });
}

bool ServerState::try_reserve(int k) {
  int cur = queued_.load();
  do {
    if (cur + k > opts.max_queue) return false;
  } while (!queued_.compare_exchange_weak(cur, cur + k));
  return true;
}

void ServerState::release(int k) {
  queued_.fetch_sub(k);
}

void ServerState::count_http(const std::string& endpoint, int status) {
  metrics
      .counter("tessera_http_requests_total", "HTTP requests by endpoint and status",
               {{"endpoint", endpoint}, {"status", std::to_string(status)}})
      .inc();
}

void ServerState::observe_choice(const GenerateResult& r) {
  metrics
      .counter("tessera_sequences_finished_total", "Generated sequences by finish reason",
               {{"reason", finish_reason_name(r.finish_reason)}})
      .inc();
  prompt_tokens_.inc(r.metrics.prompt_tokens);
  generated_tokens_.inc(static_cast<double>(r.ids.size()));
  if (!r.ids.empty()) ttft_.observe(r.metrics.ttft_ms / 1e3);
}

void ServerState::observe_latency(const std::string& endpoint, double seconds) {
  metrics
      .histogram("tessera_request_duration_seconds", "End-to-end request latency", kLatencyBounds,
                 {{"endpoint", endpoint}})
      .observe(seconds);
}

QueueSlots::QueueSlots(ServerState& st, int k, const std::string& inputs, const std::string& field)
    : st_(st), k_(k) {
  if (k > st.opts.max_queue)
    bad_request("this request has " + std::to_string(k) + " " + inputs +
                    " but the server runs at most " + std::to_string(st.opts.max_queue) +
                    " sequences at once (--max-queue)",
                field);
  if (!st.try_reserve(k))
    throw ApiError(429, "the server is at capacity (--max-queue); retry later", "rate_limit_error",
                   "", "queue_full");
}

}  // namespace tessera::server
