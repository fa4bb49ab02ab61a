// The server's connection model (issue #29: no client can starve the server). httplib's accept
// loop hands every accepted socket to the gate, which
//   - caps open connections overall (--max-connections) and per client address
//     (--max-client-connections); at a cap, the connection of that client (or any client) that
//     has waited longest for its request headers is closed to make room, and a new connection
//     that finds none to close is answered 429 / 503 and closed;
//   - waits for each request's headers on one poll() thread, so a client that trickles its
//     headers (slowloris) holds a socket but no thread, and gets 408 after --header-timeout;
//   - then hands the connection to a fixed pool of --threads workers, or to a small lane of its
//     own for GET /health and GET /metrics, so that probes answer while every worker streams;
//   - takes kept-alive connections back from the workers while they are idle (--keep-alive).
// Threads are all started up front and never more, which keeps the RSS flat under varied load.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/connection.h"
#include "server/connection_limits.h"

namespace tessera::server {

class ConnectionGate {
 public:
  // Answers requests on c until it has to wait for the client; true keeps the connection (it
  // goes back to waiting for the next request), false closes it. Runs on a worker thread.
  using Serve = std::function<bool(Connection&)>;
  // Counts an event in /metrics: a connection refused or closed by a limit (the reason).
  using Count = std::function<void(const char* reason)>;

  ConnectionGate(ConnectionLimits limits, Serve serve, Count count);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Takes an accepted socket (from httplib's accept loop); never blocks.
  void admit(int fd);
  // Closes waiting connections, ends reads of active ones, joins every thread. Idempotent.
  void stop();
  bool stopping() const;

  int open_connections() const;
  int waiting_connections() const;
  const ConnectionLimits& limits() const { return lim_; }

 private:
  friend struct Connection;
  struct Lane {
    std::deque<std::shared_ptr<Connection>> q;
    std::condition_variable cv;
    std::vector<std::thread> threads;
  };

  void release(Connection& c);               // ~Connection: uncount it (mu_ must not be held)
  void uncount(Connection& c);               // mu_ held
  bool evict_oldest(const std::string* ip);  // mu_ held
  void wait_for_request(std::shared_ptr<Connection> c);  // mu_ held
  void dispatch(std::shared_ptr<Connection> c);          // mu_ held
  void reactor();
  void work(Lane& lane);
  void wake();
  // Reads what a waiting connection sent; false when it is to be closed.
  bool on_readable(Connection& c, Clock::time_point now);

  const ConnectionLimits lim_;
  const Serve serve_;
  const Count count_;

  mutable std::mutex mu_;
  bool stopping_ = false;
  int open_ = 0;
  std::map<std::string, int> per_client_;
  std::vector<std::shared_ptr<Connection>> waiting_;  // owned by the reactor while waiting
  std::set<Connection*> active_;                      // being served by a worker
  Lane work_lane_, control_lane_;
  int wake_pipe_[2] = {-1, -1};
  std::thread reactor_;
};

}  // namespace tessera::server
