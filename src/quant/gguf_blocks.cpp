// ggml block decoding (gguf_blocks.h). Each type is written once, as a decoder of one block into
// unsigned q values and per-group (scale, bias); the reference dequantization then evaluates the
// expression llama.cpp's dequantize_row_* evaluates (ref: ggml/src/ggml-quants.c), from the same
// decoded fields, so that both forms come from one reading of the bit layout.
#include "quant/gguf_blocks.h"

#include <cstring>
#include <string>

#include "core/check.h"
#include "core/dtype.h"

namespace tessera::quant {
namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// One decoded block: q[e] unsigned, and per group g the factors of the reference expression.
// Symmetric types: value = d[g] * (q - offset); asymmetric: value = d[g] * q + m[g] (Q4_1,
// Q5_1: m is the stored min; K-quants: m = -(dmin * min), the reference's "- m1").
struct Block {
  uint8_t q[256];
  float d[16], m[16];
};

// The K-quants' 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes: j < 4 in the
// low 6 bits of bytes j and j + 4; j >= 4 split into a low nibble in byte j + 4 and two high bits
// taken from the top of bytes j - 4 and j. ref: ggml-quants.c get_scale_min_k4.
void scale_min_k4(const uint8_t* s, int j, int* sc, int* mn) {
  if (j < 4) {
    *sc = s[j] & 63;
    *mn = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

struct TypeDesc {
  int block;   // elements
  int bytes;   // per block
  int bits;    // of the unsigned q
  int group;   // elements per (scale, bias)
  int offset;  // symmetric: value = d * (q - offset); -1: asymmetric, d * q + m
  void (*decode)(const uint8_t* b, Block* out);
};

// Q4_0 / Q4_1: byte j holds element j (low nibble) and element j + 16 (high nibble).
void nibbles32(const uint8_t* qs, uint8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0xF;
    q[j + 16] = qs[j] >> 4;
  }
}
// Q5_0 / Q5_1: the nibbles as above, and bit e of the 32-bit qh is element e's fifth bit.
void fifth_bits32(const uint8_t* qh_bytes, uint8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int e = 0; e < 32; ++e) q[e] |= static_cast<uint8_t>(((qh >> e) & 1u) << 4);
}

void decode_q4_0(const uint8_t* b, Block* o) {  // d, qs[16]
  o->d[0] = f16_at(b);
  nibbles32(b + 2, o->q);
}
void decode_q4_1(const uint8_t* b, Block* o) {  // d, m, qs[16]
  o->d[0] = f16_at(b);
  o->m[0] = f16_at(b + 2);
  nibbles32(b + 4, o->q);
}
void decode_q5_0(const uint8_t* b, Block* o) {  // d, qh[4], qs[16]
  o->d[0] = f16_at(b);
  nibbles32(b + 6, o->q);
  fifth_bits32(b + 2, o->q);
}
void decode_q5_1(const uint8_t* b, Block* o) {  // d, m, qh[4], qs[16]
  o->d[0] = f16_at(b);
  o->m[0] = f16_at(b + 2);
  nibbles32(b + 8, o->q);
  fifth_bits32(b + 4, o->q);
}
void decode_q8_0(const uint8_t* b, Block* o) {  // d, int8 qs[32]; q = qs + 128
  o->d[0] = f16_at(b);
  for (int e = 0; e < 32; ++e) o->q[e] = static_cast<uint8_t>(static_cast<int8_t>(b[2 + e]) + 128);
}

// Q4_K / Q5_K: d, dmin, scales[12], (Q5_K: qh[32]), qs[128]. Chunk c (0..3) of 64 elements: its
// first 32 are the low nibbles of qs[32c .. 32c + 32) with sub-block 2c's scale and min, the next
// 32 the high nibbles with sub-block 2c + 1's. Q5_K's fifth bit of element 64c + l is bit 2c of
// qh[l] (of 64c + 32 + l: bit 2c + 1).
void decode_k(const uint8_t* b, Block* o, bool five) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + (five ? 48 : 16);
  for (int g = 0; g < 8; ++g) {
    int s, m;
    scale_min_k4(sc, g, &s, &m);
    o->d[g] = d * static_cast<float>(s);  // exact: 11 x 6 significant bits
    o->m[g] = -(dmin * static_cast<float>(m));
  }
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      uint8_t lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
      if (five) {
        lo |= static_cast<uint8_t>(((qh[l] >> (2 * c)) & 1) << 4);
        hi |= static_cast<uint8_t>(((qh[l] >> (2 * c + 1)) & 1) << 4);
      }
      o->q[64 * c + l] = lo;
      o->q[64 * c + 32 + l] = hi;
    }
}
void decode_q4_k(const uint8_t* b, Block* o) {
  decode_k(b, o, false);
}
void decode_q5_k(const uint8_t* b, Block* o) {
  decode_k(b, o, true);
}

