#include "server/api_error.h"

namespace tessera::server {

nlohmann::json error_json(const ApiError& e) {
  using nlohmann::json;
  return {{"error",
           {{"message", e.what()},
            {"type", e.type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

ApiError api_error_from(const Error& e) {
  const std::string msg = e.what();
  if (const auto* r = dynamic_cast<const RequestError*>(&e))
    return ApiError(400, msg, "invalid_request_error", r->field(), r->code());
  if (e.kind() == ErrorKind::invalid_argument) return ApiError(400, msg, "invalid_request_error");
  return ApiError(500, msg, "server_error");
}

ApiError api_error_from_failed(const std::string& error) {
  if (error.rfind("step failed", 0) == 0) return ApiError(500, error, "server_error");
  return ApiError(400, error, "invalid_request_error");
}

}  // namespace tessera::server
