#pragma once
// The ZFP block codec shared by the CPU and GPU backends (plain C++17; every function is marked for host and
// device): one block of 4 floats in, at most 128 bits out, and back. Both backends run exactly this code, one
// block at a time on the CPU and one block per thread on the GPU, so their streams are the same bits; see
// zfp_codec.hpp for the format and its one deliberate difference from libzfp.
#include <math.h>

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_error.hpp"
#include "kernels/quant_format.hpp"  // SHARDSIM_HOST_DEVICE

namespace shardsim::kernels::zfp {

inline constexpr int kExponentBits = 8;  // float
inline constexpr int kExponentBias = 127;
inline constexpr unsigned kHeaderBits = 1 + kExponentBits;
inline constexpr unsigned kIntPrecision = 32;
inline constexpr unsigned kMaxBlockBits = 4 * 32;  // rate 32
inline constexpr std::uint32_t kNegabinaryMask = 0xaaaaaaaau;

/** @brief Bits each block of 4 values takes at `rate` bits per value (libzfp's rounding and float minimum).
 *  Throws KernelError unless 0 < rate <= 32. */
inline unsigned bits_per_block(double rate) {
  if (!(rate > 0.0 && rate <= 32.0)) throw KernelError("ZFP rate must be in (0, 32] bits per value");
  const auto bits = static_cast<unsigned>(floor(4.0 * rate + 0.5));
  return bits > kHeaderBits ? bits : kHeaderBits;
}

/** @brief Bytes of the stream for `n` values at `rate` (whole bytes). */
inline std::size_t compressed_bytes(std::size_t n, double rate) {
  const std::uint64_t blocks = (static_cast<std::uint64_t>(n) + 3) / 4;
  return static_cast<std::size_t>((blocks * bits_per_block(rate) + 7) / 8);
}

// The bits of one block, least significant first.
struct BlockBits {
  std::uint64_t words[kMaxBlockBits / 64] = {0, 0};
  unsigned size = 0;
  unsigned pos = 0;

  SHARDSIM_HOST_DEVICE unsigned put(unsigned bit) {
    if (bit) words[size / 64] |= std::uint64_t{1} << (size % 64);
    ++size;
    return bit;
  }
  SHARDSIM_HOST_DEVICE void put_bits(std::uint64_t value, unsigned n) {
    for (unsigned i = 0; i < n; ++i) put(static_cast<unsigned>((value >> i) & 1u));
  }
  SHARDSIM_HOST_DEVICE unsigned get() {
    const unsigned bit = static_cast<unsigned>((words[pos / 64] >> (pos % 64)) & 1u);
    ++pos;
    return bit;
  }
  SHARDSIM_HOST_DEVICE std::uint64_t get_bits(unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(get()) << i;
    return v;
  }
  [[nodiscard]] SHARDSIM_HOST_DEVICE unsigned bit(unsigned i) const {
    return static_cast<unsigned>((words[i / 64] >> (i % 64)) & 1u);
  }
  /** Reads `n` bits of `stream` from bit `offset` (bits LSB first within each byte). */
  SHARDSIM_HOST_DEVICE void load(const std::uint8_t* stream, std::uint64_t offset, unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      const std::uint64_t at = offset + i;
      put(static_cast<unsigned>((stream[at / 8] >> (at % 8)) & 1u));
    }
  }
};

// Wrapping int32 arithmetic: a corrupt stream may overflow the inverse transform, which must not be UB.
SHARDSIM_HOST_DEVICE inline std::int32_t add(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
SHARDSIM_HOST_DEVICE inline std::int32_t sub(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) - static_cast<std::uint32_t>(b));
}
SHARDSIM_HOST_DEVICE inline std::int32_t twice(std::int32_t a) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) << 1);
}

SHARDSIM_HOST_DEVICE inline int block_exponent(const float v[4]) {
  float amax = 0.0F;
  for (int i = 0; i < 4; ++i) amax = fabsf(v[i]) > amax ? fabsf(v[i]) : amax;
  if (amax > 0.0F) {
    int e = 0;
    (void)frexpf(amax, &e);
    return e > 1 - kExponentBias ? e : 1 - kExponentBias;  // subnormals share the smallest normal exponent
  }
  return -kExponentBias;
}

// The decorrelating transform of the ZFP paper, a lifted (integer, nearly orthogonal) 4-point transform.
SHARDSIM_HOST_DEVICE inline void forward_lift(std::int32_t p[4]) {
  std::int32_t x = p[0], y = p[1], z = p[2], w = p[3];
  x = add(x, w); x >>= 1; w = sub(w, x);
  z = add(z, y); z >>= 1; y = sub(y, z);
  x = add(x, z); x >>= 1; z = sub(z, x);
  w = add(w, y); w >>= 1; y = sub(y, w);
  w = add(w, y >> 1); y = sub(y, w >> 1);
  p[0] = x; p[1] = y; p[2] = z; p[3] = w;
}

SHARDSIM_HOST_DEVICE inline void inverse_lift(std::int32_t p[4]) {
  std::int32_t x = p[0], y = p[1], z = p[2], w = p[3];
  y = add(y, w >> 1); w = sub(w, y >> 1);
  y = add(y, w); w = sub(twice(w), y);
  z = add(z, x); x = sub(twice(x), z);
  y = add(y, z); z = sub(twice(z), y);
  w = add(w, x); x = sub(twice(x), w);
  p[0] = x; p[1] = y; p[2] = z; p[3] = w;
}

