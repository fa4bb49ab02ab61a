#include "grammar/int_range.h"

#include <algorithm>
#include <string>

namespace tessera::grammar {

namespace {

constexpr int64_t kMaxMagnitude = 9999999999999999;  // 16 digits

Expr digit_range(char a, char b) {
  return Expr::chars({{static_cast<uint32_t>(a), static_cast<uint32_t>(b)}});
}
Expr any_digits(size_t n) {
  return Expr::repeat(digit_range('0', '9'), static_cast<int>(n), static_cast<int>(n));
}

// Digit strings of one length from x to y (x <= y, same length; leading zeros allowed here).
Expr same_length(const std::string& x, const std::string& y) {
  if (x.empty()) return Expr::seq();
  if (x[0] == y[0])
    return Expr::seq({digit_range(x[0], x[0]), same_length(x.substr(1), y.substr(1))});
  const std::string rx = x.substr(1), ry = y.substr(1);
  const bool x_floor = std::all_of(rx.begin(), rx.end(), [](char c) { return c == '0'; });
  const bool y_ceil = std::all_of(ry.begin(), ry.end(), [](char c) { return c == '9'; });
  std::vector<Expr> alts;
  char lo = x[0], hi = y[0];
  if (!x_floor) {
    alts.push_back(Expr::seq({digit_range(lo, lo), same_length(rx, std::string(rx.size(), '9'))}));
    ++lo;
  }
  std::optional<Expr> top;
  if (!y_ceil) {
    top = Expr::seq({digit_range(hi, hi), same_length(std::string(ry.size(), '0'), ry)});
    --hi;
  }
  if (lo <= hi) alts.push_back(Expr::seq({digit_range(lo, hi), any_digits(rx.size())}));
  if (top) alts.push_back(std::move(*top));
  return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
}

// Non-negative integers in [a, b], by number of digits.
void non_negative(int64_t a, int64_t b, std::vector<Expr>& alts) {
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  for (size_t len = sa.size(); len <= sb.size(); ++len) {
    const std::string lo = len == sa.size() ? sa : "1" + std::string(len - 1, '0');
    const std::string hi = len == sb.size() ? sb : std::string(len, '9');
    alts.push_back(same_length(lo, hi));
  }
}

}  // namespace

Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  const int64_t a = std::max(lo.value_or(-kMaxMagnitude), -kMaxMagnitude);
  const int64_t b = std::min(hi.value_or(kMaxMagnitude), kMaxMagnitude);
  std::vector<Expr> alts;
  if (b >= 0) non_negative(std::max<int64_t>(a, 0), b, alts);
  if (a < 0) {  // "-" and the magnitudes in [max(1, -b), -a]
    std::vector<Expr> neg;
    non_negative(std::max<int64_t>(1, -b), -a, neg);
    alts.push_back(Expr::seq(
        {Expr::literal("-"), neg.size() == 1 ? std::move(neg[0]) : Expr::alt(std::move(neg))}));
  }
  return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
}

}  // namespace tessera::grammar
