// POST /v1/completions: prompt(s) x n choices through the scheduler, as one response or a stream
// of text_completion chunks.
#include <ctime>

#include "server/generation.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/response_format.h"
#include "server/routes.h"
#include "server/sse.h"

namespace tessera::server {

namespace {

void completions(RequestContext& ctx) {
  Engine& engine = ctx.state.engine;
  CompletionRequest r = parse_completion_request(request_json(ctx));
  // The schema with the client's key order (request_json sorts keys; docs/GRAMMAR.md).
  keep_schema_order(nlohmann::ordered_json::parse(ctx.body), r.gen.constraint);
  check_model(ctx.state, r.model);
  // Each prompt checked and tokenized once; a RequestError is a 400 naming its field.
  std::vector<PreparedRequest> prompts;
  for (const auto& p : r.prompts) prompts.push_back(engine.prepare(p, r.gen));
  std::vector<int> prompt_tokens;
  for (const auto& p : prompts) prompt_tokens.push_back(static_cast<int>(p.prompt.size()));

  auto run = start_choices(ctx, prompts, r.n);
  const std::string id = new_response_id("cmpl-");
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const std::string& model = ctx.state.opts.model_name;
  if (r.stream) {
    StreamFormat fmt;
    fmt.chat = false;
    fmt.id = id;
    fmt.model = model;
    fmt.created = created;
    fmt.include_usage = r.include_usage;
    fmt.logprobs = r.logprobs.has_value();
    fmt.prompt_tokens = prompt_tokens;
    stream_response(ctx, run, std::move(fmt));
    return;
  }
  run->wait_all();
  nlohmann::json choices = nlohmann::json::array();
  int completion_tokens = 0;
  for (size_t c = 0; c < run->size(); ++c) {
    const GenerateResult& res = run->result(static_cast<int>(c));
    completion_tokens += static_cast<int>(res.ids.size());
    nlohmann::json lp = nullptr;
    if (r.logprobs) {
      int offset = 0;
      lp = completion_logprobs_json(res.logprobs, offset);
    }
    choices.push_back(completion_choice(run->specs()[c].index, res.text, std::move(lp),
                                        openai_finish_reason(res.finish_reason)));
  }
  int prompt_total = 0;
  for (int t : prompt_tokens) prompt_total += t;
  set_json(ctx.res, 200,
           completion_response(id, created, model, std::move(choices),
                               usage_json(prompt_total, completion_tokens)));
}

}  // namespace

void register_completion_routes(httplib::Server& svr, ServerState& state) {
  post(svr, state, "/v1/completions", "completions", completions);
}

}  // namespace tessera::server
