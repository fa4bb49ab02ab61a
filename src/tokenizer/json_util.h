// Typed access to tokenizer.json through simdjson's DOM, with errors that name the file and the
// JSON path at fault ("tokenizer.json: pre_tokenizer.pretokenizers[0].behavior: ...").
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::tok {

using JElem = simdjson::dom::element;

// A JSON value together with where it came from, for error messages.
struct JNode {
  JElem e;
  const std::string* file;
  std::string path;

  [[noreturn]] void fail(const std::string& why) const;          // Error(invalid_model)
  [[noreturn]] void unsupported(const std::string& what) const;  // Error(unsupported)

  bool is_null() const { return e.is_null(); }
  bool is_object() const { return e.is_object(); }
  bool is_array() const { return e.is_array(); }
  bool is_string() const { return e.is_string(); }

  // Member access: nullopt when absent or null.
  std::optional<JNode> get(std::string_view key) const;
  JNode at(std::string_view key) const;  // required: fails when absent or null
  JNode index(size_t i, JElem child) const;

  std::string_view str() const;
  int64_t integer() const;
  double number() const;
  bool boolean() const;

  std::string_view str(std::string_view key) const { return at(key).str(); }
  std::string str_or(std::string_view key, std::string_view dflt) const;
  bool bool_or(std::string_view key, bool dflt) const;
  int64_t int_or(std::string_view key, int64_t dflt) const;
  // A single character (Metaspace replacement, Strip content).
  char32_t character(std::string_view key) const;
  // The node's "type" field.
  std::string_view type() const { return str("type"); }
};

}  // namespace tessera::tok
