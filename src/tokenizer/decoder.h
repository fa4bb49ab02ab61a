// tokenizer.json "decoder": ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and
// Sequence, as Hugging Face tokenizers' decoders (decode_chain over the token strings, then
// joined). ref: tokenizers decoders/*.rs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_util.h"

namespace tessera::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: transforms the list of token strings in place.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;

  static std::unique_ptr<Decoder> from_json(const JNode& node);
};

}  // namespace tessera::tok
