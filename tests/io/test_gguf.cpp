// The GGUF reader (io/gguf.h) on files built here (gguf_builder.h): every metadata type and
// tensor type read back, and hostile or malformed files (truncated at every byte, bad magic,
// absurd counts, offsets out of range or overlapping, unknown types) each a clean Error naming
// the file and the problem, never a crash or a huge allocation (the suite also runs under ASan:
// scripts/asan-gguf.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "core/check.h"
#include "io/gguf.h"
#include "io/gguf_builder.h"
#include "process_temp.h"

namespace tessera::test {
namespace {

using VT = GgufValueType;

std::string temp_path(const std::string& name) {
  const std::string dir = testing::process_temp_dir("tessera_gguf");
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

std::string write_temp(const std::string& bytes, const std::string& name = "t.gguf") {
  const std::string p = temp_path(name);
  write_file(p, bytes);
  return p;
}

// The reader fails on `bytes` with an invalid_model Error naming the file and containing `what`.
void expect_fail(const std::string& bytes, const std::string& what) {
  const std::string p = write_temp(bytes);
  try {
    GgufFile f(p);
    ADD_FAILURE() << "read without error; expected: " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model) << e.what();
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << what;
  }
}

uint32_t id(GgmlType t) {
  return static_cast<uint32_t>(t);
}

GgufBuilder every_value_type() {
  GgufBuilder b;
  b.scalar<uint8_t>("k.u8", VT::u8, 250)
      .scalar<int8_t>("k.i8", VT::i8, -7)
      .scalar<uint16_t>("k.u16", VT::u16, 65000)
      .scalar<int16_t>("k.i16", VT::i16, -32000)
      .scalar<uint32_t>("k.u32", VT::u32, 4000000000u)
      .scalar<int32_t>("k.i32", VT::i32, -5)
      .scalar<float>("k.f32", VT::f32, 1.5f)
      .scalar<uint8_t>("k.bool", VT::boolean, 1)
      .str("k.str", "hello")
      .scalar<uint64_t>("k.u64", VT::u64, 1ull << 62)
      .scalar<int64_t>("k.i64", VT::i64, -(1ll << 40))
      .scalar<double>("k.f64", VT::f64, 0.1)
      .str("k.empty", "")
      .array<int32_t>("k.ai32", VT::i32, {3, -4, 5})
      .array<uint64_t>("k.au64", VT::u64, {7, 1ull << 63})
      .array<float>("k.af32", VT::f32, {0.5f, -2.f})
      .array<double>("k.af64", VT::f64, {0.25})
      .array<uint8_t>("k.abool", VT::boolean, {1, 0})
      .array<uint8_t>("k.aempty", VT::u8, {})
      .strings("k.astr", {"a", "", "<s>", "\xc3\xa9"});
  return b;
}

TEST(Gguf, ReadsEveryMetadataType) {
  for (uint32_t version : {2u, 3u}) {
    GgufBuilder b = every_value_type();
    b.version = version;
    GgufFile f(write_temp(b.build()));
    EXPECT_EQ(f.version(), version);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.keys().size(), 20u);
    EXPECT_EQ(f.keys()[0], "k.u8");
    EXPECT_EQ(f.get_u8("k.u8"), 250);
    EXPECT_EQ(f.get_i8("k.i8"), -7);
    EXPECT_EQ(f.get_u16("k.u16"), 65000);
    EXPECT_EQ(f.get_i16("k.i16"), -32000);
    EXPECT_EQ(f.get_u32("k.u32"), 4000000000u);
    EXPECT_EQ(f.get_i32("k.i32"), -5);
    EXPECT_EQ(f.get_f32("k.f32"), 1.5f);
    EXPECT_TRUE(f.get_bool("k.bool"));
    EXPECT_EQ(f.get_string("k.str"), "hello");
    EXPECT_EQ(f.get_u64("k.u64"), 1ull << 62);
    EXPECT_EQ(f.get_i64("k.i64"), -(1ll << 40));
    EXPECT_EQ(f.get_f64("k.f64"), 0.1);
    EXPECT_EQ(f.get_string("k.empty"), "");
    // The lenient forms.
    EXPECT_EQ(f.get_int("k.u8"), 250);
    EXPECT_EQ(f.get_int("k.i16"), -32000);
    EXPECT_EQ(f.get_int("k.u32"), 4000000000ll);
    EXPECT_EQ(f.get_int("k.u64"), 1ll << 62);
    EXPECT_EQ(f.get_int("k.missing", 9), 9);
    EXPECT_EQ(f.get_float("k.f32"), 1.5);
    EXPECT_EQ(f.get_float("k.f64"), 0.1);
    EXPECT_EQ(f.get_float("k.missing", 2.0), 2.0);
    EXPECT_FALSE(f.get_bool("k.missing", false));
    EXPECT_EQ(f.get_string("k.missing", "d"), "d");
    // Arrays.
    EXPECT_EQ(f.array_type("k.ai32"), VT::i32);
    EXPECT_EQ(f.array_size("k.ai32"), 3u);
    EXPECT_EQ(f.get_int_array("k.ai32"), (std::vector<int64_t>{3, -4, 5}));
  }
}

TEST(Gguf, ArraysAndTypeErrors) {
  GgufFile f(write_temp(every_value_type().build()));
  EXPECT_EQ(f.get_f32_array("k.af32"), (std::vector<float>{0.5f, -2.f}));
  EXPECT_EQ(f.get_f32_array("k.af64"), (std::vector<float>{0.25f}));
  EXPECT_EQ(f.array_size("k.aempty"), 0u);
  EXPECT_TRUE(f.get_int_array("k.aempty").empty());
  const auto s = f.get_string_array("k.astr");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], "a");
  EXPECT_EQ(s[1], "");
  EXPECT_EQ(s[2], "<s>");
  EXPECT_EQ(s[3], "\xc3\xa9");
  auto expect_key_error = [&](auto fn, const std::string& what) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_key_error([&] { f.get_u32("k.i32"); }, "metadata key 'k.i32' is i32, expected u32");
  expect_key_error([&] { f.get_string("k.u8"); }, "'k.u8' is u8, expected string");
  expect_key_error([&] { f.get_u32("k.nope"); }, "metadata key 'k.nope' is missing");
  expect_key_error([&] { f.get_int("k.str"); }, "'k.str' is string, expected an integer");
  expect_key_error([&] { f.get_int("k.astr"); }, "'k.astr' is array, expected an integer");
  expect_key_error([&] { f.get_float("k.u8"); }, "'k.u8' is u8, expected f32 or f64");
  expect_key_error([&] { f.get_string_array("k.ai32"); },
                   "'k.ai32' is an array of i32, expected strings");
  expect_key_error([&] { f.get_int_array("k.af32"); }, "'k.af32' is an array of f32");
  expect_key_error([&] { f.get_int_array("k.abool"); }, "'k.abool' is an array of bool");
  expect_key_error([&] { f.get_int_array("k.au64"); }, "element 1 is larger than an int64");
  expect_key_error([&] { f.array_size("k.u8"); }, "'k.u8' is u8, expected array");
  expect_key_error([&] { f.get_u32("k.ai32"); }, "is an array of i32, expected u32");
}

