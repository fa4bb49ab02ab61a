// The CUDA backend's start and end (streams, events, the linear layers' cuBLASLt handle), the
// host-side dtype conversion of weight uploads, and the entry points make_cuda_backend() /
// cuda_available(). The class is in cuda_backend_impl.h, its memory in cuda_memory_ops.cpp; the
// ops are in the .cu files beside this one (one op family per file).
#include "backend/cuda/cuda_backend_impl.h"
#include "core/thread_pool.h"

namespace tessera {
namespace cuda {

// Converts n elements of src_dt (f32, bf16, f16) to dst_dt (f32 or bf16) on the host.
void convert_host(const void* src, DType src_dt, void* dst, DType dst_dt, size_t n) {
  if (src_dt == dst_dt) {
    std::memcpy(dst, src, n * dtype_size(src_dt));
    return;
  }
  const int64_t chunk = 1 << 16;
  ThreadPool::global().parallel_for(
      static_cast<int64_t>((n + chunk - 1) / chunk), [&](int64_t c0, int64_t c1, int) {
        const size_t i0 = static_cast<size_t>(c0 * chunk);
        const size_t i1 = std::min(n, static_cast<size_t>(c1 * chunk));
        auto* s16 = static_cast<const uint16_t*>(src);
        auto* s32 = static_cast<const float*>(src);
        for (size_t i = i0; i < i1; ++i) {
          const float v = src_dt == DType::f32    ? s32[i]
                          : src_dt == DType::bf16 ? bf16_to_f32(s16[i])
                                                  : f16_to_f32(s16[i]);
          if (dst_dt == DType::f32) {
            static_cast<float*>(dst)[i] = v;
          } else {
            static_cast<uint16_t*>(dst)[i] = f32_to_bf16(v);
          }
        }
      });
}

CudaBackend::CudaBackend() {
  TS_CUDA(cudaSetDevice(0));
  TS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TS_CUDA(cudaStreamCreateWithFlags(&up_stream_, cudaStreamNonBlocking));
  TS_CUDA(cudaStreamCreateWithFlags(&down_stream_, cudaStreamNonBlocking));
  for (auto& e : staging_done_) TS_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  TS_CUDA(cudaEventCreateWithFlags(&batch_copied_, cudaEventDisableTiming));
  TS_CUDA(cudaEventCreateWithFlags(&sample_done_, cudaEventDisableTiming));
  TS_CUDA(cudaEventCreateWithFlags(&sample_ready_, cudaEventDisableTiming));
  TS_CUDA(cudaEventCreateWithFlags(&sample_inputs_, cudaEventDisableTiming));
  TS_CUDA(cudaEventCreateWithFlags(&batch_installed_, cudaEventDisableTiming));
  linear_ = std::make_unique<LinearOps>();
  progress_ = isatty(2) != 0;
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  cudaStreamSynchronize(up_stream_);
  cudaStreamSynchronize(down_stream_);
  end_progress();
  for (auto& [k, g] : graphs_)
    if (g.exec) cudaGraphExecDestroy(g.exec);
  for (auto& e : staging_done_) cudaEventDestroy(e);
  cudaEventDestroy(batch_copied_);
  cudaEventDestroy(sample_done_);
  cudaEventDestroy(sample_ready_);
  cudaEventDestroy(sample_inputs_);
  cudaEventDestroy(batch_installed_);
  linear_.reset();
  cudaStreamDestroy(stream_);
  cudaStreamDestroy(up_stream_);
  cudaStreamDestroy(down_stream_);
}

CudaTuning* tuning(ComputeBackend& b) {
  auto* c = dynamic_cast<CudaBackend*>(&b);
  return c ? &c->tuning() : nullptr;
}

std::string cuda_device_description() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess)
    return "unknown GPU";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.200s, sm_%d%d, %d SMs, %.1f GiB", p.name, p.major, p.minor,
                p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1u << 30));
  return buf;
}

}  // namespace cuda

bool cuda_available() {
  static const bool ok = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
      cudaGetLastError();
      return false;
    }
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return false;
    return p.major >= 9;  // the kernels are built for sm_90a (+ compute_90 PTX)
  }();
  return ok;
}

std::unique_ptr<ComputeBackend> make_cuda_backend() {
  if (!cuda_available()) return nullptr;
  cuda::cuda_env_tuning();  // a malformed TESSERA_CUDA_TUNING fails here, not as "could not start"
  try {
    return std::make_unique<cuda::CudaBackend>();
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera: the CUDA backend could not start: %s\n", e.what());
    return nullptr;
  }
}

}  // namespace tessera
