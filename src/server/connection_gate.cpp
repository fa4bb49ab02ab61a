#include "server/connection_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "core/check.h"

namespace tessera::server {

namespace {

using std::chrono::milliseconds;

// GET /health and GET /metrics (with or without a query) go to the control lane.
bool is_probe(const std::string& line) {
  for (const char* p : {"GET /health", "GET /metrics"}) {
    const size_t n = std::char_traits<char>::length(p);
    if (line.compare(0, n, p) == 0 && line.size() > n && (line[n] == ' ' || line[n] == '?'))
      return true;
  }
  return false;
}

}  // namespace

ConnectionGate::ConnectionGate(ConnectionLimits limits, Serve serve, Count count)
    : lim_(limits), serve_(std::move(serve)), count_(std::move(count)) {
  if (::pipe2(wake_pipe_, O_NONBLOCK | O_CLOEXEC) != 0)
    fail(ErrorKind::io, "cannot create the server's wake-up pipe");
  reactor_ = std::thread([this] { reactor(); });
  for (int i = 0; i < lim_.workers; ++i)
    work_lane_.threads.emplace_back([this] { work(work_lane_); });
  for (int i = 0; i < lim_.control_workers; ++i)
    control_lane_.threads.emplace_back([this] { work(control_lane_); });
}

ConnectionGate::~ConnectionGate() {
  stop();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

bool ConnectionGate::stopping() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stopping_;
}

int ConnectionGate::open_connections() const {
  std::lock_guard<std::mutex> lk(mu_);
  return open_;
}

int ConnectionGate::waiting_connections() const {
  std::lock_guard<std::mutex> lk(mu_);
  return static_cast<int>(waiting_.size());
}

void ConnectionGate::wake() {
  const char b = 1;
  (void)!::write(wake_pipe_[1], &b, 1);  // a full pipe already wakes the reactor
}

void ConnectionGate::admit(int fd) {
  sockaddr_storage peer{}, local{};
  socklen_t pl = sizeof peer, ll = sizeof local;
  int port = -1, local_port = -1;
  std::string ip, local_ip;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0)
    describe_address(peer, ip, port);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) == 0)
    describe_address(local, local_ip, local_port);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // stream chunks go out at once
  auto c = std::make_shared<Connection>(fd, ip, port, local_ip, local_port);

  const char* refused = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;
    if (lim_.max_client_connections > 0 && per_client_[ip] >= lim_.max_client_connections &&
        !evict_oldest(&ip))
      refused = "client_cap";
    else if (open_ >= lim_.max_connections && !evict_oldest(nullptr))
      refused = "server_cap";
    if (!refused) {
      c->gate = this;
      ++open_;
      ++per_client_[ip];
      c->since = Clock::now();
      c->deadline = c->since + milliseconds(lim_.header_timeout_ms);
      waiting_.push_back(c);
    }
  }
  if (refused) {
    const bool client = refused[0] == 'c';
    c->send_now(plain_error_response(
        client ? 429 : 503, client ? "Too Many Requests" : "Service Unavailable",
        client ? "too many connections from this client (--max-client-connections " +
                     std::to_string(lim_.max_client_connections) + ")"
               : "the server has too many open connections (--max-connections " +
                     std::to_string(lim_.max_connections) + ")",
        "too_many_connections"));
    count_(refused);
    return;
  }
  wake();
}

void ConnectionGate::uncount(Connection& c) {
  if (!c.gate) return;
  c.gate = nullptr;
  --open_;
  auto it = per_client_.find(c.ip);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
}

void ConnectionGate::release(Connection& c) {
  std::lock_guard<std::mutex> lk(mu_);
  uncount(c);
}

bool ConnectionGate::evict_oldest(const std::string* ip) {
  auto best = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if ((*it)->gate && (!ip || (*it)->ip == *ip) &&
        (best == waiting_.end() || (*it)->since < (*best)->since))
      best = it;
  if (best == waiting_.end()) return false;
  Connection& c = **best;
  uncount(c);
  // shutdown() rather than close(): the reactor may be polling this descriptor right now; it
  // sees the hangup and drops its reference, which closes the socket.
  if (c.buffered() > 0)  // a request begun: say why it ends; otherwise as a keep-alive close
    c.send_now(plain_error_response(503, "Service Unavailable",
                                    "connection closed to make room for another (too many open "
                                    "connections waiting for their requests)",
                                    "too_many_connections"));
  ::shutdown(c.fd, SHUT_RDWR);
  c.deadline = Clock::time_point::min();  // the reactor drops it at its next pass
  c.idle = true;
  c.buf.clear();
  c.pos = 0;
  count_("evicted");
  return true;
}

void ConnectionGate::wait_for_request(std::shared_ptr<Connection> c) {
  c->waiting = true;
  c->since = Clock::now();
  c->idle = c->buffered() == 0;
  c->deadline = c->since + milliseconds(c->idle ? lim_.keep_alive_ms : lim_.header_timeout_ms);
  waiting_.push_back(std::move(c));
  wake();
}

