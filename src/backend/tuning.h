// The parser of the backends' tuning strings (TESSERA_CPU_TUNING, TESSERA_CUDA_TUNING; README
// "Tuning"): a comma-separated list of key=value, blanks around items ignored, later keys
// overriding earlier ones. Each backend's tuning (cpu/cpu_tuning.h, cuda/cuda_tuning.h) lists its
// keys; an unknown key or value throws Error(invalid_argument) naming the variable, the key and
// what it allows.
#pragma once

#include <charconv>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "core/check.h"

namespace tessera {

struct TuningKey {
  const char* name;
  const char* values;                         // the allowed values as an error lists them
  std::function<bool(std::string_view)> set;  // false: not an allowed value
};

inline std::string_view tuning_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline void apply_tuning(const char* variable, std::string_view spec,
                         std::span<const TuningKey> keys) {
  std::string names;
  for (const TuningKey& k : keys) names += std::string(names.empty() ? "" : ", ") + k.name;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = tuning_trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string_view key = tuning_trim(item.substr(0, eq));
    const TuningKey* k = nullptr;
    for (const TuningKey& c : keys)
      if (key == c.name) k = &c;
    if (!k)
      fail_arg(std::string(variable) + ": unknown key '" + std::string(key) + "' (keys: " + names +
               ")");
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view{} : tuning_trim(item.substr(eq + 1));
    if (value.empty() || !k->set(value))
      fail_arg(std::string(variable) + ": " + k->name + "=" + std::string(value) +
               " is not allowed (" + k->name + ": " + k->values + ")");
  }
}

// on|off (also 1|0) into `out`.
inline bool tuning_bool(std::string_view v, bool& out) {
  if (v == "on" || v == "1") return out = true, true;
  if (v == "off" || v == "0") return out = false, true;
  return false;
}

// A name of `names` into `out`.
template <class E, size_t N>
bool tuning_enum(std::string_view v, const std::pair<const char*, E> (&names)[N], E& out) {
  for (const auto& [name, e] : names)
    if (v == name) return out = e, true;
  return false;
}

// A decimal integer in [lo, hi] into `out`.
inline bool tuning_int(std::string_view v, int lo, int hi, int& out) {
  int x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc{} || end != v.data() + v.size() || x < lo || x > hi) return false;
  out = x;
  return true;
}

}  // namespace tessera
