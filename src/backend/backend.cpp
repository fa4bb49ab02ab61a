#include "backend/backend.h"

#include <cstring>

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

#ifndef TESSERA_HAVE_CUDA
std::unique_ptr<ComputeBackend> make_cuda_backend() {
  return nullptr;
}
bool cuda_available() {
  return false;
}
#endif

}  // namespace tessera
