#include "server/embeddings_request.h"

#include <bit>
#include <cstring>
#include <limits>

#include "server/api_error.h"

namespace tessera::server {

using nlohmann::json;

namespace {

const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void invalid_input(const std::string& why) {
  bad_request(
      "'input' must be a string, a list of strings, a list of token ids or a list of "
      "token-id lists (" +
          why + ")",
      "input");
}

std::vector<int32_t> ids_of(const json& arr, size_t which) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const auto& v : arr) {
    if (!v.is_number_integer()) invalid_input("a token list holds a non-integer");
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      bad_request("'input': token id " + std::to_string(id) + " is out of range", "input");
    ids.push_back(static_cast<int32_t>(id));
  }
  if (ids.empty())
    bad_request("'input' holds an empty token list (input " + std::to_string(which) + ")", "input");
  return ids;
}

std::vector<Prompt> parse_inputs(const json& body) {
  const json* in = field(body, "input");
  if (!in) bad_request("'input' is required", "input");
  std::vector<Prompt> out;
  auto text = [&](const json& v, size_t i) {
    // OpenAI refuses empty strings: an empty input has no tokens to embed (without a BOS).
    if (v.get<std::string>().empty())
      bad_request("'input' " + std::to_string(i) + " is an empty string", "input");
    out.emplace_back(v.get<std::string>());
  };
  if (in->is_string()) {
    text(*in, 0);
  } else if (in->is_array()) {
    if (in->empty()) bad_request("'input' must not be an empty list", "input");
    const json& first = (*in)[0];
    for (size_t i = 0; i < in->size(); ++i) {
      const json& v = (*in)[i];
      if (first.is_string()) {
        if (!v.is_string()) invalid_input("strings mixed with other values");
        text(v, i);
      } else if (first.is_number_integer()) {
        out.emplace_back(ids_of(*in, 0));
        break;
      } else if (first.is_array()) {
        if (!v.is_array()) invalid_input("token-id lists mixed with other values");
        out.emplace_back(ids_of(v, i));
      } else {
        invalid_input("found " + std::string(v.type_name()));
      }
    }
  } else {
    invalid_input("got " + std::string(in->type_name()));
  }
  constexpr size_t kMaxInputs = 4096;
  if (out.size() > kMaxInputs)
    bad_request("too many inputs in one request (" + std::to_string(out.size()) + "; at most " +
                    std::to_string(kMaxInputs) + ")",
                "input");
  return out;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const json& body) {
  if (!body.is_object()) bad_request("the request body must be a JSON object");
  EmbeddingsRequest r;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) bad_request("'model' must be a string", "model");
    r.model = m->get<std::string>();
  }
  r.inputs = parse_inputs(body);
  if (const json* d = field(body, "dimensions")) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1 ||
        d->get<int64_t>() > std::numeric_limits<int32_t>::max())
      bad_request("'dimensions' must be a positive integer", "dimensions");
    r.opts.dimensions = static_cast<int>(d->get<int64_t>());
  }
  if (const json* e = field(body, "encoding_format")) {
    if (!e->is_string() || (*e != "float" && *e != "base64"))
      bad_request("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
    r.base64 = *e == "base64";
  }
  if (const json* u = field(body, "user"); u && !u->is_string())
    bad_request("'user' must be a string", "user");
  if (const json* p = field(body, "pooling")) {
    if (*p == "mean")
      r.opts.pooling = Pooling::mean;
    else if (*p == "cls")
      r.opts.pooling = Pooling::cls;
    else if (*p == "last")
      r.opts.pooling = Pooling::last;
    else
      bad_request("'pooling' must be \"mean\", \"cls\" or \"last\"", "pooling");
  }
  if (const json* n = field(body, "normalize")) {
    if (!n->is_boolean()) bad_request("'normalize' must be a boolean", "normalize");
    r.opts.normalize = n->get<bool>();
  }
  if (const json* pn = field(body, "prompt_name")) {
    if (!pn->is_string()) bad_request("'prompt_name' must be a string", "prompt_name");
    r.opts.prompt_name = pn->get<std::string>();
  }
  if (const json* a = field(body, "add_special_tokens")) {
    if (!a->is_boolean())
      bad_request("'add_special_tokens' must be a boolean", "add_special_tokens");
    r.opts.add_special_tokens = a->get<bool>();
  }
  return r;
}

std::string base64_floats(const std::vector<float>& v) {
  static const char* tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t w = 0;
    for (size_t k = 0; k < 3; ++k)
      w = (w << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    out += tab[(w >> 18) & 63];
    out += tab[(w >> 12) & 63];
    out += n > 1 ? tab[(w >> 6) & 63] : '=';
    out += n > 2 ? tab[w & 63] : '=';
  }
  return out;
}

json embedding_item(int index, const std::vector<float>& v, bool base64) {
  return {{"object", "embedding"},
          {"index", index},
          {"embedding", base64 ? json(base64_floats(v)) : json(v)}};
}

}  // namespace tessera::server
