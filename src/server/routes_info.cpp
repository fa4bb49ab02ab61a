// GET /v1/models, /v1/models/{id}, /health and /metrics (Prometheus text format).
#include "server/routes.h"

namespace tessera::server {

namespace {

nlohmann::json model_json(const ServerState& st) {
  return {{"id", st.opts.model_name},
          {"object", "model"},
          {"created", st.started_unix},
          {"owned_by", "tessera"},
          {"max_model_len", st.engine.context_length()}};
}

}  // namespace

void register_info_routes(httplib::Server& svr, ServerState& state) {
  svr.Get("/v1/models", [&state](const httplib::Request& req, httplib::Response& res) {
    handle(state, "models", req, res, [](RequestContext& ctx) {
      set_json(ctx.res, 200,
               {{"object", "list"}, {"data", nlohmann::json::array({model_json(ctx.state)})}});
    });
  });
  svr.Get(R"(/v1/models/(.+))", [&state](const httplib::Request& req, httplib::Response& res) {
    handle(state, "models", req, res, [](RequestContext& ctx) {
      const std::string id = ctx.req.matches[1];
      if (id != ctx.state.opts.model_name)
        throw ApiError(404, "The model '" + id + "' does not exist", "invalid_request_error",
                       "model", "model_not_found");
      set_json(ctx.res, 200, model_json(ctx.state));
    });
  });
  // 200 while serving; 503 (from handle()) once shutdown has begun, so load balancers move on.
  svr.Get("/health", [&state](const httplib::Request& req, httplib::Response& res) {
    handle(state, "health", req, res, [](RequestContext& ctx) {
      set_json(ctx.res, 200, {{"status", "ok"}, {"model", ctx.state.opts.model_name}});
    });
  });
  svr.Get("/metrics", [&state](const httplib::Request& req, httplib::Response& res) {
    handle(state, "metrics", req, res, [](RequestContext& ctx) {
      ctx.res.status = 200;
      ctx.res.set_content(ctx.state.metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
    });
  });
}

}  // namespace tessera::server
