// The HTTP routes, one file per family (routes_completions.cpp, routes_chat.cpp,
// routes_info.cpp, routes_classify.cpp, routes_responses.cpp, routes_embeddings.cpp), and the
// wrapper every handler runs in (routes.cpp): it refuses work while draining, turns every
// exception into an OpenAI-style error response, and counts the request in /metrics. Nothing
// throws out of a handler.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/api_error.h"
#include "server/server_state.h"

namespace tessera::server {

struct RequestContext {
  ServerState& state;
  const httplib::Request& req;
  httplib::Response& res;
  std::string endpoint;  // metrics label: completions, chat, classify, models, ...
  std::chrono::steady_clock::time_point t_start;
  // Held while the request is in flight; a streamed response keeps a copy until its last byte.
  std::shared_ptr<void> in_flight;
  std::string body;  // POST routes: the request body, read by post() within the size limit
};

using RouteHandler = std::function<void(RequestContext&)>;

// Runs fn for one request with the guarantees above.
void handle(ServerState& state, const char* endpoint, const httplib::Request& req,
            httplib::Response& res, const RouteHandler& fn);

// Registers a POST route whose handler gets the body in ctx.body. The body is read here rather
// than by httplib, which caps application/x-www-form-urlencoded bodies (curl -d's default
// content type) at 8 KiB whatever the payload limit; every content type is read as JSON.
void post(httplib::Server& svr, ServerState& state, const char* pattern, const char* endpoint,
          RouteHandler fn);

void set_json(httplib::Response& res, int status, const nlohmann::json& body);
void set_error(httplib::Response& res, const ApiError& e);

// The request body as a JSON object (400 when it is not), and the model name check (404).
nlohmann::json request_json(const RequestContext& ctx);
void check_model(const ServerState& state, const std::string& model);

// Authentication (--api-key), unknown endpoints (404), wrong methods (405), oversized bodies
// (413) and the server's own parse failures, all as OpenAI error objects.
void install_guards(httplib::Server& svr, ServerState& state);

void register_completion_routes(httplib::Server& svr, ServerState& state);
void register_chat_routes(httplib::Server& svr, ServerState& state);
void register_info_routes(httplib::Server& svr, ServerState& state);
void register_classify_routes(httplib::Server& svr, ServerState& state);
void register_responses_routes(httplib::Server& svr, ServerState& state);
void register_embeddings_routes(httplib::Server& svr, ServerState& state);

}  // namespace tessera::server
