// The tokenizer.json interpreter behind tessera::Tokenizer: the pipeline of Hugging Face
// tokenizers' TokenizerImpl::encode / decode (ref: tokenizers tokenizer/mod.rs):
//   added tokens split the raw text -> normalizer (per piece) -> added tokens on the normalized
//   text -> pre-tokenizer -> BPE model -> post-processor;
//   ids -> token strings (special ones optionally dropped) -> decoder chain -> joined text.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tok {

class HfTokenizer final : public Tokenizer {
 public:
  // `json_path`: tokenizer.json; `config_dir`: where tokenizer_config.json may be.
  HfTokenizer(const std::string& json_path, const std::string& config_dir);

  // The same pipeline from parts that were not read from tokenizer.json (a GGUF file's
  // tokenizer.ggml.* metadata: tokenizer/gguf_tokenizer.cpp). `model` is required; the other
  // stages may be null, as when tokenizer.json has no such entry.
  struct Parts {
    std::string file;  // named in errors
    std::unique_ptr<Normalizer> normalizer;
    std::unique_ptr<PreTokenizer> pre_tokenizer;
    std::unique_ptr<BpeModel> model;
    std::unique_ptr<PostProcessor> post_processor;
    std::unique_ptr<Decoder> decoder;
    std::vector<AddedToken> added;
    std::optional<int32_t> bos_id, eos_id;
    std::string chat_template;
  };
  explicit HfTokenizer(Parts parts);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;

  int vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int32_t id) const override;
  bool is_special(int32_t id) const override;

  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::string bos_token() const override { return bos_token_; }
  std::string eos_token() const override { return eos_token_; }
  const std::string& chat_template() const override { return chat_template_; }

  const BpeModel& model() const { return *model_; }

 private:
  void load_config(const std::string& dir);
  // The token string of `id` (added vocabulary first), or nullopt.
  std::optional<std::string_view> token_of(int32_t id) const;
  void encode_piece(std::string_view piece, bool at_origin, std::vector<int32_t>& ids) const;

  std::string file_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  int vocab_size_ = 0;

  std::optional<int32_t> bos_id_, eos_id_;
  std::string bos_token_, eos_token_, chat_template_;
};

}  // namespace tessera::tok
