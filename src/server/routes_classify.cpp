// POST /v1/classify (tessera's own): one forward per prompt, the next token at each prompt's last
// position with its logprob, optionally the top alternatives and the full logits row.
//   request:  {"model"?, "prompt": <as /v1/completions>, "top_logprobs": 0..20,
//              "return_logits": false, "add_special_tokens": true, sampling fields}
//   response: {"id": "cls-...", "object": "classification", "created", "model",
//              "data": [{"index", "token", "text", "logprob", "prompt_tokens",
//                        "top_logprobs": [{"token", "text", "logprob"}] (when asked),
//                        "logits": [...] (when asked)}],
//              "usage": {"prompt_tokens", "completion_tokens": 0, "total_tokens"}}
#include <ctime>

#include "server/generation.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/routes.h"

namespace tessera::server {

namespace {

void classify(RequestContext& ctx) {
  Engine& engine = ctx.state.engine;
  ClassifyRequest r = parse_classify_request(request_json(ctx));
  check_model(ctx.state, r.model);
  std::vector<PreparedClassify> prompts;
  int prompt_total = 0;
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    try {
      prompts.push_back(engine.prepare(r.prompts[i], r.opts));
    } catch (const RequestError& e) {
      if (e.field() != "prompt") throw;
      throw ApiError(400, "prompt " + std::to_string(i) + ": " + e.what(), "invalid_request_error",
                     e.field(), e.code());
    }
    prompt_total += static_cast<int>(prompts.back().prompt.size());
  }
  std::vector<ClassifyResult> results;
  {
    QueueSlots slots(ctx.state, static_cast<int>(prompts.size()), "prompts", "prompt");
    results = engine.classify(prompts);
  }
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const ClassifyResult& c = results[i];
    if (!c.error.empty()) {
      ApiError e = api_error_from_failed(c.error);
      throw ApiError(e.status, "prompt " + std::to_string(i) + ": " + c.error, e.type, "prompt");
    }
    nlohmann::json j = {{"index", i},
                        {"token", c.token},
                        {"text", c.text},
                        {"logprob", c.logprob},
                        {"prompt_tokens", c.prompt_tokens}};
    if (r.opts.top_logprobs > 0) {
      nlohmann::json top = nlohmann::json::array();
      for (const auto& t : c.top_logprobs)
        top.push_back({{"token", t.id}, {"text", t.text}, {"logprob", t.logprob}});
      j["top_logprobs"] = std::move(top);
    }
    if (r.opts.return_logits) j["logits"] = c.logits;
    data.push_back(std::move(j));
  }
  ctx.state.count_prompt_tokens(prompt_total);
  ctx.state.observe_latency(
      ctx.endpoint,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.t_start).count());
  set_json(ctx.res, 200,
           {{"id", new_response_id("cls-")},
            {"object", "classification"},
            {"created", static_cast<int64_t>(std::time(nullptr))},
            {"model", ctx.state.opts.model_name},
            {"data", std::move(data)},
            {"usage", usage_json(prompt_total, 0)}});
}

}  // namespace

void register_classify_routes(httplib::Server& svr, ServerState& state) {
  post(svr, state, "/v1/classify", "classify", classify);
}

}  // namespace tessera::server
