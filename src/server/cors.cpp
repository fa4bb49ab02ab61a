#include "server/cors.h"

#include <algorithm>
#include <cctype>

#include "core/check.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace tessera::server {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// RFC 9110's token characters: a requested header name is echoed only when it is one.
bool is_token(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void check_origin(const std::string& o) {
  const size_t sep = o.find("://");
  const std::string scheme = sep == std::string::npos ? "" : o.substr(0, sep);
  const std::string host = sep == std::string::npos ? "" : o.substr(sep + 3);
  if (scheme != "http" && scheme != "https")
    fail_arg("--allowed-origins: '" + o +
             "' is not an origin (expected '*' or scheme://host[:port], e.g. "
             "http://localhost:3000)");
  if (host.empty() || host.find('/') != std::string::npos)
    fail_arg("--allowed-origins: '" + o +
             "' has a path or a trailing slash; an origin is scheme://host[:port] only");
}

}  // namespace

CorsPolicy make_cors_policy(const std::vector<std::string>& origins, bool has_api_key,
                            bool allow_any_with_key) {
  CorsPolicy p;
  for (const std::string& raw : origins) {
    // CLI11 splits repeated flags; a comma list in one argument is split here.
    size_t start = 0;
    while (start <= raw.size()) {
      const size_t comma = std::min(raw.find(',', start), raw.size());
      const std::string o = lower(trim(raw.substr(start, comma - start)));
      start = comma + 1;
      if (o.empty()) continue;
      if (o == "*") {
        p.any = true;
        continue;
      }
      check_origin(o);
      p.origins.push_back(o);
    }
  }
  if (p.any && has_api_key && !allow_any_with_key)
    fail_arg(
        "--allowed-origins '*' with --api-key lets a page on any site use a key it is given; "
        "list the origins, or add --allow-any-origin-with-key to mean it");
  return p;
}

std::optional<std::string> cors_allow_origin(const CorsPolicy& p, const std::string& origin) {
  if (origin.empty()) return std::nullopt;
  if (p.any) return std::string("*");
  const std::string o = lower(origin);
  if (std::find(p.origins.begin(), p.origins.end(), o) != p.origins.end()) return origin;
  return std::nullopt;
}

bool is_cors_preflight(const httplib::Request& req) {
  return req.method == "OPTIONS" && req.has_header("Origin") &&
         req.has_header("Access-Control-Request-Method");
}

int answer_cors_preflight(const CorsPolicy& p, const httplib::Request& req,
                          httplib::Response& res) {
  const std::string origin = req.get_header_value("Origin");
  const auto allow = cors_allow_origin(p, origin);
  if (!allow) {
    const ApiError e(403,
                     "cross-origin requests from '" + origin +
                         "' are not allowed (start the server with --allowed-origins " + origin +
                         ")",
                     "invalid_request_error", "", "origin_not_allowed");
    res.status = e.status;
    res.set_content(dump(error_json(e)), "application/json");
    return res.status;
  }
  // Authorization and Content-Type always; the rest the page asks for (the official clients
  // send their own X-Stainless-* headers), each a valid header name.
  std::string headers = "Authorization, Content-Type";
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  size_t start = 0;
  while (start < asked.size()) {
    const size_t comma = std::min(asked.find(',', start), asked.size());
    const std::string h = trim(asked.substr(start, comma - start));
    start = comma + 1;
    const std::string l = lower(h);
    if (is_token(h) && l != "authorization" && l != "content-type") headers += ", " + h;
  }
  res.status = 204;
  res.set_header("Access-Control-Allow-Origin", *allow);
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.set_header("Access-Control-Allow-Headers", headers);
  res.set_header("Access-Control-Max-Age", std::to_string(kCorsMaxAgeSeconds));
  // The answer depends on the Origin and on the headers asked for: caches must key on both.
  res.set_header("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
  return res.status;
}

void add_cors_headers(const CorsPolicy& p, const httplib::Request& req, httplib::Response& res) {
  if (res.has_header("Access-Control-Allow-Origin")) return;  // a preflight's own answer
  const auto allow = cors_allow_origin(p, req.get_header_value("Origin"));
  if (!allow) return;
  res.set_header("Access-Control-Allow-Origin", *allow);
  if (*allow != "*" && !res.has_header("Vary")) res.set_header("Vary", "Origin");
}

}  // namespace tessera::server
