// The merges of a SentencePiece BPE vocabulary ("llama" GGUF model without
// tokenizer.ggml.merges, e.g. Gemma 3 converted from tokenizer.model) from the token scores.
//
// llama.cpp's SPM tokenizer (llm_tokenizer_spm_session in llama-vocab.cpp) merges, again and
// again, the adjacent pair of symbols whose concatenation is a token with the highest score. That
// is BPE whose merges are every pair (a, b) of tokens with a + b a token, ranked by the score of
// a + b, highest first. llama.cpp breaks ties between pairs of equal score by position; here they
// are broken as transformers' SentencePieceExtractor (convert_slow_tokenizer.py generate_merges)
// does when it turns the same tokenizer.model into tokenizer.json's merges: the longer left
// piece first, then the longer right piece, then the lower ids of a + b, a and b. With it the
// merges are those of that tokenizer.json, rank for rank; the two rules differ only where two
// different pairs of equal score compete for the same symbol.
#include <algorithm>

#include "core/check.h"
#include "tokenizer/gguf_tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

std::vector<BpeModel::Merge> spm_merges_from_scores(const BpeModel& model,
                                                    const std::vector<std::string_view>& tokens,
                                                    const std::vector<float>& scores,
                                                    const std::string& file,
                                                    const std::string& key) {
  struct Candidate {
    float score;
    uint32_t left_len, right_len;  // code points
    int32_t merged, left, right;
  };
  // Real vocabularies have about two per token (Gemma 3: 514,906 for 262,144); a hostile one
  // (a, aa, aaa, ...) could have as many as it has bytes of token text, 24 bytes each here.
  const size_t limit = 16 * tokens.size() + (1u << 20);
  std::vector<Candidate> c;
  c.reserve(tokens.size() * 2);
  std::vector<size_t> cuts;  // byte offsets of the code point boundaries inside a token
  for (size_t id = 0; id < tokens.size(); ++id) {
    std::string_view t = tokens[id];
    cuts.clear();
    for (size_t i = 0; i < t.size();) {
      next_cp(t, i);
      if (i < t.size()) cuts.push_back(i);
    }
    const uint32_t n = static_cast<uint32_t>(cuts.size() + 1);
    for (size_t k = 0; k < cuts.size(); ++k) {
      int32_t l = model.token_to_id(t.substr(0, cuts[k]));
      if (l < 0) continue;
      int32_t r = model.token_to_id(t.substr(cuts[k]));
      if (r < 0) continue;
      const uint32_t ll = static_cast<uint32_t>(k + 1);
      c.push_back({scores[id], ll, n - ll, static_cast<int32_t>(id), l, r});
      if (c.size() > limit) {
        fail_model(file + ": " + key + ": more than " + std::to_string(limit) +
                   " pairs of tokens join into a token, too many for a SentencePiece vocabulary "
                   "of " +
                   std::to_string(tokens.size()) + " tokens");
      }
    }
  }
  // The scores were checked to be numbers (no NaN), so this is a strict weak order.
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_len != b.left_len) return a.left_len > b.left_len;
    if (a.right_len != b.right_len) return a.right_len > b.right_len;
    if (a.merged != b.merged) return a.merged < b.merged;
    if (a.left != b.left) return a.left < b.left;
    return a.right < b.right;
  });
  std::vector<BpeModel::Merge> out;
  out.reserve(c.size());
  for (const Candidate& x : c) out.push_back({x.left, x.right, x.merged});
  return out;
}

}  // namespace tessera::tok
