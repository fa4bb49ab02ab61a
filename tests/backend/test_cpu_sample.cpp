// Greedy sampling's argmax on every SIMD ISA against the scalar loop: ties go to the lowest id,
// NaN never wins (except at id 0, as in the scalar loop), all -inf picks id 0; plus the
// penalised greedy row, which goes through the copying path.
#include "cpu_test_util.h"
#include "sampled_upload_check.h"

namespace tessera::cpu::test {
namespace {

std::vector<int32_t> greedy(std::vector<float>& logits, int64_t rows, int64_t V, bool penalise) {
  SampleBatch b;
  b.rows.resize(static_cast<size_t>(rows));
  if (penalise) {
    b.penalty_ids = {3, 5};
    b.penalty_counts = {1, 2};
    for (auto& p : b.rows) {
      p.repetition_penalty = 1.5f;
      p.rep_count = 2;
    }
  }
  SampleOutput out;
  sample(Tensor{logits.data(), DType::f32, rows, V, V}, b, out);
  return out.ids;
}

TEST(CpuSample, GreedyArgmaxMatchesScalar) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t V : {int64_t{262144}, int64_t{1000}, int64_t{65}, int64_t{7}}) {
    const int64_t rows = 6;
    auto l = random_floats(static_cast<size_t>(rows * V), V, -10.f, 10.f);
    // Row 1: the maximum twice (the first must win). Row 2: all -inf. Row 3: NaNs around the
    // maximum. Row 4: NaN at id 0. Row 5: the maximum in the last element.
    l[1 * V + V / 3] = 50.f;
    l[1 * V + V - 2] = 50.f;
    for (int64_t i = 0; i < V; ++i) l[2 * V + i] = ninf;
    l[3 * V + V / 2] = 60.f;
    l[3 * V + V / 2 + 1] = nan;
    l[3 * V + 1] = nan;
    l[4 * V] = nan;
    l[5 * V + V - 1] = 99.f;
    for (bool pen : {false, true}) {
      std::vector<int32_t> ref;
      {
        IsaScope s(Isa::scalar);
        ref = greedy(l, rows, V, pen);
      }
      EXPECT_EQ(ref[1], V / 3);
      EXPECT_EQ(ref[2], 0);
      EXPECT_EQ(ref[3], V / 2);
      EXPECT_EQ(ref[4], 0);
      EXPECT_EQ(ref[5], V - 1);
      for (Isa isa : simd_isas()) {
        IsaScope s(isa);
        EXPECT_EQ(greedy(l, rows, V, pen), ref) << "V=" << V << " on " << isa_name(isa);
      }
    }
  }
}

TEST(CpuSample, PipelinedSampleFeedsTheNextUpload) {
  auto be = make_cpu_backend();
  const int V = 1000;
  auto l = random_floats(2 * V, 17, -5.f, 5.f);
  tessera::testing::check_sampled_upload(*be, Tensor{l.data(), DType::f32, 2, V, V}, l, V);
}

}  // namespace
}  // namespace tessera::cpu::test
