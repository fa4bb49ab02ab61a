// The architecture registry: one line per model file. (A table rather than self-registering
// statics, which a static library would silently drop.)
#include <algorithm>

#include "core/check.h"
#include "models/model.h"

namespace tessera {

// Each architecture file defines its factory.
using Factory = std::unique_ptr<Model>(ModelDir&, ComputeBackend&, const LoadOptions&);
Factory make_gemma2, make_gemma3, make_gemma4, make_llama, make_mistral, make_qwen2, make_qwen3;

namespace {

struct Entry {
  std::vector<std::string> architectures, model_types;
  ModelFactory factory;
};

const std::vector<Entry>& entries() {
  // Per architecture file: the config.json "architectures" names and "model_type" names it
  // answers to, and its factory.
  static const std::vector<Entry> e = {
      // The *Model names (the decoder without its LM head) are what sentence-transformers
      // directories hold (embedding models); a tied head serves their one discarded pick.
      {{"Gemma2ForCausalLM", "Gemma2Model"}, {"gemma2"}, make_gemma2},
      {{"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3TextModel"},
       {"gemma3_text", "gemma3"},
       make_gemma3},
      {{"Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"},
       {"gemma4_text", "gemma4"},
       make_gemma4},
      {{"LlamaForCausalLM", "LlamaModel"}, {"llama"}, make_llama},
      {{"MistralForCausalLM", "MistralModel"}, {"mistral"}, make_mistral},
      {{"Qwen2ForCausalLM", "Qwen2Model"}, {"qwen2"}, make_qwen2},
      {{"Qwen3ForCausalLM", "Qwen3Model"}, {"qwen3"}, make_qwen3},
  };
  return e;
}

}  // namespace

std::vector<std::string> known_architectures() {
  std::vector<std::string> out;
  for (const auto& e : entries())
    out.insert(out.end(), e.architectures.begin(), e.architectures.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::unique_ptr<Model> load_model(ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts) {
  const auto& cfg = dir.config();
  std::vector<std::string> archs;
  if (cfg.contains("architectures") && cfg["architectures"].is_array())
    for (const auto& a : cfg["architectures"])
      if (a.is_string()) archs.push_back(a.get<std::string>());
  std::string model_type = cfg.contains("model_type") && cfg["model_type"].is_string()
                               ? cfg["model_type"].get<std::string>()
                               : "";
  auto build = [&](const Entry& e, const std::string& arch) {
    auto m = e.factory(dir, backend, opts);
    m->set_architecture(arch);
    return m;
  };
  for (const auto& a : archs)
    for (const auto& e : entries())
      if (std::find(e.architectures.begin(), e.architectures.end(), a) != e.architectures.end())
        return build(e, a);
  if (archs.empty() && !model_type.empty())
    for (const auto& e : entries())
      if (std::find(e.model_types.begin(), e.model_types.end(), model_type) != e.model_types.end())
        return build(e, e.architectures.front());
  std::string names;
  for (const auto& a : known_architectures()) names += (names.empty() ? "" : ", ") + a;
  std::string got =
      archs.empty() ? "model_type '" + model_type + "'" : "architecture '" + archs[0] + "'";
  fail(ErrorKind::unsupported,
       dir.config_path() + ": unknown " + got + " (tessera supports " + names + ")");
}

}  // namespace tessera
