#include "validate/collective_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "sim/core/errors.hpp"
#include "sim/engine/collective_cost.hpp"
#include "sim/engine/collective_library.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/text_file.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/placement.hpp"

namespace shardsim::validate {
namespace {

constexpr std::string_view kTag = "# shardsim:";

core::CollectiveAlgorithm algorithm_named(const std::string& v, const core::SourceLocation& at) {
  const auto a = core::parse_algorithm(v);
  if (a && (*a == core::CollectiveAlgorithm::kAuto || *a == core::CollectiveAlgorithm::kRing ||
            *a == core::CollectiveAlgorithm::kTree || *a == core::CollectiveAlgorithm::kPat)) {
    return *a;
  }
  throw core::ConfigError(at, "algorithm", fmt::format("auto, ring, tree or pat (got '{}')", v));
}

}  // namespace

CollectiveCheck load_collective_check(const std::string& path) {
  const std::string text = scenario::read_text_file(path, "collective benchmark");
  CollectiveCheck c;
  c.path = path;
  std::istringstream in(text);
  int line_no = 0;
  int tag_line = 0;
  int per_node_line = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.starts_with("# source:")) c.source = line.substr(9);
    if (!line.starts_with(kTag)) continue;
    tag_line = line_no;
    std::istringstream words(line.substr(kTag.size()));
    for (std::string w; words >> w;) {
      const core::SourceLocation at{path, line_no, 1};
      const auto eq = w.find('=');
      if (eq == std::string::npos) throw core::ConfigError(at, "", fmt::format("KEY=VALUE pairs (got '{}')", w));
      const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
      if (key == "cluster") {
        if (value.ends_with(".yaml")) {
          // A machine that is no preset: the cluster of a scenario file, relative to this one.
          c.machine = scenario::load_scenarios((std::filesystem::path(path).parent_path() / value).string()).at(0).cluster;
        } else if (const auto* preset = topology::find_cluster_preset(value)) {
          c.machine = *preset;
        } else {
          throw core::ConfigError(at, key, fmt::format("a cluster preset or a scenario file FILE.yaml (got '{}')", value));
        }
        c.cluster = value;
      } else if (key == "op") {
        c.op = parse_collective_op(value);
      } else if (key == "ranks") {
        c.ranks = std::atoi(value.c_str());
        if (c.ranks < 2 || c.ranks > (1 << 24) || std::to_string(c.ranks) != value) {
          throw core::ConfigError(at, key, fmt::format("a rank count from 2 to 2^24 (got '{}')", value));
        }
      } else if (key == "per_node") {
        c.per_node = std::atoi(value.c_str());
        if (c.per_node < 1 || c.per_node > 1024 || std::to_string(c.per_node) != value) {
          throw core::ConfigError(at, key,
                                  fmt::format("the ranks the run placed on each node, 1 or more (got '{}')", value));
        }
        per_node_line = line_no;
      } else if (key == "algorithm") {
        c.algorithm = algorithm_named(value, at);
      } else if (key == "protocols") {
        c.protocols = {false, false, false};
        c.protocols_forced = true;
        std::istringstream list(value);
        for (std::string p; std::getline(list, p, ',');) {
          const auto i = core::parse_protocol(p);
          if (!i) throw core::ConfigError(at, key, fmt::format("LL, LL128 or Simple, comma-separated (got '{}')", p));
          c.protocols[*i] = true;
        }
      } else if (key == "nccl") {
        // The NCCL version the run used: its tuning table picks the algorithm and protocol.
        const auto minor = core::parse_nccl_version(value);
        if (!minor) throw core::ConfigError(at, key, fmt::format("{} (got '{}')", core::nccl_version_range(), value));
        c.nccl_minor = *minor;
      } else if (key == "role") {
        if (value != "fit" && value != "check") {
          throw core::ConfigError(at, key, fmt::format("fit or check (got '{}')", value));
        }
        c.role = value;
      } else {
        throw core::ConfigError(at, key, "one of cluster, op, ranks, per_node, algorithm, protocols, nccl, role");
      }
    }
  }
  if (tag_line == 0) {
    throw core::ConfigError({path, 1, 1}, "", "a line '# shardsim: cluster=PRESET op=OP ranks=N' naming the machine");
  }
  if (c.cluster.empty() || c.ranks == 0) {
    throw core::ConfigError({path, tag_line, 1}, "", "cluster= and ranks= on the '# shardsim:' line");
  }
  if (c.nccl_minor > 0 && c.machine.library.family != core::CollectiveLibrarySpec::Family::kNccl) {
    throw core::ConfigError({path, tag_line, 1}, "nccl",
                            fmt::format("a machine whose library is NCCL ({} runs {})", c.cluster,
                                        core::library_name(c.machine.library.family)));
  }
  if (c.per_node > 0) {
    const int gpus = c.machine.devices_per_node;
    if (gpus % c.per_node != 0 || c.ranks % c.per_node != 0) {
      throw core::ConfigError({path, per_node_line, 1}, "per_node",
                              fmt::format("a divisor of the {} devices of a {} node and of ranks={} (got {})", gpus,
                                          c.cluster, c.ranks, c.per_node));
    }
  }
  if (c.algorithm == core::CollectiveAlgorithm::kPat) {
    // NCCL_ALGO=PAT: only where the library has it (NCCL 2.23 on, all-gather or reduce-scatter, one rank per node).
    core::CollectiveLibrarySpec lib = c.machine.library;
    if (c.nccl_minor > 0) lib.nccl_minor = c.nccl_minor;
    if (c.protocols_forced) lib.protocols = c.protocols;
    const int per_node = c.per_node > 0 ? c.per_node : c.machine.devices_per_node;
    const engine::LibraryCall call{c.op, c.ranks, c.ranks / per_node, 1.0, 1.0};
    if (!engine::pat_available(lib, call)) {
      throw core::ConfigError({path, tag_line, 1}, "algorithm",
                              "pat only where NCCL has PAT: nccl=2.23 or later, op=all_gather or reduce_scatter, "
                              "per_node=1 and the Simple protocol allowed");
    }
  }
  c.samples = load_collective_samples(path, c.op, c.ranks);
  return c;
}

