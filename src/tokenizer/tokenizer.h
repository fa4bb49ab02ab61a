// A Hugging Face tokenizer.json interpreter (BPE with its normalizers, pre-tokenizers, added
// tokens, post-processor and decoders), identical in output to the `tokenizers` library.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class Tokenizer {
 public:
  // `path`: a tokenizer.json file or a directory holding one; tokenizer_config.json beside it is
  // read when present (BOS/EOS tokens, chat template). A path ending in ".gguf" is a GGUF file
  // whose tokenizer.ggml.* metadata is read (tokenizer/gguf_tokenizer.h). Throws tessera::Error
  // naming the file.
  static std::unique_ptr<Tokenizer> load(const std::string& path);
  virtual ~Tokenizer() = default;

  // With add_special_tokens the post-processor's tokens (BOS) are added, as
  // tokenizers' encode(text, add_special_tokens=True). Throws Error(invalid_argument) on
  // invalid UTF-8.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const = 0;
  // As tokenizers' decode(ids, skip_special_tokens). Ids outside the vocabulary are skipped.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;

  virtual int vocab_size() const = 0;  // highest id + 1, added tokens included
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual std::string id_to_token(int32_t id) const = 0;  // "" when unknown
  virtual bool is_special(int32_t id) const = 0;

  // From tokenizer_config.json (empty / nullopt when absent).
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  virtual std::string bos_token() const = 0;
  virtual std::string eos_token() const = 0;
  virtual const std::string& chat_template() const = 0;  // the default template's source
};

// Streams decode(ids) as ids arrive: push() returns only text that is final (complete UTF-8,
// and not changed by later tokens such as a Metaspace/Strip decoder's leading-space rule), so
// that the concatenation of every push() and flush() equals decode(all ids, skip_special_tokens).
class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(const Tokenizer& tok, bool skip_special_tokens = true);
  std::string push(int32_t id);
  std::string flush();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0, read_offset_ = 0;
  std::string emitted_;
};

}  // namespace tessera
