// The generation side of /v1/completions and /v1/chat/completions: one HTTP request becomes
// prompts x n choices, each submitted to the Engine as its own request (so they batch with every
// other client's), and this collects their events. Handler threads block here, never on a lock
// around the engine.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/connection_watch.h"
#include "server/server_state.h"
#include "tessera/engine.h"

namespace tessera::server {

struct ChoiceSpec {
  int index = 0;   // the choice's "index" in the response
  int prompt = 0;  // which prompt of the request
  PreparedRequest request;
};

// prompts (each through Engine::prepare) x n choices; with a seed, choice i of a prompt gets
// seed + i (one seed, one text).
std::vector<ChoiceSpec> make_choices(const std::vector<PreparedRequest>& prompts, int n);

class ChoiceRun {
 public:
  struct Item {
    int choice;  // position in specs
    RequestStream::Event ev;
  };

  // Reserves queue slots (429 when --max-queue is full) and submits every choice.
  ChoiceRun(ServerState& state, std::string endpoint, std::vector<ChoiceSpec> specs,
            ConnectionWatch watch, std::chrono::steady_clock::time_point t_start);
  ~ChoiceRun();  // cancels what is unfinished, frees the queue slots, records latency
  ChoiceRun(const ChoiceRun&) = delete;
  ChoiceRun& operator=(const ChoiceRun&) = delete;

  const std::vector<ChoiceSpec>& specs() const { return specs_; }
  size_t size() const { return specs_.size(); }
  bool done(int choice) const { return done_[choice]; }
  bool all_done() const { return remaining_ == 0; }
  const GenerateResult& result(int choice) const { return results_[choice]; }

  // Appends the events that are ready (waiting up to timeout_ms for the first one); a done
  // event also records the choice's result and metrics.
  void poll(std::vector<Item>& out, int timeout_ms);
  // Waits for every choice to finish, cancelling them all if the client leaves or the server
  // aborts; then throws the first choice's error as an ApiError, if any.
  void wait_all();
  // The client left or the server is aborting: cancel everything.
  bool should_cancel() const;
  void cancel_all();
  // The first error among finished choices as an API error: 400 for a request the engine
  // refused, 500 for a failed step, 503 when the server aborted it, 499 when the client left.
  std::optional<ApiError> first_error() const;

 private:
  void on_done(int choice, const GenerateResult& r);

  ServerState& state_;
  std::string endpoint_;
  std::vector<ChoiceSpec> specs_;
  ConnectionWatch watch_;
  std::chrono::steady_clock::time_point t_start_;
  std::vector<std::unique_ptr<RequestStream>> streams_;
  std::vector<char> done_;
  std::vector<GenerateResult> results_;
  int remaining_ = 0;
  int reserved_ = 0;
  bool cancelled_ = false;
};

}  // namespace tessera::server
