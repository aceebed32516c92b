#pragma once
// Reading the user's input files, with errors that name them.
#include <string>

#include "sim/core/errors.hpp"

namespace shardsim::scenario {

/// The most bytes shardsim reads from one input file (scenario, configs, measurement tables): far above any real
/// one (the largest shipped is under 1 MiB), far below what would exhaust memory.
inline constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;

/** @brief The whole file at `path`; a ConfigError "cannot open <what>" when it cannot be read, or when it is
 *  larger than kMaxInputBytes (a device such as /dev/zero included). */
std::string read_text_file(const std::string& path, const char* what);
/** @brief 1-based line and column of byte offset `byte` (1-based, as JSON parsers report it) in `text`. */
core::SourceLocation location_of_byte(const std::string& file, const std::string& text, std::size_t byte);

}  // namespace shardsim::scenario
