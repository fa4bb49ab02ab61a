// The CUDA backend's quantized weights (ComputeBackend::upload_quantized): the upload into the
// device layout of quant.h, and the products on it: the packed decode GEMV (gemv_quant.cu) up
// to M = 16 with the decode graph's fusions, and for larger batches (or shapes it does not take)
// rows dequantized a tile at a time into a bounded scratch and the dense product on each tile.
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/quant.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/affine.h"

namespace tessera::cuda {

namespace {

// The dequantized tile of the batched products: at most this many bytes (at least 64 rows), so
// that an LM head of 262K x 1152 (604 MB in bf16) takes 32 MB of scratch, not its whole size.
constexpr size_t kDequantTileBytes = 32u << 20;

float scale_at(const HostQuantTensor& t, const void* p, int64_t i) {
  switch (t.scale_dtype) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

}  // namespace

std::unique_ptr<Weight> CudaBackend::upload_quantized(std::span<const HostQuantTensor* const> parts,
                                                      DType dtype, const std::string& what) {
  TS_ASSERT(!parts.empty());
  bool same = true;
  for (const HostQuantTensor* p : parts)
    same = same && p->format == parts[0]->format && p->cols == parts[0]->cols;
  if (!same) {  // each part in its own layout (Weight::parts), as linear() covers them
    std::vector<std::unique_ptr<Weight>> ws;
    for (const HostQuantTensor* p : parts) ws.push_back(upload_quantized({&p, 1}, dtype, what));
    return stack_parts(std::move(ws));
  }
  const QuantFormat fmt = parts[0]->format;
  const int64_t K = parts[0]->cols;
  // Group 16 (GGUF's Q6_K) only at 8-bit storage: a 16-byte chunk then holds 16 inputs, one
  // group (quant.h: every chunk inside one group).
  const bool group_ok =
      quant::valid_group_size(fmt.group_size) || (fmt.group_size == 16 && fmt.bits > 4);
  if (!quant::valid_bits(fmt.bits) || !group_ok || K % fmt.group_size != 0)
    fail(ErrorKind::unsupported, parts[0]->name + ": quantized with bits " +
                                     std::to_string(fmt.bits) + ", group size " +
                                     std::to_string(fmt.group_size) + ", which CUDA does not take");
  auto w = std::make_unique<CudaQuantWeight>();
  w->cols = K;
  w->dtype = dtype;
  w->quant = fmt;
  w->sb = fmt.bits <= 4 ? 4 : 8;
  for (const HostQuantTensor* p : parts) {
    w->rows += p->rows;
    w->f32_scales = w->f32_scales || p->scale_dtype != DType::bf16 || !p->biases;
  }
  const int64_t N = w->rows, G = K / fmt.group_size, wpr = K * w->sb / 32;
  const size_t pair_bytes = w->f32_scales ? 8 : 4;
  std::vector<uint32_t> words(static_cast<size_t>(N * wpr));
  std::vector<uint8_t> pairs(static_cast<size_t>(N * G) * pair_bytes);
  std::vector<std::pair<const HostQuantTensor*, int64_t>> starts;
  int64_t row0 = 0;
  for (const HostQuantTensor* p : parts) {
    starts.emplace_back(p, row0);
    row0 += p->rows;
  }
  ThreadPool::global().parallel_for(N, [&](int64_t n0, int64_t n1, int) {
    std::vector<uint8_t> q(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      size_t i = starts.size() - 1;
      while (starts[i].second > n) --i;
      const HostQuantTensor& t = *starts[i].first;
      const int64_t r = n - starts[i].second;
      const uint32_t* src = t.packed + r * quant::words_per_row(K, fmt.bits);
      uint32_t* dst = words.data() + n * wpr;
      if (fmt.bits == w->sb) {
        std::memcpy(dst, src, static_cast<size_t>(wpr) * 4);
      } else {  // 2, 3 bits widened to 4; 5, 6 to 8 (exact)
        quant::unpack_row(src, K, fmt.bits, q.data());
        quant::pack_row(q.data(), K, w->sb, dst);
      }
      for (int64_t g = 0; g < G; ++g) {
        uint8_t* d = pairs.data() + static_cast<size_t>(n * G + g) * pair_bytes;
        const int64_t gi = r * G + g;
        if (w->f32_scales) {
          const float s = scale_at(t, t.scales, gi);  // biases null: bias_per_scale * s
          const float sb[2] = {s, t.biases ? scale_at(t, t.biases, gi) : t.bias_per_scale * s};
          std::memcpy(d, sb, 8);
        } else {  // (scale, bias): the scale in the low half
          const uint32_t p = static_cast<uint32_t>(static_cast<const uint16_t*>(t.scales)[gi]) |
                             static_cast<uint32_t>(static_cast<const uint16_t*>(t.biases)[gi])
                                 << 16;
          std::memcpy(d, &p, 4);
        }
      }
    }
  });
  w->buffer = std::make_unique<CudaBuffer>(words.size() * 4, what.c_str());
  w->scales = std::make_unique<CudaBuffer>(pairs.size(), what.c_str());
  TS_CUDA(cudaMemcpy(w->buffer->data(), words.data(), words.size() * 4, cudaMemcpyHostToDevice));
  TS_CUDA(cudaMemcpy(w->scales->data(), pairs.data(), pairs.size(), cudaMemcpyHostToDevice));
  w->bytes = words.size() * 4 + pairs.size();
  uploaded_ += w->bytes;
  return w;
}

void CudaBackend::quant_linear(Tensor x, const Weight& wt, const float* bias, Tensor out) {
  const auto& w = static_cast<const CudaQuantWeight&>(wt);
  const QuantView v = w.view();
  LinearOps& ops = lin();
  if (tuning_.linear != LinearPath::cublaslt && tuning_.linear != LinearPath::tiled &&
      quant_gemv_fits(x, v, out, nullptr, ops.sms())) {
    launch_quant_gemv(x, v, bias, out, nullptr, stream_, ops.sms());
    return;
  }
  TS_ASSERT(x.cols == w.cols && out.cols == w.rows && out.rows >= x.rows);
  // Rows a tile at a time (multiples of 64: each tile's output columns stay 16-byte aligned).
  const DType dt = w.dtype == DType::f32 ? DType::f32 : DType::bf16;
  const int64_t K = w.cols, per_row = K * static_cast<int64_t>(dtype_size(dt));
  const int64_t tile = std::min(
      w.rows, std::max<int64_t>(64, static_cast<int64_t>(kDequantTileBytes) / per_row / 64 * 64));
  void* buf = grow(dequant_tile_, static_cast<size_t>(tile * per_row), "dequantized tile");
  for (int64_t r0 = 0; r0 < w.rows; r0 += tile) {
    const int64_t n = std::min(tile, w.rows - r0);
    const Tensor t{buf, dt, n, K, K};
    launch_dequant_rows(v, r0, n, t, stream_);
    ops.dense(x, buf, dt, n, K, bias ? bias + r0 : nullptr, out.cols_from(r0, n), stream_);
  }
}

}  // namespace tessera::cuda
