// The packed decode GEMV timed per launch inside CUDA graphs at Gemma-3-1B's decode shapes
// (gpu_bench
// --quant-ops): each linear of one layer at M = 1 with the fusions a decode step gives it (qkv: the
// norm prologue; gate_up: norm + gated epilogue; o, down: plain), and the LM head with the final
// norm and the greedy pick. Random words and (scale, bias) pairs in rotation, enough copies to
// span 400 MB, so every launch reads its weight from HBM.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/measure_util.cuh"
#include "backend/cuda/quant.h"

namespace tessera::cuda {

namespace {

struct QuantCopy {
  std::unique_ptr<CudaBuffer> words, pairs;
};

// The norm prologue's operands for a K-wide input (as a decode step's fused ops pass them).
struct NormOperands {
  CudaBuffer y, h, res, w, cnt, ws;
  explicit NormOperands(int K)
      : y(static_cast<size_t>(K) * 2, "quant timing"),
        h(static_cast<size_t>(K) * 2, "quant timing"),
        res(static_cast<size_t>(K) * 4, "quant timing"),
        w(static_cast<size_t>(K) * 8, "quant timing"),
        cnt(256, "quant timing"),
        ws(256 + kGemvArgmaxMaxBlocks * 8, "quant timing") {
    fill(y.data(), K, 61, 1.f);
    std::vector<float> host(2 * static_cast<size_t>(K));
    for (size_t i = 0; i < host.size(); ++i) host[i] = 0.5f + 0.001f * static_cast<float>(i % 997);
    TS_CUDA(cudaMemcpy(w.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
    TS_CUDA(
        cudaMemcpy(res.data(), host.data(), static_cast<size_t>(K) * 4, cudaMemcpyHostToDevice));
    TS_CUDA(cudaMemset(cnt.data(), 0, 256));
  }
  GemvFusion fusion(int K, bool gated, bool pick) {
    GemvFusion f;
    f.norm = true;
    f.res = static_cast<float*>(res.data());
    f.y = static_cast<const bf16*>(y.data());
    f.w_y = static_cast<const float*>(w.data());
    f.w_out = static_cast<const float*>(w.data()) + K;
    f.eps = 1e-6f;
    f.h = static_cast<bf16*>(h.data());
    f.counter = static_cast<int*>(cnt.data());
    f.gated = gated;
    if (pick) {
      f.amax_id = static_cast<int32_t*>(ws.data());
      f.amax_part = reinterpret_cast<float*>(static_cast<char*>(ws.data()) + 256);
      f.amax_count = static_cast<int*>(cnt.data()) + 32;
    }
    return f;
  }
};

}  // namespace

std::string quant_ops_report(int reps, int bits, int group) {
  TS_ASSERT(bits == 4 || bits == 8);
  struct Shape {
    const char* name;
    int N, K;  // N: rows of the stored weight (gate and up stacked for gate_up)
    bool norm, gated, head;
  };
  const Shape shapes[] = {{"qkv", 1536, 1152, true, false, false},
                          {"o", 1152, 1024, false, false, false},
                          {"gate_up", 13824, 1152, true, true, false},
                          {"down", 1152, 6912, false, false, false},
                          {"lm_head", 262144, 1152, true, false, true}};
  int sms = 0;
  TS_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::string r;
  char line[256];
  for (const Shape& s : shapes) {
    const size_t word_bytes = static_cast<size_t>(s.N) * s.K * bits / 8;
    const size_t pair_bytes = static_cast<size_t>(s.N) * (s.K / group) * 4;
    const size_t copies = std::max<size_t>(2, (400u << 20) / (word_bytes + pair_bytes) + 1);
    std::vector<QuantCopy> ws(copies);
    for (size_t i = 0; i < copies; ++i) {
      ws[i].words = std::make_unique<CudaBuffer>(word_bytes, "quant timing");
      ws[i].pairs = std::make_unique<CudaBuffer>(pair_bytes, "quant timing");
      fill(ws[i].words->data(), word_bytes / 2, 70 + i, 1.f);
      fill(ws[i].pairs->data(), pair_bytes / 2, 170 + i, 0.02f);
    }
    const int out_cols = s.gated ? s.N / 2 : s.N;
    CudaBuffer x(static_cast<size_t>(s.K) * 2, "quant timing"),
        o(static_cast<size_t>(out_cols) * 4, "quant timing");
    fill(x.data(), s.K, 60, 1.f);
    NormOperands nops(s.K);
    Tensor xt{s.norm ? nops.h.data() : x.data(), DType::bf16, 1, s.K, s.K};
    Tensor ot{o.data(), s.head ? DType::f32 : DType::bf16, 1, out_cols, out_cols};
    auto view = [&](size_t i) {
      QuantView v;
      v.w = static_cast<const uint32_t*>(ws[i].words->data());
      v.s = ws[i].pairs->data();
      v.sb = bits;
      v.group = group;
      v.rows = s.N;
      v.cols = s.K;
      return v;
    };
    auto time = [&](const GemvFusion* f) {
      if (!quant_gemv_fits(xt, view(0), ot, f, sms)) return -1.0;
      return graph_us_per_launch(static_cast<int>(copies), reps, [&](int i, cudaStream_t st) {
        launch_quant_gemv(xt, view(static_cast<size_t>(i) % copies), nullptr, ot, f, st, sms);
      });
    };
    GemvFusion fused = nops.fusion(s.K, s.gated, s.head);
    const double plain = s.gated ? -1.0 : time(nullptr);
    const double with = s.norm ? time(&fused) : plain;
    const double gb = static_cast<double>(word_bytes + pair_bytes) / 1e3;
    std::snprintf(line, sizeof line,
                  "quant gemv %-8s %d-bit g%d M=1 [%d x %d], %.2f MB: plain %.2f us (%.0f GB/s), "
                  "as in decode %.2f us (%.0f GB/s)\n",
                  s.name, bits, group, s.N, s.K, gb / 1e3, plain, plain > 0 ? gb / plain : 0.0,
                  with, with > 0 ? gb / with : 0.0);
    r += line;
  }
  return r;
}

}  // namespace tessera::cuda
