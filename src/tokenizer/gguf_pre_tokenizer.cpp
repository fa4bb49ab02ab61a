// tokenizer.ggml.pre -> the pre-tokenizer of a byte-level BPE ("gpt2") GGUF tokenizer.
//
// llama.cpp maps each name to a list of regexes applied in turn, every match and every gap
// between matches becoming a piece, then maps bytes to GPT-2's characters (ref: llama-vocab.cpp
// llama_vocab::impl::load, the tokenizer_pre names, and llm_tokenizer_bpe's regex_exprs). That is
// tokenizer.json's Sequence of Split(Isolated) pre-tokenizers ending in ByteLevel(use_regex
// false), which is what this builds. Where llama.cpp rewrote a tokenizer.json regex for its own
// regex engine (e.g. "(?i:'s|...)" as "'[sS]|..."), the tokenizer.json original is used: tessera's
// patterns run tokenizer.json's Oniguruma syntax, and the original is the reference.
#include <array>
#include <string_view>

#include "core/check.h"
#include "tokenizer/gguf_tokenizer_impl.h"

namespace tessera::tok {

namespace {

using nlohmann::json;

// Meta Llama 3's tokenizer.json regex (llama.cpp LLAMA3, also DBRX, SMAUG and CHATGLM4).
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen 2 / 2.5 / 3's (llama.cpp QWEN2): single digits.
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o / Llama 4 (llama.cpp GPT4O), as in their tokenizer.json.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral's tekken (llama.cpp TEKKEN), as in its tokenizer.json.
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's as llama.cpp writes it (its DEFAULT set's second regex).
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

enum class Family { llama3, qwen2, gpt2, starcoder, gpt4o, tekken, dflt };

struct Name {
  std::string_view name;
  Family family;
  bool ignore_merges, add_bos;
};

// The names llama-vocab.cpp accepts for these regex sets, with its per-name flags.
constexpr std::array kNames = {
    Name{"llama3", Family::llama3, true, true},
    Name{"llama-v3", Family::llama3, true, true},
    Name{"llama-bpe", Family::llama3, true, true},
    Name{"falcon3", Family::llama3, true, true},
    Name{"falcon-h1", Family::llama3, true, true},
    Name{"pixtral", Family::llama3, true, true},
    Name{"midm-2.0", Family::llama3, true, true},
    Name{"lfm2", Family::llama3, true, true},
    Name{"jina-v5-nano", Family::llama3, true, true},
    Name{"dbrx", Family::llama3, false, false},
    Name{"smaug-bpe", Family::llama3, false, false},
    Name{"chatglm-bpe", Family::llama3, false, false},
    Name{"glm4", Family::llama3, false, false},
    Name{"qwen2", Family::qwen2, false, false},
    Name{"deepseek-r1-qwen", Family::qwen2, false, false},
    Name{"kormo", Family::qwen2, false, false},
    Name{"f2llmv2", Family::qwen2, false, false},
    Name{"megrez", Family::qwen2, false, false},
    Name{"stablelm2", Family::qwen2, false, false},
    Name{"hunyuan", Family::qwen2, false, false},
    Name{"solar-open", Family::qwen2, false, false},
    Name{"gpt-2", Family::gpt2, false, false},
    Name{"phi-2", Family::gpt2, false, false},
    Name{"jina-es", Family::gpt2, false, false},
    Name{"jina-de", Family::gpt2, false, false},
    Name{"gigachat", Family::gpt2, false, false},
    Name{"jina-v2-es", Family::gpt2, false, false},
    Name{"jina-v2-de", Family::gpt2, false, false},
    Name{"a.x-4.0", Family::gpt2, false, false},
    Name{"mellum", Family::gpt2, false, false},
    Name{"modern-bert", Family::gpt2, false, false},
    Name{"mpt", Family::gpt2, false, false},
    Name{"olmo", Family::gpt2, false, false},
    Name{"jais", Family::gpt2, false, false},
    Name{"trillion", Family::gpt2, false, false},
    Name{"granite-docling", Family::gpt2, false, false},
    Name{"exaone4", Family::gpt2, false, false},
    Name{"starcoder", Family::starcoder, false, false},
    Name{"refact", Family::starcoder, false, false},
    Name{"command-r", Family::starcoder, false, false},
    Name{"smollm", Family::starcoder, false, false},
    Name{"codeshell", Family::starcoder, false, false},
    Name{"exaone", Family::starcoder, false, false},
    Name{"minerva-7b", Family::starcoder, false, false},
    Name{"mellum2", Family::starcoder, false, false},
    Name{"gpt-4o", Family::gpt4o, false, false},
    Name{"llama4", Family::gpt4o, false, false},
    Name{"kanana2", Family::gpt4o, false, false},
    Name{"talkie", Family::gpt4o, false, false},
    Name{"tekken", Family::tekken, true, true},
    Name{"default", Family::dflt, false, false},
};

json split(const char* regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

}  // namespace

GgufPreTokenizer gguf_pre_tokenizer(const std::string& pre, const std::string& file) {
  const Name* found = nullptr;
  for (const Name& n : kNames) {
    if (n.name == pre) found = &n;
  }
  if (!found) {
    fail(ErrorKind::unsupported, file + ": tokenizer.ggml.pre \"" + pre +
                                     "\" names a pre-tokenizer tessera does not know (it knows "
                                     "llama-bpe, qwen2, gpt-2, starcoder, gpt-4o, tekken, default "
                                     "and their llama.cpp aliases)");
  }
  json steps = json::array();
  switch (found->family) {
    case Family::llama3:
      steps.push_back(split(kLlama3));
      break;
    case Family::qwen2:
      steps.push_back(split(kQwen2));
      break;
    case Family::gpt4o:
      steps.push_back(split(kGpt4o));
      break;
    case Family::tekken:
      steps.push_back(split(kTekken));
      break;
    case Family::gpt2:
      break;  // ByteLevel's own regex, below
    case Family::starcoder:
      steps.push_back({{"type", "Digits"}, {"individual_digits", true}});
      break;
    case Family::dflt:  // llama-vocab.cpp's default regex_exprs
      steps.push_back(split(R"([\p{P}\$\+<=>\^~\|]+)"));
      steps.push_back(split(kGpt2));
      steps.push_back(split(R"(\p{N}+)"));
      steps.push_back(split("[0-9][0-9][0-9]"));
      break;
  }
  // GPT-2's regex is ByteLevel's own (use_regex), as in GPT-2's and StarCoder's tokenizer.json.
  const bool gpt2_regex = found->family == Family::gpt2 || found->family == Family::starcoder;
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", gpt2_regex}});
  GgufPreTokenizer out;
  const std::string where = "tokenizer.ggml.pre (\"" + pre + "\")";
  out.pre_tokenizer =
      from_json_text(json{{"type", "Sequence"}, {"pretokenizers", steps}}, file, where,
                     [](const JNode& n) { return PreTokenizer::from_json(n); });
  // Qwen's tokenizer.json normalizes to NFC before splitting; llama.cpp does not (so it differs
  // from Hugging Face on text that is not NFC). The GGUF does not record the normalizer, so it
  // is restored here for the name Qwen's own files get.
  if (pre == "qwen2") {
    out.normalizer = from_json_text(json{{"type", "NFC"}}, file, where,
                                    [](const JNode& n) { return Normalizer::from_json(n); });
  }
  out.ignore_merges = found->ignore_merges;
  out.add_bos = found->add_bos;
  return out;
}

}  // namespace tessera::tok
