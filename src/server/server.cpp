#include "server/server.h"

#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "core/check.h"
#include "server/routes.h"

namespace tessera::server {

using Clock = std::chrono::steady_clock;

// httplib::Server with a deeper listen backlog: the packaged library listens with a backlog of
// 5, which drops connection attempts when hundreds of clients connect at once.
class HttpServer::Http : public httplib::Server {
 public:
  void raise_backlog(int n) { ::listen(svr_sock_, n); }
};

HttpServer::HttpServer(Engine& engine, ServerOptions opts)
    : state_(engine, std::move(opts)), http_(std::make_unique<Http>()) {
  if (state_.opts.max_queue < 1) fail_arg("--max-queue must be at least 1");
  const int threads = state_.opts.threads > 0 ? state_.opts.threads : state_.opts.max_queue + 32;
  // One worker per connection: a stream holds its thread until its last chunk, so the pool is
  // sized for --max-queue streams plus health checks and scrapes.
  http_->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  http_->set_payload_max_length(state_.opts.max_body_bytes);
  http_->set_tcp_nodelay(true);  // chunks go out as soon as they are written
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port
  // silently; SO_REUSEADDR alone still allows a restart over TIME_WAIT connections.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http_->set_keep_alive_max_count(1000);
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
