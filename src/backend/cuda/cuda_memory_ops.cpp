// The CUDA backend's memory (cuda_backend_impl.h): allocations counted by the CUDA memory tracker,
// synchronous copies on the compute stream, weights uploaded once through two pinned staging
// buffers (dtype converted on the host, convert_host), and the scratch arena whose addresses stay
// stable from one forward to the next (captured graphs replay them).
#include "backend/cuda/cuda_backend_impl.h"

namespace tessera::cuda {

std::unique_ptr<DeviceBuffer> CudaBackend::alloc(size_t bytes, const char* what) {
  no_alloc_while_capturing(what);
  return std::make_unique<CudaBuffer>(bytes, what);
}
void CudaBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  TS_CUDA(cudaStreamSynchronize(stream_));
}
void CudaBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  TS_CUDA(cudaStreamSynchronize(stream_));
}
void CudaBackend::synchronize() {
  TS_CUDA(cudaStreamSynchronize(stream_));
  TS_CUDA(cudaStreamSynchronize(down_stream_));
}
size_t CudaBackend::device_free_bytes() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free;
}

std::unique_ptr<Weight> CudaBackend::upload_weight(std::span<const HostTensor* const> parts,
                                                   DType dtype, const std::string& what) {
  TS_ASSERT(!parts.empty());
  if (dtype != DType::f32 && dtype != DType::bf16)
    fail_arg("CUDA weights are stored as f32 or bf16, not " + std::string(dtype_name(dtype)));
  auto w = std::make_unique<CudaWeight>();
  w->cols = parts[0]->shape.size() == 2 ? parts[0]->shape[1] : 1;
  for (const HostTensor* p : parts) {
    TS_ASSERT(p->shape.size() == 2 && p->shape[1] == w->cols);
    if (p->dtype != DType::f32 && p->dtype != DType::bf16 && p->dtype != DType::f16)
      fail_model(p->name + " has dtype " + dtype_name(p->dtype) +
                 ", which the CUDA backend cannot load");
    w->rows += p->shape[0];
  }
  w->dtype = dtype;
  w->bytes = static_cast<size_t>(w->rows * w->cols) * dtype_size(dtype);
  w->buffer = std::make_unique<CudaBuffer>(w->bytes, what.c_str());
  if (staging_[0].size() == 0)
    for (auto& s : staging_) s = PinnedBuffer(kStagingBytes, "weight upload staging");
  char* dst = static_cast<char*>(w->buffer->data());
  const size_t esz = dtype_size(dtype);
  const size_t per_chunk = kStagingBytes / std::max<size_t>(esz, 4);
  for (const HostTensor* p : parts) {
    const size_t n = static_cast<size_t>(p->numel());
    const char* src = static_cast<const char*>(p->data);
    for (size_t off = 0; off < n; off += per_chunk) {
      const size_t cnt = std::min(per_chunk, n - off);
      const int slot = staging_turn_++ & 1;
      TS_CUDA(cudaEventSynchronize(staging_done_[slot]));  // its previous copy has left
      convert_host(src + off * dtype_size(p->dtype), p->dtype, staging_[slot].data(), dtype, cnt);
      TS_CUDA(
          cudaMemcpyAsync(dst, staging_[slot].data(), cnt * esz, cudaMemcpyHostToDevice, stream_));
      TS_CUDA(cudaEventRecord(staging_done_[slot], stream_));
      dst += cnt * esz;
      uploaded_ += cnt * esz;
    }
  }
  if (progress_ && uploaded_ - last_progress_ >= (64u << 20)) {
    last_progress_ = uploaded_;
    std::fprintf(stderr, "\rtessera: uploading weights to the GPU: %.2f GiB",
                 static_cast<double>(uploaded_) / (1024.0 * 1024 * 1024));
    progress_line_ = true;
  }
  return w;
}

void CudaBackend::scratch_reset() {
  end_progress();
  if (staging_[0].size() != 0) {  // loading is over: give the staging memory back
    synchronize();
    for (auto& s : staging_) s = PinnedBuffer();
  }
  if (chunks_.size() > 1 || (chunks_.size() == 1 && high_water_ > chunks_[0]->size())) {
    no_alloc_while_capturing("scratch");
    chunks_.clear();
    chunks_.push_back(std::make_unique<CudaBuffer>(high_water_, "cuda activations"));
  }
  used_ = 0;
  chunk_used_ = 0;
}

Tensor CudaBackend::scratch(int64_t rows, int64_t cols, DType dt) {
  const size_t bytes = (static_cast<size_t>(rows * cols) * dtype_size(dt) + 255) / 256 * 256;
  if (chunks_.empty() || chunk_used_ + bytes > chunks_.back()->size()) {
    no_alloc_while_capturing("scratch");
    chunks_.push_back(
        std::make_unique<CudaBuffer>(std::max<size_t>(bytes, 4u << 20), "cuda activations"));
    chunk_used_ = 0;
  }
  void* p = static_cast<char*>(chunks_.back()->data()) + chunk_used_;
  chunk_used_ += bytes;
  used_ += bytes;
  high_water_ = std::max(high_water_, used_);
  return Tensor{p, dt, rows, cols, cols};
}

void CudaBackend::no_alloc_while_capturing(const char* what) {
  if (capturing_)
    throw Error(ErrorKind::internal, std::string("CUDA graph capture: an allocation for ") + what +
                                         " during capture (sizes must settle in the "
                                         "eager warm-up run)");
}
void CudaBackend::end_progress() {
  if (progress_line_) {
    std::fprintf(stderr, "\rtessera: uploaded %.2f GiB of weights to the GPU\n",
                 static_cast<double>(uploaded_) / (1024.0 * 1024 * 1024));
    progress_line_ = false;
  }
}
// Pinned host staging of at least `bytes` (waits until the previous batch copy has left it).
void* CudaBackend::host_staging(size_t bytes) {
  TS_CUDA(cudaEventSynchronize(batch_copied_));
  if (batch_host_.size() < bytes)
    batch_host_ = PinnedBuffer(std::max(bytes, batch_host_.size() * 2), "batch staging");
  return batch_host_.data();
}
void* CudaBackend::device_batch(size_t bytes) {
  if (!batch_dev_.buf || batch_dev_.buf->size() < bytes) {
    no_alloc_while_capturing("batch");
    batch_dev_.get(bytes, "batch arrays");
  }
  return batch_dev_.buf->data();
}

// A workspace of at least `bytes` (allocating only outside graph capture).
void* CudaBackend::grow(GrowBuffer& g, size_t bytes, const char* what) {
  if (!g.buf || g.buf->size() < bytes) {
    no_alloc_while_capturing(what);
    g.get(bytes, what);
  }
  return g.buf->data();
}
// `n` counters that are zero (kernels using them leave them zero).
int* CudaBackend::zeroed_counters(GrowBuffer& g, size_t& count, size_t n) {
  if (!g.buf || count < n) {
    no_alloc_while_capturing("attention counters");
    g.get(n * sizeof(int), "attention counters");
    count = g.buf->size() / sizeof(int);
    TS_CUDA(cudaMemsetAsync(g.buf->data(), 0, g.buf->size(), stream_));
  }
  return static_cast<int*>(g.buf->data());
}

}  // namespace tessera::cuda
