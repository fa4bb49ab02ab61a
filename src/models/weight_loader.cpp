#include "models/weight_loader.h"

#include "core/check.h"

namespace tessera {

const TensorInfo& WeightLoader::take_checked(const std::string& name,
                                             const std::vector<int64_t>& shape) {
  const TensorInfo& t = dir_.take(name);
  if (t.shape != shape) {
    std::string want = "[";
    for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
    want += "]";
    fail_model(t.file + ": tensor '" + t.name + "' has shape " + t.shape_str() + " but " +
               dir_.config_path() + " implies " + want);
  }
  params_ += t.numel();
  done_ += t.nbytes;
  if (progress_) progress_(done_, total_);
  return t;
}

std::unique_ptr<Weight> WeightLoader::matrix(const std::vector<std::string>& names,
                                             const std::vector<int64_t>& rows, int64_t cols) {
  std::vector<const TensorInfo*> parts;
  for (size_t i = 0; i < names.size(); ++i)
    parts.push_back(&take_checked(names[i], {rows[i], cols}));
  return backend_.upload_weight(parts, dtype_, names[0]);
}

DeviceArray WeightLoader::vector(const std::string& name, int64_t n, float add) {
  const TensorInfo& t = take_checked(name, {n});
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float x = t.dtype == DType::f32    ? static_cast<const float*>(t.data)[i]
              : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[i])
                                       : f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    v[i] = add + x;
  }
  return backend_.upload_f32(v, "norm/bias vector");
}

DeviceArray WeightLoader::vectors(const std::vector<std::string>& names,
                                  const std::vector<int64_t>& n) {
  std::vector<float> all;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorInfo& t = take_checked(names[i], {n[i]});
    for (int64_t j = 0; j < n[i]; ++j)
      all.push_back(t.dtype == DType::f32    ? static_cast<const float*>(t.data)[j]
                    : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[j])
                                             : f16_to_f32(static_cast<const uint16_t*>(t.data)[j]));
  }
  return backend_.upload_f32(all, "bias vector");
}

}  // namespace tessera
