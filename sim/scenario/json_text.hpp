#pragma once
// JSON input (Hugging Face and DeepSpeed configs) read with errors that name the file and, where the parser knows
// it, the line.
#include <string>

#include <nlohmann/json.hpp>

namespace shardsim::scenario {

/** @brief `text` (the file `file`) as JSON. Throws core::ConfigError for anything nlohmann-json refuses: a syntax
 *  error (with its line and column) and a number it cannot hold (1e999, a 30-digit integer) alike. */
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

}  // namespace shardsim::scenario
