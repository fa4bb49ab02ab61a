// Text-side stop conditions of one request: stop strings matched across token boundaries and
// never emitted. Text arrives in pieces (from the incremental detokenizer); the checker releases
// only text that can no longer be the start of a stop string, and cuts at the first match.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class StopChecker {
 public:
  explicit StopChecker(std::vector<std::string> stops);

  // Appends `piece`; returns the text that is now safe to emit (possibly empty). After a match,
  // matched() is true, the returned text ends right before the stop string, and later calls
  // return nothing.
  std::string push(std::string_view piece);
  // Releases whatever was held back (call when generation ends without a match).
  std::string flush();

  bool matched() const { return matched_ >= 0; }
  const std::string& matched_stop() const { return stops_[matched_]; }
  const std::string& text() const { return text_; }  // everything emitted or held, cut at a match

 private:
  std::vector<std::string> stops_;
  std::string text_;    // all text so far (cut at the match)
  size_t emitted_ = 0;  // bytes of text_ released
  int matched_ = -1;
};

// Length of the longest prefix of `s` (in bytes) that ends on a UTF-8 character boundary and is
// at most `n` bytes.
size_t utf8_floor(std::string_view s, size_t n);

}  // namespace tessera
