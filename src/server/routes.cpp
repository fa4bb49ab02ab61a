#include "server/routes.h"

#include <cstdio>
#include <new>
#include <optional>

#include "server/connection.h"
#include "server/cors.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace tessera::server {

using Clock = std::chrono::steady_clock;

namespace {

// Routes and their methods, for 404 vs 405 and the metrics label of requests no handler saw.
struct Known {
  const char* path;
  const char* method;
  const char* endpoint;
};
const Known kKnown[] = {{"/v1/completions", "POST", "completions"},
                        {"/v1/chat/completions", "POST", "chat"},
                        {"/v1/classify", "POST", "classify"},
                        {"/v1/models", "GET", "models"},
                        {"/health", "GET", "health"},
                        {"/metrics", "GET", "metrics"},
                        {"/v1/responses", "POST", "responses"},
                        {"/v1/embeddings", "POST", "embeddings"}};

const Known* known(const std::string& path) {
  for (const auto& k : kKnown)
    if (path == k.path) return &k;
  if (path.rfind("/v1/models/", 0) == 0) return &kKnown[3];
  return nullptr;
}

const char* endpoint_label(const std::string& path) {
  const Known* k = known(path);
  return k ? k->endpoint : "other";
}

bool equal_constant_time(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

void log_request(const ServerState& st, const httplib::Request& req, int status,
                 Clock::time_point t0) {
  if (!st.opts.log_requests && status < 500) return;
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::fprintf(stderr, "tessera serve: %s %s -> %d (%.1f ms)\n", req.method.c_str(),
               req.path.c_str(), status, ms);
}

struct InFlight {
  explicit InFlight(ServerState& s) : st(s) { st.http_in_flight.fetch_add(1); }
  ~InFlight() { st.http_in_flight.fetch_sub(1); }
  ServerState& st;
};

}  // namespace

void set_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void set_error(httplib::Response& res, const ApiError& e) {
  set_json(res, e.status, error_json(e));
}

nlohmann::json request_json(const RequestContext& ctx) {
  return parse_json_body(ctx.body);
}

namespace {

// The --api-key check: nullopt when the request may pass.
std::optional<ApiError> auth_error(const ServerState& state, const httplib::Request& req) {
  if (state.opts.api_key.empty() || req.path == "/health") return std::nullopt;
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (auth.rfind(prefix, 0) == 0 &&
      equal_constant_time(auth.substr(prefix.size()), state.opts.api_key))
    return std::nullopt;
  return ApiError(401,
                  auth.empty() ? "missing API key: send it as 'Authorization: Bearer <key>'"
                               : "incorrect API key provided",
                  "authentication_error", "", "invalid_api_key");
}

// Answers a request that failed the key check (outside post(), which throws the error instead).
httplib::Server::HandlerResponse reject_unauthorized(ServerState& state,
                                                     const httplib::Request& req,
                                                     httplib::Response& res, const ApiError& e) {
  set_error(res, e);
  res.set_header("WWW-Authenticate", "Bearer");
  state.count_http(endpoint_label(req.path), 401);
  return httplib::Server::HandlerResponse::Handled;
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

// A POST answered before its body was read (a wrong key, a multipart body, draining) must still
// take the body off the connection: a keep-alive client sends its next request on the same
// socket, and unread body bytes would be parsed as that request. Bodies within the size limit
// are read and dropped; otherwise the response closes the connection.
void discard_body(const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& reader, size_t limit, bool reader_used) {
  bool ok = !reader_used && res.status != 413;
  if (ok) {
    size_t n = 0;
    auto drop = [&](const char*, size_t len) {
      n += len;
      return n <= limit;
    };
    ok = req.is_multipart_form_data()
             ? reader([](const httplib::MultipartFormData&) { return true; }, drop)
             : reader(drop);
  }
  if (!ok) res.set_header("Connection", "close");
}

}  // namespace

void post(httplib::Server& svr, ServerState& state, const char* pattern, const char* endpoint,
          RouteHandler fn) {
  svr.Post(pattern, [&state, endpoint, fn](const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader& reader) {
    bool reader_used = false, body_read = false;
    handle(state, endpoint, req, res, [&](RequestContext& ctx) {
      if (auto e = auth_error(state, req)) {
        res.set_header("WWW-Authenticate", "Bearer");
        throw *e;
      }
      if (req.is_multipart_form_data())
        bad_request(
            "multipart bodies are not accepted: send a JSON object (Content-Type: "
            "application/json)");
      // httplib reads "-1" with strtoull, as 2^64 - 1, and answers 413 "too large" (issue #29);
      // a length that is not a decimal byte count is the client's malformed request, and its
      // body is never read (the connection closes instead: see discard_body).
      if (req.has_header("Content-Length")) {
        const std::string cl = req.get_header_value("Content-Length");
        if (cl.empty() || cl.size() > 19 ||
            cl.find_first_not_of("0123456789") != std::string::npos) {
          reader_used = true;
          bad_request("Content-Length '" + cl + "' is not a byte count");
        }
      }
      const size_t limit = state.opts.max_body_bytes;
      bool too_large = false;
      // httplib sets 413 itself when Content-Length alone exceeds the payload limit.
      bool ok = false;
      if (res.status != 413) {
        reader_used = true;
        ok = reader([&](const char* data, size_t n) {
          if (ctx.body.size() + n > limit) {
            too_large = true;
            return false;
          }
          ctx.body.append(data, n);
          return true;
        });
      }
      body_read = ok;
      if (too_large || res.status == 413)
        throw ApiError(
            413,
            "the request body exceeds the server's limit of " + std::to_string(limit) + " bytes",
            "invalid_request_error", "", "request_too_large");
      if (!ok && current_connection() && current_connection()->timed_out)
        throw ApiError(408,
                       "the request body did not arrive within " +
                           seconds_text(state.opts.limits.body_timeout_ms) + " (--body-timeout)",
                       "invalid_request_error", "", "request_timeout");
      if (!ok) bad_request("the request body could not be read");
      res.status = -1;
      fn(ctx);
    });
    if (!body_read) discard_body(req, res, reader, state.opts.max_body_bytes, reader_used);
  });
}

void check_model(const ServerState& state, const std::string& model) {
  if (model.empty() || model == state.opts.model_name) return;
  throw ApiError(404,
                 "The model '" + model + "' does not exist (this server serves '" +
                     state.opts.model_name + "')",
                 "invalid_request_error", "model", "model_not_found");
}

void handle(ServerState& state, const char* endpoint, const httplib::Request& req,
            httplib::Response& res, const RouteHandler& fn) {
  RequestContext ctx{state, req, res, endpoint, Clock::now(), std::make_shared<InFlight>(state),
                     {}};
  try {
    if (state.draining.load() || (state.unhealthy.load() && std::string(endpoint) == "health"))
      throw ApiError(503, "the server is shutting down", "server_error", "", "shutting_down");
    fn(ctx);
    if (res.status == -1) res.status = 200;
  } catch (const ApiError& e) {
    set_error(res, e);
  } catch (const Error& e) {
    set_error(res, api_error_from(e));
  } catch (const std::bad_alloc&) {
    set_error(res, ApiError(500, "out of memory while handling the request", "server_error"));
  } catch (const std::exception& e) {
    set_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
  } catch (...) {
    set_error(res, ApiError(500, "internal error", "server_error"));
  }
  state.count_http(endpoint, res.status);
  log_request(state, req, res.status, ctx.t_start);
}

void install_guards(httplib::Server& svr, ServerState& state) {
  // Requests without a body are checked before routing. One with a body is checked once httplib
  // or post() has read the body off the socket (see discard_body): by post() for the POST routes,
  // by the error handler below for the rest (httplib reads the body before it answers 404).
  svr.set_pre_routing_handler([&state](const httplib::Request& req, httplib::Response& res) {
    if (is_cors_preflight(req)) {  // before the key check: browsers send preflights without it
      state.count_http(endpoint_label(req.path), answer_cors_preflight(state.cors, req, res));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (has_body(req)) return httplib::Server::HandlerResponse::Unhandled;
    auto e = auth_error(state, req);
    return e ? reject_unauthorized(state, req, res, *e)
             : httplib::Server::HandlerResponse::Unhandled;
  });
  // httplib calls this for every response with status >= 400; ours already have a body.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([&state](const httplib::Request& req,
                                                                      httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_)
      return httplib::Server::HandlerResponse::Unhandled;
    if (auto a = (res.status == 404 || res.status == 405) ? auth_error(state, req) : std::nullopt)
      return reject_unauthorized(state, req, res, *a);
    ApiError e(res.status, "", "invalid_request_error");
    const Known* k = known(req.path);
    if (res.status == 404 && k && req.method != k->method) {
      e = ApiError(
          405,
          "method " + req.method + " is not allowed on " + req.path + " (use " + k->method + ")",
          "invalid_request_error", "", "method_not_allowed");
      res.set_header("Allow", k->method);
    } else if (res.status == 404) {
      e = ApiError(404, "unknown endpoint: " + req.method + " " + req.path, "invalid_request_error",
                   "", "unknown_url");
    } else if (res.status == 413) {
      e = ApiError(413,
                   "the request body exceeds the server's limit of " +
                       std::to_string(state.opts.max_body_bytes) + " bytes",
                   "invalid_request_error", "", "request_too_large");
    } else if (res.status == 414) {
      e = ApiError(414, "the request URI is too long", "invalid_request_error");
    } else if (res.status < 500) {
      e = ApiError(res.status, "malformed HTTP request", "invalid_request_error");
    } else {
      e = ApiError(res.status, "internal error", "server_error");
    }
    set_error(res, e);
    state.count_http(endpoint_label(req.path), e.status);
    return httplib::Server::HandlerResponse::Handled;
  }));
  // Every response httplib writes passes here, errors and event streams included.
  svr.set_post_routing_handler([&state](const httplib::Request& req, httplib::Response& res) {
    add_cors_headers(state.cors, req, res);
  });
  // Handlers catch everything themselves; this is the last net should httplib's own code throw.
  svr.set_exception_handler(
      [&state](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
        set_error(res, ApiError(500, "internal error", "server_error"));
        state.count_http(endpoint_label(req.path), 500);
      });
}

}  // namespace tessera::server
