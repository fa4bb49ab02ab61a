// The checks of a request's own input, each in one place (Engine::prepare composes them). Every
// failure is a RequestError naming the field at fault.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera {

class Tokenizer;
class KvPool;

// A generation's options, before its prompt is known: sampling (validate_sampling_options),
// max_tokens in [1, context] (unless max_tokens_to_context), min_tokens in [0, max_tokens],
// stop_token_ids in the vocabulary, no empty stop string.
void check_generate_options(const GenerateOptions& g, int context_length, int vocab_size);
// A classification's: sampling and top_logprobs in [0, 20].
void check_classify_options(const ClassifyOptions& o);
// Every token id that reaches a model is checked by this one function (issue #29): the prompt's
// ids at prepare (below), again at the scheduler's admission (a PreparedRequest is a public
// struct that a caller can fill by hand), and the developer commands' (DirectRunner). "" when
// each id is in [0, vocab_size), else "token id N at index I is outside the vocabulary [0, V)".
std::string token_range_error(std::span<const int32_t> ids, int vocab_size);
// Token ids given as the prompt: not empty, each in [0, vocab_size).
void check_prompt_ids(std::span<const int32_t> ids, int vocab_size, const std::string& field);
// Token ids the tokenizer made of a text: a tokenizer.json whose added tokens lie past the
// model's vocabulary loads (several published checkpoints carry such unused tokens), and a text
// that uses one is refused naming the token, which the model has no embedding for.
void check_tokenized_ids(std::span<const int32_t> ids, int vocab_size, const std::string& field,
                         const Tokenizer& tokenizer);

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

// Why a request can never run (empty when it can), checked at the scheduler's admission: an
// empty prompt, an id outside [0, vocab) (token_range_error), more positions than the context,
// or more KV blocks than the whole pool holds.
std::string admission_error(std::span<const int32_t> prompt, int vocab, int need, int context,
                            const KvPool& pool, int step_tokens);

// A bidirectional model's request (PlanSeq::whole): only embeddings (each position's K/V depend
// on later tokens, so no decode step or chunk could extend them), each within one step's tokens.
std::string whole_prompt_error(int prompt_len, int step_tokens, bool embedding);

}  // namespace tessera
