#include "validate/csv_table.hpp"

#include <csv.h>
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <set>

#include "sim/scenario/text_file.hpp"

namespace shardsim::validate {
namespace {

// What libcsv's callbacks fill: rows of cells and the line each row starts on.
struct Sink {
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;
  std::vector<std::string> current;
  int line = 1;       ///< line being parsed
  int row_start = 0;  ///< line of the current row's first cell (0: no cell yet)
};

void on_field(void* data, std::size_t len, void* sink) {
  auto* s = static_cast<Sink*>(sink);
  if (s->current.empty()) s->row_start = s->line;
  s->current.emplace_back(data ? static_cast<const char*>(data) : "", len);
}

void on_row(int /*terminator*/, void* sink) {
  auto* s = static_cast<Sink*>(sink);
  s->rows.push_back(std::move(s->current));
  s->lines.push_back(s->row_start);
  s->current.clear();
}

std::string trim(const std::string& v) {
  const auto b = v.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return v.substr(b, v.find_last_not_of(" \t") - b + 1);
}

}  // namespace

CsvTable CsvTable::parse(const std::string& input, const std::string& file, bool repeated_columns) {
  // A UTF-8 byte-order mark (spreadsheet exports) is not part of the first column's name.
  const std::string text = input.rfind("\xEF\xBB\xBF", 0) == 0 ? input.substr(3) : input;
  csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL) != 0) {
    throw core::ConfigError({file, 0, 0}, "", "memory for the CSV parser");
  }
  Sink sink;
  // Fed a line at a time so that rows know their line (a quoted cell may span lines: its row keeps its first).
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    if (csv_parse(&p, text.data() + pos, end - pos, on_field, on_row, &sink) != end - pos) {
      const std::string why = csv_strerror(csv_error(&p));
      csv_free(&p);
      throw core::ConfigError({file, sink.line, 1}, "", fmt::format("well-formed CSV ({})", why));
    }
    pos = end;
    ++sink.line;
  }
  if (csv_fini(&p, on_field, on_row, &sink) != 0) {
    csv_free(&p);
    throw core::ConfigError({file, sink.line - 1, 1}, "", "well-formed CSV (a quoted cell is not closed)");
  }
  csv_free(&p);
  const auto& row_lines = sink.lines;

  CsvTable t;
  t.file_ = file;
  // Blank lines are not rows.
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;
  for (std::size_t i = 0; i < sink.rows.size(); ++i) {
    const auto& r = sink.rows[i];
    if (r.empty() || (r.size() == 1 && trim(r[0]).empty())) continue;
    rows.push_back(r);
    lines.push_back(row_lines[i]);
  }
  if (rows.empty()) throw core::ConfigError({file, 1, 1}, "", "a header row naming the columns");
  std::set<std::string> seen;
  for (const auto& c : rows[0]) {
    const std::string name = trim(c);
    if (name.empty()) throw core::ConfigError({file, lines[0], 1}, "", "a name for every column of the header");
    if (!seen.insert(name).second && !repeated_columns) throw core::ConfigError({file, lines[0], 1}, name, "column names used once");
    t.columns_.push_back(name);
  }
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != t.columns_.size()) {
      throw core::ConfigError({file, lines[i], 1}, "",
                              fmt::format("{} cells as in the header (got {})", t.columns_.size(), rows[i].size()));
    }
    std::vector<std::string> cells;
    for (const auto& c : rows[i]) cells.push_back(trim(c));
    t.cells_.push_back(std::move(cells));
    t.lines_.push_back(lines[i]);
  }
  return t;
}

CsvTable CsvTable::load(const std::string& path) { return parse(scenario::read_text_file(path, "CSV file"), path); }

std::optional<std::size_t> CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == name) return i;
  }
  return std::nullopt;
}

void CsvTable::fail(std::size_t row, std::size_t col, const std::string& expected) const {
  throw core::ConfigError(where(row), columns_[col], expected);
}

double CsvTable::number(std::size_t row, std::size_t col) const {
  const std::string& c = cells_[row][col];
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
  if (c.empty() || ec != std::errc() || ptr != c.data() + c.size() || !std::isfinite(v)) {
    fail(row, col, fmt::format("a number (got '{}')", c));
  }
  return v;
}

}  // namespace shardsim::validate
