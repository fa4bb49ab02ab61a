// MLX-quantized directories against transformers on the dequantized models
// (tests/fixtures/quant, scripts/fixtures/make_quant_fixtures.py): the CPU's f32 logits at every
// position within 1e-4 of the row's largest logit, the greedy continuations equal; every ISA; and
// tessera's quantizer (quant/affine.h, `tessera quantize`) bit-identical to the fixture's
// transcription of MLX's, for every width and group size and for whole model directories.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "engine/direct_runner.h"
#include "fixtures.h"
#include "io/safetensors.h"
#include "models/mlx_quantize.h"
#include "models/model.h"
#include "models/quant_config.h"
#include "process_temp.h"
#include "quant/affine.h"

namespace tessera {
namespace {

using testing::ModelFixture;
using testing::row_error;

std::string quant_root() {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/quant";
}

std::vector<ModelFixture> quant_fixtures() {
  return testing::load_model_fixtures(quant_root());
}

class QuantParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (auto& f : quant_fixtures())
      if (f.name == GetParam()) fx_ = std::move(f);
    ASSERT_FALSE(fx_.name.empty());
    backend_ = make_cpu_backend();
    dir_ = std::make_unique<ModelDir>(fx_.dir);
    LoadOptions o;
    o.dtype = "f32";
    model_ = load_model(*dir_, *backend_, o);
  }
  ModelFixture fx_;
  std::unique_ptr<ComputeBackend> backend_;
  std::unique_ptr<ModelDir> dir_;
  std::unique_ptr<Model> model_;
};

TEST_P(QuantParity, EveryPositionMatchesDequantizedTransformers) {
  const auto saved = cpu::active_isa();
  for (auto isa : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (static_cast<int>(isa) > static_cast<int>(cpu::detected_isa())) continue;
    cpu::set_cpu_isa(isa);
    for (size_t s = 0; s < fx_.sequences.size(); ++s) {
      DirectRunner r(*model_, static_cast<int>(fx_.sequences[s].size()));
      std::vector<std::vector<int32_t>> in{fx_.sequences[s]};
      auto rows = r.step(in, true)[0];  // one prefill: the dequantize-to-panels path
      ASSERT_EQ(rows.size(), fx_.logits[s].size());
      for (size_t p = 0; p < rows.size(); ++p)
        EXPECT_LE(row_error(rows[p], fx_.logits[s][p]), 1e-4)
            << cpu::isa_name(isa) << " sequence " << s << " position " << p;
    }
  }
  cpu::set_cpu_isa(saved);
}

