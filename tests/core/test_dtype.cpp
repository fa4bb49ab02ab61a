#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/dtype.h"

namespace tessera {

TEST(DType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between two bf16 values (1 and 1 + 2^-7): ties go to even (1).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), f32_to_bf16(1.0f));
  // Just above halfway rounds up.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20))),
            1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(round_bf16(33.941125f), 34.0f);  // Gemma-3-1B's embed scale sqrt(1152) in bf16
}

TEST(DType, F16RoundTrip) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.1f}) {
    float back = f16_to_f32(f32_to_f16(v));
    EXPECT_NEAR(back, v, std::fabs(v) * 1e-3f + 1e-7f) << v;
  }
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 5.9604645e-08f);  // smallest subnormal
}

}  // namespace tessera
