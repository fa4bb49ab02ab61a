// GGUF tensor types against llama.cpp's own gguf-py (tests/fixtures/gguf/types.gguf, made by
// scripts/fixtures/make_gguf_fixtures.py): the file, written by GGUFWriter, reads back with every
// metadata value; for each type, tessera's reference dequantization (quant/gguf_blocks.h) gives
// exactly gguf-py's values, the affine conversion's scale * q + bias gives them too (with and
// without a fused multiply-add), and the CPU's quantized linear on the converted weight matches
// the double-precision product of those values on every ISA and both paths (GEMV, panels).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu_test_util.h"
#include "core/check.h"
#include "io/gguf.h"
#include "quant/affine.h"
#include "quant/gguf_blocks.h"

namespace tessera::cpu::test {
namespace {

const std::string kFixture = std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/gguf/types.gguf";

const GgmlType kTypes[] = {GgmlType::f32,  GgmlType::f16,  GgmlType::bf16, GgmlType::q8_0,
                           GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1,
                           GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k};

std::string name_of(GgmlType t) {
  return ggml_type_name(static_cast<uint32_t>(t));
}

TEST(GgufFixture, MetadataFromGgufPy) {
  GgufFile f(kFixture);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture"), "tessera-fixture");
  EXPECT_EQ(f.get_u8("fixture.u8"), 200);
  EXPECT_EQ(f.get_i8("fixture.i8"), -100);
  EXPECT_EQ(f.get_u16("fixture.u16"), 60000);
  EXPECT_EQ(f.get_i16("fixture.i16"), -30000);
  EXPECT_EQ(f.get_u32("fixture.u32"), 4000000000u);
  EXPECT_EQ(f.get_i32("fixture.i32"), -2000000000);
  EXPECT_EQ(f.get_f32("fixture.f32"), 0.15625f);
  EXPECT_TRUE(f.get_bool("fixture.bool"));
  EXPECT_EQ(f.get_string("fixture.string"), "h\xc3\xa9llo, gguf");
  EXPECT_EQ(f.get_u64("fixture.u64"), (1ull << 63) + 5);
  EXPECT_EQ(f.get_i64("fixture.i64"), -(1ll << 62));
  EXPECT_EQ(f.get_f64("fixture.f64"), -1.0 / 3.0);
  EXPECT_EQ(f.get_int_array("fixture.arr_i32"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.get_f32_array("fixture.arr_f32"), (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(f.array_type("fixture.arr_bool"), GgufValueType::boolean);
  EXPECT_EQ(f.array_size("fixture.arr_bool"), 3u);
  const auto s = f.get_string_array("fixture.arr_str");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], "a");
  EXPECT_EQ(s[1], "");
  EXPECT_EQ(s[2],
            "\xc3\xbcn\xc3\xaf"
            "code");
  EXPECT_EQ(s[3], "<|eot|>");
  EXPECT_EQ(f.tensors().size(), 2 * std::size(kTypes));
}

struct Loaded {
  int64_t rows, cols;
  const GgufTensor* w;
  std::vector<float> ref;  // gguf-py's dequantization
};

Loaded load(const GgufFile& f, GgmlType t) {
  Loaded l;
  l.rows = f.get_u32("fixture.rows");
  l.cols = f.get_u32("fixture.cols");
  l.w = f.find_tensor("w." + name_of(t));
  const GgufTensor* r = f.find_tensor("ref." + name_of(t));
  EXPECT_TRUE(l.w && r) << name_of(t);
  if (!l.w || !r) return l;
  EXPECT_EQ(l.w->type_id, static_cast<uint32_t>(t));
  EXPECT_EQ(l.w->ne, (std::vector<int64_t>{l.cols, l.rows}));  // GGUF: fastest first
  EXPECT_EQ(r->type_id, 0u);
  l.ref.resize(static_cast<size_t>(l.rows * l.cols));
  std::memcpy(l.ref.data(), r->data, l.ref.size() * 4);
  return l;
}

const uint8_t* row_ptr(const Loaded& l, GgmlType t, int64_t n) {
  return static_cast<const uint8_t*>(l.w->data) + n * quant::gguf_row_bytes(t, l.cols);
}

TEST(GgufFixture, DequantizationEqualsGgufPy) {
  GgufFile f(kFixture);
  for (GgmlType t : kTypes) {
    const Loaded l = load(f, t);
    ASSERT_TRUE(quant::gguf_type_supported(static_cast<uint32_t>(t)));
    EXPECT_EQ(quant::gguf_row_bytes(t, l.cols) * l.rows, static_cast<int64_t>(l.w->nbytes));
    std::vector<float> row(static_cast<size_t>(l.cols));
    int bad = 0;
    for (int64_t n = 0; n < l.rows; ++n) {
      quant::gguf_dequantize_row(t, row_ptr(l, t, n), l.cols, row.data());
      for (int64_t k = 0; k < l.cols; ++k) {
        const float want = l.ref[n * l.cols + k];
        // Bit for bit, except that d * 0 may have either sign.
        const bool same = std::memcmp(&row[k], &want, 4) == 0 || (row[k] == 0 && want == 0);
        if (!same && ++bad <= 5)
          ADD_FAILURE() << name_of(t) << " row " << n << " col " << k << ": " << row[k]
                        << " != " << want;
      }
    }
    EXPECT_EQ(bad, 0) << name_of(t);
  }
}

TEST(GgufFixture, AffineFormEqualsGgufPy) {
  GgufFile f(kFixture);
  for (GgmlType t : kTypes) {
    const quant::GgufAffineFormat fmt = quant::gguf_affine_format(t);
    if (fmt.bits == 0) continue;  // F32, F16, BF16
    const Loaded l = load(f, t);
    const int64_t groups = l.cols / fmt.group_size;
    std::vector<uint8_t> q(static_cast<size_t>(l.cols));
    std::vector<float> s(static_cast<size_t>(groups)), b(static_cast<size_t>(groups));
    int bad = 0;
    for (int64_t n = 0; n < l.rows; ++n) {
      quant::gguf_affine_row(t, row_ptr(l, t, n), l.cols, q.data(), s.data(), b.data());
      for (int64_t k = 0; k < l.cols; ++k) {
        ASSERT_LT(q[k], 1u << fmt.bits) << name_of(t);
        const float want = l.ref[n * l.cols + k];
        const float sc = s[k / fmt.group_size], bi = b[k / fmt.group_size];
        volatile float prod = sc * static_cast<float>(q[k]);  // volatile: no contraction
        const float plain = prod + bi, fused = std::fma(sc, static_cast<float>(q[k]), bi);
        if ((plain != want || fused != want) && ++bad <= 5)
          ADD_FAILURE() << name_of(t) << " row " << n << " col " << k << ": " << plain << " / "
                        << fused << " != " << want;
      }
    }
    EXPECT_EQ(bad, 0) << name_of(t);
  }
}

// The converted weight through the CPU's packed kernels, against the double-precision product
// of gguf-py's values (tolerance as tests/backend/test_cpu_quant.cpp's).
TEST(GgufFixture, CpuLinearOnConvertedWeights) {
  GgufFile f(kFixture);
  auto be = make_cpu_backend();
  for (GgmlType t : kTypes) {
    const quant::GgufAffineFormat fmt = quant::gguf_affine_format(t);
    if (fmt.bits == 0) continue;
    ASSERT_TRUE(quant::valid_kernel_group_size(fmt.group_size));
    const Loaded l = load(f, t);
    const int64_t N = l.rows, K = l.cols, groups = K / fmt.group_size;
    const int64_t words = quant::words_per_row(K, fmt.bits);
    std::vector<uint32_t> packed(static_cast<size_t>(N * words));
    std::vector<float> s(static_cast<size_t>(N * groups)), b(s.size());
    std::vector<uint8_t> q(static_cast<size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      quant::gguf_affine_row(t, row_ptr(l, t, n), K, q.data(), s.data() + n * groups,
                             b.data() + n * groups);
      quant::pack_row(q.data(), K, fmt.bits, packed.data() + n * words);
    }
    const HostQuantTensor h{
        packed.data(),    s.data(), b.data(), DType::f32, N, K, {fmt.bits, fmt.group_size},
        "w." + name_of(t)};
    const HostQuantTensor* parts[] = {&h};
    auto w = be->upload_quantized(parts, DType::f32, h.name);
    for (int64_t M : {1, 3, 8, 20}) {
      const auto x = random_floats(static_cast<size_t>(M * K), M * 7 + 1);
      std::vector<float> ref(static_cast<size_t>(M * N)), out(ref.size());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += double{x[m * K + k]} * l.ref[n * K + k];
          ref[m * N + n] = static_cast<float>(acc);
        }
      auto isas = simd_isas();
      isas.push_back(Isa::scalar);
      for (Isa isa : isas) {
        IsaScope scope(isa);
        poison(out);
        be->linear({const_cast<float*>(x.data()), DType::f32, M, K, K}, *w, nullptr,
                   {out.data(), DType::f32, M, N, N});
        expect_rows_near(ref, out, M, N, N, 2e-5,
                         name_of(t) + " " + isa_name(isa) + " M=" + std::to_string(M));
      }
    }
  }
}

TEST(GgufFixture, UnsupportedTypesAreNamed) {
  EXPECT_FALSE(quant::gguf_type_supported(10));  // Q2_K
  EXPECT_FALSE(quant::gguf_type_supported(4));   // removed Q4_2
  EXPECT_FALSE(quant::gguf_type_supported(999));
  float out[256];
  const uint8_t zeros[256] = {};
  try {
    quant::gguf_dequantize_row(static_cast<GgmlType>(10), zeros, 256, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("ggml type Q2_K is not supported"), std::string::npos)
        << e.what();
  }
  uint8_t q[32];
  float s, b;
  EXPECT_THROW(quant::gguf_affine_row(GgmlType::f16, zeros, 32, q, &s, &b), Error);
}

}  // namespace
}  // namespace tessera::cpu::test
