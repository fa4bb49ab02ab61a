// The cosine similarity of two vectors in double precision, the embedding tests' measure
// (tests/engine/test_embed_st.cpp, tests/cuda/test_cuda_embed.cpp).
#pragma once

#include <cmath>
#include <vector>

namespace tessera::testing {

inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace tessera::testing
