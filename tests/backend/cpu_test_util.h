// Helpers for the CPU kernel tests: every ISA the machine has, random data, NaN-poisoned
// outputs, and comparisons scaled to each row's magnitude.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "core/dtype.h"

namespace tessera::cpu::test {

// The SIMD ISAs this CPU supports (the scalar path is the reference they are compared with).
inline std::vector<Isa> simd_isas() {
  std::vector<Isa> v;
  if (static_cast<int>(detected_isa()) >= static_cast<int>(Isa::avx2)) v.push_back(Isa::avx2);
  if (detected_isa() == Isa::avx512) v.push_back(Isa::avx512);
  return v;
}

// Sets the ISA (and optionally the linear path) for a scope.
class IsaScope {
 public:
  explicit IsaScope(Isa isa, LinearPath path = LinearPath::automatic) : old_(active_isa()) {
    set_cpu_isa(isa);
    set_linear_path(path);
  }
  ~IsaScope() {
    set_cpu_isa(old_);
    set_linear_path(LinearPath::automatic);
  }

 private:
  Isa old_;
};

// Uniform in [lo, hi), deterministic per seed.
inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = lo + (hi - lo) * static_cast<float>(s >> 40) / static_cast<float>(1 << 24);
  }
  return v;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& f) {
  std::vector<uint16_t> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) h[i] = f32_to_bf16(f[i]);
  return h;
}

inline void poison(std::vector<float>& v) {
  for (auto& x : v) x = std::numeric_limits<float>::quiet_NaN();
}

// Compares rows x cols of `got` with `ref` (both with row stride `stride`): every element must be
// finite where ref is and within tol * (largest |ref| in its row). Elements past `cols` in each
// row must still be NaN (nothing wrote outside the tensor).
inline void expect_rows_near(const std::vector<float>& ref, const std::vector<float>& got,
                             int64_t rows, int64_t cols, int64_t stride, double tol,
                             const std::string& what) {
  ASSERT_EQ(ref.size(), got.size()) << what;
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mx = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, std::fabs(double{ref[r * stride + c]}));
    for (int64_t c = 0; c < cols; ++c) {
      const double a = ref[r * stride + c], b = got[r * stride + c];
      const bool ok = std::isfinite(a) ? std::fabs(a - b) <= tol * mx + 1e-30
                                       : (std::isnan(a) ? std::isnan(b) : a == b);
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << what << ": [" << r << ", " << c << "] ref " << a << " got " << b
                      << " (row max " << mx << ", tol " << tol << ")";
    }
    for (int64_t c = cols; c < stride; ++c)
      if (!std::isnan(got[r * stride + c]) && ++bad <= 5)
        ADD_FAILURE() << what << ": wrote outside the tensor at [" << r << ", " << c << "]";
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace tessera::cpu::test
