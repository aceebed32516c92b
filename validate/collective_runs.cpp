#include "validate/collective_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "sim/engine/collective_cost.hpp"
#include "sim/scenario/config_node.hpp"
#include "sim/scenario/text_file.hpp"
#include "topology/placement.hpp"
#include "validate/csv_table.hpp"
#include "validate/model_parameters.hpp"

namespace shardsim::validate {
namespace {

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// The collectives shardsim models, as the command line names them (--op) and nccl-tests / rccl-tests name their
// binaries: NAME_perf.
constexpr std::array<std::pair<std::string_view, graph::CollectiveOp>, 6> kOps = {{
    {"all_reduce", graph::CollectiveOp::kAllReduce},
    {"all_gather", graph::CollectiveOp::kAllGather},
    {"reduce_scatter", graph::CollectiveOp::kReduceScatter},
    {"alltoall", graph::CollectiveOp::kAllToAll},
    {"sendrecv", graph::CollectiveOp::kSendRecv},
    {"broadcast", graph::CollectiveOp::kBroadcast},
}};

std::optional<graph::CollectiveOp> op_named(std::string_view name) {
  for (const auto& [key, op] : kOps) {
    if (key == name) return op;
  }
  return std::nullopt;
}

// The modelled collectives' names joined by `sep`, the last two by `last` ("a, b and c"; "a|b|c").
std::string op_names(std::string_view sep, std::string_view last) {
  std::string o;
  for (std::size_t i = 0; i < kOps.size(); ++i) {
    if (i > 0) o += i + 1 == kOps.size() ? last : sep;
    o += kOps[i].first;
  }
  return o;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() > tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The collective a nccl-tests / rccl-tests binary runs ("all_reduce_perf" -> all-reduce); nullopt for the tests
// shardsim does not model (reduce, gather, scatter, hypercube).
std::optional<graph::CollectiveOp> nccl_test_op(std::string_view test) {
  // nccl-tests built with MPI=1 NAME_SUFFIX=_mpi names its binaries all_reduce_perf_mpi and so on.
  if (ends_with(test, "_mpi")) test.remove_suffix(4);
  if (!ends_with(test, "_perf")) return std::nullopt;
  test.remove_suffix(5);
  return op_named(test);
}

// One test of the output: its "# Using devices" rank lines (each "Rank R [Group G] Pid P on HOST device D [BUS]
// NAME") and what the ranks' hosts say about the placement.
struct NcclTestSection {
  std::optional<graph::CollectiveOp> op;  ///< from "# Collective test starting: NAME_perf"; nullopt: not named
  bool modelled = true;                   ///< false: a test shardsim does not model (its rows are skipped)
  int line = 0;                           ///< where the section starts
  int rank_lines = 0;
  std::map<std::string, int> ranks_on_host;
  std::string device;
};

// nccl-tests' table: "# Rank" lines name the ranks (and, on "on HOST", where each runs); a data line is size count
// type [redop root] time algbw busbw #wrong ... (older versions print no redop / root columns, or a redop and no
// root: the column header says which). A log of several tests, each after its "# Collective test starting:" line,
// gives each test's rows its own collective and ranks.
std::vector<CollectiveSample> parse_nccl_tests(const std::string& text, const std::string& path,
                                               std::optional<graph::CollectiveOp> op, int ranks,
                                               std::vector<std::string>* skipped) {
  std::vector<CollectiveSample> out;
  NcclTestSection part;
  // The header "#  size  count  type  redop  root  time ..." names the columns before the time; without one,
  // the type is followed by the time or by redop and root.
  std::optional<std::size_t> header_time_col;
  std::istringstream in(text);
  int line_no = 0;
  std::vector<std::size_t> section_begin{0};  // index into out of each section's first sample
  std::vector<NcclTestSection> sections;
  auto close_section = [&] {
    sections.push_back(part);
    section_begin.push_back(out.size());
  };
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    if (w[0] == "#") {
      if (w.size() >= 5 && w[1] == "Collective" && w[2] == "test" && w[3] == "starting:") {
        close_section();
        part = NcclTestSection{};
        part.line = line_no;
        part.op = nccl_test_op(w[4]);
        part.modelled = part.op.has_value();
        if (part.op && op && *part.op != *op) {
          throw core::ConfigError({path, line_no, 1}, "",
                                  fmt::format("the collective asked for ({}), not {}",
                                              graph::collective_name(*op), w[4]));
        }
        if (!part.modelled && skipped) {
          skipped->push_back(
              fmt::format("{}:{}: {} (shardsim models {})", path, line_no, w[4], op_names(", ", " and ")));
        }
      }
      if (w.size() > 1 && w[1] == "Rank") {
        ++part.rank_lines;
        const auto on = std::find(w.begin(), w.end(), "on");
        if (on != w.end() && on + 1 != w.end()) ++part.ranks_on_host[*(on + 1)];
        const auto bus = std::find_if(w.begin(), w.end(), [](const std::string& x) { return x.starts_with('['); });
        if (bus != w.end() && part.device.empty()) {
          for (auto it = bus + 1; it != w.end(); ++it) part.device += (part.device.empty() ? "" : " ") + *it;
        }
      }
      if (w.size() > 4 && w[1] == "size" && w[2] == "count" && w[3] == "type") {
        const auto time = std::find(w.begin(), w.end(), "time");
        if (time != w.end()) header_time_col = static_cast<std::size_t>(time - w.begin()) - 1;
      }
      continue;
    }
    if (w[0][0] == '#') continue;
    if (w.size() < 6 || !is_number(w[0]) || !is_number(w[1])) {
      if (w[0] == "Avg" || w[0] == "Out") continue;  // the closing "Avg bus bandwidth" and "Out of bounds" lines
      throw core::ConfigError({path, line_no, 1}, "",
                              "a nccl-tests data line: size count type [redop root] time algbw busbw #wrong ...");
    }
    if (!part.modelled) continue;
    const std::size_t time_col = header_time_col ? *header_time_col : is_number(w[3]) ? 3 : 5;
    if (w.size() <= time_col || !is_number(w[time_col])) {
      throw core::ConfigError({path, line_no, 1}, "", "a time in microseconds after size, count, type, redop, root");
    }
    if (!part.op && !op) {
      throw core::ConfigError({path, line_no, 1}, "",
                              "the collective: the file names none (no \"# Collective test starting:\" line), so "
                              "give it (--op " + op_names("|", "|") + ")");
    }
    CollectiveSample s;
    s.op = part.op ? *part.op : *op;
    s.bytes = std::strtod(w[0].c_str(), nullptr);
    s.seconds = std::strtod(w[time_col].c_str(), nullptr) * 1e-6;
    s.where = fmt::format("{}:{}", path, line_no);
    if (s.bytes > 0.0 && s.seconds > 0.0) out.push_back(s);
  }
  close_section();
  // Each section's ranks and placement: the rank count given, else its "# Rank" lines; ranks on each named host.
  for (std::size_t k = 0; k < sections.size(); ++k) {
    const NcclTestSection& c = sections[k];
    if (section_begin[k] == section_begin[k + 1]) continue;  // no rows
    const int n = ranks > 0 ? ranks : c.rank_lines;
    const int at = c.line > 0 ? c.line : 1;
    if (n < 2) {
      throw core::ConfigError({path, at, 1}, "", "the \"# Rank\" lines of nccl-tests (or FILE:RANKS) naming 2 or more ranks");
    }
    int per_node = 0;
    if (c.ranks_on_host.size() > 1 && c.rank_lines == n) {
      per_node = c.ranks_on_host.begin()->second;
      for (const auto& [host, count] : c.ranks_on_host) {
        if (count != per_node) {
          throw core::ConfigError(
              {path, at, 1}, "",
              fmt::format("as many ranks on every host (the \"# Rank\" lines put {} on {} and {} on {}): shardsim "
                          "lays a group out evenly over its nodes", per_node, c.ranks_on_host.begin()->first, count,
                          host));
        }
      }
    }
    for (std::size_t i = section_begin[k]; i < section_begin[k + 1]; ++i) {
      out[i].ranks = n;
      out[i].per_node = per_node;
      out[i].device = c.device;
    }
  }
  return out;
}

std::vector<CollectiveSample> parse_csv(const std::string& text, const std::string& path, graph::CollectiveOp op,
                                        int ranks) {
  const CsvTable t = CsvTable::parse(text, path, true);
  const auto size = t.column("size(B)");
  const auto time = t.column("time(ns)");
  if (!size || !time) throw core::ConfigError({path, 1, 1}, "", "columns size(B) and time(ns)");
  if (ranks < 2) throw core::ConfigError({path, 1, 1}, "", "the rank count as FILE:RANKS (a CSV does not say it)");
  std::vector<CollectiveSample> out;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    CollectiveSample s;
    s.op = op;
    s.ranks = ranks;
    s.bytes = t.number(r, *size);
    s.seconds = t.number(r, *time) * 1e-9;  // the first time(ns) column: out of place
    s.where = fmt::format("{}:{}", path, t.line(r));
    if (!(s.bytes > 0.0 && s.seconds > 0.0)) t.fail(r, *time, "a positive size and time");
    out.push_back(s);
  }
  return out;
}

// DeepSpeed's communication logger (comms_logger with verbose on: deepspeed@v0.14.0 utils/comms_logging.py append):
// one line per timed operation, "comm op: NAME | time (ms): T | msg size: S UNIT | algbw (Gbps): ... | busbw ...",
// NAME followed by " | [Caller Func: F]" under debug, S to two decimals of 1024-based units (convert_size). Its size
// is the tensor DeepSpeed's wrapper names (comm/utils.py get_msg_size_from_args): an all-gather's input, one rank's
// share, so the full output is S x ranks; a reduce-scatter's and an all-reduce's full input; a message's whole.
// DeepSpeed's names for the collectives shardsim models, and whether the logged size is one rank's share.
struct DeepSpeedOp {
  std::string_view name;
  graph::CollectiveOp op;
  bool per_rank_size;
};
constexpr std::array<DeepSpeedOp, 15> kDeepSpeedOps = {{
    {"all_reduce", graph::CollectiveOp::kAllReduce, false},
    {"all_reduce_coalesced", graph::CollectiveOp::kAllReduce, false},
    {"inference_all_reduce", graph::CollectiveOp::kAllReduce, false},
    {"all_gather", graph::CollectiveOp::kAllGather, true},
    {"all_gather_into_tensor", graph::CollectiveOp::kAllGather, true},
    {"allgather_fn", graph::CollectiveOp::kAllGather, true},
    {"reduce_scatter", graph::CollectiveOp::kReduceScatter, false},
    {"reduce_scatter_tensor", graph::CollectiveOp::kReduceScatter, false},
    {"reduce_scatter_fn", graph::CollectiveOp::kReduceScatter, false},
    {"all_to_all_single", graph::CollectiveOp::kAllToAll, false},
    {"send", graph::CollectiveOp::kSendRecv, false},
    {"recv", graph::CollectiveOp::kSendRecv, false},
    {"isend", graph::CollectiveOp::kSendRecv, false},
    {"irecv", graph::CollectiveOp::kSendRecv, false},
    {"broadcast", graph::CollectiveOp::kBroadcast, false},
}};

// A line's words, without a launcher's rank label ("0:", as srun --label and torchrun's tee prefix them).
std::vector<std::string> log_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  if (!w.empty() && w[0].size() > 1 && w[0].back() == ':' &&
      w[0].find_first_not_of("0123456789") == w[0].size() - 1) {
    w.erase(w.begin());
  }
  return w;
}

