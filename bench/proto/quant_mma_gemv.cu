// A prototype, not part of the engine or the build: the 4-bit MLX affine GEMV at M = 1 on tensor
// cores (mma.m16n8k16, bf16 (128 + q) pairs against x, the 128 and the bias taken out per group
// with sum(x)) over a tile-repacked layout, checked against a plain f32 reference and timed per
// launch in CUDA graphs at Gemma-3-1B's decode shapes; variant 1 issues only its loads, variant 2
// keeps 4 tiles in flight instead of 8. Results and what limits it: bench/NOTES-cuda.md, run 29.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a quant_mma_gemv.cu -o quant_mma_gemv
//   ./quant_mma_gemv [qkv|o|gate_up|down|lm_head]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e = (x);                                                                    \
    if (e != cudaSuccess) {                                                                 \
      std::printf("CUDA %s at %s:%d: %s\n", cudaGetErrorString(e), __FILE__, __LINE__, #x); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

using bf16 = __nv_bfloat16;

__global__ void fill_u32(uint32_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    p[i] = (uint32_t)(z ^ (z >> 31));
  }
}
__global__ void fill_pairs(uint32_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint64_t z = (i + 7) * 0x9e3779b97f4a7c15ull ^ seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    float s = ((z >> 40) * (1.f / 16777216.f) - 0.5f) * 0.02f;
    float b = (((z >> 16) & 0xffffff) * (1.f / 16777216.f) - 0.5f) * 0.1f;
    uint32_t sb = __bfloat16_as_ushort(__float2bfloat16_rn(s));
    uint32_t bb = __bfloat16_as_ushort(__float2bfloat16_rn(b));
    p[i] = sb | (bb << 16);
  }
}
__global__ void fill_x(bf16* x, int K) {
  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < K; i += blockDim.x * gridDim.x)
    x[i] = __float2bfloat16_rn(sinf(i * 0.37f) * 1.5f);
}

// MLX words [N][K/8] -> tiles: tile (rt, kt) of 16 rows x 64 inputs is 512 bytes at ((rt KT) + kt)
// 512; lane g*4+t holds 16 bytes: word ks (k-step 0..3) = bytes {row g word 2ks byte t, row g+8
// word 2ks byte t, row g word 2ks+1 byte t, row g+8 word 2ks+1 byte t} (word j of the tile = row
// word kt*8+j).
__global__ void repack(const uint32_t* src, uint32_t* dst, int N, int K) {
  const int KW = K / 8, KT = K / 64;
  const size_t total = (size_t)N * KW;  // dst words
  for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total;
       o += (size_t)gridDim.x * blockDim.x) {
    const size_t tile = o / 128;
    const int within = o % 128, lane = within / 4, ks = within % 4;
    const int rt = tile / KT, kt = tile % KT, g = lane / 4, t = lane % 4;
    uint32_t v = 0;
    for (int b = 0; b < 4; ++b) {
      const int row = rt * 16 + g + ((b & 1) ? 8 : 0);
      const int word = kt * 8 + 2 * ks + (b >> 1);
      const uint32_t w = row < N ? src[(size_t)row * KW + word] : 0u;
      v |= ((w >> (8 * t)) & 0xffu) << (8 * b);
    }
    dst[o] = v;
  }
}

// Reference: one warp per row, f32, from the MLX layout.
__global__ void ref_gemv(const uint32_t* W, const uint32_t* P, const bf16* x, float* y, int N,
                         int K, int group) {
  const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  float acc = 0.f;
  for (int k = lane; k < K; k += 32) {
    const uint32_t w = W[(size_t)row * (K / 8) + k / 8];
    const int q = (w >> (4 * (k % 8))) & 15;
    const uint32_t p = P[(size_t)row * (K / group) + k / group];
    const float s = __uint_as_float(p << 16), b = __uint_as_float(p & 0xffff0000u);
    acc += (s * q + b) * __bfloat162float(x[k]);
  }
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
  if (lane == 0) y[row] = acc;
}

__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// byte t of v as the bf16 pair (128 + lo nibble, 128 + hi nibble): byte 0 from v, byte 2 from
// v4 = v >> 4 (sel = t | (4 + t) << 8)
__device__ __forceinline__ uint32_t nib_pair(uint32_t v, uint32_t v4, uint32_t sel) {
  const uint32_t p = __byte_perm(v, v4, sel);
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n"
      : "=r"(r)
      : "r"(p), "r"(0x000f000fu), "r"(0x43004300u));  // (a & b) | c
  return r;
}

template <class F>
float graph_us(int n, int reps, F&& f) {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < n; ++i) f(i, st);
  CK(cudaStreamSynchronize(st));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; ++i) f(i, st);
  CK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ex;
  CK(cudaGraphInstantiate(&ex, g, 0));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r < reps + 3; ++r) {
    CK(cudaEventRecord(a, st));
    CK(cudaGraphLaunch(ex, st));
    CK(cudaEventRecord(b, st));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 3) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ex);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  return t[t.size() / 2] * 1e3f / n;
}

