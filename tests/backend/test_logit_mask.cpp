// ComputeBackend::mask_logits (structured output): the CPU backend's in-place override and the
// interface's default (to the host and back, what the CUDA backend uses for now) both give
// apply_logit_mask's result on the listed rows and leave the others alone.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace tessera {
namespace {

TEST(LogitMask, CpuOverrideAndDefaultMaskOnlyTheListedRows) {
  auto cpu = make_cpu_backend();
  const int64_t R = 5, V = 1000;  // V not a multiple of 64: the last word is partial
  std::mt19937 rng(3);
  std::vector<float> orig(static_cast<size_t>(R * V));
  for (float& x : orig) x = static_cast<float>(rng() % 1000) / 100.0f;
  std::vector<uint64_t> allow((V + 63) / 64, 0);
  std::vector<int32_t> allowed_ids = {0, 63, 64, 500, 999};
  for (int32_t id : allowed_ids) allow[id >> 6] |= uint64_t{1} << (id & 63);
  allow[3] = ~uint64_t{0};  // a full word: ids 192..255
  const std::vector<int32_t> eos = {7, 998};
  std::vector<int32_t> many;  // more kept ids than the small buffer holds
  for (int32_t i = 0; i < 20; ++i) many.push_back(100 + 3 * i);
  std::vector<LogitMask> masks(3);
  masks[0].row = 1;
  masks[0].allow = allow.data();
  masks[1].row = 3;
  masks[1].allow = allow.data();
  masks[1].also = eos;
  masks[2].row = 4;
  masks[2].allow = allow.data();
  masks[2].also = many;
  for (bool use_default : {false, true}) {
    std::vector<float> l = orig;
    Tensor t{l.data(), DType::f32, R, V, V};
    if (use_default)
      cpu->ComputeBackend::mask_logits(t, masks);
    else
      cpu->mask_logits(t, masks);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < V; ++c) {
        const float got = l[r * V + c], was = orig[r * V + c];
        const bool in_many = c >= 100 && c < 160 && (c - 100) % 3 == 0;
        bool keep = r != 1 && r != 3 && r != 4;
        if (!keep)
          keep = ((allow[c >> 6] >> (c & 63)) & 1) || (r == 3 && (c == 7 || c == 998)) ||
                 (r == 4 && in_many);
        if (keep)
          ASSERT_EQ(got, was) << "row " << r << " id " << c << (use_default ? " default" : "");
        else
          ASSERT_TRUE(std::isinf(got) && got < 0) << "row " << r << " id " << c;
      }
  }
}

}  // namespace
}  // namespace tessera
