#include "tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "core/check.h"
#include "io/gguf.h"
#include "tokenizer/decoder.h"
#include "tokenizer/gguf_tokenizer_impl.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace tessera {

namespace {

using nlohmann::json;
using tok::BpeModel;

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";

// ref: gguf-py constants.py TokenType (llama.h llama_token_type).
enum TokenType : int64_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// The vocabulary arrays, checked against each other.
struct Vocab {
  std::vector<std::string_view> tokens;  // into the mapping, or into `owned`
  std::deque<std::string> owned;
  std::vector<int64_t> types;  // one per token (kNormal when the file has none)
  std::vector<float> scores;   // one per token, or empty when the file has none
};

Vocab read_vocab(const GgufFile& f) {
  Vocab v;
  v.tokens = f.get_string_array(kTokens);
  const size_t n = v.tokens.size();
  if (n == 0) f.bad_key(kTokens, "is empty");
  if (n > static_cast<size_t>(INT32_MAX)) f.bad_key(kTokens, "has more tokens than int32 ids hold");
  for (size_t i = 0; i < n; ++i) {
    if (v.tokens[i].empty()) {
      // As llama.cpp, which warns and names it so (ref: llama_vocab::impl::load).
      v.owned.push_back("[EMPTY_" + std::to_string(i) + "]");
      v.tokens[i] = v.owned.back();
    } else if (tok::find_invalid_utf8(v.tokens[i]) != std::string_view::npos) {
      f.bad_key(kTokens, "token " + std::to_string(i) + " is not valid UTF-8");
    }
  }
  if (f.has(kTypes)) {
    v.types = f.get_int_array(kTypes);
    if (v.types.size() != n)
      f.bad_key(kTypes, "has " + std::to_string(v.types.size()) + " entries for " +
                            std::to_string(n) + " tokens");
    for (size_t i = 0; i < n; ++i) {
      if (v.types[i] < kUndefined || v.types[i] > kByte)
        f.bad_key(kTypes, "entry " + std::to_string(i) + " is " + std::to_string(v.types[i]) +
                              ", not a token type (0-6)");
    }
  } else {
    v.types.assign(n, kNormal);
  }
  if (f.has(kScores)) {
    v.scores = f.get_f32_array(kScores);
    if (v.scores.size() != n)
      f.bad_key(kScores, "has " + std::to_string(v.scores.size()) + " entries for " +
                             std::to_string(n) + " tokens");
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(v.scores[i])) f.bad_key(kScores, "entry " + std::to_string(i) + " is NaN");
    }
  }
  return v;
}

// An id key (any integer type), in range when present.
std::optional<int32_t> read_id(const GgufFile& f, const std::string& key, size_t n_tokens) {
  if (!f.has(key)) return std::nullopt;
  int64_t id = f.get_int(key);
  if (id < 0 || static_cast<uint64_t>(id) >= n_tokens)
    f.bad_key(key, "is " + std::to_string(id) + ", outside the " + std::to_string(n_tokens) +
                       " tokens of " + kTokens);
  return static_cast<int32_t>(id);
}

// Every token must name one id: llama.cpp asserts so (id_to_token.size() ==
// token_to_id.size()), and the merges and added tokens are looked up by text.
void check_unique(const GgufFile& f, const BpeModel& m, const Vocab& v) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    int32_t at = m.token_to_id(v.tokens[i]);
    if (at != static_cast<int32_t>(i)) {
      f.bad_key(kTokens, "tokens " + std::to_string(i) + " and " + std::to_string(at) +
                             " are the same string");
    }
  }
}

// tokenizer.ggml.merges: "left right", split at the first space after the first character as
// llama.cpp does (ref: llama_vocab::impl::load, bpe_ranks); left, right and left + right must be
// tokens, as in tokenizer.json (HF's BPE builder rejects a merge whose result is not a token).
std::vector<BpeModel::Merge> read_merges(const GgufFile& f, const BpeModel& m) {
  std::vector<std::string_view> lines = f.get_string_array(kMerges);
  std::vector<BpeModel::Merge> out;
  out.reserve(lines.size());
  std::string joined;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    size_t sp = line.size() > 1 ? line.find(' ', 1) : std::string_view::npos;
    auto bad = [&](const std::string& why) {
      std::string q(1, '"');
      q.append(line).append("\"");
      f.bad_key(kMerges, "entry " + std::to_string(i) + " " + q + " " + why);
    };
    if (sp == std::string_view::npos || sp + 1 >= line.size()) bad("is not \"left right\"");
    std::string_view a = line.substr(0, sp), b = line.substr(sp + 1);
    joined.assign(a).append(b);
    int32_t ia = m.token_to_id(a), ib = m.token_to_id(b), ij = m.token_to_id(joined);
    if (ia < 0 || ib < 0) bad("names a token that is not in " + std::string(kTokens));
    if (ij < 0) bad("makes a token that is not in " + std::string(kTokens));
    out.push_back({ia, ib, ij});
  }
  return out;
}

