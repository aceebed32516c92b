#include "kernels/zfp_codec.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/kernel_error.hpp"
#include "kernels/zfp_block.hpp"

namespace shardsim::kernels {

unsigned zfp_bits_per_block(double rate) { return zfp::bits_per_block(rate); }

std::size_t zfp_compressed_bytes(std::size_t n, double rate) { return zfp::compressed_bytes(n, rate); }

std::size_t zfp_compress(std::span<const float> in, double rate, std::span<std::uint8_t> out) {
  const unsigned block_bits = zfp_bits_per_block(rate);
  const std::size_t bytes = zfp_compressed_bytes(in.size(), rate);
  if (out.size() < bytes) throw KernelError("ZFP output buffer too small");
  for (float v : in) {
    if (!std::isfinite(v)) throw KernelError("ZFP cannot represent NaN or infinity");
  }
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(bytes), std::uint8_t{0});
  const std::uint64_t n = in.size();
  const std::uint64_t blocks = (n + 3) / 4;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    const std::uint64_t lo = 4 * b;
    const auto have = static_cast<unsigned>(std::min<std::uint64_t>(4, n - lo));
    float v[4] = {0.0F, 0.0F, 0.0F, 0.0F};
    for (unsigned i = 0; i < have; ++i) v[i] = in[lo + i];
    zfp::pad_block(v, have);
    zfp::BlockBits bits;
    zfp::encode_block(v, block_bits, bits);
    // OR the block into the zeroed stream at its fixed place (the padding up to its budget stays zero).
    const std::uint64_t offset = b * block_bits;
    for (unsigned i = 0; i < bits.size; ++i) {
      if (bits.bit(i)) {
        const std::uint64_t at = offset + i;
        out[at / 8] = static_cast<std::uint8_t>(out[at / 8] | (1u << (at % 8)));
      }
    }
  }
  return bytes;
}

std::vector<std::uint8_t> zfp_compress(std::span<const float> in, double rate) {
  std::vector<std::uint8_t> out(zfp_compressed_bytes(in.size(), rate));
  zfp_compress(in, rate, out);
  return out;
}

void zfp_decompress(std::span<const std::uint8_t> stream, double rate, std::span<float> out) {
  const unsigned block_bits = zfp_bits_per_block(rate);
  if (stream.size() < zfp_compressed_bytes(out.size(), rate)) throw KernelError("ZFP stream too short");
  const std::uint64_t n = out.size();
  const std::uint64_t blocks = (n + 3) / 4;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    zfp::BlockBits bits;
    bits.load(stream.data(), b * block_bits, block_bits);
    float v[4];
    zfp::decode_block(bits, block_bits, v);
    const std::uint64_t lo = 4 * b;
    const auto have = static_cast<unsigned>(std::min<std::uint64_t>(4, n - lo));
    for (unsigned i = 0; i < have; ++i) out[lo + i] = v[i];
  }
}

}  // namespace shardsim::kernels
