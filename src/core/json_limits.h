// Limits on the JSON tessera reads from files and requests (config.json, the safetensors header,
// tokenizer files, --messages files, JSONL prompts, HTTP bodies): the nesting depth, checked
// before any parser sees the text. nlohmann::json parses iteratively but copies, compares and
// dumps recursively, so a deeply nested document overflows the stack later, far from the parse
// (issue #29); simdjson has its own limit, which tokenizer_load.cpp sets to the same value.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tessera/error.h"

namespace tessera {

// Deeper than any real config, tokenizer or request (a few levels; a JSON schema for
// structured output a few dozen), shallow enough for recursive code on an 8 MiB stack.
inline constexpr int kMaxJsonDepth = 128;

// The byte offset at which `text` opens its (max_depth + 1)th nested array or object, or npos
// when it never nests that deep. A scan over the bytes that skips strings (escapes included),
// with memchr through the strings, so it costs a fraction of a parse; it does not validate the
// JSON.
size_t json_depth_overflow(std::string_view text, int max_depth = kMaxJsonDepth);

// Throws Error(kind) "<what>: JSON nested deeper than 128 levels (at byte N)".
void check_json_depth(std::string_view text, const std::string& what,
                      ErrorKind kind = ErrorKind::invalid_argument);

// check_json_depth, then parse: Error(kind) "<what>: not valid JSON: <the parser's words>".
template <class Json = nlohmann::json>
Json parse_json(std::string_view text, const std::string& what,
                ErrorKind kind = ErrorKind::invalid_argument) {
  check_json_depth(text, what, kind);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(kind, what + ": not valid JSON: " + e.what());
  }
}

}  // namespace tessera
