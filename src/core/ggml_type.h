// ggml's tensor types as GGUF files name them: the type id stored in a tensor info, its name, and
// its block geometry (elements per block, bytes per block). Shared by io/gguf (which checks tensor
// byte sizes) and quant/gguf_blocks (which decodes the blocks), so it sits below both.
// ref: llama.cpp ggml/include/ggml.h enum ggml_type; gguf-py/gguf/constants.py GGML_QUANT_SIZES.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

// The ids tessera decodes (quant/gguf_blocks.h); a file may hold any id of ggml_type_info().
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  bf16 = 30,
};

struct GgmlTypeInfo {
  const char* name;     // as llama.cpp prints it ("Q4_K")
  int64_t block;        // elements per block (1 for the plain types)
  int64_t block_bytes;  // bytes per block
};

// Every type id ggml defines that a GGUF file may hold (the removed Q4_2/Q4_3 and the
// Q4_0_4_4-style repacks, which llama.cpp no longer reads from files, are unknown); nullptr for
// an unknown id.
inline const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  constexpr int64_t K = 256;  // QK_K, the super-block of the K- and IQ-quants
  static const GgmlTypeInfo table[] = {
      {"F32", 1, 4},
      {"F16", 1, 2},
      {"Q4_0", 32, 2 + 16},
      {"Q4_1", 32, 2 + 2 + 16},
      {nullptr, 0, 0},  // 4: Q4_2, removed
      {nullptr, 0, 0},  // 5: Q4_3, removed
      {"Q5_0", 32, 2 + 4 + 16},
      {"Q5_1", 32, 2 + 2 + 4 + 16},
      {"Q8_0", 32, 2 + 32},
      {"Q8_1", 32, 4 + 4 + 32},
      {"Q2_K", K, 2 + 2 + K / 16 + K / 4},
      {"Q3_K", K, 2 + K / 4 + K / 8 + 12},
      {"Q4_K", K, 2 + 2 + K / 2 + 12},
      {"Q5_K", K, 2 + 2 + K / 2 + K / 8 + 12},
      {"Q6_K", K, 2 + K / 2 + K / 4 + K / 16},
      {"Q8_K", K, 4 + K + K / 8},
      {"IQ2_XXS", K, 2 + K / 4},
      {"IQ2_XS", K, 2 + K / 4 + K / 32},
      {"IQ3_XXS", K, 2 + K / 4 + K / 8},
      {"IQ1_S", K, 2 + K / 8 + K / 16},
      {"IQ4_NL", 32, 2 + 16},
      {"IQ3_S", K, 2 + K / 4 + K / 8 + K / 32 + 4},
      {"IQ2_S", K, 2 + K / 4 + K / 16},
      {"IQ4_XS", K, 2 + 2 + K / 2 + K / 64},
      {"I8", 1, 1},
      {"I16", 1, 2},
      {"I32", 1, 4},
      {"I64", 1, 8},
      {"F64", 1, 8},
      {"IQ1_M", K, K / 8 + K / 16 + K / 32},
      {"BF16", 1, 2},
      {nullptr, 0, 0},  // 31-33: Q4_0_4_4, Q4_0_4_8, Q4_0_8_8, no longer in files
      {nullptr, 0, 0},
      {nullptr, 0, 0},
      {"TQ1_0", K, 2 + 4 * 13},
      {"TQ2_0", K, 2 + 64},
      {nullptr, 0, 0},  // 36-38: IQ4_NL_4_4 ..., no longer in files
      {nullptr, 0, 0},
      {nullptr, 0, 0},
      {"MXFP4", 32, 1 + 16},
      {"NVFP4", 64, 4 + 32},
      {"Q1_0", 128, 2 + 16},
      {"Q2_0", 64, 2 + 16},
  };
  if (id >= sizeof(table) / sizeof(table[0]) || table[id].name == nullptr) return nullptr;
  return &table[id];
}

inline const GgmlTypeInfo* ggml_type_info(GgmlType t) {
  return ggml_type_info(static_cast<uint32_t>(t));
}

// "Q4_K" for a known id, "type 77" for another.
inline std::string ggml_type_name(uint32_t id) {
  const GgmlTypeInfo* i = ggml_type_info(id);
  return i ? std::string(i->name) : "type " + std::to_string(id);
}

}  // namespace tessera