template <class T, class F>
std::unique_ptr<T> stage(const json& j, const GgufFile& f, const std::string& where, F factory) {
  return tok::from_json_text(j, f.path(), where, factory);
}

std::unique_ptr<tok::PostProcessor> bos_eos_processor(const GgufFile& f, const Vocab& v,
                                                      std::optional<int32_t> bos,
                                                      std::optional<int32_t> eos) {
  json single = json::array(), specials = json::object();
  auto add = [&](int32_t id) {
    std::string name = "$" + std::to_string(id);  // any name: only the ids are used
    single.push_back({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
    specials[name] = {{"id", name}, {"ids", {id}}, {"tokens", {std::string(v.tokens[id])}}};
  };
  if (bos) add(*bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) add(*eos);
  return tok::from_json_text(
      json{{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}},
      f.path(), "tokenizer.ggml.add_bos_token",
      [](const tok::JNode& n) { return tok::PostProcessor::from_json(n); });
}

// ref: llama-vocab.cpp, the EOT / EOM / EOG lists matched by token text.
constexpr const char* kEotTexts[] = {
    "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>",   "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
    "<end_of_utterance>"};
constexpr const char* kEogTexts[] = {"<|eot_id|>",
                                     "<|im_end|>",
                                     "<|end|>",
                                     "<|return|>",
                                     "<|call|>",
                                     "<|flush|>",
                                     "<|calls|>",
                                     "<end_of_turn>",
                                     "<|endoftext|>",
                                     "</s>",
                                     "<|eom_id|>",
                                     "<EOT>",
                                     "_<EOT>",
                                     "[EOT]",
                                     "[EOS]",
                                     "<|end_of_text|>",
                                     "<end_of_utterance>",
                                     "<eos>",
                                     "<turn|>",
                                     "<|tool_response>",
                                     "<｜end▁of▁sentence｜>",
                                     "[e~["};

void find_special(const GgufFile& f, const BpeModel& m, const Vocab& v, bool spm,
                  GgufSpecialTokens& s) {
  const size_t n = v.tokens.size();
  // llama.cpp's defaults: SentencePiece vocabularies put <unk>, <s>, </s> at 0, 1, 2. Its BPE
  // default (11, Falcon's) is not applied: a BPE file without the key has no such token.
  auto dflt = [&](int32_t id) -> std::optional<int32_t> {
    if (spm && static_cast<size_t>(id) < n) return id;
    return std::nullopt;
  };
  auto id_or = [&](const char* key, std::optional<int32_t> d) {
    auto id = read_id(f, key, n);
    return id ? id : d;
  };
  s.bos = id_or("tokenizer.ggml.bos_token_id", dflt(1));
  s.eos = id_or("tokenizer.ggml.eos_token_id", dflt(2));
  s.unk = id_or("tokenizer.ggml.unknown_token_id", dflt(0));
  s.eot = read_id(f, "tokenizer.ggml.eot_token_id", n);
  s.eom = read_id(f, "tokenizer.ggml.eom_token_id", n);
  s.sep = read_id(f, "tokenizer.ggml.seperator_token_id", n);
  s.pad = read_id(f, "tokenizer.ggml.padding_token_id", n);
  s.mask = read_id(f, "tokenizer.ggml.mask_token_id", n);
  auto control = [&](const char* text) -> std::optional<int32_t> {
    int32_t id = m.token_to_id(text);
    if (id < 0 || v.types[id] != kControl) return std::nullopt;
    return id;
  };
  // llama.cpp scans an unordered map; the first text of its list present is taken here.
  for (const char* t : kEotTexts) {
    if (!s.eot) s.eot = control(t);
  }
  if (!s.eom) s.eom = control("<|eom_id|>");
  // llama.cpp also promotes a matching token that is not CONTROL (Gemma 3's HTML tag "</s>",
  // say) to CONTROL; tessera keeps the file's types, as the model's tokenizer.json does.
  for (const char* t : kEogTexts) {
    if (auto id = control(t)) s.eog.push_back(*id);
  }
  for (auto id : {s.eos, s.eot, s.eom}) {
    if (id) s.eog.push_back(*id);
  }
  std::sort(s.eog.begin(), s.eog.end());
  s.eog.erase(std::unique(s.eog.begin(), s.eog.end()), s.eog.end());
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& f, GgufSpecialTokens* special) {
  const std::string model_name = f.get_string(kModel);
  const bool spm = model_name == "llama";
  if (!spm && model_name != "gpt2") {
    fail(ErrorKind::unsupported, f.path() + ": " + kModel + " \"" + model_name +
                                     "\" is not a tokenizer tessera reads (it reads \"gpt2\", "
                                     "byte-level BPE, and \"llama\", SentencePiece BPE)");
  }
  Vocab v = read_vocab(f);
  tok::HfTokenizer::Parts p;
  p.file = f.path();

  BpeModel::Options mo;
  bool add_bos = false, add_space_prefix = false;
  tok::GgufPreTokenizer pre;
  if (spm) {
    // ref: llama-vocab.cpp, LLAMA_VOCAB_TYPE_SPM: add_space_prefix and add_bos default on.
    add_bos = true;
    add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);
    mo.byte_fallback = true;  // llm_tokenizer_spm_session::resegment emits <0xNN> tokens
    mo.fuse_unk = true;
  } else {
    pre = tok::gguf_pre_tokenizer(f.get_string("tokenizer.ggml.pre", "default"), f.path());
    add_bos = pre.add_bos;
    mo.ignore_merges = pre.ignore_merges;
  }
  if (spm) {
    // The unk_token of HF's SentencePiece conversions; llama.cpp's SPM default id is 0.
    auto unk = read_id(f, "tokenizer.ggml.unknown_token_id", v.tokens.size());
    mo.unk_token = std::string(v.tokens[unk ? *unk : 0]);
  }
  p.model = BpeModel::from_tokens(v.tokens, mo);
  check_unique(f, *p.model, v);
  GgufSpecialTokens s;
  find_special(f, *p.model, v, spm, s);
  if (f.has(kMerges)) {
    p.model->add_merges(read_merges(f, *p.model));
  } else if (spm) {
    if (v.scores.empty()) f.bad_key(kScores, "is missing (and so is " + std::string(kMerges) + ")");
    p.model->add_merges(
        tok::spm_merges_from_scores(*p.model, v.tokens, v.scores, f.path(), kScores));
  } else {
    f.bad_key(kMerges, "is missing (a \"gpt2\" tokenizer needs its merges)");
  }

  s.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", add_bos);
  s.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  if (s.add_bos && !s.bos) f.bad_key("tokenizer.ggml.add_bos_token", "is true with no BOS token");
  if (s.add_eos && !s.eos) f.bad_key("tokenizer.ggml.add_eos_token", "is true with no EOS token");

  if (spm) {
    json norm = json::array();
    if (add_space_prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
    norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
    p.normalizer = stage<tok::Normalizer>(
        json{{"type", "Sequence"}, {"normalizers", norm}}, f, "tokenizer.ggml.model (\"llama\")",
        [](const tok::JNode& n) { return tok::Normalizer::from_json(n); });
    json dec =
        json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}});
    if (add_space_prefix)
      dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    p.decoder = stage<tok::Decoder>(json{{"type", "Sequence"}, {"decoders", dec}}, f,
                                    "tokenizer.ggml.model (\"llama\")",
                                    [](const tok::JNode& n) { return tok::Decoder::from_json(n); });
  } else {
    p.normalizer = std::move(pre.normalizer);
    p.pre_tokenizer = std::move(pre.pre_tokenizer);
    p.decoder =
        stage<tok::Decoder>(json{{"type", "ByteLevel"}}, f, "tokenizer.ggml.model (\"gpt2\")",
                            [](const tok::JNode& n) { return tok::Decoder::from_json(n); });
  }
  if (s.add_bos || s.add_eos) {
    p.post_processor =
        bos_eos_processor(f, v, s.add_bos ? s.bos : std::nullopt, s.add_eos ? s.eos : std::nullopt);
  }
  // ref: llama.cpp tokenizer_st_partition: CONTROL, USER_DEFINED and UNKNOWN tokens are cut out
  // of the raw text before anything else (CONTROL and UNKNOWN only when parsing special tokens,
  // which tessera's encode always does, as Hugging Face's does).
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    int64_t t = v.types[i];
    if (t != kControl && t != kUserDefined && t != kUnknown) continue;
    tok::AddedToken a;
    a.content = std::string(v.tokens[i]);
    a.id = static_cast<int32_t>(i);
    a.special = t != kUserDefined;
    a.normalized = false;
    p.added.push_back(std::move(a));
  }
  p.bos_id = s.bos;
  p.eos_id = s.eos;
  p.chat_template = f.get_string("tokenizer.chat_template", "");
  if (special) *special = s;
  return std::make_unique<tok::HfTokenizer>(std::move(p));
}

}  // namespace tessera
