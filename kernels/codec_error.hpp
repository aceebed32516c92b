#pragma once
// What a compression policy does to the values it carries, measured with shardsim's own codecs (ZFP fixed rate,
// MPC, ZeRO++'s block quantisation) on representative tensors: bits per value, the values' relative error after
// one round trip, and the relative error of a sum reduced across a group the way the collective reduces it.
// MVAPICH's compressed ring reduce-scatter / all-reduce (Xu et al., arXiv 2409.02423) decompresses at each hop,
// adds its own values and compresses the partial sum again, so the error compounds with the ranks; ZeRO++'s qgZ
// quantises once per all-to-all hop; a gather or a point-to-point message is compressed once.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace shardsim::kernels {

/** @brief A codec as a plan uses it. */
struct CodecChoice {
  enum class Kind : std::uint8_t { kZfp, kMpc, kInt8Block, kInt4Block };
  Kind kind = Kind::kZfp;
  double zfp_rate = 0.0;   ///< bits per value (kZfp)
  std::size_t block = 0;   ///< elements per scale (kInt8Block, kInt4Block)
};
/** @brief "zfp rate 8", "mpc", "int8 blocks of 8192", ... */
std::string codec_label(const CodecChoice& c);

/** @brief One round trip of `in` through `codec` into `out` (same size); returns the compressed size in bits.
 *  Throws KernelError as the codec does (NaN or infinity under ZFP). */
double round_trip(const CodecChoice& codec, std::span<const float> in, std::span<float> out);

/** @brief Representative tensors. Gradients: heavy-tailed around zero (Student's t with 3 degrees of freedom,
 *  scale 1e-4); activations: GeLU of a standard normal (skewed, half of it near zero); weights: normal with
 *  standard deviation 0.02 (GPT-style initialisation). Deterministic in `seed` (std::mt19937_64). */
enum class SampleKind : std::uint8_t { kGradient, kActivation, kWeight };
std::string_view sample_name(SampleKind k);
std::vector<float> representative_values(SampleKind kind, std::size_t n, std::uint64_t seed);

/** @brief How a stream's values are combined across its group. */
struct Reduction {
  enum class Kind : std::uint8_t {
    kNone,  ///< compressed once (a gather, a pipeline message): no sum
    kRing,  ///< ring reduce-scatter then all-gather, each hop decompress-add-recompress (MVAPICH)
    kHops,  ///< hierarchical all-to-all: each hop quantises its inputs, sums them, the next hop requantises (qgZ)
  };
  Kind kind = Kind::kNone;
  int ranks = 1;            ///< ranks whose values are summed (kRing, kHops)
  std::vector<int> hops;    ///< group size of each hop, innermost first; their product is `ranks` (kHops)
};

struct CodecError {
  double bits_per_value = 0.0;  ///< compressed bits over values, one round trip
  double value_rel_rms = 0.0;   ///< ||x' - x|| / ||x|| after one round trip
  double value_rel_max = 0.0;   ///< max |x' - x| over max |x|
  int ranks = 0;                ///< ranks summed (0: no reduction)
  double sum_rel_rms = 0.0;     ///< ||s' - s|| / ||s|| of the reduced sum against the exact (double) sum
};

/** @brief The error of `codec` on values `rank_values(r)` of ranks r = 0, 1, ... reduced as `how` says. Every
 *  rank's values have the same length. */
CodecError measure_codec_error(const CodecChoice& codec, const Reduction& how,
                               const std::function<std::vector<float>(int rank)>& rank_values);

}  // namespace shardsim::kernels
