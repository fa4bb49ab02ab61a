// The tokenizer of a GGUF file against the tokenizer.json it was converted from: Gemma 3, Llama 3
// and Qwen 3 (the npm files, converted as llama.cpp's converter does:
// scripts/fixtures/make_gguf_tokenizer_fixtures.py) and tessera-tiny-en. The full-vocabulary
// GGUFs are written at test time (gguf_vocab_writer.cpp) and first checked against the script's
// digests, so that the files tested are the script's.
//
// Identical on the corpus: ids without special tokens, ids with them, both decodes, the
// vocabulary, BOS/EOS and the chat template. Where the conversion itself changes something, the
// test computes the expected change from the converter's rule instead of skipping it:
//   - the converter types non-special added tokens that look special (<mask>, <unusedN>,
//     <|fim_prefix|>, ...: does_token_look_special) CONTROL, so skip-special decoding drops them;
//   - USER_DEFINED tokens have "\u2581" written as " ";
//   - ids up to config.json's vocab_size that have no token are "[PADi]";
//   - Llama 3: this tokenizer.json (an early release) adds no BOS, llama.cpp adds one for
//     llama-bpe (llama-vocab.cpp), as the later tokenizer.json of the same model does.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/gguf.h"
#include "io/gguf_builder.h"
#include "process_temp.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/gguf_vocab_writer.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string fixture_dir() {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/tokenizer/gguf";
}

std::string show(const std::vector<int32_t>& v) {
  return nlohmann::json(v).dump();
}
std::string quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct Loaded {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  GgufSpecialTokens special;
};

// Writes the GGUF of `name`, checks it against digests.json, and loads its tokenizer.
const Loaded& gguf_tokenizer(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, Loaded> cache;
  std::lock_guard<std::mutex> lock(mu);
  Loaded& l = cache[name];
  if (l.tok) return l;
  GgufVocabFile v = write_gguf_vocab(gguf_vocab_spec(name));
  nlohmann::json d = nlohmann::json::parse(read_text(fixture_dir() + "/digests.json")).at(name);
  EXPECT_EQ(v.bytes.size(), d.at("file_bytes").get<size_t>()) << name;
  const auto& keys = d.at("keys");
  EXPECT_EQ(v.keys.size(), keys.size()) << name;
  for (size_t i = 0; i < std::min(v.keys.size(), keys.size()); ++i) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v.keys[i].fnv1a64));
    EXPECT_EQ(v.keys[i].key, keys[i][0].get<std::string>()) << name << " key " << i;
    EXPECT_EQ(hex, keys[i][1].get<std::string>()) << name << " " << v.keys[i].key;
    EXPECT_EQ(v.keys[i].bytes, keys[i][2].get<size_t>()) << name << " " << v.keys[i].key;
  }
  std::string dir = testing::process_temp_dir("tessera_gguf_tok");
  fs::create_directories(dir);
  std::string path = dir + "/" + name + ".gguf";
  write_file(path, v.bytes);
  l.file = std::make_unique<GgufFile>(path);
  l.tok = tokenizer_from_gguf(*l.file, &l.special);
  return l;
}

const Tokenizer& hf_tokenizer(const std::string& name) {
  if (name != "tessera_tiny_en") return real_tokenizer(name);
  static std::unique_ptr<Tokenizer> t =
      Tokenizer::load(std::string(TESSERA_SOURCE_DIR) + "/models/tessera-tiny-en");
  return *t;
}

std::string config_dir(const std::string& name) {
  return gguf_vocab_spec(name).dir;
}

struct HfAdded {
  std::string content;
  bool special = false;
};
// tokenizer.json's added_tokens by id.
std::map<int32_t, HfAdded> hf_added_tokens(const std::string& path) {
  simdjson::padded_string text;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::map<int32_t, HfAdded> out;
  if (simdjson::padded_string::load(path).get(text) || parser.parse(text).get(root)) {
    ADD_FAILURE() << path << ": cannot be read";
    return out;
  }
  for (simdjson::dom::element a : root["added_tokens"].get_array()) {
    out[static_cast<int32_t>(a["id"].get_int64().value())] = {
        std::string(std::string_view(a["content"].get_string().value())),
        a["special"].get_bool().value()};
  }
  return out;
}

