// The engine's two small adapters between the scheduler and its callers: the tokenizer's
// incremental detokenizer as a request's TextStream, and RequestStream over the state a caller
// shares with the scheduler (RequestShared's event queue).
#pragma once

#include <chrono>
#include <memory>

#include "engine/output_processor.h"
#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

class DetokenizerStream final : public TextStream {
 public:
  explicit DetokenizerStream(const Tokenizer& t) : d_(t, /*skip_special_tokens=*/true) {}
  std::string push(int32_t id) override { return d_.push(id); }
  std::string flush() override { return d_.flush(); }

 private:
  IncrementalDetokenizer d_;
};

class StreamImpl final : public RequestStream {
 public:
  explicit StreamImpl(std::shared_ptr<RequestShared> sh) : sh_(std::move(sh)) {}
  ~StreamImpl() override {
    // A stream dropped before its end cancels its request.
    if (!finished_) sh_->cancel.cancel();
  }
  bool next(Event& ev, int timeout_ms) override {
    std::unique_lock<std::mutex> lk(sh_->mu);
    auto ready = [&] { return !sh_->events.empty(); };
    if (timeout_ms < 0) {
      sh_->cv.wait(lk, ready);
    } else if (!sh_->cv.wait_for(lk, std::chrono::milliseconds(timeout_ms), ready)) {
      return false;
    }
    ev = std::move(sh_->events.front());
    sh_->events.pop_front();
    if (ev.done) finished_ = true;
    return true;
  }
  void cancel() override { sh_->cancel.cancel(); }

 private:
  std::shared_ptr<RequestShared> sh_;
  bool finished_ = false;
};

}  // namespace tessera
