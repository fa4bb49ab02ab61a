// Structured output's logit mask (ComputeBackend::mask_logits, docs/GRAMMAR.md) on the CUDA
// backend against the CPU backend on the same rows: listed rows keep exactly the allowed ids and
// the `also` ids, every other logit -inf; rows not listed are untouched (bit for bit).
#include <limits>

#include "cuda_test_util.h"

namespace tessera::cudatest {
namespace {

TEST(CudaMask, MatchesCpuMaskOnListedRows) {
  TS_REQUIRE_CUDA();
  constexpr int64_t kRows = 5, kVocab = 262144;
  Pair p = random_pair(kRows, kVocab, DType::f32);
  const auto before = read(cpu(), p.c, DType::f32);
  // Row 1: every third id; row 3: only ids 7 and 262143, plus EOS 1 through `also`.
  std::vector<uint64_t> a1(kVocab / 64, 0), a3(kVocab / 64, 0);
  for (int64_t c = 0; c < kVocab; c += 3) a1[c / 64] |= uint64_t{1} << (c % 64);
  a3[0] |= uint64_t{1} << 7;
  a3[kVocab / 64 - 1] |= uint64_t{1} << 63;
  const int32_t eos[] = {1};
  const LogitMask masks[] = {{1, a1.data(), {}}, {3, a3.data(), eos}};
  cpu().mask_logits(p.c.view, masks);
  cuda()->mask_logits(p.g.view, masks);
  const auto c = read(cpu(), p.c, DType::f32), g = read(*cuda(), p.g, DType::f32);
  ASSERT_EQ(c.size(), g.size());
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t k = 0; k < kVocab; ++k) {
      const size_t i = static_cast<size_t>(r * kVocab + k);
      bool keep = r != 1 && r != 3;
      if (r == 1) keep = k % 3 == 0;
      if (r == 3) keep = k == 7 || k == kVocab - 1 || k == 1;
      ASSERT_EQ(g[i], keep ? before[i] : ninf) << "row " << r << " id " << k;
      ASSERT_EQ(c[i], g[i]) << "row " << r << " id " << k;
    }
}

}  // namespace
}  // namespace tessera::cudatest