bool looks_special(const std::string& t) {  // llama.cpp conversion/base.py
  auto starts = [&](const char* p) { return t.rfind(p, 0) == 0; };
  auto ends = [&](const char* p) {
    std::string s(p);
    return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         (starts("<|") && ends("|>")) || (starts("<｜") && ends("｜>")) ||
         (starts("<unused") && ends(">"));
}

// "\u2581" (3 bytes) -> " ".
std::string spaces_for_metaspace(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "\u2581") == 0) {
      out.push_back(' ');
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

class GgufTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufTokenizer, VocabularyAndSpecialTokensMatchTokenizerJson) {
  const std::string name = GetParam();
  const Tokenizer& hf = hf_tokenizer(name);
  const Loaded& g = gguf_tokenizer(name);
  auto spec = gguf_vocab_spec(name);
  EXPECT_EQ(g.tok->vocab_size(), spec.vocab_size.value_or(hf.vocab_size()));
  std::map<int32_t, HfAdded> added = hf_added_tokens(spec.dir + "/tokenizer.json");
  int retyped = 0, mismatches = 0;
  for (int32_t id = 0; id < g.tok->vocab_size(); ++id) {
    std::string want = std::string("[PAD").append(std::to_string(id)).append("]");
    bool want_special = false;
    if (id < hf.vocab_size()) {
      want = hf.id_to_token(id);
      EXPECT_EQ(hf.is_special(id), added.count(id) && added[id].special) << id;
      if (auto it = added.find(id); it != added.end()) {
        // CONTROL when special or looking special, else USER_DEFINED with "\u2581" as " ".
        want_special = it->second.special || looks_special(want);
        retyped += want_special && !it->second.special;
        if (!want_special) want = spaces_for_metaspace(want);
      }
    }
    if (g.tok->id_to_token(id) != want || g.tok->is_special(id) != want_special) {
      if (++mismatches <= 5)
        ADD_FAILURE() << name << " id " << id << ": " << quote(g.tok->id_to_token(id))
                      << (g.tok->is_special(id) ? " special" : "") << ", expected " << quote(want)
                      << (want_special ? " special" : "");
    }
  }
  EXPECT_EQ(mismatches, 0);
  std::cout << name << ": " << retyped << " added tokens typed CONTROL by the converter\n";

  EXPECT_EQ(g.tok->bos_id(), hf.bos_id());
  EXPECT_EQ(g.tok->eos_id(), hf.eos_id());
  EXPECT_EQ(g.tok->bos_token(), hf.bos_token());
  EXPECT_EQ(g.tok->eos_token(), hf.eos_token());
  nlohmann::json cfg =
      nlohmann::json::parse(read_text(config_dir(name) + "/tokenizer_config.json"));
  EXPECT_EQ(g.tok->chat_template(), cfg.value("chat_template", ""));
  EXPECT_EQ(g.tok->chat_template(), hf.chat_template());
  for (int32_t id : g.special.eog) EXPECT_TRUE(g.tok->is_special(id)) << name << " eog " << id;
  if (hf.eos_id()) {
    EXPECT_TRUE(std::count(g.special.eog.begin(), g.special.eog.end(), *hf.eos_id()));
  }
}

