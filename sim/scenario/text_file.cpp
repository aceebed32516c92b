#include "sim/scenario/text_file.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "sim/scenario/json_text.hpp"

namespace shardsim::scenario {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::ConfigError(core::SourceLocation{path, 0, 0}, "", fmt::format("cannot open {}", what));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

core::SourceLocation location_of_byte(const std::string& file, const std::string& text, std::size_t byte) {
  int line = 1;
  int col = 1;
  for (std::size_t i = 0; i < text.size() && i + 1 < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return core::SourceLocation{file, line, col};
}

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw core::ConfigError(location_of_byte(file, text, e.byte), "", fmt::format("invalid JSON: {}", e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw core::ConfigError(core::SourceLocation{file, 0, 0}, "", fmt::format("expected JSON whose numbers a double can hold: {}", e.what()));
  }
}

}  // namespace shardsim::scenario
