// POST /v1/responses: OpenAI's Responses API, stateless (server/responses_request.h for what is
// accepted). The input becomes chat messages through the model's chat template as for
// /v1/chat/completions, one generation through the scheduler, and a response object or the
// Responses event stream (server/responses_format.h).
#include <ctime>

#include "server/generation.h"
#include "server/openai_response.h"
#include "server/responses_format.h"
#include "server/responses_request.h"
#include "server/routes.h"
#include "server/sse.h"

namespace tessera::server {

namespace {

void responses(RequestContext& ctx) {
  Engine& engine = ctx.state.engine;
  ResponsesRequest r = parse_responses_request(request_json(ctx));
  check_model(ctx.state, r.model);
  if (!engine.has_chat_template())
    bad_request(
        "this model has no chat template (tokenizer_config.json chat_template): use "
        "/v1/completions",
        "input");
  // As chat without max_tokens: up to the end of the context.
  r.gen.max_tokens_to_context = !r.max_tokens_given;
  PreparedRequest req;
  try {
    req = engine.prepare(r.messages, r.gen);
  } catch (const RequestError& e) {
    // The engine names chat's field; here the turns came from 'input' (and 'instructions').
    const std::string field = e.field() == "messages" ? "input" : e.field();
    throw ApiError(400, e.what(), "invalid_request_error", field, e.code());
  }

  ResponseInfo info;
  info.id = new_response_id("resp_");
  info.message_id = new_response_id("msg_");
  info.model = ctx.state.opts.model_name;
  info.created_at = static_cast<int64_t>(std::time(nullptr));
  info.instructions = r.instructions;
  if (r.max_tokens_given) info.max_output_tokens = r.gen.max_tokens;
  info.temperature = r.gen.sampling.temperature;
  info.top_p = r.gen.sampling.top_p;
  info.metadata = r.metadata;
  info.user = r.user;
  info.input_tokens = static_cast<int>(req.prompt.size());

  auto run = start_choices(ctx, {req}, 1);
  if (r.stream) {
    stream_events(ctx, run, [&info] { return std::make_shared<ResponsesStreamWriter>(info); });
    return;
  }
  run->wait_all();
  set_json(ctx.res, 200, response_object(info, run->result(0)));
}

}  // namespace

void register_responses_routes(httplib::Server& svr, ServerState& state) {
  post(svr, state, "/v1/responses", "responses", responses);
}

}  // namespace tessera::server