TEST_P(GgufTokenizer, EncodeAndDecodeMatchTokenizerJsonOnTheCorpus) {
  const std::string name = GetParam();
  const Tokenizer& hf = hf_tokenizer(name);
  const Loaded& g = gguf_tokenizer(name);
  // What encode(text, true) adds, from the GGUF's add_bos/add_eos; and whether tokenizer.json's
  // post-processor adds the same (all but this Llama 3 file, see the top).
  std::vector<int32_t> prefix, suffix;
  if (g.special.add_bos) prefix.push_back(*g.special.bos);
  if (g.special.add_eos) suffix.push_back(*g.special.eos);
  const bool hf_adds_the_same = name != "llama3";
  if (name == "llama3") {
    EXPECT_TRUE(g.special.add_bos);
    EXPECT_EQ(hf.encode("x", true), hf.encode("x", false));
  }
  int failures = 0;
  for (const std::string& text : corpus()) {
    std::vector<int32_t> plain = hf.encode(text, false), with = hf.encode(text, true);
    std::vector<int32_t> want_with = prefix;
    want_with.insert(want_with.end(), plain.begin(), plain.end());
    want_with.insert(want_with.end(), suffix.begin(), suffix.end());
    if (hf_adds_the_same) {
      EXPECT_EQ(with, want_with) << name << " " << quote(text);
    }
    std::vector<int32_t> g_plain = g.tok->encode(text, false), g_with = g.tok->encode(text, true);
    // Skip-special decoding drops the retyped tokens too.
    std::vector<int32_t> kept;
    for (int32_t id : with)
      if (!g.tok->is_special(id) || hf.is_special(id)) kept.push_back(id);
    std::string dec = g.tok->decode(with, false), skip = g.tok->decode(with, true);
    std::string want_dec = hf.decode(with, false), want_skip = hf.decode(kept, true);
    if (g_plain == plain && g_with == want_with && dec == want_dec && skip == want_skip) continue;
    if (++failures > 6) continue;
    ADD_FAILURE()
        << name << " " << quote(text)
        << (g_plain == plain ? "" : "\n  plain " + show(g_plain) + "\n  want  " + show(plain))
        << (g_with == want_with ? "" : "\n  with  " + show(g_with) + "\n  want  " + show(want_with))
        << (dec == want_dec ? "" : "\n  decode " + quote(dec) + "\n  want   " + quote(want_dec))
        << (skip == want_skip ? "" : "\n  skip  " + quote(skip) + "\n  want  " + quote(want_skip));
  }
  EXPECT_EQ(failures, 0) << failures << " of " << corpus().size() << " corpus lines differ";
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GgufTokenizer,
                         ::testing::Values("gemma3", "llama3", "qwen3", "tessera_tiny_en"));

// The committed file is the Python converter's own output; the writer must give the same bytes
// (which is what makes its full-vocabulary files for the other tests the converter's).
TEST(GgufTokenizerFixture, WriterEqualsTheConverterOnTessaraTinyEn) {
  std::string committed = read_text(fixture_dir() + "/tessera_tiny_en.gguf");
  ASSERT_FALSE(committed.empty());
  GgufVocabFile v = write_gguf_vocab(gguf_vocab_spec("tessera_tiny_en"));
  EXPECT_EQ(v.bytes.size(), committed.size());
  EXPECT_TRUE(v.bytes == committed) << "the bytes differ";
  GgufFile f(fixture_dir() + "/tessera_tiny_en.gguf");
  GgufSpecialTokens s;
  auto tok = tokenizer_from_gguf(f, &s);
  const Tokenizer& hf = hf_tokenizer("tessera_tiny_en");
  for (const std::string& text : corpus())
    ASSERT_EQ(tok->encode(text, true), hf.encode(text, true));
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "gpt-2");
  EXPECT_TRUE(s.add_bos);
  // Tokenizer::load takes a .gguf path too (`tessera tokenize --tokenizer model.gguf`).
  auto loaded = Tokenizer::load(fixture_dir() + "/tessera_tiny_en.gguf");
  EXPECT_EQ(loaded->encode(corpus()[0], true), hf.encode(corpus()[0], true));
  EXPECT_EQ(loaded->chat_template(), hf.chat_template());
}

}  // namespace
}  // namespace tessera::test
