#include "core/json_limits.h"

#include <cstring>

namespace tessera {

size_t json_depth_overflow(std::string_view text, int max_depth) {
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  int depth = 0;
  for (const char* p = begin; p < end; ++p) {
    switch (*p) {
      case '"':
        // To the closing quote: one not preceded by an odd run of backslashes. memchr, because
        // most of a large file (tokenizer.json's vocabulary) is strings.
        for (;;) {
          p = static_cast<const char*>(std::memchr(p + 1, '"', static_cast<size_t>(end - p - 1)));
          if (!p) return std::string_view::npos;
          const char* q = p;
          while (*(q - 1) == '\\') --q;  // stops at the opening quote at the latest
          if ((p - q) % 2 == 0) break;
        }
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return static_cast<size_t>(p - begin);
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced text is the parser's to report
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

void check_json_depth(std::string_view text, const std::string& what, ErrorKind kind) {
  const size_t at = json_depth_overflow(text);
  if (at != std::string_view::npos)
    throw Error(kind, what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                          " levels (at byte " + std::to_string(at) + ")");
}

}  // namespace tessera
