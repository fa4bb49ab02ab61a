// Errors that cross the public API. Load/configuration problems and bad requests are reported
// as tessera::Error with a message naming the file, key, tensor or option at fault; programmer
// invariants abort with file:line (TS_ASSERT in src/core/check.h) instead.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

enum class ErrorKind {
  invalid_argument,  // a bad option or request parameter
  invalid_model,     // a malformed or inconsistent model directory
  io,                // a file that cannot be opened or read
  out_of_memory,     // the memory limit (or the KV pool) cannot hold what was asked
  unsupported,       // an architecture or feature tessera does not implement
  cancelled,
  internal,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// A request whose own input is at fault (Engine::prepare, Engine::validate): an
// invalid_argument naming the field (an option as the HTTP API spells it, e.g. "top_p",
// "max_tokens", "stop_token_ids", or "prompt" / "messages") and, for a request longer than the
// context, code "context_length_exceeded".
class RequestError : public Error {
 public:
  RequestError(std::string field, const std::string& what, std::string code = "")
      : Error(ErrorKind::invalid_argument, what),
        field_(std::move(field)),
        code_(std::move(code)) {}
  const std::string& field() const { return field_; }
  const std::string& code() const { return code_; }

 private:
  std::string field_, code_;
};

}  // namespace tessera
