// Runs requests straight through a Scheduler over a fixture model (no tokenizer needed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../models/fixtures.h"
#include "backend/backend.h"
#include "engine/classify_output.h"
#include "engine/kv_pool.h"
#include "engine/output_processor.h"
#include "engine/scheduler.h"
#include "models/model.h"

namespace tessera::testing {

struct Harness {
  std::unique_ptr<ComputeBackend> backend;
  std::unique_ptr<ModelDir> dir;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<Scheduler> sched;
  std::vector<int32_t> eos;

  // budget_bytes 0: room for max_seqs full contexts.
  // `be`: the backend to run on (the CPU backend when null).
  Harness(const std::string& fixture, int max_batch_tokens = 64, int max_seqs = 8,
          size_t kv_bytes = 0, int context = 128, bool prefix_cache = true,
          std::unique_ptr<ComputeBackend> be = nullptr) {
    backend = be ? std::move(be) : make_cpu_backend();
    dir = std::make_unique<ModelDir>(fixtures_root() + "/" + fixture);
    LoadOptions lo;
    lo.dtype = "f32";
    model = load_model(*dir, *backend, lo);
    KvPoolOptions po;
    po.budget_bytes = kv_bytes;
    po.block_size = 4;
    po.max_seqs = max_seqs;
    po.max_step_tokens = max_batch_tokens;
    po.max_context = context;
    pool = std::make_unique<KvPool>(*backend, model->kv_spec(), po);
    SchedulerOptions so;
    so.max_batch_tokens = max_batch_tokens;
    so.max_seqs = max_seqs;
    so.context_length = context;
    so.prefix_cache = prefix_cache;
    sched = std::make_unique<Scheduler>(*model, *pool, so);
    for (int id : model->info().eos_token_ids) eos.push_back(id);
  }

  std::shared_ptr<RequestShared> submit(const std::vector<int32_t>& prompt, GenerateOptions g,
                                        TokenCallback cb = {}, CancelToken cancel = {}) {
    auto sh = std::make_shared<RequestShared>();
    sh->cancel = cancel;
    sched->submit(generate_request(prompt, g, eos, nullptr, std::move(cb), {}, sh));
    return sh;
  }

  std::shared_ptr<RequestShared> submit_classify(const std::vector<int32_t>& prompt,
                                                 ClassifyOptions c) {
    auto sh = std::make_shared<RequestShared>();
    sched->submit(classify_request(prompt, c, {}, sh));
    return sh;
  }

  static void wait(RequestShared& sh) {
    std::unique_lock<std::mutex> lk(sh.mu);
    sh.cv.wait(lk, [&] { return sh.done; });
  }

  GenerateResult generate(const std::vector<int32_t>& prompt, GenerateOptions g) {
    auto sh = submit(prompt, g);
    wait(*sh);
    return sh->result;
  }

  // Waits until the scheduler has nothing in flight, then reports blocks still referenced.
  int blocks_in_use() {
    for (int i = 0; i < 1000; ++i) {
      auto st = sched->stats();
      if (st.running == 0 && st.waiting == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return sched->stats().kv_blocks_used;
  }
};

inline GenerateOptions greedy(int max_tokens, int min_tokens = 0) {
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = max_tokens;
  g.min_tokens = min_tokens;
  return g;
}

// transformers' continuation includes the EOS that ended it; ours reports it separately.
inline std::vector<int32_t> with_stop(const GenerateResult& r) {
  std::vector<int32_t> v = r.ids;
  if (r.stop_token) v.push_back(*r.stop_token);
  return v;
}

}  // namespace tessera::testing
