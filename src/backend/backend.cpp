#include "backend/backend.h"

#include <cstring>
#include <string>

#include "core/check.h"
#include "tessera/error.h"

namespace tessera {

DeviceArray ComputeBackend::alloc_array(int64_t rows, int64_t cols, DType dt, const char* what) {
  DeviceArray a;
  a.buffer = alloc(static_cast<size_t>(rows * cols) * dtype_size(dt), what);
  a.view = Tensor{a.buffer->data(), dt, rows, cols, cols};
  return a;
}

DeviceArray ComputeBackend::upload_f32(const std::vector<float>& v, const char* what) {
  DeviceArray a = alloc_array(1, static_cast<int64_t>(v.size()), DType::f32, what);
  copy_to_device(a.view.data, v.data(), v.size() * sizeof(float));
  return a;
}

std::unique_ptr<Weight> ComputeBackend::stack_parts(std::vector<std::unique_ptr<Weight>> parts) {
  auto w = std::make_unique<Weight>();
  w->cols = parts.empty() ? 0 : parts[0]->cols;
  w->dtype = parts.empty() ? DType::f32 : parts[0]->dtype;
  for (const auto& p : parts) {
    if (p->cols != w->cols || !p->parts.empty())
      throw Error(ErrorKind::internal, "stack_parts: parts of different widths or nested");
    w->rows += p->rows;
    w->bytes += p->bytes;
  }
  w->parts = std::move(parts);
  return w;
}

bool ComputeBackend::linear_parts(Tensor x, const Weight& w, const Tensor* bias, Tensor out) {
  if (w.parts.empty()) return false;
  int64_t col = 0;
  for (const auto& p : w.parts) {
    Tensor b;
    if (bias) b = bias->cols_from(col, p->rows);
    linear(x, *p, bias ? &b : nullptr, out.cols_from(col, p->rows));
    col += p->rows;
  }
  return true;
}

void ComputeBackend::mask_logits(Tensor logits, std::span<const LogitMask> masks) {
  TS_ASSERT(logits.dtype == DType::f32);
  std::vector<float> row(static_cast<size_t>(logits.cols));
  for (const LogitMask& m : masks) {
    char* at = static_cast<char*>(logits.data) + m.row * logits.row_bytes();
    copy_to_host(row.data(), at, row.size() * sizeof(float));
    apply_logit_mask(row.data(), logits.cols, m);
    copy_to_device(at, row.data(), row.size() * sizeof(float));
  }
}

void ComputeBackend::sample_async(Tensor logits, const SampleBatch& batch,
                                  const int32_t* greedy_ids) {
  if (async_pending_)
    throw Error(ErrorKind::invalid_argument,
                "sample_async: the previous sample was not waited for");
  bool picked = greedy_ids != nullptr && static_cast<int64_t>(batch.rows.size()) <= logits.rows;
  for (const SampleParams& p : batch.rows) picked = picked && plain_greedy(p);
  if (picked) {  // the forward's picks are the sampler's
    async_out_ = SampleOutput{};
    async_out_.ids.resize(batch.rows.size());
    copy_to_host(async_out_.ids.data(), greedy_ids, async_out_.ids.size() * sizeof(int32_t));
  } else {
    sample(logits, batch, async_out_);
  }
  async_pending_ = true;
}

void ComputeBackend::sample_wait(SampleOutput& out) {
  if (!async_pending_)
    throw Error(ErrorKind::invalid_argument, "sample_wait: no sample is outstanding");
  async_pending_ = false;
  out = async_out_;
}

void ComputeBackend::check_sampled(const HostBatch& b, size_t rows) {
  for (const HostBatch::Sampled& e : b.sampled) {
    if (e.token < 0 || e.token >= b.num_tokens())
      throw Error(ErrorKind::invalid_argument,
                  "upload: a sampled token's index is outside the batch");
    if (e.row < 0 || static_cast<size_t>(e.row) >= rows)
      throw Error(ErrorKind::invalid_argument,
                  "upload: a token refers to row " + std::to_string(e.row) +
                      " of the last sample, which had " + std::to_string(rows) + " rows");
  }
}

#ifndef TESSERA_HAVE_CUDA
std::unique_ptr<ComputeBackend> make_cuda_backend() {
  return nullptr;
}
bool cuda_available() {
  return false;
}
#endif

}  // namespace tessera
