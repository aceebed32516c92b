#include "kernels/mpc_codec.hpp"

#include <cstring>

#include "kernels/kernel_error.hpp"
#include "kernels/mpc_chunk.hpp"

namespace shardsim::kernels {
namespace {

constexpr std::size_t kChunk = mpc::kChunk;

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

std::vector<std::uint32_t> mpc_compress(std::span<const float> in, std::size_t stride) {
  if (stride == 0) throw KernelError("MPC stride must be positive");
  const std::size_t n = in.size();
  std::vector<std::uint32_t> out;
  for (std::size_t c = 0; c < n; c += kChunk) {
    std::uint32_t m[kChunk] = {};
    for (std::size_t i = 0; i < kChunk && c + i < n; ++i) {
      const std::size_t k = c + i;
      const std::uint32_t prev = k >= stride ? bits_of(in[k - stride]) : 0u;
      m[i] = mpc::fold(bits_of(in[k]) - prev);
    }
    mpc::transpose(m);
    const std::uint32_t bitmap = mpc::nonzero_bitmap(m);
    out.push_back(bitmap);
    for (std::size_t j = 0; j < kChunk; ++j) {
      if (m[j] != 0) out.push_back(m[j]);
    }
  }
  return out;
}

void mpc_decompress(std::span<const std::uint32_t> stream, std::size_t stride, std::span<float> out) {
  if (stride == 0) throw KernelError("MPC stride must be positive");
  const std::size_t n = out.size();
  std::size_t pos = 0;
  for (std::size_t c = 0; c < n; c += kChunk) {
    if (pos >= stream.size()) throw KernelError("MPC stream ends early");
    const std::uint32_t bitmap = stream[pos++];
    std::uint32_t m[kChunk] = {};
    for (std::size_t j = 0; j < kChunk; ++j) {
      if ((bitmap >> j) & 1u) {
        if (pos >= stream.size()) throw KernelError("MPC stream ends early");
        m[j] = stream[pos++];
      }
    }
    mpc::transpose(m);  // the transpose is its own inverse
    for (std::size_t i = 0; i < kChunk && c + i < n; ++i) {
      const std::size_t k = c + i;
      std::uint32_t prev = 0;
      if (k >= stride) std::memcpy(&prev, &out[k - stride], sizeof prev);
      const std::uint32_t u = mpc::unfold(m[i]) + prev;
      std::memcpy(&out[k], &u, sizeof u);
    }
  }
}

}  // namespace shardsim::kernels
