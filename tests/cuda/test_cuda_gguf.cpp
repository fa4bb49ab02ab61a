// GGUF fixtures (tests/fixtures/gguf_models: llama.cpp's converter and llama-quantize, every
// architecture and type) on the CUDA backend: the file loads (group-16 Q6_K included), prefill
// and decode logits against transformers' on the dequantized weights within the tolerance of
// bf16 activations, greedy first tokens mostly equal. (CPU exactness: test_gguf_parity.cpp.)
#include <filesystem>

#include "cuda_test_util.h"
#include "engine/direct_runner.h"
#include "models/fixtures.h"
#include "models/model.h"

namespace tessera::cudatest {
namespace {

#ifdef TESSERA_HAVE_CUDA
TEST(CudaGguf, EveryFixtureMatchesTransformers) {
  TS_REQUIRE_CUDA();
  const auto fixtures =
      testing::load_model_fixtures(std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/gguf_models");
  ASSERT_GE(fixtures.size(), 10u);
  for (const auto& fx : fixtures) {
    ModelDir dir(fx.dir + "/model.gguf");
    auto model = load_model(dir, *cuda(), LoadOptions{});
    for (size_t s = 0; s < fx.sequences.size(); ++s) {
      DirectRunner r(*model, static_cast<int>(fx.sequences[s].size()) + 1);
      std::vector<std::vector<int32_t>> in{fx.sequences[s]};
      const auto rows = r.step(in, true)[0];
      ASSERT_EQ(rows.size(), fx.logits[s].size()) << fx.name;
      std::vector<float> got, want;
      for (size_t p = 0; p < rows.size(); ++p) {
        got.insert(got.end(), rows[p].begin(), rows[p].end());
        want.insert(want.end(), fx.logits[s][p].begin(), fx.logits[s][p].end());
      }
      EXPECT_LT(rel_err(got, want), 3e-2) << fx.name << " sequence " << s;
      // The last position again as a decode step after a prefill of the others (the packed
      // GEMV path), against the same reference row.
      const auto& seq = fx.sequences[s];
      DirectRunner r2(*model, static_cast<int>(seq.size()));
      std::vector<std::vector<int32_t>> head{{seq.begin(), seq.end() - 1}}, last{{seq.back()}};
      r2.step(head, false);
      const auto d = r2.step(last, false)[0];
      ASSERT_EQ(d.size(), 1u) << fx.name;
      EXPECT_LT(rel_err(d[0], fx.logits[s].back()), 3e-2) << fx.name << " decode " << s;
    }
  }
}
#endif

}  // namespace
}  // namespace tessera::cudatest
