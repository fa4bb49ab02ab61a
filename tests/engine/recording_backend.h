// A backend wrapper that records the calls that order a pipelined scheduler step (upload,
// sample_async, sample_wait, sample), so that tests can check when the host waits for ids
// relative to the forward that consumes them.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/forwarding_backend.h"

namespace tessera::testing {

class RecordingBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;

  // "upload:N" (N tokens taken from the device), "async", "wait", "sample".
  std::vector<std::string> log() const {
    std::lock_guard<std::mutex> lk(mu_);
    return log_;
  }

  BatchView upload(const HostBatch& b) override {
    record("upload:" + std::to_string(b.sampled.size()));
    return ForwardingBackend::upload(b);
  }
  void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) override {
    record("sample");
    ForwardingBackend::sample(logits, batch, out);
  }
  void sample_async(Tensor logits, const SampleBatch& batch,
                    const int32_t* greedy_ids = nullptr) override {
    record("async");
    ForwardingBackend::sample_async(logits, batch, greedy_ids);
  }
  void sample_wait(SampleOutput& out) override {
    record("wait");
    ForwardingBackend::sample_wait(out);
  }

 private:
  void record(std::string e) {
    std::lock_guard<std::mutex> lk(mu_);
    log_.push_back(std::move(e));
  }
  mutable std::mutex mu_;
  std::vector<std::string> log_;
};

}  // namespace tessera::testing
