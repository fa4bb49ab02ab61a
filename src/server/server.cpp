#include "server/server.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/check.h"
#include "server/connection_gate.h"
#include "server/routes.h"

namespace tessera::server {

namespace {

// Set by the logger httplib calls after writing each response: the response asked to close the
// connection (Connection: close), so no further request is read from it.
thread_local bool t_close_after = false;

// httplib's accept loop hands each accepted socket to its task queue; this one runs the hand-off
// at once (Http::process_and_close_socket gives the socket to the gate, which never blocks).
class InlineQueue : public httplib::TaskQueue {
 public:
  explicit InlineQueue(ConnectionGate& g) : gate_(g) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { gate_.stop(); }

 private:
  ConnectionGate& gate_;
};

ConnectionLimits checked_limits(const ServerOptions& o) {
  ConnectionLimits l = o.limits;
  if (l.workers == 0) l.workers = o.max_queue + 32;
  if (l.workers < 1) fail_arg("--threads must be at least 1");
  if (l.max_connections < 1) fail_arg("--max-connections must be at least 1");
  if (l.max_client_connections < 0) fail_arg("--max-client-connections must be >= 0");
  if (l.header_timeout_ms < 1 || l.body_timeout_ms < 1 || l.keep_alive_ms < 1 ||
      l.write_timeout_ms < 1)
    fail_arg("--header-timeout, --body-timeout, --keep-alive and --write-timeout must be > 0");
  // Each connection is a descriptor; raise the soft limit toward the hard one when needed, with
  // room for the model's files and the engine's own.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    const rlim_t want = static_cast<rlim_t>(l.max_connections) + 256;
    if (rl.rlim_cur < want) {
      rl.rlim_cur = std::min(want, rl.rlim_max);
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want)
      fail_arg("--max-connections " + std::to_string(l.max_connections) + " needs about " +
               std::to_string(want) + " open files, but this process may open " +
               std::to_string(rl.rlim_cur) + " (ulimit -n)");
  }
  return l;
}

}  // namespace

// httplib::Server with a deeper listen backlog (the packaged library listens with a backlog of
// 5, which drops connection attempts when hundreds of clients connect at once), whose accepted
// sockets go to the ConnectionGate instead of a thread each.
class HttpServer::Http : public httplib::Server {
 public:
  Http(ServerState& st, const ConnectionLimits& limits)
      : gate_(
            limits, [this](Connection& c) { return serve(c); },
            [&st](const char* reason) {
              st.metrics
                  .counter("tessera_connections_closed_total",
                           "Connections refused or closed by a limit, by reason",
                           {{"reason", reason}})
                  .inc();
            }) {}
  void raise_backlog(int n) { ::listen(svr_sock_, n); }
  ConnectionGate& gate() { return gate_; }

 private:
  // Called by httplib's accept loop (through InlineQueue) for every accepted socket.
  bool process_and_close_socket(socket_t sock) override {
    gate_.admit(sock);
    return true;
  }

  // Answers the requests whose headers are in c's buffer: the first, then any the client
  // pipelined behind it. The gate gives the connection back to the reactor when this returns
  // true (kept alive, waiting for its next request).
  bool serve(Connection& c) {
    CurrentConnection current(c);
    ConnStream strm(c, std::chrono::milliseconds(gate_.limits().write_timeout_ms));
    for (;;) {
      if (gate_.stopping()) return false;
      // The headers are buffered already; the deadline bounds the rest: the request's body.
      c.read_deadline = Clock::now() + std::chrono::milliseconds(gate_.limits().body_timeout_ms);
      c.timed_out = false;
      t_close_after = false;
      const bool last = ++c.requests >= gate_.limits().keep_alive_max;
      bool closed = false;
      const bool ok = process_request(strm, last, closed, nullptr);
      c.compact();
      if (!ok || closed || last || t_close_after || c.timed_out) return false;
      if (!c.has_request_head()) return true;
    }
  }

  ConnectionGate gate_;
};

HttpServer::HttpServer(Engine& engine, ServerOptions opts) : state_(engine, std::move(opts)) {
  if (state_.opts.max_queue < 1) fail_arg("--max-queue must be at least 1");
  http_ = std::make_unique<Http>(state_, checked_limits(state_.opts));
  ConnectionGate* gate = &http_->gate();
  http_->new_task_queue = [gate] { return new InlineQueue(*gate); };
  state_.metrics.gauge("tessera_connections_open", "Open HTTP connections",
                       [gate] { return gate->open_connections(); });
  state_.metrics.gauge("tessera_connections_waiting",
                       "Open connections waiting for a request's headers (no thread held)",
                       [gate] { return gate->waiting_connections(); });
  http_->set_payload_max_length(state_.opts.max_body_bytes);
  // What the Keep-Alive response header advertises; the gate enforces both.
  const auto& lim = http_->gate().limits();
  http_->set_keep_alive_max_count(static_cast<size_t>(lim.keep_alive_max));
  http_->set_keep_alive_timeout(std::max<time_t>(1, lim.keep_alive_ms / 1000));
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port
  // silently; SO_REUSEADDR alone still allows a restart over TIME_WAIT connections.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http_->set_logger([](const httplib::Request&, const httplib::Response& res) {
    if (res.get_header_value("Connection") == "close") t_close_after = true;
  });
  install_guards(*http_, state_);
  register_completion_routes(*http_, state_);
  register_chat_routes(*http_, state_);
  register_info_routes(*http_, state_);
  register_classify_routes(*http_, state_);
  register_responses_routes(*http_, state_);
  register_embeddings_routes(*http_, state_);
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const auto& o = state_.opts;
  int port = o.port;
  if (o.port == 0) {
    port = http_->bind_to_any_port(o.host);
    if (port < 0) fail_arg("cannot bind " + o.host + " (any port)");
  } else if (!http_->bind_to_port(o.host, o.port)) {
    fail_arg("cannot bind " + o.host + ":" + std::to_string(o.port) +
             " (in use, or not an address of this machine)");
  }
  http_->raise_backlog(1024);
  return port;
}

void HttpServer::run() {
  running_.store(true);
  http_->listen_after_bind();
  finished_.store(true);
}

void HttpServer::shutdown() {
  // /health fails first; requests are still served for --drain-delay, while load balancers'
  // health checks notice and send new work elsewhere.
  state_.unhealthy.store(true);
  const auto delay_end = Clock::now() + std::chrono::milliseconds(state_.opts.drain_delay_ms);
  while (Clock::now() < delay_end && !state_.abort.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  state_.draining.store(true);
  const auto deadline = Clock::now() + std::chrono::milliseconds(state_.opts.shutdown_timeout_ms);
  while (state_.http_in_flight.load() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (state_.http_in_flight.load() > 0) {
    std::fprintf(stderr, "tessera serve: cancelling %d requests still in flight\n",
                 state_.http_in_flight.load());
    state_.abort.store(true);
    // Cancelled requests end at the scheduler's next step; streams then write their last chunk.
    const auto grace = Clock::now() + std::chrono::seconds(5);
    while (state_.http_in_flight.load() > 0 && Clock::now() < grace)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // stop() is a no-op until listen has started; repeat it until run() returns.
  while (!finished_.load()) {
    if (running_.load()) http_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tessera::server
