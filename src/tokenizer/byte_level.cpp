#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace tessera::tok {

ByteLevelTable::ByteLevelTable() {
  for (int16_t& b : byte_of) b = -1;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
    std::string s;
    append_utf8(s, cp);
    utf8_len[b] = static_cast<uint8_t>(s.size());
    for (size_t i = 0; i < s.size(); ++i) utf8[b][i] = s[i];
    byte_of[cp] = static_cast<int16_t>(b);
  }
}

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable t;
  return t;
}

void byte_level_encode(std::string_view bytes, std::string& out) {
  const ByteLevelTable& t = byte_level_table();
  out.reserve(out.size() + bytes.size() * 2);
  for (unsigned char b : bytes) out.append(t.utf8[b], t.utf8_len[b]);
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const ByteLevelTable& t = byte_level_table();
  size_t mark = out.size();
  for (size_t i = 0; i < token.size();) {
    char32_t c = next_cp(token, i);
    if (c >= 324 || t.byte_of[c] < 0) {
      out.resize(mark);
      return false;
    }
    out.push_back(static_cast<char>(t.byte_of[c]));
  }
  return true;
}

}  // namespace tessera::tok
