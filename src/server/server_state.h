// What the routes share: the one Engine (every request goes through its scheduler), the
// server's options, the metrics registry and the flags graceful shutdown sets.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "server/connection_limits.h"
#include "server/cors.h"
#include "server/metrics.h"
#include "tessera/engine.h"

namespace tessera::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port (the bound one is printed)
  std::string api_key;     // non-empty: "Authorization: Bearer <key>" required
  std::string model_name;  // the id /v1/models lists and requests must name
  int max_queue = 512;     // sequences in flight (waiting + running) before 429
  size_t max_body_bytes = size_t{8} << 20;
  int shutdown_timeout_ms = 10000;  // SIGINT/SIGTERM: let requests finish this long, then cancel
  // SIGTERM: /health answers 503 at once, but requests are still served this long, so that a
  // load balancer's health checks take the replica out before it refuses anything.
  int drain_delay_ms = 0;
  ConnectionLimits limits;    // worker threads, connection caps, read deadlines
  bool log_requests = false;  // one line per request on stderr
  // --allowed-origins (server/cors.h): none by default; "*" with an API key needs the flag.
  std::vector<std::string> allowed_origins;
  bool allow_any_origin_with_key = false;
};

class ServerState {
 public:
  ServerState(Engine& engine, ServerOptions opts);

  Engine& engine;
  const ServerOptions opts;
  const CorsPolicy cors;  // from opts, checked at construction
  MetricsRegistry metrics;
  const int64_t started_unix;

  // Graceful shutdown: unhealthy makes /health answer 503 (first, for --drain-delay); draining
  // refuses new work with 503; abort makes in-flight requests cancel.
  std::atomic<bool> unhealthy{false};
  std::atomic<bool> draining{false};
  std::atomic<bool> abort{false};
  std::atomic<int> http_in_flight{0};  // handlers and streams not yet finished

  // Queue slots (--max-queue): try_reserve(k) takes k or none.
  bool try_reserve(int k);
  void release(int k);
  int queued() const { return queued_.load(); }

  // Per-request metrics.
  void count_http(const std::string& endpoint, int status);
  void observe_choice(const GenerateResult& r);
  void observe_latency(const std::string& endpoint, double seconds);
  void count_prompt_tokens(int n) { prompt_tokens_.inc(n); }

 private:
  std::atomic<int> queued_{0};
  Counter& prompt_tokens_;
  Counter& generated_tokens_;
  Histogram& ttft_;
};

// Queue slots held for one call of k inputs (classify, embeddings), released at scope exit. A
// call that can never fit (k > --max-queue) is a 400 naming `field`; a full queue now, a 429.
class QueueSlots {
 public:
  QueueSlots(ServerState& st, int k, const std::string& inputs, const std::string& field);
  ~QueueSlots() { st_.release(k_); }
  QueueSlots(const QueueSlots&) = delete;
  QueueSlots& operator=(const QueueSlots&) = delete;

 private:
  ServerState& st_;
  int k_;
};

}  // namespace tessera::server