// The header of DeepSpeed's summary table (comms_logger.log_all, deepspeed.comm.log_summary): "Comm. Op  Message Size
// Count  Total Latency(ms)  Avg Latency(ms) ..."; with show_straggler a second one, "... Total comm lat(ms)  Total
// straggler(ms)  Avg comm lat(ms)  Avg straggler(ms)", whose times leave out the waits for the slowest rank.
enum class SummaryKind { kNone, kPlain, kStraggler };
SummaryKind summary_header(const std::string& line) {
  if (line.find("Comm. Op") == std::string::npos || line.find("Message Size") == std::string::npos) {
    return SummaryKind::kNone;
  }
  return line.find("Avg comm lat") != std::string::npos ? SummaryKind::kStraggler : SummaryKind::kPlain;
}

// Whether the text is DeepSpeed's: a line outside comments with the logger's "comm op: ... time (ms): ", or its
// summary table's header (nccl-tests' headers are comments).
bool is_deepspeed_comms_log(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto at = line.find("comm op: ");
    if (at != std::string::npos && line.find("time (ms): ", at) != std::string::npos) return true;
    if (summary_header(line) != SummaryKind::kNone) return true;
  }
  return false;
}

// DeepSpeed's timings of one collective, one sample per size. From the summary table with straggler times where the
// log has one (its average leaves out the waits for the slowest rank), else from the per-call "comm op:" lines (the
// median of each size's calls: the log times waits for late peers too), else from the plain summary (its trimmed
// mean per size).
std::vector<CollectiveSample> parse_deepspeed_comms(const std::string& text, const std::string& path,
                                                    std::optional<graph::CollectiveOp> op, int ranks, int per_node) {
  const std::string usage = fmt::format(
      "a DeepSpeed comms log times every operation of every group: name the collective to read (--op {}) and its "
      "group as FILE:RANKS or FILE:RANKS:PER_NODE",
      op_names("|", "|"));
  if (!op || ranks < 2) throw core::ConfigError({path, 1, 1}, "", usage);
  struct Size {
    std::vector<double> seconds;
    int line = 0;
  };
  // By source: 0 the straggler summary, 1 the per-call lines, 2 the plain summary.
  std::array<std::map<double, Size>, 3> by_size;
  std::map<std::string, int> others;
  auto known_op = [&](const std::string& name) {
    return std::find_if(kDeepSpeedOps.begin(), kDeepSpeedOps.end(), [&](const DeepSpeedOp& d) { return d.name == name; });
  };
  // A size (S UNIT) and a time in ms, read at `line_no`, into source `src` for operation `name`.
  auto take = [&](std::size_t src, const std::string& name, const std::string& size_text, const std::string& unit,
                  const std::string& ms_text, int line_no, int col) {
    const auto bad = [&](const std::string& what) {
      return core::ConfigError({path, line_no, col}, "comm op",
                               fmt::format("{} (DeepSpeed's comms logger: comm op: NAME | time (ms): T | msg size: S "
                                           "UNIT, or its summary table: SIZE UNIT COUNT TOTAL AVG ...)",
                                           what));
    };
    const auto known = known_op(name);
    if (known == kDeepSpeedOps.end() || known->op != *op) {
      ++others[name];
      return;
    }
    char* end = nullptr;
    const double size = std::strtod(size_text.c_str(), &end);
    const bool size_ok = end != size_text.c_str();
    std::string u = unit;
    if (size_ok && *end != '\0') u = end;  // "0B": the unit glued to the number
    const double ms = std::strtod(ms_text.c_str(), &end);
    if (!size_ok || end == ms_text.c_str() || !(ms >= 0.0) || !(size >= 0.0)) throw bad("a time and a size");
    if (size == 0.0 || ms == 0.0) return;  // nothing moved (DeepSpeed prints "0B"), or nothing to time
    constexpr std::array<std::string_view, 5> kUnits = {"B", "KB", "MB", "GB", "TB"};
    const auto k = std::find(kUnits.begin(), kUnits.end(), u);
    if (k == kUnits.end()) throw bad(fmt::format("a size in B, KB, MB, GB or TB (got '{}')", u));
    double bytes = std::round(size * std::pow(1024.0, static_cast<double>(k - kUnits.begin())));
    if (known->per_rank_size) bytes *= ranks;
    if (!std::isfinite(bytes) || !std::isfinite(ms)) throw bad("a finite time and size");
    Size& at_size = by_size[src][bytes];
    if (at_size.seconds.empty()) at_size.line = line_no;
    at_size.seconds.push_back(ms * 1e-3);
  };
  std::istringstream in(text);
  int line_no = 0;
  SummaryKind table = SummaryKind::kNone;
  std::string table_op;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) {
      table = SummaryKind::kNone;
      continue;
    }
    if (line[first] == '#') continue;
    if (const auto at = line.find("comm op: "); at != std::string::npos) {
      const std::string rest = line.substr(at + 9);
      const std::string name = rest.substr(0, rest.find_first_of(" |"));
      const auto t = rest.find("time (ms): ");
      const auto m = rest.find("msg size: ");
      if (known_op(name) != kDeepSpeedOps.end() && known_op(name)->op == *op &&
          (t == std::string::npos || m == std::string::npos)) {
        throw core::ConfigError({path, line_no, static_cast<int>(at) + 1}, "comm op",
                                "a time and a message size (DeepSpeed's comms logger: comm op: NAME | time (ms): T | "
                                "msg size: S UNIT)");
      }
      if (t == std::string::npos || m == std::string::npos) {
        ++others[name];
        continue;
      }
      std::istringstream mw(rest.substr(m + 10));
      std::string size_text, unit;
      mw >> size_text >> unit;
      std::istringstream tw(rest.substr(t + 11));
      std::string ms_text;
      tw >> ms_text;
      take(1, name, size_text, unit, ms_text, line_no, static_cast<int>(at) + 1);
      continue;
    }
    if (const SummaryKind k = summary_header(line); k != SummaryKind::kNone) {
      table = k;
      table_op.clear();
      continue;
    }
    if (table == SummaryKind::kNone) continue;
    const std::vector<std::string> w = log_words(line);
    if (w.empty() || w[0].starts_with("___") || w[0].starts_with("---")) continue;
    if (w[0] == "Breakdown") {  // "Breakdown with straggler effect": the straggler table's header follows
      table = SummaryKind::kNone;
      continue;
    }
    if (!is_number(w[0]) && !(w[0].size() > 1 && w[0].ends_with('B') && is_number(w[0].substr(0, w[0].size() - 1)))) {
      table_op = w[0];  // an operation's name (under debug followed by " | [Caller Func: F]"): its sizes follow
      continue;
    }
    // SIZE UNIT COUNT TOTAL AVG ... (the straggler table: SIZE UNIT COUNT TOTAL STRAGGLER AVG ...), the unit glued
    // to the size where it is "0B".
    const bool glued = !is_number(w[0]);
    const std::size_t avg = (table == SummaryKind::kStraggler ? 5 : 4) - (glued ? 1 : 0);
    if (w.size() <= avg || table_op.empty()) continue;
    take(table == SummaryKind::kStraggler ? 0 : 2, table_op, w[0], glued ? "" : w[1], w[avg], line_no, 1);
  }
  const std::size_t src = !by_size[0].empty() ? 0 : !by_size[1].empty() ? 1 : 2;
  if (by_size[src].empty()) {
    std::string seen;
    for (const auto& [n, c] : others) seen += fmt::format("{}{} x {}", seen.empty() ? "" : ", ", c, n);
    throw core::ConfigError({path, 1, 1}, "",
                            fmt::format("a DeepSpeed comms log line of the collective asked for ({}): {}",
                                        graph::collective_name(*op), seen.empty() ? "none in the file" : "it has " + seen));
  }
  std::vector<CollectiveSample> out;
  for (auto& [bytes, sz] : by_size[src]) {
    std::sort(sz.seconds.begin(), sz.seconds.end());
    const std::size_t n = sz.seconds.size();
    CollectiveSample s;
    s.op = *op;
    s.ranks = ranks;
    s.per_node = per_node;
    s.bytes = bytes;
    s.seconds = n % 2 ? sz.seconds[n / 2] : 0.5 * (sz.seconds[n / 2 - 1] + sz.seconds[n / 2]);
    s.where = fmt::format("{}:{}", path, sz.line);
    out.push_back(s);
  }
  return out;
}

}  // namespace

