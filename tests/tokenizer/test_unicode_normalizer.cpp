// The Unicode normalizers only send the characters that can change through utf8proc; their
// output must equal utf8proc's normalization of the whole text, for every form.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_fixtures.h"
#include "tokenizer/utf8.h"

namespace tessera::test {
namespace {

std::string whole_text(const std::string& s, int options) {
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &out,
                                    static_cast<utf8proc_option_t>(options));
  EXPECT_GE(n, 0);
  std::string r(reinterpret_cast<const char*>(out), n < 0 ? 0 : static_cast<size_t>(n));
  std::free(out);
  return r;
}

std::unique_ptr<tok::Normalizer> make(const std::string& type) {
  static const std::string file = "test";
  simdjson::dom::parser parser;
  simdjson::padded_string json("{\"type\": \"" + type + "\"}");
  tok::JNode node{parser.parse(json).value(), &file, "normalizer"};
  return tok::Normalizer::from_json(node);
}

TEST(UnicodeNormalizer, SameAsNormalizingTheWholeText) {
  std::vector<std::string> texts = corpus();
  for (const char* t : {
           "e\u0301",
           "\u0301abc",
           "a\u0301\u0302b\u0323",
           "A\u030a",
           "\u212b",
           "\u1e9b\u0323",
           "\u1100\u1161\u11a8",
           "\uac00\u11a8",
           "\uac00 \u11a8",
           "\u0b47\u0b3e",
           "\u09c7\u09be",
           "x\u0344y",
           "\ufb01",
           "\u00bd \u2460 \uff21",
           "\u0438\u0306",
           "\u0627\u0654",
           "q\u0307\u0323",
           "\u3046\u3099",
           "\u304b\u3099\u309a",
           "\u00e9\u0301",
           "\u0000\u0301",
           "\U0001d15e\U0001d165",
           "\u0f73\u0f71\u0f72",
           "\u0915\u093c",
           "\u2000\u2126\u212a",
       }) {
    texts.push_back(t);
  }
  const std::pair<const char*, int> forms[] = {
      {"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
      {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
      {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
      {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
  };
  for (auto [name, options] : forms) {
    auto n = make(name);
    int failures = 0;
    for (const std::string& t : texts) {
      std::string got = t;
      n->normalize(got);
      if (got != whole_text(t, options) && ++failures <= 5) {
        ADD_FAILURE() << name << " differs on \"" << t << "\"";
      }
    }
    EXPECT_EQ(failures, 0) << name;
  }
}

TEST(UnicodeNormalizer, EveryBmpCharacterAfterCompositionStarters) {
  // Each character alone and after characters that start compositions (Latin, Hangul L and LV,
  // Bengali, Hiragana, Arabic), as in a text: a character wrongly taken as stable shows up here.
  const std::pair<const char*, int> forms[] = {
      {"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
      {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
  };
  const char* before[] = {"", "e", "\u1100", "\uac00", "\u09c7", "\u3046", "\u0627"};
  for (auto [name, options] : forms) {
    auto n = make(name);
    int failures = 0;
    for (char32_t c = 1; c < 0x10000; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      std::string ch;
      tok::append_utf8(ch, c);
      for (const char* b : before) {
        std::string t = std::string(b) + ch + "z";
        std::string got = t;
        n->normalize(got);
        if (got != whole_text(t, options) && ++failures <= 5) {
          ADD_FAILURE() << name << " differs on U+" << std::hex << static_cast<unsigned>(c)
                        << " after \"" << b << "\"";
        }
      }
    }
    EXPECT_EQ(failures, 0) << name;
  }
}

}  // namespace
}  // namespace tessera::test
