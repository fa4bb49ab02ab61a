// Errors the HTTP API returns, in OpenAI's shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "top_p", "code": null}}
// Route code throws ApiError; the handler wrapper (routes.cpp) turns it, tessera::Error and any
// other exception into a response, so nothing escapes a handler.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tessera/error.h"

namespace tessera::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string type, std::string param = "",
           std::string code = "")
      : std::runtime_error(message),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;  // param and code: null in the JSON when empty
};

// 400 invalid_request_error naming the parameter at fault.
[[noreturn]] inline void bad_request(const std::string& message, const std::string& param = "",
                                     const std::string& code = "") {
  throw ApiError(400, message, "invalid_request_error", param, code);
}

// {"error": {...}} for e.
nlohmann::json error_json(const ApiError& e);

// A tessera::Error from the engine as an API error: a RequestError is a 400 naming its field as
// the parameter (with its code), another invalid_argument a 400, the rest 500.
ApiError api_error_from(const Error& e);

// A request the scheduler failed in flight (GenerateResult::error): its step failing is the
// server's fault (500); anything else it refuses (a request the KV pool can never hold) is 400.
ApiError api_error_from_failed(const std::string& error);

}  // namespace tessera::server
