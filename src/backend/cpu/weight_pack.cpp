// The CPU weight layout (cpu_kernels.h, CpuWeight): allocation and packing of row-major
// checkpoint rows into panels, run once at load time over the thread pool.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

// Asks for transparent huge pages over the 2 MiB-aligned inside of [p, p + n) before the first
// write: the decode GEMV streams every weight once per token, and 2 MiB pages spare it a TLB miss
// every 4 KiB. Advisory: ignored where THP is off.
void advise_huge_pages(void* p, size_t n) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHuge - 1);
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}

float load_src(const void* src, DType dt, int64_t i) {
  switch (dt) {
    case DType::f32:
      return static_cast<const float*>(src)[i];
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
    case DType::f16:
      return f16_to_f32(static_cast<const uint16_t*>(src)[i]);
    default:
      TS_ASSERT(false && "unsupported weight dtype");
  }
  return 0.f;
}

}  // namespace

void alloc_panels(CpuWeight& w, const char* what) {
  TS_ASSERT(w.dtype == DType::f32 || w.dtype == DType::bf16);
  w.panels = (w.rows + kPanel - 1) / kPanel;
  w.k2 = w.dtype == DType::bf16 ? (w.cols + 1) / 2 * 2 : w.cols;
  w.panel_elems = kPanel * w.k2;
  w.bytes = static_cast<size_t>(w.panels * w.panel_elems) * dtype_size(w.dtype);
  w.buffer = HostBuffer(w.bytes, what);
  advise_huge_pages(w.buffer.data(), w.bytes);
  // Zero the padding (rows past N, the odd k) in parallel, which also places the pages.
  ThreadPool::global().parallel_for(
      w.panels,
      [&](int64_t p0, int64_t p1, int) {
        const size_t pb = static_cast<size_t>(w.panel_elems) * dtype_size(w.dtype);
        std::memset(w.buffer.as<char>() + p0 * pb, 0, (p1 - p0) * pb);
      },
      64);
}

void pack_rows(CpuWeight& w, int64_t n0, int64_t n, const void* src, DType src_dtype) {
  const int64_t K = w.cols;
  ThreadPool::global().parallel_for(
      n,
      [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t row = n0 + r;
          if (w.dtype == DType::bf16) {
            uint16_t* dst = static_cast<uint16_t*>(w.buffer.data());
            const int64_t base = w.offset(row, 0);
            if (src_dtype == DType::bf16) {
              const uint16_t* s = static_cast<const uint16_t*>(src) + r * K;
              for (int64_t k = 0; k < K; ++k) dst[base + (k / 2) * 2 * kPanel + (k % 2)] = s[k];
            } else {
              for (int64_t k = 0; k < K; ++k)
                dst[base + (k / 2) * 2 * kPanel + (k % 2)] =
                    f32_to_bf16(load_src(src, src_dtype, r * K + k));
            }
          } else {
            float* dst = static_cast<float*>(w.buffer.data());
            const int64_t base = w.offset(row, 0);
            for (int64_t k = 0; k < K; ++k)
              dst[base + k * kPanel] = load_src(src, src_dtype, r * K + k);
          }
        }
      },
      kPanel);
}

}  // namespace tessera::cpu
