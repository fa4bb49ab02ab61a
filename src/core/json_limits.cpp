#include "core/json_limits.h"

namespace tessera {

size_t json_depth_overflow(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included, cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
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
