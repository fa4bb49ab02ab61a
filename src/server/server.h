// tessera's OpenAI-compatible HTTP server over one Engine (cpp-httplib). Every request goes
// through the engine's scheduler, so concurrent clients share batches; handler threads block on
// their own requests' event streams, never on a lock around the engine.
//
//   HttpServer server(engine, opts);
//   int port = server.bind();    // throws tessera::Error when the address cannot be bound
//   server.run();                // serves until shutdown() (another thread: the signal watcher)
#pragma once

#include <atomic>
#include <memory>

#include "server/server_state.h"
#include "tessera/engine.h"

namespace tessera::server {

class HttpServer {
 public:
  HttpServer(Engine& engine, ServerOptions opts);
  ~HttpServer();

  int bind();
  void run();
  // Graceful shutdown, from any thread: refuse new work (503), give in-flight requests
  // opts.shutdown_timeout_ms to finish, cancel the rest, then stop listening; run() returns.
  // Blocks until then.
  void shutdown();
  // Cancel in-flight requests now (a second signal).
  void abort_now() { state_.abort.store(true); }

  ServerState& state() { return state_; }

 private:
  class Http;
  ServerState state_;
  std::unique_ptr<Http> http_;
  std::atomic<bool> running_{false}, finished_{false};
};

}  // namespace tessera::server
