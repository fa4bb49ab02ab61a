#include "tokenizer/json_util.h"

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

void JNode::fail(const std::string& why) const {
  fail_model(*file + ": " + (path.empty() ? std::string("(root)") : path) + ": " + why);
}

void JNode::unsupported(const std::string& what) const {
  tessera::fail(ErrorKind::unsupported, *file + ": " +
                                            (path.empty() ? std::string("(root)") : path) + ": " +
                                            what + " is not supported by tessera's tokenizer");
}

std::optional<JNode> JNode::get(std::string_view key) const {
  if (!e.is_object()) fail("expected an object");
  JElem child;
  if (e.get_object().at_key(key).get(child) != simdjson::SUCCESS) return std::nullopt;
  if (child.is_null()) return std::nullopt;
  return JNode{child, file, path.empty() ? std::string(key) : path + "." + std::string(key)};
}

JNode JNode::at(std::string_view key) const {
  auto n = get(key);
  if (!n) fail("missing \"" + std::string(key) + "\"");
  return *n;
}

JNode JNode::index(size_t i, JElem child) const {
  return JNode{child, file, path + "[" + std::to_string(i) + "]"};
}

std::string_view JNode::str() const {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) fail("expected a string");
  return s;
}

int64_t JNode::integer() const {
  int64_t v;
  if (e.get_int64().get(v) == simdjson::SUCCESS) return v;
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS && u <= INT64_MAX) return static_cast<int64_t>(u);
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS &&
      d == static_cast<double>(static_cast<int64_t>(d)))
    return static_cast<int64_t>(d);
  fail("expected an integer");
}

double JNode::number() const {
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t v;
  if (e.get_int64().get(v) == simdjson::SUCCESS) return static_cast<double>(v);
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  fail("expected a number");
}

bool JNode::boolean() const {
  bool b;
  if (e.get_bool().get(b) != simdjson::SUCCESS) fail("expected true or false");
  return b;
}

std::string JNode::str_or(std::string_view key, std::string_view dflt) const {
  auto n = get(key);
  return std::string(n ? n->str() : dflt);
}

bool JNode::bool_or(std::string_view key, bool dflt) const {
  auto n = get(key);
  return n ? n->boolean() : dflt;
}

int64_t JNode::int_or(std::string_view key, int64_t dflt) const {
  auto n = get(key);
  return n ? n->integer() : dflt;
}

char32_t JNode::character(std::string_view key) const {
  JNode n = at(key);
  std::string_view s = n.str();
  size_t i = 0;
  if (s.empty()) n.fail("expected a single character, got \"\"");
  char32_t c = next_cp(s, i);
  if (i != s.size()) n.fail("expected a single character, got \"" + std::string(s) + "\"");
  return c;
}

}  // namespace tessera::tok
