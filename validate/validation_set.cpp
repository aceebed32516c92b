#include "validate/validation_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "sim/scenario/config_node.hpp"
#include "sim/scenario/text_file.hpp"
#include "validate/csv_table.hpp"

namespace shardsim::validate {
namespace {

using scenario::ConfigNode;

// Each metric's key in set files and what it is: a duration (given with a unit), and whether predicting it needs the
// iteration's task timings (a span of one phase or of the host's work, not only the iteration's length).
struct MetricInfo {
  std::string_view key;
  bool duration;
  bool from_timings;
};
constexpr std::array<MetricInfo, static_cast<std::size_t>(Metric::kCount)> kMetrics = {{
    {"iteration_time", true, false},
    {"mfu", false, false},
    {"hfu", false, false},
    {"tflops_per_gpu", false, false},
    {"hw_tflops_per_gpu", false, false},
    {"tokens_per_gpu_s", false, false},
    {"samples_per_s", false, false},
    {"forward_time", true, true},
    {"backward_time", true, true},
    {"step_time", true, true},
    {"backward_reduce_time", true, true},
    {"host_iteration_time", true, true},
    {"memory", false, false},
    {"fits", false, false},
}};
const MetricInfo& info(Metric m) { return kMetrics[static_cast<std::size_t>(m)]; }

std::vector<std::string> metric_keys() {
  std::vector<std::string> keys;
  for (const auto& m : kMetrics) keys.emplace_back(m.key);
  return keys;
}

Metric parse_metric(const ConfigNode& n) {
  const std::string key = n.as_string();
  if (auto m = metric_from_key(key)) return *m;
  n.fail(fmt::format("a metric{}; one of {}", scenario::suggest(key, metric_keys()), scenario::join(metric_keys())));
}

// A measured value as a set file spells it: a duration with its unit, a fraction, a number, or a boolean.
double parse_measured_value(Metric m, const ConfigNode& v) {
  if (is_duration(m)) return v.as_duration().value();
  if (m == Metric::kFits) return v.as_bool() ? 1.0 : 0.0;
  if (m == Metric::kMemory) return v.as_bytes().value();
  if (m == Metric::kMfu || m == Metric::kHfu) return v.as_fraction();
  const double x = v.as_double();
  if (!(x > 0.0)) v.fail("a positive number");
  return x;
}

std::vector<Measured> parse_measured(const ConfigNode& n) {
  std::vector<Measured> out;
  for (const auto& [key, v] : n.entries()) {
    const auto m = metric_from_key(key);
    if (!m) {
      n.fail(fmt::format("metrics as keys; '{}' is not one{}; one of {}", key, scenario::suggest(key, metric_keys()),
                         scenario::join(metric_keys())));
    }
    if (v.is_sequence()) {
      // Repeated runs of one case: compared against their median, their range reported beside the error.
      if (*m == Metric::kFits) v.fail("one verdict (true or false), not a list");
      Measured r{*m, 0.0, {}};
      for (const auto& x : v.items()) r.runs.push_back(parse_measured_value(*m, x));
      if (r.runs.size() < 2) v.fail("two or more runs in a list (or one value without brackets)");
      r.value = percentile(r.runs, 0.5);
      out.push_back(std::move(r));
      continue;
    }
    out.push_back({*m, parse_measured_value(*m, v), {}});
  }
  if (out.empty()) n.fail("at least one measured metric");
  return out;
}

// The rows' `devices` key: a job's device count, as whole nodes of the base cluster or part of one node.
void add_devices(std::vector<std::pair<std::string, ConfigNode>>& changes, const ConfigNode& at, long long devices,
                 int per_node) {
  auto scalar = [&](const std::string& path, long long v) {
    return std::pair{path, ConfigNode(YAML::Node(v), std::make_shared<const std::string>(at.file()), path, at.location())};
  };
  if (devices < 1) at.fail("a positive device count");
  if (devices < per_node) {
    changes.push_back(scalar("cluster.nodes", 1));
    changes.push_back(scalar("cluster.devices_per_node", devices));
  } else {
    if (devices % per_node != 0) {
      at.fail(fmt::format("whole nodes of {} devices, or fewer devices than one node (got {})", per_node, devices));
    }
    changes.push_back(scalar("cluster.nodes", devices / per_node));
  }
}

// Where a key path of the base ("base.plan.zero_stage") is written, if it is: a row's scenario is parsed from a copy
// of the base that has lost the file's positions.
std::optional<core::SourceLocation> locate(const ConfigNode& base, const std::string& key_path) {
  const std::string prefix = base.path() + ".";
  if (key_path.rfind(prefix, 0) != 0) return std::nullopt;
  std::optional<ConfigNode> at = base;
  std::stringstream parts(key_path.substr(prefix.size()));
  for (std::string part; std::getline(parts, part, '.') && at;) {
    if (!at->is_map()) return std::nullopt;
    at = at->find(part.substr(0, part.find('[')));
  }
  if (!at) return std::nullopt;
  return at->location();
}

// Builds a row's scenario; the model's refusal (a ConfigError from the scenario) is kept as the row's reason.
void make_scenario(Row& row, const ConfigNode& base, const std::vector<std::pair<std::string, ConfigNode>>& changes) {
  row.base = base;
  row.changes = changes;
  try {
    row.scenario = scenario::parse_variant(base, changes);
    row.scenario->name = row.id;
  } catch (const core::ConfigError& e) {
    const auto where = e.where().line <= 1 ? locate(base, e.key_path()) : std::nullopt;
    // Messages name files relative to the set's folder, so that reports read the same wherever the data lives.
    row.refused = where ? core::ConfigError(*where, e.key_path(), e.expected()).what() : e.what();
    const std::string dir = std::filesystem::path(base.file()).parent_path().string();
    for (std::size_t at; !dir.empty() && (at = row.refused.find(dir + "/")) != std::string::npos;) {
      row.refused.erase(at, dir.size() + 1);
    }
  }
}

// One column of a table: where its cells go.
struct ColumnTarget {
  enum class Kind { kKey, kDevices, kMeasured, kIgnore } kind = Kind::kIgnore;
  std::string key;      ///< kKey: dotted key path
  double scale = 1.0;   ///< kKey: cell x scale (whole numbers stay whole)
  Metric metric = Metric::kIterationTime;
  std::string unit;     ///< kMeasured durations: the cells' unit ("ms")
};

std::vector<ColumnTarget> parse_targets(const ConfigNode& n) {
  std::vector<ColumnTarget> out;
  auto one = [&](const ConfigNode& t) {
    ColumnTarget c;
    if (t.is_scalar()) {
      const std::string s = t.as_string();
      if (s == "ignore") return c;
      if (s == "devices") {
        c.kind = ColumnTarget::Kind::kDevices;
        return c;
      }
      c.kind = ColumnTarget::Kind::kKey;
      c.key = s;
      return c;
    }
    t.expect_map({"key", "scale", "measured", "unit"});
    if (auto m = t.find("measured")) {
      c.kind = ColumnTarget::Kind::kMeasured;
      c.metric = parse_metric(*m);
      if (is_duration(c.metric)) c.unit = t.get("unit").as_choice({"s", "ms", "us"});
      return c;
    }
    c.kind = ColumnTarget::Kind::kKey;
    c.key = t.get("key").as_string();
    if (auto s = t.find("scale")) c.scale = s->as_double();
    return c;
  };
  if (n.is_sequence()) {
    for (const auto& t : n.items()) out.push_back(one(t));
  } else {
    out.push_back(one(n));
  }
  return out;
}

void parse_table(const ConfigNode& n, const ConfigNode& base, int per_node, ValidationSet& set) {
  n.expect_map({"file", "id", "columns", "cite"});
  const std::filesystem::path dir = std::filesystem::path(set.file).parent_path();
  const ConfigNode file_at = n.get("file");
  const std::string path = (dir / file_at.as_string()).string();
  CsvTable csv;
  try {
    csv = CsvTable::load(path);
  } catch (const core::ConfigError& e) {
    if (e.where().line == 0) file_at.fail(e.expected());
    throw;
  }
  const std::string id_pattern = n.get("id").as_string();
  if (id_pattern.find("{row}") == std::string::npos) n.get("id").fail("a row id pattern with {row} in it");
  const std::string cite = n.get("cite").as_string();
  std::vector<std::pair<std::size_t, ColumnTarget>> targets;
  std::set<std::size_t> mapped;
  for (const auto& [column, t] : n.get("columns").entries()) {
    const auto c = csv.column(column);
    if (!c) t.fail(fmt::format("a column of {}{}", path, scenario::suggest(column, csv.columns())));
    mapped.insert(*c);
    for (const auto& target : parse_targets(t)) targets.emplace_back(*c, target);
  }
  for (std::size_t c = 0; c < csv.columns().size(); ++c) {
    if (!mapped.count(c)) {
      n.get("columns").fail(fmt::format("every column of {} mapped (a key path, devices, {{measured: metric}} or "
                                        "ignore); '{}' is not", path, csv.columns()[c]));
    }
  }
  const auto file_name = std::make_shared<const std::string>(path);
  for (std::size_t r = 0; r < csv.rows(); ++r) {
    Row row;
    row.id = id_pattern;
    row.id.replace(row.id.find("{row}"), 5, std::to_string(r + 1));
    row.cite = fmt::format("{}; {} line {}", cite, std::filesystem::path(path).filename().string(), csv.line(r));
    row.where = csv.where(r);
    std::vector<std::pair<std::string, ConfigNode>> changes;
    for (const auto& [c, t] : targets) {
      const std::string& cell = csv.cell(r, c);
      switch (t.kind) {
        case ColumnTarget::Kind::kIgnore:
          break;
        case ColumnTarget::Kind::kDevices: {
          const double d = csv.number(r, c);
          if (d != std::floor(d)) csv.fail(r, c, "a whole number of devices");
          add_devices(changes, ConfigNode(YAML::Node(cell), file_name, csv.columns()[c], csv.where(r)),
                      static_cast<long long>(d), per_node);
          break;
        }
        case ColumnTarget::Kind::kMeasured: {
          double v = csv.number(r, c);
          if (is_duration(t.metric)) {
            v = core::parse_duration(cell + t.unit).value();
          } else if (t.metric == Metric::kFits) {
            v = v != 0.0 ? 1.0 : 0.0;
          }
          if (!(v > 0.0) && t.metric != Metric::kFits) csv.fail(r, c, "a positive measurement");
          row.measured.push_back({t.metric, v, {}});
          break;
        }
        case ColumnTarget::Kind::kKey: {
          YAML::Node value(cell);
          if (t.scale != 1.0) {
            const double x = csv.number(r, c) * t.scale;
            value = x == std::floor(x) ? YAML::Node(static_cast<long long>(x)) : YAML::Node(x);
          }
          changes.emplace_back(t.key, ConfigNode(value, file_name, t.key, csv.where(r)));
          break;
        }
      }
    }
    if (row.measured.empty()) n.get("columns").fail("a column mapped to {measured: metric}");
    make_scenario(row, base, changes);
    set.rows.push_back(std::move(row));
  }
}

}  // namespace

std::string scenario_yaml(const Row& row, const std::string& set_id) {
  if (!row.base) throw std::logic_error("a validation row without its set's base");
  return scenario::variant_yaml(*row.base, row.changes, set_id + "/" + row.id);
}

std::string_view metric_key(Metric m) { return info(m).key; }

bool is_duration(Metric m) { return info(m).duration; }

bool needs_timings(Metric m) { return info(m).from_timings; }

std::optional<Metric> metric_from_key(std::string_view key) {
  for (std::size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].key == key) return static_cast<Metric>(i);
  }
  return std::nullopt;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

