// The BPE model of tokenizer.json: vocabulary, ranked merges (strings "a b" or pairs ["a", "b"]),
// byte_fallback (<0xNN> tokens), unk_token with fuse_unk, ignore_merges,
// continuing_subword_prefix and end_of_word_suffix. ref: tokenizers models/bpe/{model,word}.rs.
//
// Merging uses a priority queue over a linked list of symbols (O(n log n) in the word length, the
// same order of merges as HF's Word::merge_all), and frequent words are cached.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/hash_map.h"
#include "tokenizer/json_util.h"

namespace tessera::tok {

class BpeModel {
 public:
  // `model`: tokenizer.json's "model" object (type BPE).
  static std::unique_ptr<BpeModel> from_json(const JNode& model);

  // The same model built from parts (GGUF's tokenizer.ggml.*, tokenizer/gguf_tokenizer.cpp):
  // `tokens[id]` is the token of each id (unique strings, every id present), then the merges are
  // added with add_merges() in rank order before the model is used.
  struct Options {
    std::string unk_token;  // "" = no unk_token
    bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  };
  struct Merge {
    int32_t left, right, merged;
  };
  static std::unique_ptr<BpeModel> from_tokens(const std::vector<std::string_view>& tokens,
                                               const Options& options);
  // Appends `merges` (ids of this model) to the merge table, ranked after those already added.
  void add_merges(const std::vector<Merge>& merges);
  ~BpeModel();

  // Appends the ids of `word` (non-empty, valid UTF-8) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  int32_t token_to_id(std::string_view token) const { return vocab_.find(token); }
  // nullptr when `id` is not in the vocabulary.
  const std::string_view* id_to_token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
    return &id_to_token_[id];
  }
  int32_t id_end() const { return static_cast<int32_t>(id_to_token_.size()); }  // max id + 1
  size_t merge_count() const { return merges_.size(); }

 private:
  BpeModel();
  void tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const;
  void load_vocab(const JNode& vocab);
  // Fills the vocabulary from (token, id) pairs in insertion order.
  void build_vocab(const std::vector<std::string_view>& keys, const std::vector<int32_t>& ids);
  void finish();  // unk id, byte ids, the word cache: after the vocabulary is complete
  void load_merges(const JNode& merges);
  using ResolvedMerge = Merge;
  void resolve_merges(const JNode& merges, size_t begin, size_t end,
                      std::vector<ResolvedMerge>& out) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  // merge_word through the word cache (words shorter than kCacheMaxLen).
  void merge_cached(std::string_view word, std::vector<int32_t>& out) const;
  void build_adjacent_pairs() const;
  int32_t char_id(std::string_view ch, bool first, bool last) const;

  StringIdMap vocab_;
  std::vector<std::string_view> id_to_token_;  // views into vocab_'s keys
  std::vector<uint8_t> has_id_;
  PairMap merges_;
  std::vector<int32_t> bmp_char_id_;  // single-character tokens below U+10000, -1 if none

  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix ("" = none)
  bool has_unk_ = false;
  std::string unk_token_;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  int32_t byte_ids_[256];
  bool all_bytes_ = false;
  uint32_t next_rank_ = 0;  // every <0xNN> token exists

  // Every pair of characters that appear next to each other inside some vocabulary token. Merges
  // only ever produce vocabulary tokens, so no merge can join x|y when (x, y) is not in this set
  // and both are single-character tokens: a long word can be cut there and its pieces merged
  // (and cached) independently with the same result. Gemma's pre-tokenizer leaves whole
  // documents as one word; this cuts them before almost every "▁".
  mutable CharPairSet adjacent_;
  mutable std::once_flag adjacent_once_;
  bool split_long_words_ = false;

  // Words shorter than kCacheMaxLen bytes, up to kCacheCapacity of them (like HF, entries are
  // never evicted). Sharded with try_lock so that concurrent encodes never wait on it.
  static constexpr size_t kCacheMaxLen = 256, kCacheShards = 32, kCacheCapacity = 65536;
  struct SvHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return hash_bytes(s.data(), s.size()); }
  };
  struct CacheShard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, SvHash, std::equal_to<>> map;
  };
  std::unique_ptr<CacheShard[]> cache_;
  uint32_t generation_;  // tells this model's entries apart in the per-thread front cache
};

}  // namespace tessera::tok
