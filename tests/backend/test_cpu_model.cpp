// The whole Gemma 3 forward on the CPU backend: each SIMD ISA against the scalar ISA on the
// gemma3-tiny preset (f32 and bf16 weights), a 150-token prompt (past the 64-token sliding
// window, through the oneDNN prefill path) followed by single-token decode steps (the GEMV path).
#include <filesystem>

#include "cpu_test_util.h"
#include "engine/direct_runner.h"
#include "io/model_dir.h"
#include "models/model.h"
#include "models/presets.h"
#include "process_temp.h"

namespace tessera::cpu::test {
namespace {

std::string tiny_model(DType dt) {
  const std::string dir = testing::process_temp_dir("tessera_cpu_test_tiny_" +
                                                    std::string(dt == DType::f32 ? "f32" : "bf16"));
  if (!std::filesystem::exists(dir + "/model.safetensors")) {
    MakeModelOptions o;
    o.preset = "gemma3-tiny";
    o.out_dir = dir;
    o.dtype = dt;
    o.seed = 3;
    make_model(o);
  }
  return dir;
}

// Logits of the last prompt position, then of 3 greedy decode steps.
std::vector<std::vector<float>> run(Model& model, const std::vector<int32_t>& prompt) {
  DirectRunner r(model, 256);
  std::vector<std::vector<int32_t>> batch{prompt};
  std::vector<std::vector<float>> rows;
  for (int step = 0; step < 4; ++step) {
    auto lg = r.step(batch, false);
    rows.push_back(lg[0][0]);
    int best = 0;
    for (int i = 1; i < static_cast<int>(rows.back().size()); ++i)
      if (rows.back()[i] > rows.back()[best]) best = i;
    batch[0] = {best};
  }
  return rows;
}

TEST(CpuModel, SimdForwardMatchesScalar) {
  std::vector<int32_t> prompt(150);
  for (int i = 0; i < 150; ++i) prompt[i] = (i * 7919 + 13) % 262144;
  for (DType dt : {DType::f32, DType::bf16}) {
    ModelDir dir(tiny_model(dt));
    auto backend = make_cpu_backend();
    auto model = load_model(dir, *backend, LoadOptions{});
    std::vector<std::vector<float>> ref;
    {
      IsaScope s(Isa::scalar);
      ref = run(*model, prompt);
    }
    for (Isa isa : simd_isas()) {
      IsaScope s(isa);
      const auto got = run(*model, prompt);
      ASSERT_EQ(got.size(), ref.size());
      // f32: float rounding only. bf16: the KV cache is bf16 too, so a last-bit difference in a
      // K or V value upstream can flip its bf16 rounding (2^-9 relative) and move logits by
      // ~1e-5..1e-4 of the row's largest.
      const double tol = dt == DType::f32 ? 2e-5 : 1e-3;
      for (size_t i = 0; i < ref.size(); ++i)
        expect_rows_near(ref[i], got[i], 1, static_cast<int64_t>(ref[i].size()),
                         static_cast<int64_t>(ref[i].size()), tol,
                         std::string(dt == DType::f32 ? "f32" : "bf16") + " model step " +
                             std::to_string(i) + " on " + isa_name(isa));
    }
  }
}

}  // namespace
}  // namespace tessera::cpu::test
