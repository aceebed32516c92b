#pragma once
// CsvTable: a comma-separated file read strictly (RFC 4180 via libcsv), with the header row's column names and
// each data row's line number, so that a bad cell is reported as file:line, column name, what was expected.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/csv_text.hpp"
#include "sim/core/errors.hpp"

namespace shardsim::validate {

using core::csv_quoted;  // sim/core/csv_text.hpp

class CsvTable {
 public:
  /** @brief Parses `text` (named `file` in messages); the first row is the header. Throws core::ConfigError on
   *  malformed CSV, an empty or (unless `repeated_columns`) duplicate column name, or a row whose cell count
   *  differs from the header's. With repeated names (benchmark tables: out-of-place then in-place), column()
   *  finds the first. */
  static CsvTable parse(const std::string& text, const std::string& file, bool repeated_columns = false);
  /** @brief Reads and parses `path`. */
  static CsvTable load(const std::string& path);

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::vector<std::string>& columns() const { return columns_; }
  [[nodiscard]] std::size_t rows() const { return cells_.size(); }
  /** @brief Index of column `name`, if the header has it. */
  [[nodiscard]] std::optional<std::size_t> column(const std::string& name) const;
  [[nodiscard]] const std::string& cell(std::size_t row, std::size_t col) const { return cells_[row][col]; }
  /** @brief Line of the file where data row `row` (0-based) starts. */
  [[nodiscard]] int line(std::size_t row) const { return lines_[row]; }
  /** @brief Where cell (row, col) is, for messages. */
  [[nodiscard]] core::SourceLocation where(std::size_t row) const { return {file_, lines_[row], 1}; }
  /** @brief Throws core::ConfigError at (row, col): "<column>: expected ...". */
  [[noreturn]] void fail(std::size_t row, std::size_t col, const std::string& expected) const;
  /** @brief The cell as a number (whole cell; no units), or fail(). */
  [[nodiscard]] double number(std::size_t row, std::size_t col) const;

 private:
  std::string file_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> cells_;
  std::vector<int> lines_;
};

}  // namespace shardsim::validate