#include "quant_mma_gemv.cuh"

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  struct S {
    const char* name;
    int N, K;
  };
  const S shapes[] = {{"qkv", 1536, 1152},
                      {"o", 1152, 1024},
                      {"gate_up", 13824, 1152},
                      {"down", 1152, 6912},
                      {"lm_head", 262144, 1152}};
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int group : {64, 32, 128}) {
    for (const S& s : shapes) {
      if (group != 64 && s.N > 20000) continue;
      if (only && std::string(only) != s.name) continue;
      const size_t words = (size_t)s.N * s.K / 8, pairs = (size_t)s.N * (s.K / group);
      const size_t bytes = words * 4 + pairs * 4;
      const int copies = std::max<size_t>(2, (400u << 20) / bytes + 1);
      std::vector<uint32_t*> W(copies), T(copies), P(copies);
      for (int c = 0; c < copies; ++c) {
        CK(cudaMalloc(&W[c], words * 4));
        CK(cudaMalloc(&T[c], words * 4));
        CK(cudaMalloc(&P[c], pairs * 4));
        fill_u32<<<1024, 256>>>(W[c], words, 11 + c);
        fill_pairs<<<1024, 256>>>(P[c], pairs, 99 + c);
        repack<<<1024, 256>>>(W[c], T[c], s.N, s.K);
      }
      bf16* x;
      float *y0, *y1;
      CK(cudaMalloc(&x, s.K * 2));
      CK(cudaMalloc(&y0, s.N * 4));
      CK(cudaMalloc(&y1, s.N * 4));
      fill_x<<<8, 256>>>(x, s.K);
      ref_gemv<<<(s.N + 7) / 8, 256>>>(W[0], P[0], x, y0, s.N, s.K, group);
      QArgs a{T[0], P[0], x, y1, s.N, s.K, group};
      const QPlan pl = qmma_plan(s.N, s.K, sms);
      qmma_launch(a, pl, 0);
      CK(cudaDeviceSynchronize());
      std::vector<float> h0(s.N), h1(s.N);
      CK(cudaMemcpy(h0.data(), y0, s.N * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(h1.data(), y1, s.N * 4, cudaMemcpyDeviceToHost));
      double err = 0, mag = 0;
      for (int i = 0; i < s.N; ++i) {
        err = std::max(err, (double)std::fabs(h0[i] - h1[i]));
        mag = std::max(mag, (double)std::fabs(h0[i]));
      }
      const float us = graph_us(copies * 2, 20, [&](int i, cudaStream_t st) {
        QArgs b{T[i % copies], P[i % copies], x, y1, s.N, s.K, group};
        qmma_launch(b, pl, st);
      });
      std::printf(
          "qmma %-8s g%-3d [%6d x %5d] %.2f MB: %.2f us (%.0f GB/s)  grid %d slices %d  max err "
          "%.3g of %.3g\n",
          s.name, group, s.N, s.K, bytes / 1e6, us, bytes / us / 1e3, pl.grid, pl.slices, err, mag);
      if (group == 64) {
        const QPlan p2 = qmma2_plan(s.N, s.K, sms);
        QArgs a2{T[0], P[0], x, y1, s.N, s.K, group};
        CK(cudaMemset(y1, 0, s.N * 4));
        qmma2_launch(a2, p2, 0);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h1.data(), y1, s.N * 4, cudaMemcpyDeviceToHost));
        double e2 = 0;
        for (int i = 0; i < s.N; ++i) e2 = std::max(e2, (double)std::fabs(h0[i] - h1[i]));
        const float u3 = graph_us(copies * 2, 20, [&](int i, cudaStream_t st) {
          QArgs b{T[i % copies], P[i % copies], x, y1, s.N, s.K, group};
          qmma2_launch(b, p2, st);
        });
        std::printf("   form 2 (item ahead, slices %d): %.2f us (%.0f GB/s), max err %.3g\n",
                    p2.slices, u3, bytes / u3 / 1e3, e2);
      }
      if (group == 64)
        for (int v : {1, 2}) {
          const float u2 = graph_us(copies * 2, 20, [&](int i, cudaStream_t st) {
            QArgs b{T[i % copies], P[i % copies], x, y1, s.N, s.K, group};
            qmma_launch(b, pl, st, v);
          });
          std::printf("   variant %d (%s): %.2f us (%.0f GB/s)\n", v,
                      v == 1 ? "loads only" : "mma, 4 in flight", u2, bytes / u2 / 1e3);
        }
      for (int c = 0; c < copies; ++c) {
        cudaFree(W[c]);
        cudaFree(T[c]);
        cudaFree(P[c]);
      }
      cudaFree(x);
      cudaFree(y0);
      cudaFree(y1);
    }
  }
  return 0;
}