// Q6_K: ql[128], qh[64], int8 scales[16], d. Half h (0, 1) of 128 elements reads ql[64h ..),
// qh[32h ..); for l < 32 the four elements 128h + l + 32i (i = 0..3) take their low nibble from
// ql[64h + l] (i = 0, 2: low, high nibble) or ql[64h + 32 + l] (i = 1, 3) and their top two bits
// from bits 2i, 2i + 1 of qh[32h + l]. Element e's scale is scales[e / 16] (the reference's
// sc[is + 2i] with is = l / 16 is exactly that).
void decode_q6_k(const uint8_t* b, Block* o) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int g = 0; g < 16; ++g) o->d[g] = d * static_cast<float>(sc[g]);  // exact: 11 x 8 bits
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t a = ql[64 * h + l], c = ql[64 * h + 32 + l], t = qh[32 * h + l];
      uint8_t* q = o->q + 128 * h + l;
      q[0] = static_cast<uint8_t>((a & 0xF) | ((t & 3) << 4));
      q[32] = static_cast<uint8_t>((c & 0xF) | (((t >> 2) & 3) << 4));
      q[64] = static_cast<uint8_t>((a >> 4) | (((t >> 4) & 3) << 4));
      q[96] = static_cast<uint8_t>((c >> 4) | (((t >> 6) & 3) << 4));
    }
}

const TypeDesc* desc(GgmlType t) {
  static const TypeDesc q4_0{32, 18, 4, 32, 8, decode_q4_0}, q4_1{32, 20, 4, 32, -1, decode_q4_1},
      q5_0{32, 22, 5, 32, 16, decode_q5_0}, q5_1{32, 24, 5, 32, -1, decode_q5_1},
      q8_0{32, 34, 8, 32, 128, decode_q8_0}, q4_k{256, 144, 4, 32, -1, decode_q4_k},
      q5_k{256, 176, 5, 32, -1, decode_q5_k}, q6_k{256, 210, 6, 16, 32, decode_q6_k};
  switch (t) {
    case GgmlType::q4_0:
      return &q4_0;
    case GgmlType::q4_1:
      return &q4_1;
    case GgmlType::q5_0:
      return &q5_0;
    case GgmlType::q5_1:
      return &q5_1;
    case GgmlType::q8_0:
      return &q8_0;
    case GgmlType::q4_k:
      return &q4_k;
    case GgmlType::q5_k:
      return &q5_k;
    case GgmlType::q6_k:
      return &q6_k;
    default:
      return nullptr;
  }
}

bool dense(GgmlType t) {
  return t == GgmlType::f32 || t == GgmlType::f16 || t == GgmlType::bf16;
}

[[noreturn]] void unsupported(GgmlType t, const char* what) {
  fail(ErrorKind::unsupported,
       "ggml type " + ggml_type_name(static_cast<uint32_t>(t)) + " is not supported" + what);
}

}  // namespace

bool gguf_type_supported(uint32_t id) {
  const auto t = static_cast<GgmlType>(id);
  return ggml_type_info(id) != nullptr && (dense(t) || desc(t) != nullptr);
}

GgufAffineFormat gguf_affine_format(GgmlType t) {
  if (dense(t)) return {};
  const TypeDesc* d = desc(t);
  if (!d) unsupported(t, "");
  return {d->bits, d->group};
}

GgufAffineStorage gguf_affine_storage(GgmlType t) {
  const TypeDesc* d = desc(t);
  if (!d) unsupported(t, "");
  GgufAffineStorage s;
  s.symmetric = d->offset >= 0;
  s.bias_per_scale = s.symmetric ? -static_cast<float>(d->offset) : 0.f;
  s.f16_scales = d->block == d->group;  // one f16 d (and m) per block
  return s;
}

int64_t gguf_row_bytes(GgmlType t, int64_t n) {
  const GgmlTypeInfo* i = ggml_type_info(t);
  TS_ASSERT(i && n % i->block == 0);
  return n / i->block * i->block_bytes;
}

void gguf_dequantize_row(GgmlType t, const void* row, int64_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(row);
  if (t == GgmlType::f32) {
    std::memcpy(out, p, static_cast<size_t>(n) * 4);
    return;
  }
  if (t == GgmlType::f16 || t == GgmlType::bf16) {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = t == GgmlType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    return;
  }
  const TypeDesc* d = desc(t);
  if (!d) unsupported(t, "");
  TS_ASSERT(n % d->block == 0);
  Block b;
  for (int64_t i = 0; i < n / d->block; ++i) {
    d->decode(p + i * d->bytes, &b);
    float* y = out + i * d->block;
    for (int e = 0; e < d->block; ++e) {
      const int g = e / d->group;
      // The reference expressions: d * (q - o) with an int (q - o); d * q + m.
      y[e] = d->offset >= 0 ? b.d[g] * static_cast<float>(b.q[e] - d->offset)
                            : b.d[g] * static_cast<float>(b.q[e]) + b.m[g];
    }
  }
}

void gguf_affine_row(GgmlType t, const void* row, int64_t n, uint8_t* q, float* scales,
                     float* biases) {
  const TypeDesc* d = desc(t);
  if (!d) unsupported(t, " as an affine quantized weight");
  TS_ASSERT(n % d->block == 0);
  const auto* p = static_cast<const uint8_t*>(row);
  const int groups = d->block / d->group;
  Block b;
  for (int64_t i = 0; i < n / d->block; ++i) {
    d->decode(p + i * d->bytes, &b);
    std::memcpy(q + i * d->block, b.q, static_cast<size_t>(d->block));
    for (int g = 0; g < groups; ++g) {
      scales[i * groups + g] = b.d[g];
      // -o * d is exact (o a power of two); m as decoded.
      biases[i * groups + g] = d->offset >= 0 ? -static_cast<float>(d->offset) * b.d[g] : b.m[g];
    }
  }
}

}  // namespace tessera::quant
