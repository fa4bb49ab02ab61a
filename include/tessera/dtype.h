// Element types (public: ModelInfo reports them).
#pragma once

#include <cstdint>

namespace tessera {

// u32: MLX's packed quantized weights (words of several small integers).
enum class DType : uint8_t { f32, bf16, f16, i32, u32 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::i32:
      return "i32";
    case DType::u32:
      return "u32";
  }
  return "?";
}

}  // namespace tessera
