// tokenizer_from_gguf on small hand-made files: the SentencePiece merge order from scores, BOS /
// EOS and the pre-tokenizer names; and malformed or hostile metadata, which must give a
// tessera::Error naming the file and the key, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "io/gguf.h"
#include "io/gguf_builder.h"
#include "process_temp.h"
#include "tessera/error.h"
#include "tokenizer/gguf_tokenizer.h"

namespace tessera::test {
namespace {

using V = GgufValueType;

std::string temp_path(const std::string& name) {
  std::string dir = testing::process_temp_dir("tessera_gguf_tok_err");
  std::filesystem::create_directories(dir);
  return dir + "/" + name + ".gguf";
}

std::unique_ptr<Tokenizer> load(const GgufBuilder& b, const std::string& name = "t",
                                GgufSpecialTokens* s = nullptr) {
  std::string path = temp_path(name);
  write_file(path, b.build());
  GgufFile f(path);
  return tokenizer_from_gguf(f, s);
}

template <class F>
void expect_error(F&& f, ErrorKind kind, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one mentioning \"" << needles[0] << "\")";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

void expect_model_error(const GgufBuilder& b, const std::string& key, const std::string& why = "") {
  std::vector<std::string> needles = {temp_path("bad"), key};
  if (!why.empty()) needles.push_back(why);
  expect_error([&] { load(b, "bad"); }, ErrorKind::invalid_model, needles);
}

// A SentencePiece vocabulary where the scores decide: "abc" is a + bc (bc scores higher than
// ab), and "▁abc" is ▁a + bc.
struct Spm {
  std::vector<std::string> tokens = {"<unk>",   "<s>", "</s>", "\u2581", "a",      "b",    "c",
                                     "\u2581a", "ab",  "bc",   "bcd",    "<0x41>", "<ctl>"};
  std::vector<float> scores = {0, 0, 0, -1, -2, -3, -4, -5, -10, -6, -7, 0, 0};
  std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 3};
  GgufBuilder build(bool with_scores = true, bool with_types = true) const {
    GgufBuilder b;
    b.str("general.architecture", "llama");
    b.str("tokenizer.ggml.model", "llama");
    b.strings("tokenizer.ggml.tokens", tokens);
    if (with_scores) b.array<float>("tokenizer.ggml.scores", V::f32, scores);
    if (with_types) b.array<int32_t>("tokenizer.ggml.token_type", V::i32, types);
    b.scalar<uint32_t>("tokenizer.ggml.bos_token_id", V::u32, 1);
    b.scalar<uint32_t>("tokenizer.ggml.eos_token_id", V::u32, 2);
    b.str("tokenizer.chat_template", "{{ messages }}");
    return b;
  }
};

// A byte-level BPE vocabulary ("Ġ" is the space's byte-level character).
struct Bpe {
  std::vector<std::string> tokens = {"a",        "b",       "\u0120",     "ab",    "\u0120a",
                                     "\u0120ab", "<|bos|>", "<|eot_id|>", "<tool>"};
  std::vector<int32_t> types = {1, 1, 1, 1, 1, 1, 3, 3, 4};
  std::vector<std::string> merges = {"\u0120 a", "a b", "\u0120a b"};
  std::string pre = "gpt-2";
  GgufBuilder build(bool with_merges = true) const {
    GgufBuilder b;
    b.str("general.architecture", "llama");
    b.str("tokenizer.ggml.model", "gpt2");
    b.str("tokenizer.ggml.pre", pre);
    b.strings("tokenizer.ggml.tokens", tokens);
    b.array<int32_t>("tokenizer.ggml.token_type", V::i32, types);
    if (with_merges) b.strings("tokenizer.ggml.merges", merges);
    b.scalar<uint32_t>("tokenizer.ggml.bos_token_id", V::u32, 6);
    return b;
  }
};

TEST(GgufTokenizerSpm, MergesFollowTheScoresAndSpacesArePrefixed) {
  GgufSpecialTokens s;
  auto t = load(Spm{}.build(), "spm", &s);
  // "abc" -> "▁abc": ▁|a (score -5) first, then b|c (-6); ▁a|b makes no token.
  EXPECT_EQ(t->encode("abc", false), (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(t->encode("abc", true), (std::vector<int32_t>{1, 7, 9}));  // add_bos: SPM default
  EXPECT_EQ(t->encode("bc", false), (std::vector<int32_t>{3, 9}));
  // Byte fallback: "A" has a byte token, "Z" none (-> <unk>).
  EXPECT_EQ(t->encode("A", false), (std::vector<int32_t>{3, 11}));
  // The space prefix goes on every piece after a special token (llama.cpp's is_prev_special).
  EXPECT_EQ(t->encode("<ctl>a", false), (std::vector<int32_t>{12, 7}));
  EXPECT_EQ(t->decode(std::vector<int32_t>{1, 7, 9, 12, 11}, true), "abcA");
  EXPECT_EQ(t->decode(std::vector<int32_t>{1, 7, 9}, false), "<s> abc");
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_token(), "</s>");
  EXPECT_EQ(t->chat_template(), "{{ messages }}");
  EXPECT_TRUE(t->is_special(12));
  EXPECT_TRUE(s.add_bos);
  EXPECT_FALSE(s.add_eos);
  EXPECT_EQ(s.unk, 0);
}

TEST(GgufTokenizerSpm, AddSpacePrefixOffAndExplicitMerges) {
  Spm spm;
  GgufBuilder b = spm.build();
  b.scalar<uint8_t>("tokenizer.ggml.add_space_prefix", V::boolean, 0);
  b.scalar<uint8_t>("tokenizer.ggml.add_eos_token", V::boolean, 1);
  auto t = load(b, "spm_noprefix");
  // a|b scores -10, b|c -6: [a, bc]; merged in the other order it would be [ab, c].
  EXPECT_EQ(t->encode("abc", true), (std::vector<int32_t>{1, 4, 9, 2}));
  // tokenizer.ggml.merges, when present, wins over the scores.
  b.strings("tokenizer.ggml.merges", {"a b"});
  auto m = load(b, "spm_merges");
  EXPECT_EQ(m->encode("abc", false), (std::vector<int32_t>{8, 6}));
}

TEST(GgufTokenizerBpe, ByteLevelMergesTypesAndEog) {
  GgufSpecialTokens s;
  auto t = load(Bpe{}.build(), "bpe", &s);
  EXPECT_EQ(t->encode("ab ab", false), (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(t->encode("ab<tool><|bos|>", true), (std::vector<int32_t>{3, 8, 6}));  // no add_bos
  EXPECT_EQ(t->decode(std::vector<int32_t>{3, 8, 6, 5}, true), "ab<tool> ab");
  EXPECT_FALSE(s.add_bos);
  EXPECT_EQ(s.eot, 7);
  EXPECT_EQ(s.eog, (std::vector<int32_t>{7}));
  EXPECT_EQ(t->bos_token(), "<|bos|>");
  EXPECT_FALSE(t->eos_id().has_value());
  // llama-bpe adds BOS by default (llama-vocab.cpp) and ignores merges for whole-token words.
  Bpe l;
  l.pre = "llama-bpe";
  GgufSpecialTokens ls;
  auto lt = load(l.build(), "bpe_llama", &ls);
  EXPECT_TRUE(ls.add_bos);
  EXPECT_EQ(lt->encode("ab ab", true), (std::vector<int32_t>{6, 3, 5}));
}

TEST(GgufTokenizerErrors, UnknownModelAndPreTokenizerAreNamed) {
  GgufBuilder b = Bpe{}.build();
  b.kvs[1].payload.clear();
  put_str(b.kvs[1].payload, "bert");
  expect_error([&] { load(b, "bad"); }, ErrorKind::unsupported, {temp_path("bad"), "\"bert\""});
  Bpe p;
  p.pre = "no-such-pre";
  expect_error([&] { load(p.build(), "bad"); }, ErrorKind::unsupported,
               {temp_path("bad"), "tokenizer.ggml.pre", "\"no-such-pre\""});
  GgufBuilder none;
  none.str("general.architecture", "llama");
  expect_model_error(none, "tokenizer.ggml.model");
}

TEST(GgufTokenizerErrors, MissingAndMismatchedArrays) {
  Spm spm;
  GgufBuilder no_tokens;
  no_tokens.str("tokenizer.ggml.model", "llama");
  expect_model_error(no_tokens, "tokenizer.ggml.tokens");
  expect_model_error(spm.build(false), "tokenizer.ggml.scores", "missing");
  expect_model_error(Bpe{}.build(false), "tokenizer.ggml.merges", "missing");

  Spm short_scores = spm;
  short_scores.scores.pop_back();
  expect_model_error(short_scores.build(), "tokenizer.ggml.scores", "12 entries for 13 tokens");
  Spm long_types = spm;
  long_types.types.push_back(1);
  expect_model_error(long_types.build(), "tokenizer.ggml.token_type", "14 entries");
  Spm bad_type = spm;
  bad_type.types[4] = 9;
  expect_model_error(bad_type.build(), "tokenizer.ggml.token_type", "entry 4 is 9");
  Spm nan = spm;
  nan.scores[5] = std::numeric_limits<float>::quiet_NaN();
  expect_model_error(nan.build(), "tokenizer.ggml.scores", "entry 5 is NaN");

  GgufBuilder wrong_type;
  wrong_type.str("tokenizer.ggml.model", "llama");
  wrong_type.array<uint32_t>("tokenizer.ggml.tokens", V::u32, {1, 2});
  expect_model_error(wrong_type, "tokenizer.ggml.tokens");
  GgufBuilder empty;
  empty.str("tokenizer.ggml.model", "llama");
  empty.strings("tokenizer.ggml.tokens", {});
  expect_model_error(empty, "tokenizer.ggml.tokens", "empty");
}

TEST(GgufTokenizerErrors, BadTokensIdsAndMerges) {
  Spm dup;
  dup.tokens[5] = "a";
  expect_model_error(dup.build(), "tokenizer.ggml.tokens", "same string");
  Spm utf8;
  utf8.tokens[6] = "\xC3";
  expect_model_error(utf8.build(), "tokenizer.ggml.tokens", "token 6 is not valid UTF-8");

  GgufBuilder bos = Spm{}.build();
  bos.scalar<uint32_t>("tokenizer.ggml.padding_token_id", V::u32, 13);
  expect_model_error(bos, "tokenizer.ggml.padding_token_id", "outside the 13 tokens");
  GgufBuilder neg = Spm{}.build();
  neg.scalar<int32_t>("tokenizer.ggml.unknown_token_id", V::i32, -1);
  expect_model_error(neg, "tokenizer.ggml.unknown_token_id", "is -1");
  GgufBuilder str_id = Spm{}.build();
  str_id.str("tokenizer.ggml.eot_token_id", "7");
  expect_model_error(str_id, "tokenizer.ggml.eot_token_id");

  for (auto [merge, why] : std::vector<std::pair<std::string, std::string>>{
           {"ab", "is not \"left right\""},
           {"a ", "is not \"left right\""},
           {"a z", "names a token that is not in"},
           {"\u0120ab a", "makes a token that is not in"}}) {
    Bpe b;
    b.merges.push_back(merge);
    expect_model_error(b.build(), "tokenizer.ggml.merges", "entry 3");
    expect_model_error(b.build(), "tokenizer.ggml.merges", why);
  }
  GgufBuilder no_bos = Bpe{}.build();
  no_bos.kvs.pop_back();  // bos_token_id
  no_bos.scalar<uint8_t>("tokenizer.ggml.add_bos_token", V::boolean, 1);
  expect_model_error(no_bos, "tokenizer.ggml.add_bos_token", "no BOS");
}

TEST(GgufTokenizerErrors, AbsurdlyManyMergeCandidatesAreRefused) {
  // a, aa, ..., a^1600: every split of every token is a merge, 1.28M of them for 1,600 tokens.
  GgufBuilder b;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  for (int k = 1; k <= 1600; ++k) {
    tokens.push_back(std::string(k, 'a'));
    scores.push_back(-static_cast<float>(k));
  }
  b.str("tokenizer.ggml.model", "llama");
  b.strings("tokenizer.ggml.tokens", tokens);
  b.array<float>("tokenizer.ggml.scores", V::f32, scores);
  expect_model_error(b, "tokenizer.ggml.scores", "pairs of tokens join");
}

// Random corruptions of a valid file: the reader or the tokenizer rejects it with an Error, or
// it loads (a changed score or token text) and encodes; never a crash.
TEST(GgufTokenizerErrors, RandomCorruptionsNeverCrash) {
  std::string good = Spm{}.build().build();
  std::mt19937 rng(7);
  std::string path = temp_path("fuzz");
  int loaded = 0, rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bytes = good;
    for (int k = 0; k < 1 + i % 3; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    write_file(path, bytes);
    try {
      GgufFile f(path);
      auto t = tokenizer_from_gguf(f);
      t->encode("abc a b", true);
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace tessera::test
