// linear() and embed() on quantized weights (quant_weight.h): decode-sized batches take the
// packed GEMV (the weight read once, straight from its packed form); larger ones dequantize a few
// panels at a time into f32 and run linear.cpp's panel kernel, whose cost per weight is then
// spread over many rows. The scalar path is the reference the tests hold the others to.
#include <algorithm>
#include <vector>

#include "backend/cpu/quant_weight.h"
#include "core/thread_pool.h"

namespace tessera::cpu {
namespace {

// Above this many rows the dequantize-and-GEMM path wins: its dequantization is paid once per
// weight, the GEMV's unpacking once per tile of 4 rows (bench/NOTES-cpu.md, "quantized").
constexpr int64_t kGemvMaxRows = 8;

void linear_quant_scalar(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Tensor out) {
  const int64_t M = x.rows, K = x.cols, N = w.rows;
  ThreadPool::global().parallel_for(N, [&](int64_t n0, int64_t n1, int) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t k = 0; k < K; ++k) row[k] = w.at(n, k);
      for (int64_t m = 0; m < M; ++m) {
        float acc = 0.f;
        for (int64_t k = 0; k < K; ++k)
          acc += load_elem(x.data, x.dtype, m * x.stride + k) * row[k];
        if (bias) acc += bias->ptr<const float>()[n];
        store_elem(out.data, out.dtype, m * out.stride + n, acc);
      }
    }
  });
}

void gemv(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Tensor out) {
  const Isa isa = active_isa();
  const int64_t M = x.rows, K = x.cols, N = w.rows, gs = w.quant.group_size;
  thread_local std::vector<float> x_buf, xsum, out_buf;
  QuantGemvArgs a;
  a.w = &w;
  a.M = static_cast<int>(M);
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
  xsum.assign(static_cast<size_t>(M * w.groups), 0.f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g = 0; g < w.groups; ++g) {
      float s = 0.f;
      for (int64_t k = 0; k < gs; ++k) s += a.x[m * a.x_stride + g * gs + k];
      xsum[m * w.groups + g] = s;
    }
  a.xsum = xsum.data();
  a.bias = bias ? bias->ptr<const float>() : nullptr;
  if (out.dtype == DType::f32) {
    a.out = out.ptr<float>();
    a.out_stride = out.stride;
  } else {
    out_buf.resize(static_cast<size_t>(M * N));
    a.out = out_buf.data();
    a.out_stride = N;
  }
  auto kernel = isa == Isa::avx512 ? avx512::quant_gemv : avx2::quant_gemv;
  // Runs of panels taken dynamically (as linear.cpp's decode): long enough to stream, many
  // enough that a preempted thread does not hold the op up.
  ThreadPool& pool = ThreadPool::global();
  const int64_t chunk = std::clamp<int64_t>(w.panels / (pool.size() * 8) / 4 * 4, 4, 256);
  pool.parallel_dynamic(w.panels, chunk, [&](int64_t p0, int64_t p1, int) { kernel(a, p0, p1); });
  if (out.dtype != DType::f32)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        store_elem(out.data, out.dtype, m * out.stride + n, out_buf[m * N + n]);
}

}  // namespace

void linear_quant(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Tensor out) {
  if (active_isa() == Isa::scalar) return linear_quant_scalar(x, w, bias, out);
  if (x.rows <= kGemvMaxRows) return gemv(x, w, bias, out);
  linear_dequant_panels(x, w, bias, out, nullptr);
}

bool linear_gated_quant(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Activation act,
                        Tensor out) {
  // The fused gated store needs whole panels in each half and no bias; decode-sized batches
  // take the GEMV and the separate gated_act instead.
  const int64_t I = w.rows / 2;
  if (active_isa() == Isa::scalar || x.rows <= kGemvMaxRows || bias || w.rows % (2 * kPanel) != 0 ||
      out.dtype != DType::f32 || out.cols != I || out.rows != x.rows)
    return false;
  linear_dequant_panels(x, w, nullptr, out, &act);
  return true;
}

void embed_quant(const CpuQuantWeight& table, const int32_t* ids, int n, float scale,
                 bool round_to_table_dtype, Tensor out) {
  const int64_t H = table.cols;
  const bool round = round_to_table_dtype && table.dtype == DType::bf16;
  const float s = round ? round_bf16(scale) : scale;
  ThreadPool::global().parallel_for(
      n,
      [&](int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; ++t)
          for (int64_t i = 0; i < H; ++i) {
            float v = table.at(ids[t], i);
            if (round) v = round_bf16(v);
            v *= s;
            if (round) v = round_bf16(v);
            store_elem(out.data, out.dtype, t * out.stride + i, v);
          }
      },
      16);
}

}  // namespace tessera::cpu
