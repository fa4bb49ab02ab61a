// Encoding and decoding of HfTokenizer (loading is in tokenizer_load.cpp).
#include <cstdio>

#include "core/check.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

void HfTokenizer::encode_piece(std::string_view piece, bool at_origin,
                               std::vector<int32_t>& ids) const {
  if (!pre_tokenizer_) {
    model_->tokenize(piece, ids);
    return;
  }
  pre_tokenizer_->pre_tokenize(piece, at_origin,
                               [&](std::string_view word, bool) { model_->tokenize(word, ids); });
}

// ref: tokenizers TokenizerImpl::encode_single_sequence and AddedVocabulary::
// extract_and_normalize.
std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    fail_arg("tokenizer: the text is not valid UTF-8 (byte " + std::string(byte) +
             " at byte offset " + std::to_string(bad) + ")");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<AddedVocabulary::Segment> raw, norm;
  std::string normalized;
  added_.split(text, false, raw);
  for (const auto& seg : raw) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    if (seg.begin == seg.end) continue;
    std::string_view piece = text.substr(seg.begin, seg.end - seg.begin);
    bool origin = seg.begin == 0;
    if (normalizer_) {
      normalized.assign(piece);
      normalizer_->normalize(normalized);
      piece = normalized;
      if (piece.empty()) continue;
    }
    if (!added_.has_normalized_tokens()) {
      encode_piece(piece, origin, ids);
      continue;
    }
    added_.split(piece, true, norm);
    for (const auto& s : norm) {
      if (s.id >= 0) {
        ids.push_back(s.id);
      } else if (s.begin != s.end) {
        encode_piece(piece.substr(s.begin, s.end - s.begin), origin && s.begin == 0, ids);
      }
    }
  }
  if (add_special_tokens && post_processor_) post_processor_->add_special_tokens(ids);
  return ids;
}

std::optional<std::string_view> HfTokenizer::token_of(int32_t id) const {
  if (const AddedToken* a = added_.by_id(id)) return std::string_view(a->content);
  if (const std::string_view* t = model_->id_to_token(id)) return *t;
  return std::nullopt;
}

// ref: TokenizerImpl::decode: unknown ids are dropped, special tokens too when asked, the rest
// goes through the decoder (or is joined with spaces when there is none).
std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    auto t = token_of(id);
    if (!t) continue;
    if (skip_special_tokens && added_.is_special_content(*t)) continue;
    tokens.emplace_back(*t);
  }
  std::string out;
  if (decoder_) {
    decoder_->decode_chain(tokens);
    for (const std::string& t : tokens) out += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) out.push_back(' ');
      out += tokens[i];
    }
  }
  return out;
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  int32_t id = added_.find(token);
  if (id < 0) id = model_->token_to_id(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::string HfTokenizer::id_to_token(int32_t id) const {
  auto t = token_of(id);
  return t ? std::string(*t) : std::string();
}

bool HfTokenizer::is_special(int32_t id) const {
  auto t = token_of(id);
  return t && added_.is_special_content(*t);
}

}  // namespace tessera::tok
