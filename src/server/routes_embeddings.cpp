// POST /v1/embeddings: every input through Engine::embed at once (one prefill each, batched by
// the scheduler with everything else, no KV kept), as classify's prompts are. Request and
// response shapes: server/embeddings_request.h.
#include "server/embeddings_request.h"
#include "server/openai_response.h"
#include "server/routes.h"

namespace tessera::server {

namespace {

void embeddings(RequestContext& ctx) {
  Engine& engine = ctx.state.engine;
  EmbeddingsRequest r = parse_embeddings_request(request_json(ctx));
  check_model(ctx.state, r.model);
  if (r.opts.dimensions > engine.embedding_size())
    bad_request("'dimensions' must be at most " + std::to_string(engine.embedding_size()) +
                    " for this model (got " + std::to_string(r.opts.dimensions) + ")",
                "dimensions");
  std::vector<PreparedEmbed> prepared;
  int prompt_total = 0;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    try {
      prepared.push_back(engine.prepare(r.inputs[i], r.opts));
    } catch (const RequestError& e) {
      if (e.field() != "prompt") throw;
      throw ApiError(400, "input " + std::to_string(i) + ": " + e.what(), "invalid_request_error",
                     "input", e.code());
    }
    prompt_total += static_cast<int>(prepared.back().prompt.size());
  }
  std::vector<EmbedResult> results;
  {
    QueueSlots slots(ctx.state, static_cast<int>(prepared.size()), "inputs", "input");
    results = engine.embed(prepared);
  }
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].error.empty()) {
      ApiError e = api_error_from_failed(results[i].error);
      throw ApiError(e.status, "input " + std::to_string(i) + ": " + results[i].error, e.type,
                     "input");
    }
    data.push_back(embedding_item(static_cast<int>(i), results[i].embedding, r.base64));
  }
  ctx.state.count_prompt_tokens(prompt_total);
  ctx.state.observe_latency(
      ctx.endpoint,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.t_start).count());
  set_json(ctx.res, 200,
           {{"object", "list"},
            {"data", std::move(data)},
            {"model", ctx.state.opts.model_name},
            {"usage", {{"prompt_tokens", prompt_total}, {"total_tokens", prompt_total}}}});
}

}  // namespace

void register_embeddings_routes(httplib::Server& svr, ServerState& state) {
  post(svr, state, "/v1/embeddings", "embeddings", embeddings);
}

}  // namespace tessera::server
