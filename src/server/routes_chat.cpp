// POST /v1/chat/completions: messages through the model's chat template (Engine::prepare, as
// Engine::chat renders them), n choices through the scheduler, as one response or
// chat.completion.chunk events. With tools (tool_request.h) the template offers them, required /
// named choices are enforced by a grammar, and the output is parsed into tool_calls
// (tool_output.h).
#include <ctime>

#include "server/generation.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/tool_output.h"

namespace tessera::server {

namespace {

void chat(RequestContext& ctx) {
  Engine& engine = ctx.state.engine;
  const nlohmann::json body = request_json(ctx);
  const auto in_order = nlohmann::ordered_json::parse(ctx.body);  // valid: request_json read it
  ChatRequest r = parse_chat_request(body, &in_order);
  check_model(ctx.state, r.model);
  if (!engine.has_chat_template())
    bad_request(
        "this model has no chat template (tokenizer_config.json chat_template): use "
        "/v1/completions",
        "messages");
  // OpenAI's default without max_tokens: as many tokens as the context has left.
  r.gen.max_tokens_to_context = !r.max_tokens_given;
  const ToolFormat tool_format = tool_format_for(engine.info().model_type);
  const bool tools = r.tools.active();
  if (tools) {
    if (tool_format == ToolFormat::none)
      bad_request("tool calling is not supported for this model's family ('" +
                      engine.info().model_type +
                      "'): tessera reads tool calls of Qwen, Llama 3 "
                      "and Gemma models",
                  "tools", "unsupported_parameter");
    r.gen.tools = r.tools.tools.dump();
    OutputConstraint c = tool_call_constraint(r.tools, tool_format);
    if (c.kind != OutputConstraint::Kind::none) r.gen.constraint = std::move(c);
  }
  // Rendered through the template and tokenized as Engine::chat does, checked once.
  PreparedRequest req = engine.prepare(r.messages, r.gen);
  const int n_prompt = static_cast<int>(req.prompt.size());

  auto run = start_choices(ctx, {req}, r.n);
  const std::string id = new_response_id("chatcmpl-");
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const std::string& model = ctx.state.opts.model_name;
  if (r.stream) {
    StreamFormat fmt;
    fmt.chat = true;
    fmt.id = id;
    fmt.model = model;
    fmt.created = created;
    fmt.include_usage = r.include_usage;
    fmt.logprobs = r.logprobs;
    fmt.prompt_tokens = {n_prompt};
    fmt.tools = tools;
    fmt.tool_format = tool_format;
    fmt.parallel_tool_calls = r.tools.parallel;
    stream_response(ctx, run, std::move(fmt));
    return;
  }
  run->wait_all();
  nlohmann::json choices = nlohmann::json::array();
  int completion_tokens = 0;
  for (size_t c = 0; c < run->size(); ++c) {
    const GenerateResult& res = run->result(static_cast<int>(c));
    completion_tokens += static_cast<int>(res.ids.size());
    nlohmann::json choice =
        chat_choice(run->specs()[c].index, res.text,
                    r.logprobs ? chat_logprobs_json(res.logprobs) : nlohmann::json(nullptr),
                    openai_finish_reason(res.finish_reason));
    if (tools) {
      ParsedOutput p = parse_tool_output(tool_format, r.tools.parallel, res.text);
      if (!p.calls.empty()) {
        nlohmann::json& m = choice["message"];
        m["content"] = p.content.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.content);
        m["tool_calls"] = tool_calls_json(p.calls);
        if (res.finish_reason == FinishReason::stop) choice["finish_reason"] = "tool_calls";
      }
    }
    choices.push_back(std::move(choice));
  }
  set_json(ctx.res, 200,
           chat_response(id, created, model, std::move(choices),
                         usage_json(n_prompt, completion_tokens)));
}

}  // namespace

void register_chat_routes(httplib::Server& svr, ServerState& state) {
  post(svr, state, "/v1/chat/completions", "chat", chat);
}

}  // namespace tessera::server
