// The C ABI tests' engine: the shipped tessera-tiny-en (10M parameters, real tokenizer and chat
// template) on the CPU, loaded through the C ABI, and helpers that free what it returns.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tessera/tessera.h"

namespace tessera::testing {

inline std::string tiny_en_dir() {
  return std::string(TESSERA_SOURCE_DIR) + "/models/tessera-tiny-en";
}

class CEngine {
 public:
  explicit CEngine(int max_seqs = 8, int context = 256) {
    tessera_engine_options eo;
    tessera_engine_options_init(&eo);
    const std::string dir = tiny_en_dir();
    eo.model_dir = dir.c_str();
    eo.device = "cpu";
    eo.context_length = context;
    eo.max_seqs = max_seqs;
    char* err = nullptr;
    if (tessera_engine_load(&eo, &e_, &err) != TESSERA_OK) {
      ADD_FAILURE() << "load: " << (err ? err : "?");
      tessera_string_free(err);
    }
  }
  ~CEngine() { tessera_engine_free(e_); }
  CEngine(const CEngine&) = delete;
  CEngine& operator=(const CEngine&) = delete;
  tessera_engine* get() const { return e_; }

  tessera_engine_stats stats() const {
    tessera_engine_stats s;
    char* err = nullptr;
    EXPECT_EQ(tessera_engine_stats_get(e_, &s, &err), TESSERA_OK);
    tessera_string_free(err);
    return s;
  }
  // The scheduler updates its stats after each step: wait for an idle engine with no KV block.
  bool settles_to_no_kv() const {
    for (int i = 0; i < 400; ++i) {
      const tessera_engine_stats s = stats();
      if (s.kv_blocks_used == 0 && s.running == 0 && s.waiting == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  tessera_engine* e_ = nullptr;
};

inline tessera_generate_options greedy(int max_tokens) {
  tessera_generate_options o;
  tessera_generate_options_init(&o);
  o.temperature = 0;
  o.max_tokens = max_tokens;
  return o;
}

inline std::vector<int32_t> ids_of(const tessera_result& r) {
  return std::vector<int32_t>(r.ids, r.ids + r.n_ids);
}

inline tessera_prompt text_prompt(const char* s) {
  return tessera_prompt{s, nullptr, 0};
}
inline tessera_prompt ids_prompt(const std::vector<int32_t>& ids) {
  return tessera_prompt{nullptr, ids.data(), ids.size()};
}

}  // namespace tessera::testing
