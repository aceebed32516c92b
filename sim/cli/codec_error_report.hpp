#pragma once
// The compression error estimate of `shardsim run`: for each compressed stream of a plan (MVAPICH-style
// compression per parallel dimension, ZeRO++'s qwZ and qgZ), the codec's bits per value, the values' error after
// one round trip and the error of the sum reduced across the stream's group as the collective reduces it,
// measured with shardsim's own codecs on representative tensors (and on a user's .npy sample), next to the
// plan's speed-up over the same plan uncompressed.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "kernels/codec_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::cli {

/// Values per rank in each measurement, and the most ranks a reduction is simulated over (a larger group is
/// reported as its first kMaxSimulatedRanks).
inline constexpr std::size_t kSampleValues = 4096;
inline constexpr int kMaxSimulatedRanks = 256;

struct CodecErrorRow {
  std::string stream;  ///< "gradients", "parameters", "tensor", "pipeline", "qwZ", "qgZ"
  std::string codec;   ///< kernels::codec_label
  double plan_ratio = 1.0;  ///< what the plan's cost model assumes
  double compress_Bps = 0.0, decompress_Bps = 0.0;  ///< the codec's speed in the cost model (0: not a codec stream)
  std::string sample;  ///< "gradient-like", ..., or the user's file name
  std::string reduction;  ///< "", "ring", "hops 8 x 4"
  int group_ranks = 0;    ///< ranks of the stream's group (the reduction may simulate fewer)
  kernels::CodecError error;
};

/** @brief The rows for `s`'s plan (empty when it compresses nothing); with `user` values, a row per stream on
 *  them too, labelled `user_name`. */
std::vector<CodecErrorRow> codec_error_rows(const scenario::Scenario& s, const std::vector<float>* user,
                                            const std::string& user_name);
/** @brief The report section, with the speed-up of `s` (iteration `compressed_s`) over `uncompressed_s`. */
std::string render_codec_errors(const std::vector<CodecErrorRow>& rows, double compressed_s, double uncompressed_s);
/** @brief One line for a sweep variant: its speed-up and each stream's value error (and reduced-sum error). */
std::string render_codec_error_summary(const std::string& variant, const std::vector<CodecErrorRow>& rows,
                                       double compressed_s, double uncompressed_s);
nlohmann::ordered_json codec_errors_json(const std::vector<CodecErrorRow>& rows, double compressed_s,
                                         double uncompressed_s);
/** @brief `s` without compression or ZeRO++ quantisation: the baseline its speed-up is measured against. */
scenario::Scenario without_compression(const scenario::Scenario& s);

}  // namespace shardsim::cli
