#pragma once
// A user's tensor sample for the compression error estimate: a NumPy .npy file (format versions 1-3) of
// little-endian float16, float32 or float64 values, any shape, read as a flat list.
#include <string>
#include <vector>

namespace shardsim::scenario {

/** @brief The values of the .npy file at `path`, as float. A ConfigError naming the file and what was expected
 *  for anything else: not an .npy file, another dtype or byte order, a truncated file, no values, a NaN or an
 *  infinity (which the codecs cannot carry), or a file above kMaxInputBytes. */
std::vector<float> read_npy_values(const std::string& path);
/** @brief The same for the file's `bytes`, `file` naming it in errors. */
std::vector<float> parse_npy_values(const std::string& bytes, const std::string& file);

}  // namespace shardsim::scenario
