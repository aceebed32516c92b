#include "kernels/codec_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/block_quant.hpp"
#include "kernels/kernel_error.hpp"
#include "kernels/mpc_codec.hpp"
#include "kernels/quant_format.hpp"
#include "kernels/zfp_codec.hpp"

namespace shardsim::kernels {

std::string codec_label(const CodecChoice& c) {
  switch (c.kind) {
    case CodecChoice::Kind::kZfp: return fmt::format("zfp rate {:g}", c.zfp_rate);
    case CodecChoice::Kind::kMpc: return "mpc";
    case CodecChoice::Kind::kInt8Block: return fmt::format("int8, blocks of {}", c.block);
    case CodecChoice::Kind::kInt4Block: return fmt::format("int4, blocks of {}", c.block);
  }
  return "?";
}

double round_trip(const CodecChoice& codec, std::span<const float> in, std::span<float> out) {
  if (out.size() != in.size()) throw KernelError("round_trip: output and input differ in length");
  switch (codec.kind) {
    case CodecChoice::Kind::kZfp: {
      const auto stream = zfp_compress(in, codec.zfp_rate);
      zfp_decompress(stream, codec.zfp_rate, out);
      return 8.0 * static_cast<double>(stream.size());
    }
    case CodecChoice::Kind::kMpc: {
      const auto stream = mpc_compress(in);
      mpc_decompress(stream, 1, out);
      return 32.0 * static_cast<double>(stream.size());
    }
    case CodecChoice::Kind::kInt8Block:
    case CodecChoice::Kind::kInt4Block: {
      const QuantBits bits = codec.kind == CodecChoice::Kind::kInt8Block ? QuantBits::kInt8 : QuantBits::kInt4;
      std::vector<std::uint8_t> packed(packed_bytes(in.size(), bits));
      std::vector<float> scales(scale_count(in.size(), codec.block));
      quantize(in, codec.block, bits, packed, scales);
      dequantize(packed, scales, codec.block, bits, out);
      return 8.0 * static_cast<double>(packed.size()) + 32.0 * static_cast<double>(scales.size());
    }
  }
  throw KernelError("round_trip: unknown codec");
}

std::string_view sample_name(SampleKind k) {
  switch (k) {
    case SampleKind::kGradient: return "gradient-like";
    case SampleKind::kActivation: return "activation-like";
    case SampleKind::kWeight: return "weight-like";
  }
  return "?";
}

std::vector<float> representative_values(SampleKind kind, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(n);
  switch (kind) {
    case SampleKind::kGradient: {
      std::student_t_distribution<double> t(3.0);
      for (float& x : v) x = static_cast<float>(1e-4 * t(gen));
      break;
    }
    case SampleKind::kActivation: {
      std::normal_distribution<double> z(0.0, 1.0);
      for (float& x : v) {
        const double a = z(gen);
        x = static_cast<float>(0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0))));  // GeLU
      }
      break;
    }
    case SampleKind::kWeight: {
      std::normal_distribution<double> z(0.0, 0.02);
      for (float& x : v) x = static_cast<float>(z(gen));
      break;
    }
  }
  return v;
}

namespace {

// ||a - b|| / ||b|| with b exact.
double rel_rms(std::span<const float> a, std::span<const double> b) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : (num > 0.0 ? INFINITY : 0.0);
}

}  // namespace

CodecError measure_codec_error(const CodecChoice& codec, const Reduction& how,
                               const std::function<std::vector<float>(int rank)>& rank_values) {
  CodecError e;
  const std::vector<float> x0 = rank_values(0);
  const std::size_t n = x0.size();
  if (n == 0) throw KernelError("measure_codec_error: no values");
  std::vector<float> rt(n);
  e.bits_per_value = round_trip(codec, x0, rt) / static_cast<double>(n);
  double num = 0.0, den = 0.0, dmax = 0.0, xmax = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(rt[i]) - x0[i];
    num += d * d;
    den += static_cast<double>(x0[i]) * x0[i];
    dmax = std::max(dmax, std::abs(d));
    xmax = std::max(xmax, static_cast<double>(std::abs(x0[i])));
  }
  e.value_rel_rms = den > 0.0 ? std::sqrt(num / den) : 0.0;
  e.value_rel_max = xmax > 0.0 ? dmax / xmax : 0.0;
  if (how.kind == Reduction::Kind::kNone || how.ranks < 2) return e;

  e.ranks = how.ranks;
  std::vector<double> exact(x0.begin(), x0.end());
  auto values_of = [&](int r) {
    std::vector<float> v = rank_values(r);
    if (v.size() != n) throw KernelError("measure_codec_error: ranks' values differ in length");
    for (std::size_t i = 0; i < n; ++i) exact[i] += v[i];
    return v;
  };
  std::vector<float> sum;
  if (how.kind == Reduction::Kind::kRing) {
    // Rank 0's values start the ring; each hop receives the compressed partial sum, decompresses it, adds its own
    // values in fp32 and compresses the result for the next; the all-gather sends the final sum compressed once.
    sum = x0;
    for (int r = 1; r < how.ranks; ++r) {
      round_trip(codec, sum, rt);
      const std::vector<float> v = values_of(r);
      for (std::size_t i = 0; i < n; ++i) sum[i] = rt[i] + v[i];
    }
    round_trip(codec, sum, rt);
    sum = rt;
  } else {
    // Hierarchical: at each hop every input is quantised and the group's inputs summed in fp32 (dequantise-reduce);
    // the sums are the next hop's inputs. Inputs are ranks in order, groups of consecutive ones.
    int product = 1;
    for (int h : how.hops) product *= h;
    if (how.hops.empty() || product != how.ranks) throw KernelError("measure_codec_error: hops do not multiply to the ranks");
    std::vector<std::vector<float>> level;
    level.push_back(x0);
    for (int r = 1; r < how.ranks; ++r) level.push_back(values_of(r));
    for (int h : how.hops) {
      std::vector<std::vector<float>> next;
      for (std::size_t g = 0; g < level.size(); g += static_cast<std::size_t>(h)) {
        std::vector<float> acc(n, 0.0f);
        for (std::size_t k = g; k < g + static_cast<std::size_t>(h); ++k) {
          round_trip(codec, level[k], rt);
          for (std::size_t i = 0; i < n; ++i) acc[i] += rt[i];
        }
        next.push_back(std::move(acc));
      }
      level = std::move(next);
    }
    sum = std::move(level.front());
  }
  e.sum_rel_rms = rel_rms(sum, exact);
  return e;
}

}  // namespace shardsim::kernels