graph::CollectiveOp parse_collective_op(const std::string& name) {
  if (const auto op = op_named(name)) return *op;
  throw core::ConfigError({"<command line>", 0, 0}, "--op", fmt::format("{} (got '{}')", op_names(", ", " or "), name));
}

std::vector<CollectiveSample> load_collective_samples(const std::string& path, std::optional<graph::CollectiveOp> op,
                                                     int ranks, std::vector<std::string>* skipped, int per_node) {
  return parse_collective_samples(scenario::read_text_file(path, "collective benchmark"), path, op, ranks, skipped,
                                  per_node);
}

std::vector<CollectiveSample> parse_collective_samples(const std::string& text, const std::string& path,
                                                       std::optional<graph::CollectiveOp> op, int ranks,
                                                       std::vector<std::string>* skipped, int per_node) {
  if (is_deepspeed_comms_log(text)) return parse_deepspeed_comms(text, path, op, ranks, per_node);
  const bool csv = text.find("size(B)") != std::string::npos && text.find(',') != std::string::npos;
  if (csv && !op) {
    throw core::ConfigError({path, 1, 1}, "", "the collective of a CSV (--op all_reduce|all_gather|...): it does not say");
  }
  auto out = csv ? parse_csv(text, path, *op, ranks) : parse_nccl_tests(text, path, op, ranks, skipped);
  if (out.empty()) throw core::ConfigError({path, 1, 1}, "", "at least one measured size");
  if (per_node > 0) {
    for (auto& o : out) o.per_node = per_node;
  }
  return out;
}

