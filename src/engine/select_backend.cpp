#include "engine/select_backend.h"

#include "core/check.h"

namespace tessera {

std::unique_ptr<ComputeBackend> select_backend(const std::string& device) {
  if (device == "cpu") return make_cpu_backend();
  if (device == "cuda") {
    auto b = make_cuda_backend();
    if (!b)
      fail_arg("device cuda: no CUDA device is available (or tessera was built without CUDA)");
    return b;
  }
  if (device == "auto" || device.empty()) {
    if (auto b = make_cuda_backend()) return b;
    return make_cpu_backend();
  }
  fail_arg("unknown device '" + device + "' (expected auto, cpu or cuda)");
}

}  // namespace tessera
