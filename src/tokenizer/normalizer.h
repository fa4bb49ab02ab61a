// tokenizer.json "normalizer": Replace (string or regex), Prepend, NFC/NFD/NFKC/NFKD, Lowercase,
// Strip, ByteLevel and Sequence, with the semantics of Hugging Face tokenizers'
// normalizers/*.rs. Offsets are not tracked: tessera only needs ids.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/json_util.h"

namespace tessera::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Normalizes `s` (valid UTF-8) in place.
  virtual void normalize(std::string& s) const = 0;

  // Throws Error(unsupported) for types tessera does not implement.
  static std::unique_ptr<Normalizer> from_json(const JNode& node);
};

}  // namespace tessera::tok
