// out[M, N] = x[M, K] W[N, K]^T + bias over the panel layout (cpu_kernels.h, CpuWeight): picks
// the path per ISA and shape (see LinearPath) and splits the panels over the pool.
// ref: torch.nn.functional.linear (y = x W^T + b), fp32 accumulation.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/quant_weight.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

// set_linear_k_block()'s K block (tests force small ones; 0: sized for L2).
int64_t& forced_k_block() {
  static int64_t v = 0;
  return v;
}

// The tuning's path (TESSERA_CPU_TUNING linear=) unless set_linear_path() forced another.
LinearPath& forced_path() {
  static LinearPath p = cpu_env_tuning().linear;
  return p;
}

// The portable reference: one output at a time, fp32 accumulation in k order. Each panel (16
// rows of W) is widened once and serves every row of x.
void linear_scalar(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
  const int64_t M = x.rows, K = x.cols, N = w.rows;
  const float* bias_p = bias ? bias->ptr<const float>() : nullptr;
  ThreadPool::global().parallel_for(
      w.panels,
      [&](int64_t p0, int64_t p1, int) {
        std::vector<float> xrow(static_cast<size_t>(K)), wp(static_cast<size_t>(kPanel * K));
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t rows = std::min(N, (p + 1) * kPanel) - p * kPanel;
          for (int64_t j = 0; j < rows; ++j)
            for (int64_t k = 0; k < K; ++k) wp[j * K + k] = w.at(p * kPanel + j, k);
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t k = 0; k < K; ++k) xrow[k] = load_elem(x.data, x.dtype, m * x.stride + k);
            for (int64_t j = 0; j < rows; ++j) {
              float acc = 0.f;
              for (int64_t k = 0; k < K; ++k) acc += xrow[k] * wp[j * K + k];
              if (bias_p) acc += bias_p[p * kPanel + j];
              store_elem(out.data, out.dtype, m * out.stride + p * kPanel + j, acc);
            }
          }
        }
      },
      1);
}

// What linear_simd's kernel reads: a CpuWeight's panels, or a quantized weight's dequantized
// into f32 panels a few at a time (quant_weight.h) just before the kernel reads them.
struct PanelSource {
  const CpuWeight* dense = nullptr;
  const CpuQuantWeight* quant = nullptr;
  int64_t rows() const { return dense ? dense->rows : quant->rows; }
  int64_t panels() const { return dense ? dense->panels : quant->panels; }
};

