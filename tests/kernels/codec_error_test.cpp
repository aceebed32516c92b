#include "kernels/codec_error.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernel_error.hpp"

namespace shardsim::kernels {
namespace {

constexpr std::size_t kN = 4096;

auto ranks_of(SampleKind kind) {
  return [kind](int r) { return representative_values(kind, kN, 1000 + static_cast<std::uint64_t>(r)); };
}

TEST(CodecError, RepresentativeValuesAreDeterministicAndShaped) {
  EXPECT_EQ(representative_values(SampleKind::kWeight, kN, 7), representative_values(SampleKind::kWeight, kN, 7));
  EXPECT_NE(representative_values(SampleKind::kWeight, kN, 7), representative_values(SampleKind::kWeight, kN, 8));
  // GeLU of a standard normal is never below its minimum, -0.17.
  for (float a : representative_values(SampleKind::kActivation, kN, 1)) EXPECT_GT(a, -0.171f);
  double sq = 0.0;
  for (float w : representative_values(SampleKind::kWeight, kN, 1)) sq += static_cast<double>(w) * w;
  EXPECT_NEAR(std::sqrt(sq / kN), 0.02, 0.001);
}

// MPC is lossless: the values come back exactly, and a ring's sum differs from the exact one only by fp32 adds.
TEST(CodecError, MpcLosesNothing) {
  const CodecError e = measure_codec_error({CodecChoice::Kind::kMpc}, {Reduction::Kind::kRing, 8, {}},
                                           ranks_of(SampleKind::kGradient));
  EXPECT_EQ(e.value_rel_rms, 0.0);
  EXPECT_EQ(e.value_rel_max, 0.0);
  EXPECT_EQ(e.ranks, 8);
  EXPECT_LT(e.sum_rel_rms, 1e-6);
  EXPECT_GT(e.bits_per_value, 0.0);
}

// ZFP at a fixed rate takes that many bits per value; fewer bits, more error; and MVAPICH's ring, which compresses
// the partial sum again at every hop, loses more with more ranks.
TEST(CodecError, ZfpErrorFallsWithRateAndGrowsAlongTheRing) {
  const auto grads = ranks_of(SampleKind::kGradient);
  const CodecError r8 = measure_codec_error({CodecChoice::Kind::kZfp, 8.0}, {}, grads);
  const CodecError r16 = measure_codec_error({CodecChoice::Kind::kZfp, 16.0}, {}, grads);
  EXPECT_DOUBLE_EQ(r8.bits_per_value, 8.0);
  EXPECT_DOUBLE_EQ(r16.bits_per_value, 16.0);
  EXPECT_EQ(r8.ranks, 0);
  EXPECT_GT(r8.value_rel_rms, 4.0 * r16.value_rel_rms);
  const CodecError two = measure_codec_error({CodecChoice::Kind::kZfp, 8.0}, {Reduction::Kind::kRing, 2, {}}, grads);
  const CodecError many = measure_codec_error({CodecChoice::Kind::kZfp, 8.0}, {Reduction::Kind::kRing, 32, {}}, grads);
  EXPECT_GT(two.sum_rel_rms, 0.0);
  EXPECT_GT(many.sum_rel_rms, two.sum_rel_rms);
}

// At 4 bits per value ZFP keeps little more than each block's exponent: a block's decoded values overshoot, the next
// hop's partial sum takes a larger exponent, and along the ring the error compounds until the sum is noise (more than
// the sum itself by 24 ranks), where 8 bits keep it below one.
TEST(CodecError, LowZfpRatesLoseARingsSum) {
  const auto grads = ranks_of(SampleKind::kGradient);
  const CodecError r4 = measure_codec_error({CodecChoice::Kind::kZfp, 4.0}, {Reduction::Kind::kRing, 24, {}}, grads);
  const CodecError r8 = measure_codec_error({CodecChoice::Kind::kZfp, 8.0}, {Reduction::Kind::kRing, 24, {}}, grads);
  EXPECT_GT(r4.sum_rel_rms, 100.0);
  EXPECT_LT(r8.sum_rel_rms, 1.0);
  const CodecError r4_8 = measure_codec_error({CodecChoice::Kind::kZfp, 4.0}, {Reduction::Kind::kRing, 8, {}}, grads);
  EXPECT_GT(r4.sum_rel_rms, 10.0 * r4_8.sum_rel_rms);  // grows faster than linearly in the hops
}

// ZeRO++'s INT8 blocks: 8 bits and a 32-bit scale per block; every value within half a step (max|x| / 254).
TEST(CodecError, Int8BlocksStayWithinHalfAStep) {
  const CodecError e = measure_codec_error({CodecChoice::Kind::kInt8Block, 0.0, 1024}, {}, ranks_of(SampleKind::kWeight));
  EXPECT_DOUBLE_EQ(e.bits_per_value, 8.0 + 32.0 / 1024.0);
  EXPECT_GT(e.value_rel_max, 0.0);
  EXPECT_LE(e.value_rel_max, 1.0 / 254.0 * 1.0001);
}

// qgZ's hops: an INT4 sum over 2 x 4 ranks quantises each input once per hop; the hops must multiply to the ranks.
TEST(CodecError, HopsQuantiseOncePerHop) {
  const auto grads = ranks_of(SampleKind::kGradient);
  const CodecChoice int4{CodecChoice::Kind::kInt4Block, 0.0, 512};
  const CodecError one = measure_codec_error(int4, {Reduction::Kind::kHops, 8, {8}}, grads);
  const CodecError two = measure_codec_error(int4, {Reduction::Kind::kHops, 8, {4, 2}}, grads);
  EXPECT_GT(one.sum_rel_rms, 0.0);
  EXPECT_GT(two.sum_rel_rms, one.sum_rel_rms);
  EXPECT_THROW(measure_codec_error(int4, {Reduction::Kind::kHops, 8, {3, 2}}, grads), KernelError);
}

}  // namespace
}  // namespace shardsim::kernels