TEST_P(QuantParity, GreedyMatchesTransformers) {
  // Prefill, then one token per step (the packed GEMV path), greedy, stopping at EOS as
  // transformers' generate() does.
  const auto eos = fx_.expected["eos_token_id"].get<std::vector<int32_t>>();
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

TEST_P(QuantParity, InfoReportsTheFormats) {
  // Every quantized module the fixture lists is counted at its format.
  const auto& mods = fx_.expected["quantized_modules"];
  int listed = 0, counted = 0;
  for (const auto& [path, f] : mods.items()) {
    (void)path;
    (void)f;
    ++listed;
  }
  for (const WeightFormatInfo& f : model_->info().weight_formats)
    if (f.bits) counted += f.count;
  EXPECT_EQ(counted, listed);
}

std::vector<std::string> case_names() {
  std::vector<std::string> n;
  for (const auto& f : quant_fixtures()) n.push_back(f.name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(Mlx, QuantParity, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

TEST(QuantFixtures, Present) {
  EXPECT_GE(case_names().size(), 6u);
}

// The packing fixture: for every width and group size, tessera's quantizer gives the fixture's
// words, scales and biases bit for bit, and unpacking gives its values.
TEST(MlxQuantizer, BitIdenticalForEveryWidthAndGroup) {
  SafetensorsFile f(quant_root() + "/packing/quant.safetensors");
  const auto& t = f.tensors();
  int checked = 0;
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int gs : {32, 64, 128}) {
      const std::string key = "b" + std::to_string(bits) + "_g" + std::to_string(gs);
      const TensorInfo& w = t.at("w_" + key);
      const TensorInfo& pw = t.at("q_" + key + ".weight");
      const TensorInfo& ps = t.at("q_" + key + ".scales");
      const TensorInfo& pb = t.at("q_" + key + ".biases");
      const TensorInfo& pv = t.at("q_" + key + ".values");
      const int64_t rows = w.shape[0], cols = w.shape[1], words = quant::words_per_row(cols, bits);
      const int64_t groups = cols / gs;
      ASSERT_EQ(pw.shape, (std::vector<int64_t>{rows, words})) << key;
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> row(static_cast<size_t>(cols)), s(groups), b(groups);
        for (int64_t k = 0; k < cols; ++k)
          row[k] = bf16_to_f32(static_cast<const uint16_t*>(w.data)[r * cols + k]);
        std::vector<uint32_t> packed(static_cast<size_t>(words));
        quant::quantize_row(row.data(), cols, bits, gs, packed.data(), s.data(), b.data());
        const uint32_t* want = static_cast<const uint32_t*>(pw.data) + r * words;
        for (int64_t i = 0; i < words; ++i)
          ASSERT_EQ(packed[i], want[i]) << key << " row " << r << " word " << i;
        for (int64_t g = 0; g < groups; ++g) {
          ASSERT_EQ(f32_to_bf16(s[g]), static_cast<const uint16_t*>(ps.data)[r * groups + g])
              << key << " row " << r << " scale " << g;
          ASSERT_EQ(f32_to_bf16(b[g]), static_cast<const uint16_t*>(pb.data)[r * groups + g])
              << key << " row " << r << " bias " << g;
        }
        std::vector<uint8_t> q(static_cast<size_t>(cols));
        quant::unpack_row(want, cols, bits, q.data());
        for (int64_t k = 0; k < cols; ++k)
          ASSERT_EQ(q[k], static_cast<const uint8_t*>(pv.data)[r * cols + k]) << key << " " << k;
      }
      ++checked;
    }
  EXPECT_EQ(checked, 18);
}

// `tessera quantize` on each fixture's bf16 source writes the fixture's MLX tensors bit for bit
// (the overrides of the mixed case passed as the fixture's config lists them).
TEST(MlxQuantizer, WholeDirectoriesMatchTheFixtures) {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const auto& fx : quant_fixtures()) {
    if (!fs::exists(fx.dir + "/source/config.json")) continue;
    const auto& block = fx.expected["quantization"];
    QuantizeOptions o;
    o.model_dir = fx.dir + "/source";
    o.out_dir = testing::process_temp_dir("quantize_" + fx.name);
    o.bits = block["bits"].get<int>();
    o.group_size = block["group_size"].get<int>();
    for (const auto& [k, v] : block.items())
      if (v.is_object())
        o.overrides[k] = QuantFormat{v["bits"].get<int>(), v["group_size"].get<int>()};
    const QuantizeReport rep = quantize_model_dir(o);
    EXPECT_GT(rep.quantized, 0);
    SafetensorsFile got(o.out_dir + "/model.safetensors"), want(fx.dir + "/model.safetensors");
    ASSERT_EQ(got.tensors().size(), want.tensors().size()) << fx.name;
    for (const auto& [name, w] : want.tensors()) {
      ASSERT_TRUE(got.tensors().count(name)) << fx.name << ": " << name;
      const TensorInfo& g = got.tensors().at(name);
      EXPECT_EQ(g.dtype_name, w.dtype_name) << fx.name << ": " << name;
      ASSERT_EQ(g.shape, w.shape) << fx.name << ": " << name;
      EXPECT_EQ(std::memcmp(g.data, w.data, w.nbytes), 0) << fx.name << ": " << name;
    }
    // And the written directory loads, with the fixture's formats.
    ModelDir d(o.out_dir);
    const QuantConfig qc = read_quant_config(d);
    EXPECT_TRUE(qc.declared) << fx.name;
    ++checked;
    fs::remove_all(o.out_dir);
  }
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace tessera