// One tensor of each ggml type tessera decodes, and of types it only knows the size of.
TEST(Gguf, ReadsTensorInfosOfEveryType) {
  for (uint32_t al : {32u, 64u, 1u}) {
    GgufBuilder b;
    if (al != 32) b.align(al);
    const uint32_t types[] = {0, 1, 2, 3, 6, 7, 8, 12, 13, 14, 30, 10, 11, 20, 23, 24, 28, 39};
    for (uint32_t t : types) {
      const GgmlTypeInfo* i = ggml_type_info(t);
      ASSERT_NE(i, nullptr) << t;
      // ne = {row length, rows, 2}: rows of 2 blocks.
      std::string data(static_cast<size_t>(2 * 3 * 2 * i->block_bytes), '\0');
      for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<char>(k * 7 + t);
      b.tensor(std::string("t.") + i->name, t, {2 * i->block, 3, 2}, data);
    }
    b.tensor("t.scalar", 0, {}).tensor("t.empty", 0, {0, 4});
    const std::string bytes = b.build();
    GgufFile f(write_temp(bytes));
    EXPECT_EQ(f.alignment(), al);
    EXPECT_EQ(f.data_offset() % al, 0u);
    ASSERT_EQ(f.tensors().size(), std::size(types) + 2);
    for (size_t k = 0; k < std::size(types); ++k) {
      const GgufTensor& t = f.tensors()[k];
      const GgmlTypeInfo* i = ggml_type_info(types[k]);
      EXPECT_EQ(t.name, std::string("t.") + i->name);
      EXPECT_EQ(t.type_id, types[k]);
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2 * i->block, 3, 2}));
      EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3, 2 * i->block}));
      EXPECT_EQ(t.row_length(), 2 * i->block);
      EXPECT_EQ(t.rows(), 6);
      EXPECT_EQ(t.nbytes, static_cast<size_t>(12 * i->block_bytes));
      EXPECT_EQ(t.offset % al, 0u);
      const auto* p = static_cast<const char*>(t.data);
      EXPECT_EQ(std::string(p, t.nbytes), b.tensors[k].data) << t.name;
      EXPECT_EQ(f.find_tensor(t.name), &t);
    }
    EXPECT_EQ(f.find_tensor("t.scalar")->numel(), 1);
    EXPECT_EQ(f.find_tensor("t.empty")->nbytes, 0u);
    EXPECT_EQ(f.find_tensor("t.nope"), nullptr);
  }
  EXPECT_EQ(ggml_type_name(14), "Q6_K");
  EXPECT_EQ(ggml_type_name(4), "type 4");
}