// Embedded coding of four negabinary integers, bit plane by bit plane from the top, within `budget` bits.
SHARDSIM_HOST_DEVICE inline void encode_planes(BlockBits& out, unsigned budget, const std::uint32_t data[4]) {
  unsigned bits = budget;
  unsigned n = 0;  // coefficients already found significant
  for (unsigned k = kIntPrecision; bits && k-- > 0;) {
    std::uint64_t x = 0;
    for (unsigned i = 0; i < 4; ++i) x += static_cast<std::uint64_t>((data[i] >> k) & 1u) << i;
    // The significant coefficients' bits go out verbatim.
    const unsigned m = n < bits ? n : bits;
    bits -= m;
    out.put_bits(x, m);
    x >>= m;
    // The rest: a group test ("any one-bit left?"), then unary steps to the next one-bit.
    for (; bits && n < 4; x >>= 1, ++n) {
      --bits;
      if (!out.put(x != 0 ? 1u : 0u)) break;
      for (; bits && n < 3; x >>= 1, ++n) {
        --bits;
        if (out.put(static_cast<unsigned>(x & 1u))) break;
      }
    }
  }
}

SHARDSIM_HOST_DEVICE inline void decode_planes(BlockBits& in, unsigned budget, std::uint32_t data[4]) {
  for (int i = 0; i < 4; ++i) data[i] = 0;
  unsigned bits = budget;
  unsigned n = 0;
  for (unsigned k = kIntPrecision; bits && k-- > 0;) {
    const unsigned m = n < bits ? n : bits;
    bits -= m;
    std::uint64_t x = in.get_bits(m);
    for (; bits && n < 4;) {
      --bits;
      if (!in.get()) break;  // the rest of the plane is zero
      for (; bits && n < 3;) {
        --bits;
        if (in.get()) break;
        ++n;
      }
      x += std::uint64_t{1} << n;
      ++n;
    }
    for (unsigned i = 0; x; ++i, x >>= 1) data[i] += static_cast<std::uint32_t>(x & 1u) << k;
  }
}

/** @brief Pads a partial block of `have` values as libzfp pads it (repeated values keep the transform's input
 *  smooth). */
SHARDSIM_HOST_DEVICE inline void pad_block(float v[4], unsigned have) {
  switch (have) {
    case 1: v[1] = v[0]; [[fallthrough]];
    case 2: v[2] = v[1]; [[fallthrough]];
    case 3: v[3] = v[0]; break;
    default: break;
  }
}

/** @brief Codes one block of 4 finite values within `block_bits` (the rest of the budget is zero padding). */
SHARDSIM_HOST_DEVICE inline void encode_block(const float v[4], unsigned block_bits, BlockBits& out) {
  const int emax = block_exponent(v);
  const auto e = static_cast<unsigned>(emax + kExponentBias);
  if (e == 0) {
    out.put(0);  // all zeros
    return;
  }
  out.put_bits(2 * e + 1, kHeaderBits);
  // Block-floating-point: |v| < 2^emax becomes an integer below 2^30, truncated as a C cast truncates. The
  // product is exact in double for every emax, where libzfp's float factor overflows below 2^-97.
  const double scale = ldexp(1.0, static_cast<int>(kIntPrecision) - 2 - emax);
  std::int32_t ints[4];
  for (int i = 0; i < 4; ++i) ints[i] = static_cast<std::int32_t>(scale * static_cast<double>(v[i]));
  forward_lift(ints);
  std::uint32_t negabinary[4];
  for (int i = 0; i < 4; ++i) negabinary[i] = (static_cast<std::uint32_t>(ints[i]) + kNegabinaryMask) ^ kNegabinaryMask;
  encode_planes(out, block_bits - kHeaderBits, negabinary);
}

/** @brief Decodes one block coded in `block_bits`. */
SHARDSIM_HOST_DEVICE inline void decode_block(BlockBits& in, unsigned block_bits, float v[4]) {
  if (!in.get()) {
    for (int i = 0; i < 4; ++i) v[i] = 0.0F;
    return;
  }
  const int emax = static_cast<int>(in.get_bits(kExponentBits)) - kExponentBias;
  std::uint32_t negabinary[4];
  decode_planes(in, block_bits - kHeaderBits, negabinary);
  std::int32_t ints[4];
  for (int i = 0; i < 4; ++i) ints[i] = static_cast<std::int32_t>((negabinary[i] ^ kNegabinaryMask) - kNegabinaryMask);
  inverse_lift(ints);
  // libzfp rounds the integer to float, then scales by a power of two (one more rounding only for subnormal
  // results); the double product is exact, so its single rounding to float is that same value.
  const double scale = ldexp(1.0, emax - (static_cast<int>(kIntPrecision) - 2));
  for (int i = 0; i < 4; ++i) v[i] = static_cast<float>(static_cast<double>(static_cast<float>(ints[i])) * scale);
}

}  // namespace shardsim::kernels::zfp
