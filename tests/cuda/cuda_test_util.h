// Helpers for the CUDA op harness: the same random inputs on the CPU backend (the oracle) and the
// CUDA backend, outputs poisoned with NaN before each run so that unwritten elements show, and a
// relative error ||gpu - cpu|| / ||cpu|| that fails on any NaN.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/dtype.h"

namespace tessera::cudatest {

// The process-wide backends; cuda() is null without a GPU (tests then skip).
ComputeBackend& cpu();
ComputeBackend* cuda();

// Skips without a GPU; fails instead when TESSERA_REQUIRE_CUDA is set (scripts/gpu-check.sh), so
// that a backend that cannot start on the GPU machine does not pass as "all skipped".
#define TS_REQUIRE_CUDA()                                                                  \
  do {                                                                                     \
    if (!::tessera::cudatest::cuda()) {                                                    \
      if (std::getenv("TESSERA_REQUIRE_CUDA")) FAIL() << "the CUDA backend did not start"; \
      GTEST_SKIP() << "no CUDA GPU";                                                       \
    }                                                                                      \
  } while (0)

inline std::mt19937_64& rng() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}

inline std::vector<float> randn(size_t n, float scale = 1.f, float mean = 0.f) {
  std::normal_distribution<float> d(mean, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

// The value as stored in dtype dt (bf16 rounding).
inline float as_dtype(float v, DType dt) {
  return dt == DType::bf16 ? round_bf16(v) : v;
}

inline std::vector<char> encode(const std::vector<float>& v, DType dt) {
  std::vector<char> b(v.size() * dtype_size(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::f32) {
      std::memcpy(b.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = f32_to_bf16(v[i]);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
  }
  return b;
}

inline std::vector<float> decode(const std::vector<char>& b, DType dt) {
  const size_t n = b.size() / dtype_size(dt);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (dt == DType::f32) {
      std::memcpy(&v[i], b.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, b.data() + 2 * i, 2);
      v[i] = bf16_to_f32(h);
    }
  }
  return v;
}

// A [rows, cols] array held by both backends with identical contents.
struct Pair {
  DeviceArray c, g;
  DType dt = DType::f32;
  int64_t rows = 0, cols = 0;
};

inline Pair make_pair(int64_t rows, int64_t cols, DType dt, const std::vector<float>& host) {
  Pair p;
  p.dt = dt;
  p.rows = rows;
  p.cols = cols;
  p.c = cpu().alloc_array(rows, cols, dt, "test");
  p.g = cuda()->alloc_array(rows, cols, dt, "test");
  const auto bytes = encode(host, dt);
  EXPECT_EQ(bytes.size(), static_cast<size_t>(rows * cols) * dtype_size(dt));
  cpu().copy_to_device(p.c.view.data, bytes.data(), bytes.size());
  cuda()->copy_to_device(p.g.view.data, bytes.data(), bytes.size());
  return p;
}

inline Pair random_pair(int64_t rows, int64_t cols, DType dt, float scale = 1.f) {
  return make_pair(rows, cols, dt, randn(static_cast<size_t>(rows * cols), scale));
}

// Fills both copies with NaN (0xff bytes are NaN in f32 and bf16).
inline void poison(Pair& p) {
  std::vector<char> ff(static_cast<size_t>(p.rows * p.cols) * dtype_size(p.dt),
                       static_cast<char>(0xff));
  cpu().copy_to_device(p.c.view.data, ff.data(), ff.size());
  cuda()->copy_to_device(p.g.view.data, ff.data(), ff.size());
}

inline std::vector<float> read(ComputeBackend& be, const DeviceArray& a, DType dt) {
  be.synchronize();
  std::vector<char> b(static_cast<size_t>(a.view.rows * a.view.cols) * dtype_size(dt));
  be.copy_to_host(b.data(), a.view.data, b.size());
  return decode(b, dt);
}

// ||a - b|| / ||b||; infinity when any element of either is NaN.
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Compares both copies of `p` (only the first `cols` of each row when a view is narrower).
inline double pair_err(const Pair& p) {
  return rel_err(read(*cuda(), p.g, p.dt), read(cpu(), p.c, p.dt));
}

// A linear weight uploaded to both backends from the same host values.
struct WeightPair {
  std::unique_ptr<Weight> c, g;
  std::vector<char> bytes;
};

// A linear weight [rows, cols] of `dt` from its encoded bytes, uploaded to `be`.
inline std::unique_ptr<Weight> upload_bytes(ComputeBackend& be, const std::vector<char>& bytes,
                                            int64_t rows, int64_t cols, DType dt) {
  const HostTensor t{bytes.data(), dt, {rows, cols}, "test.weight"};
  const HostTensor* parts[] = {&t};
  return be.upload_weight(parts, dt, "test weight");
}

inline WeightPair make_weight(int64_t rows, int64_t cols, DType dt, float scale = 0.05f) {
  WeightPair w;
  w.bytes = encode(randn(static_cast<size_t>(rows * cols), scale), dt);
  w.c = upload_bytes(cpu(), w.bytes, rows, cols, dt);
  w.g = upload_bytes(*cuda(), w.bytes, rows, cols, dt);
  return w;
}

}  // namespace tessera::cudatest