// gated: out [M, I] = act(x gate^T + b) * (x up^T + b') over gate_up [2 I, K] (linear_gated).
void linear_simd(Tensor x, const PanelSource& w, const Tensor* bias, Tensor out, bool dpbf16,
                 const Activation* gated = nullptr) {
  const Isa isa = active_isa();
  const int64_t M = x.rows, K = x.cols, N = gated ? w.rows() / 2 : w.rows();
  thread_local std::vector<float> x_buf, out_buf, xp_buf;
  thread_local std::vector<uint32_t> pair_buf;
  LinArgs a;
  a.w = w.dense ? w.dense->data() : nullptr;
  a.w_dtype = w.dense ? w.dense->dtype : DType::f32;
  a.K = K;
  a.N = N;
  a.panel_elems = w.dense ? w.dense->panel_elems : kPanel * K;
  a.M = static_cast<int>(M);
  a.bias = bias ? bias->ptr<const float>() : nullptr;
  a.k_block_pairs = forced_k_block();
  if (gated) {
    a.up_panels = w.panels() / 2;
    a.act = *gated;
  }
  if (x.dtype == DType::f32) {
    a.x = x.ptr<const float>();
    a.x_stride = x.stride;
  } else {
    x_buf.resize(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        x_buf[m * K + k] = load_elem(x.data, x.dtype, m * x.stride + k);
    a.x = x_buf.data();
    a.x_stride = K;
  }
  const int min_packed =
      isa == Isa::avx512 ? avx512::packed_x_min_rows() : avx2::packed_x_min_rows();
  if (!dpbf16 && M >= min_packed) {
    xp_buf.resize(static_cast<size_t>(M * ((K + 1) / 2 * 2)));
    auto pack = isa == Isa::avx512 ? avx512::pack_x : avx2::pack_x;
    const int tile = isa == Isa::avx512 ? avx512::packed_x_tile_rows() : avx2::packed_x_tile_rows();
    float* xp = xp_buf.data();  // (xp_buf is this thread's; the workers must not name it)
    ThreadPool::global().parallel_for((M + tile - 1) / tile, [&](int64_t t0, int64_t t1, int) {
      pack(a.x, a.x_stride, a.M, K, static_cast<int>(t0), static_cast<int>(t1), xp);
    });
    a.xp = xp;
  }
  if (out.dtype == DType::f32) {
    a.out = out.ptr<float>();
    a.out_stride = out.stride;
  } else {
    out_buf.resize(static_cast<size_t>(M * N));
    a.out = out_buf.data();
    a.out_stride = N;
  }
  void (*kernel)(const LinArgs&, int64_t, int64_t) =
      isa == Isa::avx512 ? avx512::linear_panels : avx2::linear_panels;
  if (dpbf16) {
    // x rounded to bf16, two k per 32-bit word (the high half 0 past an odd K).
    const int64_t pairs = (K + 1) / 2;
    pair_buf.resize(static_cast<size_t>(M * pairs));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t kp = 0; kp < pairs; ++kp) {
        const uint32_t lo = f32_to_bf16(a.x[m * a.x_stride + 2 * kp]);
        const uint32_t hi = 2 * kp + 1 < K ? f32_to_bf16(a.x[m * a.x_stride + 2 * kp + 1]) : 0u;
        pair_buf[m * pairs + kp] = lo | (hi << 16);
      }
    a.x_pairs = pair_buf.data();
    a.x_pairs_stride = pairs;
    kernel = avx512::linear_panels_dpbf16;
  }
  // Runs of panels taken dynamically, a multiple of the kernel's panel group. Decode (groups of
  // 4): long enough to stream, and enough of them that a thread preempted by another process
  // does not hold the op up. Prefill (groups of 2): two equal runs per thread, so that each K
  // block of x is reused from L2 across many panels and the threads finish together.
  // Gated: the runs are of gate panels (each block reads its up panel too).
  ThreadPool& pool = ThreadPool::global();
  const int64_t tasks = 2 * pool.size();
  const int64_t panels = gated ? w.panels() / 2 : w.panels();
  const int64_t chunk = M <= 2 ? std::clamp<int64_t>(panels / (pool.size() * 8) / 4 * 4, 4, 256)
                               : ((panels + tasks - 1) / tasks + 1) / 2 * 2;
  auto run = [&](int64_t p0, int64_t p1) {
    if (!w.quant) return kernel(a, p0, p1);
    // Quantized: dequantize a few panels (about 256 KiB of f32, in L2), run the kernel on
    // them, and go on; the kernel sees panels [0, n) of the buffer as panels [s, s + n).
    thread_local std::vector<float> wbuf;
    const int64_t step = std::clamp<int64_t>((256 << 10) / (a.panel_elems * 4), 1, 8);
    auto dequant = isa == Isa::avx512 ? avx512::quant_dequant_panels : avx2::quant_dequant_panels;
    wbuf.resize(static_cast<size_t>((gated ? 2 : 1) * step * a.panel_elems));
    for (int64_t s0 = p0; s0 < p1; s0 += step) {
      const int64_t n = std::min(step, p1 - s0);
      LinArgs b = a;
      dequant(*w.quant, s0, n, wbuf.data());
      if (gated) {
        dequant(*w.quant, s0 + a.up_panels, n, wbuf.data() + n * a.panel_elems);
        b.up_panels = n;
      }
      b.w = wbuf.data();
      b.N = a.N - s0 * kPanel;
      b.out = a.out + s0 * kPanel;
      if (a.bias) b.bias = a.bias + s0 * kPanel;
      kernel(b, 0, n);
    }
  };
  pool.parallel_dynamic(panels, chunk, [&](int64_t p0, int64_t p1, int) { run(p0, p1); });
  if (out.dtype != DType::f32)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        store_elem(out.data, out.dtype, m * out.stride + n, out_buf[m * N + n]);
}

}  // namespace

void set_linear_path(LinearPath p) {
  forced_path() = p;
}
void set_linear_k_block(int64_t pairs) {
  forced_k_block() = pairs;
}

LinearPath linear_path_for(int64_t M, const CpuWeight& w) {
  const LinearPath f = forced_path();
  if (f == LinearPath::dpbf16 && (w.dtype != DType::bf16 || active_isa() != Isa::avx512))
    return LinearPath::fma;
  if (f != LinearPath::automatic) return f;
  return LinearPath::fma;
}

bool linear_gated(Tensor x, const CpuWeight& w, const Tensor* bias, Activation act, Tensor out) {
  // One K block (the gated store has no partial sums to keep), whole panels in each half, bf16
  // panels on a SIMD ISA's own kernel, f32 output.
  const int64_t I = w.rows / 2;
  if (active_isa() == Isa::scalar || linear_path_for(x.rows, w) != LinearPath::fma ||
      w.dtype != DType::bf16 || w.rows % (2 * kPanel) != 0 || out.dtype != DType::f32 ||
      out.cols != I || out.rows != x.rows || forced_k_block() != 0 || (x.cols + 1) / 2 > 1024)
    return false;
  linear_simd(x, {&w}, bias, out, false, &act);
  return true;
}

void linear_dequant_panels(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Tensor out,
                           const Activation* gated) {
  linear_simd(x, {nullptr, &w}, bias, out, false, gated);
}

void linear(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
  if (active_isa() == Isa::scalar) return linear_scalar(x, w, bias, out);
  switch (linear_path_for(x.rows, w)) {
    case LinearPath::onednn:
      return gemm_dnnl(x, w, bias, out);
    case LinearPath::dpbf16:
      return linear_simd(x, {&w}, bias, out, true);
    default:
      return linear_simd(x, {&w}, bias, out, false);
  }
}

}  // namespace tessera::cpu