bool has_collective_tag(const std::string& path) {
  std::istringstream in(scenario::read_text_file(path, "collective benchmark"));
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(kTag)) return true;
  }
  return false;
}

std::vector<CollectiveSample> tagged_samples(const CollectiveCheck& c) {
  std::vector<CollectiveSample> out = c.samples;
  for (auto& s : out) {
    s.algorithm = c.algorithm;
    if (c.protocols_forced) s.protocols = c.protocols;
    s.check = c.role == "check";
    s.per_node = c.per_node;
    s.nccl_minor = c.nccl_minor;
  }
  return out;
}

std::vector<CollectiveCheck> load_collective_checks(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<CollectiveCheck> out;
  for (const auto& f : files) out.push_back(load_collective_check(f));
  return out;
}

std::vector<CollectiveCheckRow> predict_collective_check(const CollectiveCheck& c, core::ClusterSpec cluster) {
  cluster.nodes =
      std::max<int>(cluster.nodes, static_cast<int>(cluster.nodes_for(sample_devices(cluster, c.ranks, c.per_node))));
  if (c.protocols_forced) cluster.library.protocols = c.protocols;
  if (c.nccl_minor > 0) cluster.library.nccl_minor = c.nccl_minor;
  const graph::GroupShape shape = sample_group_shape(cluster, c.ranks, c.per_node);
  std::vector<CollectiveCheckRow> rows;
  for (const auto& s : c.samples) {
    const auto e = engine::estimate_collective(cluster, shape, c.op, core::Bytes(s.bytes), c.algorithm);
    CollectiveCheckRow r;
    r.bytes = s.bytes;
    r.measured_s = s.seconds;
    r.predicted_s = e.time.value();
    r.algorithm = std::string(core::algorithm_name(e.algorithm));
    r.protocol = e.protocol ? std::string(engine::protocol_name(*e.protocol)) : "-";
    rows.push_back(r);
  }
  return rows;
}

std::vector<CollectiveCheckRow> predict_collective_check(const CollectiveCheck& c) {
  return predict_collective_check(c, c.machine);
}

