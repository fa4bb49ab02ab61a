// Cross-origin requests from web pages (--allowed-origins): the Fetch standard's CORS protocol
// (https://fetch.spec.whatwg.org/#http-cors-protocol), server side.
//   - A preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin
//     is answered 204 before authentication (browsers send preflights without credentials) with
//     the methods, the headers (Authorization always: the Fetch standard's "*" does not cover
//     it) and a max-age; from any other origin it is a 403 naming the origin and the flag.
//   - Every other response to an allowed origin, errors and event streams included, carries
//     Access-Control-Allow-Origin (and Vary: Origin unless the policy is "*").
// No cookies are involved (keys travel in Authorization), so Allow-Credentials is never sent.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::server {

struct CorsPolicy {
  std::vector<std::string> origins;  // exact origins ("http://localhost:3000"), or "*"
  bool any = false;                  // "*" was given
};

// Checks --allowed-origins: each "*" or "scheme://host[:port]" (no path, no trailing slash), and
// "*" together with an API key only with allow_any_with_key (a page on any site could then spend
// a key a user pasted into it). Throws tessera::Error(invalid_argument) naming what is wrong.
CorsPolicy make_cors_policy(const std::vector<std::string>& origins, bool has_api_key,
                            bool allow_any_with_key);

// The Access-Control-Allow-Origin value for a request's Origin header, or nullopt.
std::optional<std::string> cors_allow_origin(const CorsPolicy& p, const std::string& origin);

bool is_cors_preflight(const httplib::Request& req);

// Answers a preflight (204 or 403); returns the status.
int answer_cors_preflight(const CorsPolicy& p, const httplib::Request& req, httplib::Response& res);

// Adds the CORS headers to any response about to be written (httplib's post-routing handler,
// which runs for every response, the ones httplib answers itself included).
void add_cors_headers(const CorsPolicy& p, const httplib::Request& req, httplib::Response& res);

inline constexpr int kCorsMaxAgeSeconds = 7200;  // Chromium's cap on caching a preflight

}  // namespace tessera::server
