// Weights by their checkpoint names: one tensor (or a stack of them) with the shape the config
// implies.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/model.h"

namespace tessera {

// Loads weights by canonical name with the shape the config implies, and names the tensor and
// the config key when they disagree.
class WeightLoader {
 public:
  WeightLoader(ModelDir& dir, ComputeBackend& backend, DType weight_dtype,
               std::function<void(size_t, size_t)> progress = {})
      : dir_(dir),
        backend_(backend),
        dtype_(weight_dtype),
        progress_(std::move(progress)),
        total_(dir.total_bytes()) {}

  // Stacks the named [rows_i, cols] matrices (e.g. q, k, v) into one weight.
  std::unique_ptr<Weight> matrix(const std::vector<std::string>& names,
                                 const std::vector<int64_t>& rows, int64_t cols);
  // A [n] vector as f32, plus `add` (Gemma folds its (1 + w) here).
  DeviceArray vector(const std::string& name, int64_t n, float add = 0.0f);
  // Several [n_i] vectors concatenated (q, k, v biases).
  DeviceArray vectors(const std::vector<std::string>& names, const std::vector<int64_t>& n);
  bool has(const std::string& name) const { return dir_.has(name); }

  int64_t parameters() const { return params_; }

 private:
  const TensorInfo& take_checked(const std::string& name, const std::vector<int64_t>& shape);
  ModelDir& dir_;
  ComputeBackend& backend_;
  DType dtype_;
  std::function<void(size_t, size_t)> progress_;
  size_t total_ = 0, done_ = 0;
  int64_t params_ = 0;
};

}  // namespace tessera
