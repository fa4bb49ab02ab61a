// Random input: valid text round-trips through encode/decode, invalid bytes give an Error, and a
// damaged tokenizer.json gives an Error too (never a crash or another exception type).
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "tessera/error.h"
#include "tokenizer/mini_tokenizer.h"
#include "tokenizer/tokenizer_fixtures.h"
#include "tokenizer/utf8.h"

namespace tessera::test {
namespace {

std::string random_text(std::mt19937& rng) {
  // Code points from ranges that exercise different paths: ASCII and spaces, Latin with
  // combining marks, Hangul jamo, CJK, emoji and their joiners, controls.
  static const std::pair<char32_t, char32_t> ranges[] = {
      {0x20, 0x7E},     {0x09, 0x0D},     {0xA0, 0x17F},       {0x300, 0x36F},   {0x1100, 0x11FF},
      {0xAC00, 0xAC40}, {0x4E00, 0x4E80}, {0x1F300, 0x1F64F},  {0x200B, 0x200D}, {0x0, 0x1F},
      {0xFE00, 0xFE0F}, {0x2581, 0x2581}, {0x10000, 0x10FFFF},
  };
  std::string s;
  int n = static_cast<int>(rng() % 60);
  for (int i = 0; i < n; ++i) {
    auto [lo, hi] = ranges[rng() % (sizeof ranges / sizeof ranges[0])];
    char32_t c = lo + rng() % (hi - lo + 1);
    if (c >= 0xD800 && c <= 0xDFFF) c = 'x';
    tok::append_utf8(s, c);
  }
  return s;
}

std::string nfc(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
      &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::string r(reinterpret_cast<const char*>(out), n < 0 ? 0 : static_cast<size_t>(n));
  std::free(out);
  return r;
}

TEST(TokenizerRobustness, RandomTextRoundTrips) {
  std::mt19937 rng(20261130);
  const Tokenizer& gemma = real_tokenizer("gemma3");
  const Tokenizer& llama = real_tokenizer("llama3");
  const Tokenizer& qwen = real_tokenizer("qwen3");
  for (int i = 0; i < 400; ++i) {
    std::string text = random_text(rng);
    // Byte-level BPE keeps every byte; Qwen first normalizes to NFC; Gemma falls back to bytes
    // for unknown characters (and its decoder turns every "▁" into a space).
    EXPECT_EQ(llama.decode(llama.encode(text, false), false), text);
    EXPECT_EQ(qwen.decode(qwen.encode(text, false), false), nfc(text));
    std::string spaced;
    for (size_t p = 0; p < text.size();) {
      if (text.compare(p, 3, "\u2581") == 0) {
        spaced.push_back(' ');
        p += 3;
      } else {
        spaced.push_back(text[p++]);
      }
    }
    EXPECT_EQ(gemma.decode(gemma.encode(text, false), false), spaced);
  }
}

TEST(TokenizerRobustness, RandomBytesEncodeOrFailCleanly) {
  std::mt19937 rng(7);
  const Tokenizer& t = real_tokenizer("llama3");
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 16, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    bool valid = tok::find_invalid_utf8(s) == std::string::npos;
    try {
      std::vector<int32_t> ids = t.encode(s, true);
      EXPECT_TRUE(valid);
      EXPECT_EQ(t.decode(ids, false), s);
    } catch (const Error& e) {
      EXPECT_FALSE(valid) << e.what();
      EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(ErrorKind::invalid_argument));
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);  // most random byte strings are not UTF-8
}

TEST(TokenizerRobustness, DamagedTokenizerJsonGivesAnError) {
  MiniTokenizer m;
  m.vocab = {"a", "b", "ab", "\u2581", " "};
  m.merges = nlohmann::json::array({"a b"});
  m.normalizer = {{"type", "NFC"}};
  m.pre_tokenizer = {{"type", "Split"},
                     {"pattern", {{"Regex", "\\s+"}}},
                     {"behavior", "Isolated"},
                     {"invert", false}};
  m.decoder = {{"type", "Fuse"}};
  m.add_token("<s>", true);
  const std::string good = m.to_json().dump();
  std::string dir = m.write();
  std::mt19937 rng(99);
  int loaded = 0, failed = 0;
  for (int i = 0; i < 300; ++i) {
    std::string text = good;
    if (i % 2 == 0) {
      text.resize(rng() % text.size());  // truncated
    } else {
      for (int k = 0; k < 3; ++k) text[rng() % text.size()] = "{}[]\":,0a\\"[rng() % 10];
    }
    std::ofstream(dir + "/tokenizer.json", std::ios::trunc) << text;
    try {
      auto t = Tokenizer::load(dir);
      t->decode(t->encode("ab ab", true), false);
      ++loaded;
    } catch (const Error&) {
      ++failed;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a tessera::Error: " << e.what() << "\n" << text;
    }
  }
  EXPECT_GT(failed, 250);
  EXPECT_EQ(loaded + failed, 300);
}

}  // namespace
}  // namespace tessera::test