TEST(Gguf, EmptyFileHeaderOnly) {
  GgufFile f(write_temp(GgufBuilder{}.build()));
  EXPECT_TRUE(f.keys().empty());
  EXPECT_TRUE(f.tensors().empty());
}

// A small file with metadata of every kind and two tensors, cut at every byte: each prefix is
// a clean error (never a crash, an out-of-bounds read or a huge allocation).
TEST(Gguf, TruncatedAtEveryByte) {
  GgufBuilder b = every_value_type();
  b.align(16).tensor("a", id(GgmlType::q4_0), {64, 2}).tensor("b", id(GgmlType::f32), {3});
  const std::string bytes = b.build();
  GgufFile whole(write_temp(bytes));  // the whole file reads
  EXPECT_EQ(whole.tensors().size(), 2u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string p = write_temp(bytes.substr(0, n));
    try {
      GgufFile f(p);
      ADD_FAILURE() << "a prefix of " << n << " bytes read without error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_model) << e.what();
      const std::string m = e.what();
      EXPECT_TRUE(m.find("truncated") != std::string::npos ||
                  m.find("runs past the end") != std::string::npos)
          << n << ": " << m;
    }
  }
}

// Random byte corruptions of a valid file: each either reads or fails with an Error (under
// scripts/asan-gguf.sh: without reading outside the mapping).
TEST(Gguf, CorruptedBytesNeverCrash) {
  GgufBuilder b = every_value_type();
  b.tensor("a", id(GgmlType::q4_k), {256, 2}).tensor("b", id(GgmlType::f16), {8, 3});
  const std::string bytes = b.build();
  uint64_t rng = 0x2545f4914f6cdd1dull;
  auto next = [&] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  int read = 0, failed = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string m = bytes;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int j = 0; j < flips; ++j) {
      // Mostly the header (where the structure is), sometimes anywhere.
      const size_t limit = next() % 4 ? std::min<size_t>(m.size(), 700) : m.size();
      m[next() % limit] = static_cast<char>(next() % 8 ? next() : (next() % 2 ? 0xff : 0));
    }
    const std::string p = write_temp(m);
    try {
      GgufFile f(p);
      for (const auto& k : f.keys()) {
        const GgufValue& v = f.get(k);
        if (v.type == VT::array && v.elem_type == VT::string) f.get_string_array(k);
      }
      ++read;
    } catch (const Error& e) {
      ++failed;
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(read + failed, 0);
}

TEST(Gguf, BadHeaders) {
  std::string bytes = GgufBuilder{}.build();
  bytes[0] = 'X';
  expect_fail(bytes, "not a GGUF file (bad magic");
  expect_fail("GGU", "truncated GGUF file");
  for (uint32_t v : {0u, 1u, 4u}) {
    GgufBuilder b;
    b.version = v;
    expect_fail(b.build(), "unsupported GGUF version " + std::to_string(v));
  }
  GgufBuilder be;
  be.version = 0x03000000u;  // version 3 written big-endian
  expect_fail(be.build(), "big-endian");
}

// Counts a hostile header claims, bounded by the bytes left before anything is allocated.
TEST(Gguf, AbsurdCounts) {
  auto header = [](uint64_t n_tensors, uint64_t n_kv) {
    std::string s = "GGUF";
    put<uint32_t>(s, 3);
    put<uint64_t>(s, n_tensors);
    put<uint64_t>(s, n_kv);
    return s;
  };
  expect_fail(header(0, 1ull << 60), "claims 1152921504606846976 metadata entries");
  expect_fail(header(1ull << 60, 0), "claims 1152921504606846976 tensors");
  expect_fail(header(0, ~0ull), "metadata entries");
  // A key length of 2^60.
  std::string s = header(0, 1);
  put<uint64_t>(s, 1ull << 60);
  s += std::string(16, 'k');
  expect_fail(s, "metadata entry 0's key");
  // 2^60 strings in an array, 2^61 u64s (whose byte count overflows), a 2^60-byte string value.
  GgufBuilder b;
  std::string p;
  put<uint32_t>(p, static_cast<uint32_t>(VT::string));
  put<uint64_t>(p, 1ull << 60);
  b.raw("k.strs", VT::array, p + std::string(32, '\0'));
  expect_fail(b.build(), "'k.strs' (1152921504606846976 elements) claims 1152921504606846976");
  GgufBuilder b2;
  p.clear();
  put<uint32_t>(p, static_cast<uint32_t>(VT::u64));
  put<uint64_t>(p, 1ull << 61);
  b2.raw("k.u64s", VT::array, p + std::string(32, '\0'));
  expect_fail(b2.build(), "truncated GGUF file: metadata key 'k.u64s'");
  GgufBuilder b3;
  p.clear();
  put<uint64_t>(p, 1ull << 60);
  b3.raw("k.s", VT::string, p + "abc");
  expect_fail(b3.build(), "'k.s''s string value");
}

