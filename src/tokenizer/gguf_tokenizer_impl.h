// Internals of tokenizer_from_gguf (gguf_tokenizer.cpp), shared with its two helpers.
#pragma once

#include <simdjson.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/json_util.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace tessera::tok {

// The small pipeline stages (normalizer, pre-tokenizer, decoder, post-processor) are built by
// the same from_json factories as tokenizer.json's, from the JSON that tokenizer.json would hold
// for them: one implementation of each stage. `where` names the GGUF key they stand for.
template <class F>
auto from_json_text(const nlohmann::json& j, const std::string& file, const std::string& where,
                    F&& build) {
  simdjson::dom::parser parser;
  std::string text = j.dump();
  simdjson::dom::element e;
  if (parser.parse(text).get(e) != simdjson::SUCCESS) {
    JNode{e, &file, where}.fail("internal: the generated pipeline JSON does not parse");
  }
  return build(JNode{e, &file, where});
}

// What tokenizer.ggml.pre selects for a "gpt2" (byte-level BPE) model.
struct GgufPreTokenizer {
  std::unique_ptr<Normalizer> normalizer;  // null: none
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  bool ignore_merges = false;  // llama-vocab.cpp's ignore_merges for this pre-tokenizer
  bool add_bos = false;        // llama-vocab.cpp's add_bos default for this pre-tokenizer
};
// Throws Error(unsupported) naming `pre` and `file` for a name it does not know.
GgufPreTokenizer gguf_pre_tokenizer(const std::string& pre, const std::string& file);

// The merges of a SentencePiece BPE vocabulary from its scores (gguf_spm_merges.cpp): every
// pair of tokens whose concatenation is a token, ranked by that token's score. Fails naming
// `file` and `key` (the scores) for a vocabulary with absurdly many.
std::vector<BpeModel::Merge> spm_merges_from_scores(const BpeModel& model,
                                                    const std::vector<std::string_view>& tokens,
                                                    const std::vector<float>& scores,
                                                    const std::string& file,
                                                    const std::string& key);

}  // namespace tessera::tok
