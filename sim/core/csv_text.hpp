#pragma once
// Writing CSV cells (RFC 4180): every CSV file shardsim writes quotes its text cells the same way.
#include <string>
#include <string_view>

namespace shardsim::core {

/** @brief `s` in double quotes, each quote inside doubled. */
inline std::string csv_quoted(std::string_view s) {
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"') q += '"';
    q += ch;
  }
  return q + "\"";
}

/** @brief `s` as a CSV cell: as it is, or quoted where it holds a comma, a quote or a line break. */
inline std::string csv_field(std::string_view s) {
  return s.find_first_of(",\"\n\r") == std::string_view::npos ? std::string(s) : csv_quoted(s);
}

}  // namespace shardsim::core
