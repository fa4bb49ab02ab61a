// Streaming detokenization. Text is emitted as the difference between the decode of a small
// window of recent ids and the decode of that window's already-emitted prefix
// (ids_[prefix_offset_, read_offset_), whose text is kept in emitted_), as vLLM and HF's
// DecodeStream do. Rules that keep the concatenation equal to decode(all ids):
//  - special tokens that decode would drop are dropped on arrival, so that the decoder sees the
//    same token sequence (Metaspace and Strip decoders treat the first token specially; the
//    window always starts with an emitted token, so both decodes see the same first token);
//  - nothing is emitted while the text ends in U+FFFD (an incomplete UTF-8 sequence);
//  - nothing is emitted while the last token is a byte token <0xNN>: HF's ByteFallback decoder
//    turns a whole run of them into U+FFFD per byte if any byte is invalid, so the run must be
//    complete before any of it is final.
#include "tokenizer/tokenizer.h"

namespace tessera {

namespace {

bool is_byte_token(const std::string& t) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '+';
  };
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) && hex(t[4]);
}

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

// Keeps memory bounded on long streams: ids before the window are no longer needed.
constexpr size_t kTrimAt = 4096;

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tok, bool skip_special_tokens)
    : tok_(tok), skip_special_(skip_special_tokens) {}

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string token = tok_.id_to_token(id);
  if (token.empty()) return "";                         // unknown: decode skips it too
  if (skip_special_ && tok_.is_special(id)) return "";  // dropped by decode as well
  ids_.push_back(id);
  if (is_byte_token(token)) return "";
  std::span<const int32_t> all(ids_);
  std::string text = tok_.decode(all.subspan(prefix_offset_), false);
  if (text.size() <= emitted_.size() || ends_with_replacement(text) ||
      text.compare(0, emitted_.size(), emitted_) != 0) {
    return "";
  }
  std::string out = text.substr(emitted_.size());
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  emitted_ = tok_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), false);
  if (prefix_offset_ >= kTrimAt) {
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_offset_));
    read_offset_ -= prefix_offset_;
    prefix_offset_ = 0;
  }
  return out;
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ == ids_.size()) return "";
  std::span<const int32_t> all(ids_);
  std::string text = tok_.decode(all.subspan(prefix_offset_), false);
  std::string out = text.size() > emitted_.size() ? text.substr(emitted_.size()) : "";
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  emitted_ = tok_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), false);
  return out;
}

}  // namespace tessera
