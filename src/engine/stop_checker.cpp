#include "engine/stop_checker.h"

#include <algorithm>

namespace tessera {

size_t utf8_floor(std::string_view s, size_t n) {
  n = std::min(n, s.size());
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

StopChecker::StopChecker(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopChecker::push(std::string_view piece) {
  if (matched()) return "";
  const size_t old = text_.size();
  text_.append(piece);
  if (!stops_.empty()) {
    // A match can only end inside the new piece, so it starts at or after old - (len - 1).
    size_t best = std::string::npos;
    int which = -1;
    for (size_t i = 0; i < stops_.size(); ++i) {
      const size_t from = old >= stops_[i].size() - 1 ? old - (stops_[i].size() - 1) : 0;
      const size_t at = text_.find(stops_[i], from);
      if (at != std::string::npos && at < best) best = at, which = static_cast<int>(i);
    }
    if (which >= 0) {
      matched_ = which;
      text_.resize(best);
      std::string out = text_.substr(std::min(emitted_, text_.size()));
      emitted_ = text_.size();
      return out;
    }
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t held = 0;
  for (const auto& stop : stops_)
    for (size_t k = std::min(stop.size() - 1, text_.size()); k > held; --k)
      if (text_.compare(text_.size() - k, k, stop, 0, k) == 0) {
        held = k;
        break;
      }
  const size_t safe = utf8_floor(text_, text_.size() - held);
  if (safe <= emitted_) return "";
  std::string out = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

std::string StopChecker::flush() {
  if (matched() || emitted_ >= text_.size()) return "";
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace tessera