TEST(Gguf, BadMetadata) {
  expect_fail(GgufBuilder{}.raw("k.x", static_cast<VT>(13), "").build(),
              "metadata key 'k.x' has unknown value type 13");
  std::string p;
  put<uint32_t>(p, static_cast<uint32_t>(VT::array));
  put<uint64_t>(p, 0);
  expect_fail(GgufBuilder{}.raw("k.nested", VT::array, p).build(), "array of arrays");
  p.clear();
  put<uint32_t>(p, 77);
  put<uint64_t>(p, 0);
  expect_fail(GgufBuilder{}.raw("k.a", VT::array, p).build(), "array of unknown value type 77");
  expect_fail(GgufBuilder{}.scalar<uint8_t>("k.b", VT::boolean, 2).build(), "bool byte 2");
  expect_fail(GgufBuilder{}.array<uint8_t>("k.ab", VT::boolean, {0, 1, 5}).build(), "bool byte 5");
  expect_fail(GgufBuilder{}.str("k.d", "x").str("k.d", "y").build(),
              "duplicate metadata key 'k.d'");
  expect_fail(GgufBuilder{}.scalar<uint64_t>("general.alignment", VT::u64, 32).build(),
              "'general.alignment' is u64, expected u32");
  for (uint32_t a : {0u, 48u})
    expect_fail(GgufBuilder{}.scalar<uint32_t>("general.alignment", VT::u32, a).build(),
                "'general.alignment' " + std::to_string(a) + " is not a power of two");
}

TEST(Gguf, BadTensorInfos) {
  const uint32_t f32 = id(GgmlType::f32), q4_0 = id(GgmlType::q4_0);
  expect_fail(GgufBuilder{}.tensor("t", 4, {32}, std::string(18, '\0')).build(),
              "tensor 't' has unknown ggml type id 4");
  expect_fail(GgufBuilder{}.tensor("t", 99, {32}, std::string(18, '\0')).build(),
              "unknown ggml type id 99");
  expect_fail(GgufBuilder{}.tensor("t", q4_0, {48, 2}, std::string(54, '\0')).build(),
              "of type Q4_0 has rows of 48 elements, not a multiple of its block size 32");
  expect_fail(GgufBuilder{}.tensor("t", f32, {1, 1, 1, 1, 1}, std::string(4, '\0')).build(),
              "has 5 dimensions");
  expect_fail(GgufBuilder{}.tensor("t", f32, {-1, 2}, std::string(4, '\0')).build(),
              "negative dimension -1");
  expect_fail(GgufBuilder{}.tensor("t", f32, {1ll << 40, 1ll << 40}, std::string(4, '\0')).build(),
              "more elements than an int64 holds");
  expect_fail(GgufBuilder{}.tensor("t", f32, {1ll << 61}, std::string(4, '\0')).build(),
              "is larger than the file");
  expect_fail(GgufBuilder{}.tensor("t", f32, {4}).tensor("t", f32, {4}).build(),
              "duplicate tensor 't'");
  expect_fail(GgufBuilder{}.tensor("t", f32, {4}, {}, 8).build(),
              "tensor 't' has data offset 8, not a multiple of the alignment 32");
  expect_fail(GgufBuilder{}.tensor("a", f32, {4}).tensor("t", f32, {4}, {}, 1ull << 40).build(),
              "tensor 't' (F32 [4], 16 bytes at data offset 1099511627776) runs past the end");
  expect_fail(GgufBuilder{}.tensor("a", f32, {16}).tensor("b", f32, {16}, {}, 32).build(),
              "tensors 'a' and 'b' overlap");
  // Offsets near 2^64 must not wrap past the range check.
  expect_fail(GgufBuilder{}.tensor("t", f32, {8}, {}, ~0ull - 31).build(), "runs past the end");
}

}  // namespace
}  // namespace tessera::test
