// Output processing of a generation: what each sampled id becomes. Stop ids end the request
// (the id is not output); other ids are detokenized incrementally, run through the stop-string
// checker (text that may start a stop string is held back), reported with their logprobs, handed
// to the token callback and queued as stream events; max_tokens, a stop string or the callback's
// "cancel" end the request.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/stop_checker.h"

namespace tessera {

// Streams text for generated ids (the incremental detokenizer, or a test double).
class TextStream {
 public:
  virtual ~TextStream() = default;
  virtual std::string push(int32_t id) = 0;
  virtual std::string flush() = 0;
};

// A token's own text, for logprobs (the tokenizer's piece); may be empty.
using TokenTextFn = std::function<std::string(int32_t)>;

// Row `row`'s n most likely alternatives (at most out.top_n), most likely first.
void top_logprobs(const SampleOutput& out, int row, int n, const TokenTextFn& text,
                  std::vector<TokenLogprob>& dst);

class GenerateOutput final : public RequestOutput {
 public:
  struct Options {
    int max_tokens = 1;
    std::vector<int32_t> stop_ids;  // end the request; never output
    std::vector<std::string> stop;  // stop strings: matched across tokens, never output
    bool logprobs = false;
    int top_logprobs = 0;
    std::unique_ptr<TextStream> text;  // null: no tokenizer, text stays empty
    TokenCallback on_token;
    TokenTextFn token_text;
    // The options a generation's GenerateOptions and stop set give (text, on_token and
    // token_text left for the caller).
    static Options from(const GenerateOptions& g, std::vector<int32_t> stop_ids);
  };
  explicit GenerateOutput(Options o);

  Taken take(RequestShared& sh, int32_t id, const SampleOutput& out, int row) override;
  std::string release() override;
  void fill(RequestShared& sh, const std::string& error, int prompt_tokens) override;

 private:
  Options o_;
  StopChecker stops_;
  std::vector<int32_t> ids_;
  std::vector<StepLogprobs> logprobs_;
  std::optional<int32_t> stop_token_;
};

// A generation for the scheduler: the prompt's ids, the options as validated (Engine::prepare),
// the ids it stops on (the EOS set and stop_token_ids), its text stream (null without a
// tokenizer) and its token callback.
RequestSpec generate_request(std::vector<int32_t> prompt, const GenerateOptions& g,
                             std::vector<int32_t> stop_ids, std::unique_ptr<TextStream> text,
                             TokenCallback on_token, TokenTextFn token_text,
                             std::shared_ptr<RequestShared> shared);

// Under sh.mu, once the result is complete: queues the last text and the result for a streaming
// caller, and wakes the caller.
void publish_result(RequestShared& sh, std::string tail);

}  // namespace tessera
