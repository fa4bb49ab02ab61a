// Random bounded JSON schemas (the strict subset structured output covers) and a validator of
// JSON values against them, for the tests that sample under many schemas.
#pragma once

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace tessera::testing {

using nlohmann::json;

// Every string bounded (maxLength, enum, const, format) and every array (maxItems), so that an
// output always ends within a length the schema implies.
inline json random_schema(std::mt19937& rng, int depth = 0) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int kind = depth >= 2 ? pick(7) : pick(10);
  switch (kind) {
    case 0:
      return {{"type", "string"}, {"maxLength", pick(6)}};
    case 1:
      return {{"type", "integer"}};
    case 2:
      return {{"type", "number"}};
    case 3:
      return {{"type", "boolean"}};
    case 4:
      return {{"enum", json::array({"red", "gr\u00fcn", 7, nullptr})}};
    case 5:
      return {{"type", json::array({"string", "null"})}, {"minLength", 1}, {"maxLength", 3}};
    case 6:
      return pick(2) ? json{{"const", "k\"q"}} : json{{"type", "string"}, {"format", "date"}};
    case 7: {
      json s = {{"type", "array"}, {"items", random_schema(rng, depth + 1)}, {"maxItems", pick(4)}};
      return s;
    }
    case 8:
      return {
          {"anyOf", json::array({random_schema(rng, depth + 1), random_schema(rng, depth + 1)})}};
    default: {
      json props = json::object(), req = json::array();
      const int n = 1 + pick(4);
      for (int i = 0; i < n; ++i) {
        const std::string k =
            std::string(1, static_cast<char>('a' + i)) + (pick(2) ? "_\u00e9" : "");
        props[k] = random_schema(rng, depth + 1);
        if (pick(3)) req.push_back(k);
      }
      return {{"type", "object"},
              {"properties", props},
              {"required", req},
              {"additionalProperties", false}};
    }
  }
}

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Empty when v satisfies s, else what does not (the subset random_schema writes).
inline std::string violation(const json& v, const json& s, const std::string& at = "") {
  if (s.contains("const")) return v == s["const"] ? "" : at + ": not the const";
  if (s.contains("enum")) {
    for (const json& e : s["enum"])
      if (e == v) return "";
    return at + ": not in the enum";
  }
  if (s.contains("anyOf")) {
    for (const json& a : s["anyOf"])
      if (violation(v, a, at).empty()) return "";
    return at + ": matches no anyOf branch";
  }
  json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
  for (const json& t : types) {
    const std::string type = t.get<std::string>();
    if (type == "null" && v.is_null()) return "";
    if (type == "boolean" && v.is_boolean()) return "";
    if (type == "integer" && v.is_number_integer()) return "";
    if (type == "number" && v.is_number()) return "";
    if (type == "string" && v.is_string()) {
      const size_t n = code_points(v.get<std::string>());
      if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return at + ": too long";
      if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return at + ": too short";
      if (s.contains("format") && v.get<std::string>().size() != 10) return at + ": not a date";
      return "";
    }
    if (type == "array" && v.is_array()) {
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
        return at + ": too many items";
      for (size_t i = 0; i < v.size(); ++i) {
        std::string e = violation(v[i], s["items"], at + "/" + std::to_string(i));
        if (!e.empty()) return e;
      }
      return "";
    }
    if (type == "object" && v.is_object()) {
      for (const json& r : s["required"])
        if (!v.contains(r.get<std::string>())) return at + ": lacks " + r.get<std::string>();
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!s["properties"].contains(it.key())) return at + ": has extra key " + it.key();
        std::string e = violation(it.value(), s["properties"][it.key()], at + "/" + it.key());
        if (!e.empty()) return e;
      }
      return "";
    }
  }
  return at + ": wrong type";
}

}  // namespace tessera::testing