RunFit fit_collectives(const std::vector<CollectiveSample>& samples, const scenario::Scenario& machine,
                       const std::vector<std::string>& names) {
  RunFit f;
  f.names = names;
  f.machines = {{machine.cluster.name, machine.cluster.device.name}};
  for (const auto& name : names) {
    const auto p = find_model_parameter(machine, name);
    if (!p) {
      std::vector<std::string> known;
      for (const auto& q : model_parameters(machine)) known.push_back(q.name);
      throw core::ConfigError({"<command line>", 0, 0}, "--fit",
                              fmt::format("parameters of {}{}; '{}' is none (known: {})", machine.cluster.name,
                                          scenario::suggest(name, known), name, scenario::join(known)));
    }
    f.units.push_back(p->unit);
    f.sources.push_back(p->source);
    f.lower.push_back(p->lower);
    f.upper.push_back(p->upper);
    f.initial.push_back(p->get(machine));
  }
  for (const auto& s : samples) {
    const int gpus = machine.cluster.devices_per_node;
    if (s.per_node > 0 && (gpus % s.per_node != 0 || s.ranks % s.per_node != 0)) {
      throw core::ConfigError({s.where, 0, 0}, "",
                              fmt::format("a run whose ranks per node ({}) divide a {} node's {} devices and its {} "
                                          "ranks", s.per_node, machine.cluster.name, gpus, s.ranks));
    }
    const long long devices = sample_devices(machine.cluster, s.ranks, s.per_node);
    if (devices > machine.cluster.total_devices()) {
      throw core::ConfigError({s.where, 0, 0}, "",
                              fmt::format("at most the cluster's {} devices (the run spans {}; give it more nodes)",
                                          machine.cluster.total_devices(), devices));
    }
  }
  std::vector<CollectiveSample> fitted, held_out;
  for (const auto& c : samples) (c.check ? held_out : fitted).push_back(c);
  if (fitted.size() < names.size()) {
    throw core::ConfigError({"<command line>", 0, 0}, "--collectives",
                            fmt::format("at least {} fitted sizes (files not marked role=check); got {}", names.size(),
                                        fitted.size()));
  }
  auto measured_of = [](const std::vector<CollectiveSample>& set) {
    std::vector<double> m;
    for (const auto& c : set) m.push_back(c.seconds);
    return m;
  };
  auto predict = [&](const std::vector<CollectiveSample>& set, const std::vector<double>& x) {
    scenario::Scenario s = machine;
    for (std::size_t k = 0; k < names.size(); ++k) find_model_parameter(s, names[k])->set(s, x[k]);
    std::vector<std::optional<double>> out;
    out.reserve(set.size());
    for (const auto& c : set) {
      core::ClusterSpec cluster = s.cluster;
      if (c.protocols) cluster.library.protocols = *c.protocols;
      if (c.nccl_minor > 0) cluster.library.nccl_minor = c.nccl_minor;
      const auto shape = sample_group_shape(cluster, c.ranks, c.per_node);
      out.push_back(
          engine::estimate_collective(cluster, shape, c.op, core::Bytes(c.bytes), c.algorithm).time.value());
    }
    return out;
  };
  fit_log_ratio(f, [&](const std::vector<double>& x) { return predict(fitted, x); }, measured_of(fitted));
  f.fit_before = error_stats(predict(fitted, f.initial), measured_of(fitted));
  f.fit_after = error_stats(predict(fitted, f.fit.values), measured_of(fitted));
  if (!held_out.empty()) {
    f.check_before = error_stats(predict(held_out, f.initial), measured_of(held_out));
    f.check_after = error_stats(predict(held_out, f.fit.values), measured_of(held_out));
  }
  return f;
}

long long sample_devices(const core::ClusterSpec& cluster, int ranks, int per_node) {
  return per_node > 0 ? static_cast<long long>(ranks) / per_node * cluster.devices_per_node
                      : static_cast<long long>(ranks);
}

graph::GroupShape sample_group_shape(const core::ClusterSpec& cluster, int ranks, int per_node) {
  const int stride = per_node > 0 ? cluster.devices_per_node / per_node : 1;
  return topology::strided_group_shape(cluster, ranks, stride);
}

}  // namespace shardsim::validate