ValidationSet parse_validation_set(const std::string& text, const std::string& file) {
  const ConfigNode root = ConfigNode::parse(text, file);
  if (!root.is_map()) root.fail("a validation set: a map with set, role, source, base and rows or table");
  root.expect_map({"set", "role", "title", "source", "assumptions", "base", "rows", "table", "claims"});
  ValidationSet set;
  set.file = file;
  set.id = root.get("set").as_string();
  set.role = root.get("role").as_choice({"fit", "check"});
  set.title = root.get("title").as_string();
  set.source = root.get("source").as_string();
  if (auto a = root.find("assumptions")) {
    for (const auto& item : a->items()) set.assumptions.push_back(item.as_string());
  }
  const ConfigNode base = root.get("base");
  // The base must stand on its own: its errors are the set file's errors, not a row's refusal.
  const int per_node = scenario::parse_variant(base, {}).cluster.devices_per_node;
  if (!root.has("rows") && !root.has("table")) root.fail("rows or a table of rows");
  if (auto rows = root.find("rows")) {
    for (const auto& r : rows->items()) {
      r.expect_map({"id", "keys", "measured", "cite"});
      // A row without measurements is there for the claims that name it (checked below).
      Row row;
      row.id = r.get("id").as_string();
      row.cite = r.get("cite").as_string();
      row.where = r.location();
      if (auto m = r.find("measured")) row.measured = parse_measured(*m);
      std::vector<std::pair<std::string, ConfigNode>> changes;
      if (auto keys = r.find("keys")) {
        for (const auto& [key, v] : keys->entries()) {
          const std::string section = key.substr(0, key.find('.'));
          if (section != "model" && section != "cluster" && section != "plan" && key != "devices") {
            v.fail("keys are model, cluster, plan, dotted paths under them (plan.zero_stage) or devices");
          }
          if (key == "devices") {
            add_devices(changes, v, v.as_int(1, 1LL << 30), per_node);
          } else {
            changes.emplace_back(key, v);
          }
        }
      }
      make_scenario(row, base, changes);
      set.rows.push_back(std::move(row));
    }
  }
  if (auto t = root.find("table")) parse_table(*t, base, per_node, set);

  std::set<std::string> ids;
  for (const auto& row : set.rows) {
    if (!ids.insert(row.id).second) {
      throw core::ConfigError(row.where, "rows", fmt::format("row ids used once ('{}' repeats)", row.id));
    }
  }
  if (auto claims = root.find("claims")) {
    for (const auto& c : claims->items()) {
      c.expect_map({"id", "ratio", "order", "metric", "measured", "cite"});
      Claim claim;
      claim.id = c.get("id").as_string();
      claim.cite = c.get("cite").as_string();
      claim.where = c.location();
      claim.metric = parse_metric(c.get("metric"));
      if (claim.metric == Metric::kFits) c.get("metric").fail("a performance metric (fits is a row's measurement)");
      const bool ratio = c.has("ratio");
      if (ratio == c.has("order")) c.fail("either ratio: [numerator, denominator] or order: [best, ..., worst]");
      const ConfigNode list = c.get(ratio ? "ratio" : "order");
      for (const auto& item : list.items()) {
        const std::string id = item.as_string();
        if (!ids.count(id)) item.fail(fmt::format("a row id of this set{}", scenario::suggest(id, {ids.begin(), ids.end()})));
        claim.rows.push_back(id);
      }
      if (ratio) {
        if (claim.rows.size() != 2) list.fail("two row ids: [numerator, denominator]");
        claim.kind = Claim::Kind::kRatio;
        // One ratio, or the ratio in each of several runs (each run's two rows measured together): their median.
        const ConfigNode mn = c.get("measured");
        std::vector<double> runs;
        for (const auto& x : mn.is_sequence() ? mn.items() : std::vector<ConfigNode>{mn}) {
          runs.push_back(x.as_double());
          if (!(runs.back() > 0.0)) x.fail("a positive ratio");
        }
        if (mn.is_sequence() && runs.size() < 2) mn.fail("two or more runs' ratios in a list (or one without brackets)");
        claim.measured = percentile(runs, 0.5);
      } else {
        if (claim.rows.size() < 2) list.fail("at least two row ids, best first");
        if (c.has("measured")) c.get("measured").fail("no measured value on an order claim (the order is the claim)");
        claim.kind = Claim::Kind::kOrder;
      }
      set.claims.push_back(std::move(claim));
    }
  }
  for (const auto& row : set.rows) {
    const bool used = std::any_of(set.claims.begin(), set.claims.end(), [&](const Claim& c) {
      return std::find(c.rows.begin(), c.rows.end(), row.id) != c.rows.end();
    });
    if (row.measured.empty() && !used) {
      throw core::ConfigError(row.where, "rows", fmt::format("a measured value for row '{}' (or a claim naming it)", row.id));
    }
  }
  return set;
}

ValidationSet load_validation_set(const std::string& path) {
  return parse_validation_set(scenario::read_text_file(path, "validation set"), path);
}

std::vector<ValidationSet> load_validation_sets(const std::string& dir) {
  std::vector<ValidationSet> out;
  for (const auto& f : validation_set_files(dir)) out.push_back(load_validation_set(f));
  return out;
}

std::vector<std::string> validation_set_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  if (ec) throw core::ConfigError({dir, 0, 0}, "", fmt::format("a folder of validation sets ({})", ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace shardsim::validate
