// The connection gate (server/connection_gate.h) on socket pairs: a request's head is awaited
// without a worker and handed over whole; a head that does not arrive in time gets 408; probes
// have their own lane while every worker is busy; the per-client cap closes the client's oldest
// waiting connection, or refuses with 429 when all are busy.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "server/connection_gate.h"

namespace tessera::server {
namespace {

using namespace std::chrono_literals;

// One end goes to the gate, the other is the test's client.
struct Pair {
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Pair() {
    if (fd[0] >= 0) close(fd[0]);
  }
  int server() {
    const int s = fd[1];
    fd[1] = -1;
    return s;
  }
  void send(const std::string& s) const {
    ASSERT_EQ(::send(fd[0], s.data(), s.size(), 0), (ssize_t)s.size());
  }
  // Everything the gate writes until it closes its end (or `wait` passes).
  std::string receive(std::chrono::milliseconds wait = 3000ms) const {
    std::string out;
    const auto end = std::chrono::steady_clock::now() + wait;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return out;
      pollfd p{fd[0], POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return out;
      char buf[4096];
      const ssize_t n = ::recv(fd[0], buf, sizeof buf, 0);
      if (n <= 0) return out + "<closed>";
      out.append(buf, static_cast<size_t>(n));
    }
  }
  int fd[2] = {-1, -1};
};

// A serve callback that records the request lines it gets and can hold its worker.
struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;
  bool hold = false;
  bool serve(Connection& c) {
    std::unique_lock<std::mutex> lk(mu);
    lines.push_back(c.request_line());
    cv.notify_all();
    if (c.request_line().rfind("GET /hold", 0) == 0) cv.wait(lk, [&] { return !hold; });
    c.send_now("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    return false;  // close after one request
  }
  bool wait_for(size_t n, std::chrono::milliseconds t = 3000ms) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, t, [&] { return lines.size() >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> lk(mu);
    hold = false;
    cv.notify_all();
  }
};

ConnectionLimits small_limits() {
  ConnectionLimits l;
  l.workers = 1;
  l.control_workers = 1;
  l.header_timeout_ms = 300;
  return l;
}

TEST(ConnectionGate, HandsOverWholeHeadsOnly) {
  Recorder rec;
  std::atomic<int> events{0};
  ConnectionGate gate(
      small_limits(), [&](Connection& c) { return rec.serve(c); }, [&](const char*) { events++; });
  Pair p;
  gate.admit(p.server());
  p.send("GET /v1/models HTTP/1.1\r\nHost: x\r\n");
  EXPECT_FALSE(rec.wait_for(1, 100ms)) << "dispatched before the blank line";
  EXPECT_EQ(gate.waiting_connections(), 1);
  p.send("\r\n");
  ASSERT_TRUE(rec.wait_for(1));
  EXPECT_EQ(rec.lines[0], "GET /v1/models HTTP/1.1\r");
  EXPECT_NE(p.receive().find("200 OK"), std::string::npos);
  EXPECT_EQ(events.load(), 0);
}

TEST(ConnectionGate, SlowHeadsGet408) {
  Recorder rec;
  std::vector<std::string> reasons;
  std::mutex mu;
  ConnectionGate gate(
      small_limits(), [&](Connection& c) { return rec.serve(c); },
      [&](const char* r) {
        std::lock_guard<std::mutex> lk(mu);
        reasons.push_back(r);
      });
  Pair p;
  gate.admit(p.server());
  const auto t0 = std::chrono::steady_clock::now();
  p.send("GET /health HTTP/1.1\r\nX: ");
  for (int i = 0; i < 3; ++i) {  // still trickling within the deadline
    std::this_thread::sleep_for(50ms);
    p.send("a");
  }
  const std::string got = p.receive();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(got.rfind("HTTP/1.1 408 Request Timeout", 0), 0u) << got;
  EXPECT_NE(got.find("--header-timeout"), std::string::npos);
  EXPECT_NE(got.find("<closed>"), std::string::npos);
  EXPECT_GE(ms, 250);
  EXPECT_LT(ms, 2000);
  EXPECT_TRUE(rec.lines.empty());
  std::lock_guard<std::mutex> lk(mu);
  EXPECT_EQ(reasons, std::vector<std::string>{"header_timeout"});
}

TEST(ConnectionGate, ProbesAnswerWhileTheWorkerIsHeld) {
  Recorder rec;
  rec.hold = true;
  ConnectionGate gate(
      small_limits(), [&](Connection& c) { return rec.serve(c); }, [](const char*) {});
  Pair held, other, probe;
  gate.admit(held.server());
  held.send("GET /hold HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(rec.wait_for(1));
  gate.admit(other.server());
  other.send("GET /v1/models HTTP/1.1\r\n\r\n");
  gate.admit(probe.server());
  probe.send("GET /health HTTP/1.1\r\n\r\n");
  EXPECT_NE(probe.receive(1000ms).find("200 OK"), std::string::npos);
  EXPECT_EQ(other.receive(200ms), "") << "the only worker is held";
  rec.release();
  EXPECT_NE(other.receive().find("200 OK"), std::string::npos);
}

TEST(ConnectionGate, ClientCapEvictsTheOldestWaitingOrRefuses) {
  Recorder rec;
  rec.hold = true;
  std::vector<std::string> reasons;
  std::mutex mu;
  ConnectionLimits l = small_limits();
  l.max_client_connections = 2;  // socket pairs all have the same (empty) address
  l.header_timeout_ms = 10000;
  ConnectionGate gate(
      l, [&](Connection& c) { return rec.serve(c); },
      [&](const char* r) {
        std::lock_guard<std::mutex> lk(mu);
        reasons.push_back(r);
      });
  Pair busy, idle, newer, refused;
  gate.admit(busy.server());
  busy.send("GET /hold HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(rec.wait_for(1));
  gate.admit(idle.server());
  std::this_thread::sleep_for(20ms);
  gate.admit(newer.server());             // at the cap: the idle one is closed to make room
  EXPECT_EQ(idle.receive(), "<closed>");  // nothing sent yet: closed without a word
  EXPECT_EQ(gate.open_connections(), 2);
  newer.send("GET /hold HTT");  // begun: evicted with a 503 by the next one
  std::this_thread::sleep_for(50ms);
  Pair newest;
  gate.admit(newest.server());
  const std::string evicted = newer.receive();
  EXPECT_EQ(evicted.rfind("HTTP/1.1 503", 0), 0u) << evicted;
  EXPECT_NE(evicted.find("too_many_connections"), std::string::npos);
  newest.send("GET /hold HTTP/1.1\r\n\r\n");  // waits for the one worker
  std::this_thread::sleep_for(100ms);
  gate.admit(refused.server());  // both busy: nothing to close
  const std::string got = refused.receive();
  EXPECT_EQ(got.rfind("HTTP/1.1 429", 0), 0u) << got;
  EXPECT_NE(got.find("--max-client-connections 2"), std::string::npos);
  rec.release();
  std::lock_guard<std::mutex> lk(mu);
  EXPECT_EQ(reasons, (std::vector<std::string>{"evicted", "evicted", "client_cap"}));
}

}  // namespace
}  // namespace tessera::server
