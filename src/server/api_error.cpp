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
  if (e.kind() != ErrorKind::invalid_argument) return ApiError(500, msg, "server_error");
  // Engine::validate's messages start with the option's name ("top_p must be in (0, 1]"); the
  // two multi-word ones are mapped to their request fields.
  static const char* params[] = {"temperature",
                                 "top_k",
                                 "top_p",
                                 "min_p",
                                 "repetition_penalty",
                                 "presence_penalty",
                                 "frequency_penalty",
                                 "top_logprobs",
                                 "max_tokens",
                                 "min_tokens"};
  std::string param;
  for (const char* p : params) {
    const std::string s = p;
    if (msg.compare(0, s.size(), s) == 0 && (msg.size() == s.size() || msg[s.size()] == ' '))
      param = s;
  }
  if (msg.rfind("stop token id", 0) == 0) param = "stop_token_ids";
  if (msg.rfind("stop strings", 0) == 0) param = "stop";
  return ApiError(400, msg, "invalid_request_error", param);
}

ApiError api_error_from_failed(const std::string& error) {
  if (error.rfind("step failed", 0) == 0) return ApiError(500, error, "server_error");
  return ApiError(400, error, "invalid_request_error");
}

}  // namespace tessera::server
