#include "sim/scenario/text_file.hpp"

#include <array>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "sim/scenario/json_text.hpp"

namespace shardsim::scenario {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::ConfigError(core::SourceLocation{path, 0, 0}, "", fmt::format("cannot open {}", what));
  // Read at most the budget (and one byte more to tell): /dev/zero or a mistaken multi-gigabyte file is refused,
  // not read without end.
  std::string text;
  std::array<char, 1 << 16> buf{};
  while (in && text.size() <= kMaxInputBytes) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > kMaxInputBytes) {
    throw core::ConfigError(core::SourceLocation{path, 0, 0}, "",
                            fmt::format("{} is larger than {} MiB, the most shardsim reads from one input; is it the "
                                        "right file?", what, kMaxInputBytes >> 20));
  }
  return text;
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