void ConnectionGate::dispatch(std::shared_ptr<Connection> c) {
  c->waiting = false;
  c->since = Clock::now();
  Lane& lane = is_probe(c->request_line()) && lim_.control_workers > 0 ? control_lane_ : work_lane_;
  lane.q.push_back(std::move(c));
  lane.cv.notify_one();
}

bool ConnectionGate::on_readable(Connection& c, Clock::time_point now) {
  for (;;) {
    const long n = c.read_available(16 * 1024);
    if (n == -2) return true;  // all read for now
    if (n <= 0) return false;  // closed or reset
    if (c.idle) {              // the first byte of the next request starts its header clock
      c.idle = false;
      c.deadline = now + milliseconds(lim_.header_timeout_ms);
    }
    if (c.has_request_head()) return true;
    if (c.buffered() > lim_.max_header_bytes) {
      c.send_now(plain_error_response(
          431, "Request Header Fields Too Large",
          "the request line and headers exceed " + std::to_string(lim_.max_header_bytes) + " bytes",
          "headers_too_large"));
      count_("headers_too_large");
      return false;
    }
  }
}

void ConnectionGate::reactor() {
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Connection>> polled;
  for (;;) {
    int timeout_ms = 1000;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stopping_) break;
      const auto now = Clock::now();
      fds.assign(1, pollfd{wake_pipe_[0], POLLIN, 0});
      polled = waiting_;
      for (const auto& c : polled) {
        fds.push_back(pollfd{c->fd, POLLIN, 0});
        const auto left = std::chrono::duration_cast<milliseconds>(c->deadline - now).count();
        timeout_ms = static_cast<int>(std::clamp<int64_t>(left + 1, 0, timeout_ms));
      }
    }
    const int r = ::poll(fds.data(), fds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) {  // ENOMEM: try again shortly rather than end the server
      std::this_thread::sleep_for(milliseconds(10));
      continue;
    }
    if (fds[0].revents) {
      char drain[256];
      while (::read(wake_pipe_[0], drain, sizeof drain) > 0) {
      }
    }
    std::vector<std::shared_ptr<Connection>> closing;  // dropped (closed) outside the lock
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stopping_) break;
      const auto now = Clock::now();
      for (size_t i = 0; i < polled.size(); ++i) {
        auto& c = polled[i];
        if (!c->waiting) continue;
        bool keep = c->gate != nullptr;  // evicted ones are uncounted already
        if (keep && fds[i + 1].revents) keep = on_readable(*c, now);
        if (keep && c->has_request_head()) {
          waiting_.erase(std::find(waiting_.begin(), waiting_.end(), c));
          dispatch(c);
          continue;
        }
        if (keep && now >= c->deadline) {
          if (!c->idle || c->buffered() > 0) {
            c->send_now(plain_error_response(408, "Request Timeout",
                                             "the request headers did not arrive within " +
                                                 seconds_text(lim_.header_timeout_ms) +
                                                 " (--header-timeout)",
                                             "request_timeout"));
            count_("header_timeout");
          }
          keep = false;
        }
        if (!keep) {
          c->waiting = false;
          waiting_.erase(std::find(waiting_.begin(), waiting_.end(), c));
          closing.push_back(c);
        }
      }
    }
    polled.clear();  // outside the lock: a last reference closes its socket
  }
  std::vector<std::shared_ptr<Connection>> rest;
  {
    std::lock_guard<std::mutex> lk(mu_);
    rest.swap(waiting_);
  }
}

void ConnectionGate::work(Lane& lane) {
  for (;;) {
    std::shared_ptr<Connection> c;
    {
      std::unique_lock<std::mutex> lk(mu_);
      lane.cv.wait(lk, [&] { return stopping_ || !lane.q.empty(); });
      if (stopping_) return;
      c = std::move(lane.q.front());
      lane.q.pop_front();
      active_.insert(c.get());
    }
    bool keep = false;
    try {
      keep = serve_(*c);
    } catch (...) {  // handlers catch their own errors; this keeps the worker alive regardless
      keep = false;
    }
    std::lock_guard<std::mutex> lk(mu_);
    active_.erase(c.get());
    if (keep && !stopping_ && c->gate) wait_for_request(std::move(c));
    // Otherwise c closes when it goes out of scope, after the lock (~Connection takes mu_).
  }
}

void ConnectionGate::stop() {
  std::vector<std::shared_ptr<Connection>> queued;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (Connection* c : active_) ::shutdown(c->fd, SHUT_RDWR);  // ends blocked reads/writes
    for (Lane* l : {&work_lane_, &control_lane_}) {
      for (auto& c : l->q) queued.push_back(std::move(c));
      l->q.clear();
      l->cv.notify_all();
    }
  }
  wake();
  if (reactor_.joinable()) reactor_.join();
  for (Lane* l : {&work_lane_, &control_lane_})
    for (auto& t : l->threads)
      if (t.joinable()) t.join();
}

}  // namespace tessera::server