CollectiveCheckSummary summarize(const std::vector<CollectiveCheckRow>& rows) {
  CollectiveCheckSummary s;
  s.rows = rows.size();
  for (const auto& x : rows) {
    s.mean_abs += std::abs(x.error());
    s.max_abs = std::max(s.max_abs, std::abs(x.error()));
    s.bias += x.error();
  }
  const double n = std::max<double>(1.0, static_cast<double>(rows.size()));
  s.mean_abs /= n;
  s.bias /= n;
  return s;
}

nlohmann::json collective_checks_to_json(const std::vector<CollectiveCheck>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : checks) {
    const auto r = predict_collective_check(c);
    const auto s = summarize(r);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& x : r) {
      rows.push_back({{"bytes", x.bytes}, {"measured_s", x.measured_s}, {"predicted_s", x.predicted_s},
                      {"error", x.error()}, {"algorithm", x.algorithm}, {"protocol", x.protocol}});
    }
    out.push_back({{"file", std::filesystem::path(c.path).filename().string()},
                   {"cluster", c.cluster},
                   {"op", graph::collective_name(c.op)},
                   {"ranks", c.ranks},
                   {"per_node", c.per_node},
                   {"algorithm", core::algorithm_name(c.algorithm)},
                   {"source", c.source},
                   {"role", c.role},
                   {"summary", {{"rows", s.rows}, {"mean_abs_error", s.mean_abs}, {"max_abs_error", s.max_abs}, {"bias", s.bias}}},
                   {"rows", rows}});
  }
  return out;
}

std::string render_collective_checks(const std::vector<CollectiveCheck>& checks, bool rows) {
  std::string o =
      "collective benchmarks: published nccl-tests runs and logged collectives against the collective library model "
      "(fit: a machine's network was fitted to it; check: held out)\n";
  o += fmt::format("  {:<38} {:<11} {:<5} {:>6} {:>5}  {:>9}  {:>9}  {:>8}\n", "file", "cluster", "role", "ranks", "rows",
                   "mean|err|", "max|err|", "bias");
  std::string detail;
  // Every row of a machine's files together, per role: what to expect of the machine's collectives at a glance.
  std::map<std::pair<std::string, std::string>, std::vector<CollectiveCheckRow>> pooled;
  for (const auto& c : checks) {
    const auto r = predict_collective_check(c);
    const auto s = summarize(r);
    const std::string name = std::filesystem::path(c.path).filename().string();
    o += fmt::format("  {:<38} {:<11} {:<5} {:>6} {:>5}  {:>8.1f}%  {:>8.1f}%  {:>+7.1f}%\n", name, c.machine.name, c.role,
                     c.ranks, r.size(), 100.0 * s.mean_abs, 100.0 * s.max_abs, 100.0 * s.bias);
    auto& all = pooled[{c.machine.name, c.role}];
    all.insert(all.end(), r.begin(), r.end());
    if (!rows) continue;
    const std::string placed = c.per_node > 0 ? fmt::format(", {} per node", c.per_node) : std::string();
    detail += fmt::format("\n{} ({} ranks{} on {};{})\n", name, c.ranks, placed, c.machine.name, c.source);
    detail += fmt::format("  {:>12}  {:>12}  {:>12}  {:>8}  {:>5}  {:>7}\n", "size (B)", "measured us", "predicted us",
                          "error", "algo", "proto");
    for (const auto& x : r) {
      detail += fmt::format("  {:>12.0f}  {:>12.1f}  {:>12.1f}  {:>+7.1f}%  {:>5}  {:>7}\n", x.bytes, x.measured_s * 1e6,
                            x.predicted_s * 1e6, 100.0 * x.error(), x.algorithm, x.protocol);
    }
  }
  o += "  per machine (every row of its files):\n";
  for (const auto& [key, r] : pooled) {
    const auto s = summarize(r);
    o += fmt::format("  {:<38} {:<11} {:<5} {:>6} {:>5}  {:>8.1f}%  {:>8.1f}%  {:>+7.1f}%\n", "", key.first, key.second, "",
                     r.size(), 100.0 * s.mean_abs, 100.0 * s.max_abs, 100.0 * s.bias);
  }
  return o + detail;
}

}  // namespace shardsim::validate
