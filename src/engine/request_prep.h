// The checks of a request's own input, each in one place (Engine::prepare composes them). Every
// failure is a RequestError naming the field at fault.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera {

// A generation's options, before its prompt is known: sampling (validate_sampling_options),
// max_tokens in [1, context] (unless max_tokens_to_context), min_tokens in [0, max_tokens],
// stop_token_ids in the vocabulary, no empty stop string.
void check_generate_options(const GenerateOptions& g, int context_length, int vocab_size);
// A classification's: sampling and top_logprobs in [0, 20].
void check_classify_options(const ClassifyOptions& o);
// Token ids given as the prompt: not empty, each in [0, vocab_size).
void check_prompt_ids(std::span<const int32_t> ids, int vocab_size, const std::string& field);

// max_tokens once the prompt's length is known: what the context leaves when
// max_tokens_to_context (failing when it leaves nothing), then min_tokens within it.
int resolve_max_tokens(const GenerateOptions& g, int prompt_tokens, int context_length,
                       const std::string& field);
// prompt + max_tokens within the context, in OpenAI's words (code context_length_exceeded,
// naming `field` when the prompt alone fills the context, else max_tokens).
void check_context(int prompt_tokens, int max_tokens, int context_length, const std::string& field);
// A prompt to classify within the context.
void check_classify_context(int prompt_tokens, int context_length);
// A bidirectional model's input within one forward step (its tokens see the later ones, so it
// cannot be chunked): code context_length_exceeded, naming --batch-tokens.
void check_whole_prompt(int prompt_tokens, int step_tokens);
// A bidirectional model only embeds: `what` (generate, classify) is refused, field "model".
void check_not_embedding_only(bool bidirectional, const std::string& what);

// The ids a generation stops on: the EOS set unless ignore_eos, then stop_token_ids not in it.
std::vector<int32_t> stop_ids_for(const GenerateOptions& g, std::span<const int32_t> eos);

}  // namespace tessera
