// GGUF files made by llama.cpp's own convert_hf_to_gguf.py and llama-quantize against transformers
// on the weights gguf-py's dequantize() gives back (tests/fixtures/gguf_models,
// scripts/fixtures/make_gguf_model_fixtures.py): the model file alone (io/gguf_model.cpp maps
// its metadata and names and undoes the converter's changes), the CPU's f32 logits at every
// position within 1e-4 of the row's largest logit, greedy continuations equal, on every ISA;
// every architecture and F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K covered.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "engine/direct_runner.h"
#include "fixtures.h"
#include "models/model.h"

namespace tessera {
namespace {

using testing::ModelFixture;
using testing::row_error;

std::vector<ModelFixture> gguf_fixtures() {
  return testing::load_model_fixtures(std::string(TESSERA_SOURCE_DIR) +
                                      "/tests/fixtures/gguf_models");
}

class GgufParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (auto& f : gguf_fixtures())
      if (f.name == GetParam()) fx_ = std::move(f);
    ASSERT_FALSE(fx_.name.empty());
    backend_ = make_cpu_backend();
    dir_ = std::make_unique<ModelDir>(fx_.dir + "/model.gguf");
    LoadOptions o;
    o.dtype = "f32";
    model_ = load_model(*dir_, *backend_, o);
  }
  ModelFixture fx_;
  std::unique_ptr<ComputeBackend> backend_;
  std::unique_ptr<ModelDir> dir_;
  std::unique_ptr<Model> model_;
};

TEST_P(GgufParity, EveryPositionMatchesTransformers) {
  EXPECT_EQ(model_->info().architecture,
            fx_.expected["architecture"].get<std::string>() == "MistralForCausalLM"
                ? "LlamaForCausalLM"  // GGUF's llama architecture
                : fx_.expected["architecture"].get<std::string>());
  const auto saved = cpu::active_isa();
  for (auto isa : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (static_cast<int>(isa) > static_cast<int>(cpu::detected_isa())) continue;
    cpu::set_cpu_isa(isa);
    for (size_t s = 0; s < fx_.sequences.size(); ++s) {
      DirectRunner r(*model_, static_cast<int>(fx_.sequences[s].size()));
      std::vector<std::vector<int32_t>> in{fx_.sequences[s]};
      auto rows = r.step(in, true)[0];
      ASSERT_EQ(rows.size(), fx_.logits[s].size());
      for (size_t p = 0; p < rows.size(); ++p)
        EXPECT_LE(row_error(rows[p], fx_.logits[s][p]), 1e-4)
            << cpu::isa_name(isa) << " sequence " << s << " position " << p;
    }
  }
  cpu::set_cpu_isa(saved);
}

TEST_P(GgufParity, GreedyMatchesTransformers) {
  // The file's own EOS (tokenizer.ggml.eos_token_id), which transformers' generate() used.
  const auto eos = fx_.expected["eos_token_id"].get<std::vector<int32_t>>();
  ASSERT_EQ(model_->info().eos_token_ids, std::vector<int>(eos.begin(), eos.end()));
  const int new_tokens = fx_.expected["new_tokens"].get<int>();
  for (size_t s = 0; s < fx_.sequences.size(); ++s) {
    const auto& seq = fx_.sequences[s];
    DirectRunner r(*model_, static_cast<int>(seq.size()) + new_tokens);
    std::vector<std::vector<int32_t>> in{seq};
    std::vector<float> last = r.step(in, false)[0].back();
    std::vector<int32_t> got;
    for (int i = 0; i < new_tokens; ++i) {
      const int32_t id =
          static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
      got.push_back(id);
      if (std::find(eos.begin(), eos.end(), id) != eos.end()) break;
      std::vector<std::vector<int32_t>> one{{id}};
      last = r.step(one, false)[0].back();
    }
    EXPECT_EQ(got, fx_.greedy[s]) << "sequence " << s;
  }
}

TEST_P(GgufParity, InfoCountsEveryQuantizedMatrix) {
  // Each block type of the file is reported at its affine form; dense files report none.
  int quantized = 0;
  for (const WeightFormatInfo& f : model_->info().weight_formats)
    if (f.bits) quantized += f.count;
  std::set<std::string> types;
  for (const auto& t : fx_.expected["gguf_tensor_types"]) types.insert(t.get<std::string>());
  const bool dense = types.count("Q8_0") + types.count("Q4_0") + types.count("Q4_1") +
                         types.count("Q5_0") + types.count("Q5_1") + types.count("Q4_K") +
                         types.count("Q5_K") + types.count("Q6_K") ==
                     0;
  if (dense)
    EXPECT_EQ(quantized, 0);
  else
    EXPECT_GE(quantized, 7 * model_->info().num_layers);  // q, k, v, o, gate, up, down
}

std::vector<std::string> case_names() {
  std::vector<std::string> n;
  for (const auto& f : gguf_fixtures()) n.push_back(f.name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, GgufParity, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

TEST(GgufFixtures, CoverEveryTypeAndArchitecture) {
  std::set<std::string> types, archs;
  for (const auto& f : gguf_fixtures()) {
    archs.insert(f.expected["architecture"].get<std::string>());
    for (const auto& t : f.expected["gguf_tensor_types"]) types.insert(t.get<std::string>());
  }
  for (const char* t :
       {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"})
    EXPECT_TRUE(types.count(t)) << t;
  for (const char* a : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                        "Qwen3ForCausalLM", "Gemma3ForCausalLM"})
    EXPECT_TRUE(archs.count(a)) << a;
}

}  // namespace
}  // namespace tessera
