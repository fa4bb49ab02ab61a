// tokenizer.json "post_processor" for a single sequence: TemplateProcessing (e.g. Gemma's
// "<bos> $A"), BertProcessing / RobertaProcessing ("[CLS] $A [SEP]"), ByteLevel (no change to
// ids) and Sequence. ref: tokenizers processors/*.rs. With add_special_tokens=false nothing is
// added, as in HF.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tokenizer/json_util.h"

namespace tessera::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites `ids` (the encoding of sequence A) with the special tokens added.
  virtual void add_special_tokens(std::vector<int32_t>& ids) const = 0;

  static std::unique_ptr<PostProcessor> from_json(const JNode& node);
};

}  // namespace tessera::tok
