// The tokenizer and chat template of a GGUF file (llama.cpp's format), from its
// tokenizer.ggml.* metadata, as llama.cpp's llama_vocab reads them (ref: llama.cpp
// src/llama-vocab.cpp llama_vocab::impl::load; the converter that writes them: conversion/base.py
// _set_vocab_gpt2 and _set_vocab_sentencepiece, gguf-py gguf/vocab.py SpecialVocab).
//
// The result is the same tokenizer.json interpreter (tok::HfTokenizer) built from parts, so it
// encodes and decodes as the tokenizer.json the file was converted from:
//   model "gpt2":  byte-level BPE: tokens, merges, and tokenizer.ggml.pre naming the pre-tokenizer
//                  (the regexes of llama-vocab.cpp's llm_tokenizer_bpe, in their tokenizer.json
//                  form; gguf_pre_tokenizer.cpp);
//   model "llama": SentencePiece BPE: tokens, scores and token types, byte fallback (<0xNN>),
//                  add_space_prefix; without tokenizer.ggml.merges the merges are derived from the
//                  scores (gguf_spm_merges.cpp).
// CONTROL and UNKNOWN tokens become special added tokens, USER_DEFINED ones non-special added
// tokens (both matched in the raw text, as llama.cpp's tokenizer_st_partition does); add_bos_token
// / add_eos_token become the post-processor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera {

class GgufFile;

// The special ids of tokenizer.ggml.*, with llama.cpp's defaults for what the file leaves out.
struct GgufSpecialTokens {
  std::optional<int32_t> bos, eos, eot, eom, unk, sep, pad, mask;
  bool add_bos = false, add_eos = false;
  // End of generation: eos, eot, eom and the CONTROL tokens whose text llama-vocab.cpp lists as
  // ending a turn ("<|eot_id|>", "<|im_end|>", "<end_of_turn>", ...), ascending.
  std::vector<int32_t> eog;
};

// Throws tessera::Error naming the file and the key for missing, malformed or inconsistent
// metadata (Error(unsupported) for a tokenizer model or pre-tokenizer tessera does not know).
// `special`, when given, receives the special ids.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& f,
                                               GgufSpecialTokens* special = nullptr);

}  // namespace tessera
