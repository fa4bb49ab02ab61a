// POST /v1/embeddings bodies and responses (https://platform.openai.com/docs/api-reference/
// embeddings/create): pure functions over JSON (tests/server/test_embeddings.cpp).
//   request:  {"model"?, "input": string | [string] | [id] | [[id]], "dimensions"?: N,
//              "encoding_format"?: "float" | "base64", "user"?,
//              tessera's: "pooling"?: "mean" | "cls" | "last", "normalize"?: bool,
//              "add_special_tokens"?: bool, "prompt_name"?: a sentence-transformers prompt}
//   response: {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
//              "model", "usage": {"prompt_tokens", "total_tokens"}}
// base64 is the vector's little-endian float32 bytes (what the official clients decode; the
// Node client asks for it by default).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera::server {

struct EmbeddingsRequest {
  std::string model;
  std::vector<Prompt> inputs;
  EmbedOptions opts;
  bool base64 = false;
};

EmbeddingsRequest parse_embeddings_request(const nlohmann::json& body);

// RFC 4648 base64 of the floats' little-endian bytes.
std::string base64_floats(const std::vector<float>& v);

nlohmann::json embedding_item(int index, const std::vector<float>& v, bool base64);

}  // namespace tessera::server
