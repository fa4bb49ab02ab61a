// POST /v1/embeddings without a model: the request parser and the base64 encoding
// (server/embeddings_request.h), against OpenAI's API reference and Python's
// base64.b64encode(struct.pack('<Nf', ...)).
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/embeddings_request.h"

namespace tessera::server {
namespace {

using nlohmann::json;

std::string refused_param(const json& body) {
  try {
    parse_embeddings_request(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  ADD_FAILURE() << "accepted: " << body.dump();
  return "";
}

TEST(EmbeddingsRequest, InputForms) {
  EXPECT_EQ(parse_embeddings_request({{"input", "a"}}).inputs.size(), 1u);
  const auto list = parse_embeddings_request({{"input", {"a", "b", "c"}}});
  ASSERT_EQ(list.inputs.size(), 3u);
  EXPECT_EQ(std::get<std::string>(list.inputs[2]), "c");
  const auto ids = parse_embeddings_request({{"input", {2, 5, 7}}});
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(ids.inputs[0]), (std::vector<int32_t>{2, 5, 7}));
  const auto lists = parse_embeddings_request({{"input", json::array({{2, 5}, {9}})}});
  ASSERT_EQ(lists.inputs.size(), 2u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(lists.inputs[1]), (std::vector<int32_t>{9}));
}

TEST(EmbeddingsRequest, Options) {
  const auto r = parse_embeddings_request({{"input", "a"},
                                           {"model", "m"},
                                           {"dimensions", 8},
                                           {"encoding_format", "base64"},
                                           {"pooling", "cls"},
                                           {"normalize", false},
                                           {"user", "u"},
                                           {"prompt_name", "query"}});
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.opts.dimensions, 8);
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.opts.pooling, Pooling::cls);
  EXPECT_FALSE(r.opts.normalize);
  EXPECT_EQ(r.opts.prompt_name, "query");
  const auto d = parse_embeddings_request({{"input", "a"}, {"encoding_format", "float"}});
  EXPECT_FALSE(d.base64);
  EXPECT_EQ(d.opts.pooling, Pooling::automatic);
  EXPECT_TRUE(d.opts.normalize);
  EXPECT_EQ(d.opts.dimensions, 0);
}

TEST(EmbeddingsRequest, RefusalsNameTheField) {
  EXPECT_EQ(refused_param(json::object()), "input");
  EXPECT_EQ(refused_param({{"input", ""}}), "input");
  EXPECT_EQ(refused_param({{"input", json::array()}}), "input");
  EXPECT_EQ(refused_param({{"input", {"a", 1}}}), "input");
  EXPECT_EQ(refused_param({{"input", {1, "a"}}}), "input");
  EXPECT_EQ(refused_param({{"input", json::array({json::array()})}}), "input");
  EXPECT_EQ(refused_param({{"input", {-1}}}), "input");
  EXPECT_EQ(refused_param({{"input", {1.5}}}), "input");
  EXPECT_EQ(refused_param({{"input", 3}}), "input");
  EXPECT_EQ(refused_param({{"input", "a"}, {"dimensions", 0}}), "dimensions");
  EXPECT_EQ(refused_param({{"input", "a"}, {"dimensions", "8"}}), "dimensions");
  EXPECT_EQ(refused_param({{"input", "a"}, {"encoding_format", "bits"}}), "encoding_format");
  EXPECT_EQ(refused_param({{"input", "a"}, {"pooling", "max"}}), "pooling");
  EXPECT_EQ(refused_param({{"input", "a"}, {"normalize", 1}}), "normalize");
  EXPECT_EQ(refused_param({{"input", "a"}, {"model", 3}}), "model");
  EXPECT_EQ(refused_param({{"input", "a"}, {"prompt_name", 1}}), "prompt_name");
}

TEST(EmbeddingsRequest, Base64IsLittleEndianFloat32) {
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(base64_floats({0.5f, 1.5f, -0.25f}), "AAAAPwAAwD8AAIC+");
  EXPECT_EQ(base64_floats({}), "");
  const json item = embedding_item(3, {1.0f}, true);
  EXPECT_EQ(item["object"], "embedding");
  EXPECT_EQ(item["index"], 3);
  EXPECT_EQ(item["embedding"], "AACAPw==");
  EXPECT_EQ(embedding_item(0, {0.5f}, false)["embedding"], json::array({0.5}));
}

}  // namespace
}  // namespace tessera::server
