#include "sim/cli/sweep_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sim/cli/command_support.hpp"
#include "sim/cli/sweep_mpi.hpp"
#include "sim/core/csv_text.hpp"
#include "sim/report/report.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/text_file.hpp"

namespace shardsim::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kJournal = "journal.jsonl";

// What one point is, as a row: its inputs as resolved and its figures, or the reason it has none.
Json row_of(const scenario::SweepPoint& p) {
  Json r;
  r["point"] = p.index;
  r["variant"] = p.variant;
  if (!p.scenario) {
    r["status"] = "invalid";
    r["reason"] = p.error;
    return r;
  }
  const scenario::Scenario& s = *p.scenario;
  r["status"] = "ok";
  r["reason"] = "";
  r["engine"] = engine::engine_name(s.engine);
  r["model"] = s.model.name;
  r["params"] = s.model.total_params();
  r["cluster"] = s.cluster.name;
  r["nodes"] = s.cluster.nodes;
  r["devices"] = s.cluster.total_devices();
  r["device"] = s.cluster.device.name;
  r["dp"] = s.plan.dp;
  r["tp"] = s.plan.tp;
  r["pp"] = s.plan.pp;
  r["zero_stage"] = s.plan.zero_stage;
  r["framework"] = core::framework_name(s.plan.framework);
  r["micro_batch"] = s.plan.micro_batch;
  r["global_batch"] = s.plan.global_batch;
  r["recompute"] = core::recompute_name(s.plan.recompute);
  try {
    const scenario::Evaluation ev = scenario::evaluate(s);
    r["strategy"] = ev.strategy;
    r["iteration_time_s"] = ev.run.iteration_time.value();
    r["tokens_per_s"] = ev.tokens_per_s;
    r["samples_per_s"] = ev.samples_per_s;
    r["model_tflops_per_gpu"] = ev.model_tflops_per_gpu;
    r["mfu"] = ev.mfu;
    r["memory_bytes"] = ev.memory.total.value();
    r["memory_capacity_bytes"] = ev.memory.capacity.value();
    r["fits"] = ev.memory.fits;
    // Where the time went on the rank role that finishes last, and every role in full (as run --json has it).
    const auto last = std::max_element(ev.run.roles.begin(), ev.run.roles.end(),
                                       [](const auto& a, const auto& b) { return a.finish < b.finish; });
    if (last != ev.run.roles.end()) {
      r["compute_s"] = last->compute_busy.value();
      r["exposed_comm_s"] = last->exposed_comm.value();
      r["exposed_host_s"] = last->exposed_host.value();
      r["idle_s"] = last->idle.value();
    }
    r["roles"] = report::roles_json(s, ev);
    if (!ev.memory.fits) {
      r["status"] = "does-not-fit";
      r["reason"] = fmt::format("needs {:.2f} GiB of {:.2f} GiB per device", ev.memory.total.value() / core::kGiB,
                                ev.memory.capacity.value() / core::kGiB);
    }
  } catch (const std::exception& e) {
    r["status"] = "error";
    r["reason"] = e.what();
  }
  return r;
}

std::string csv_cell(const Json& v) {
  std::string s;
  if (v.is_null()) return s;
  if (v.is_string()) {
    s = v.get<std::string>();
  } else if (v.is_boolean()) {
    s = v.get<bool>() ? "true" : "false";
  } else if (v.is_number_float()) {
    s = fmt::format("{}", v.get<double>());
  } else {
    s = v.dump();
  }
  return core::csv_field(s);
}

// The sweep a journal belongs to: the scenario file's bytes, so that a changed file does not resume into old rows.
std::string fingerprint(const std::string& text) { return fmt::format("{:016x}", std::hash<std::string>{}(text)); }

struct Journal {
  Json header;
  std::map<std::size_t, Json> rows;  ///< by point
};

// Reads DIR/journal.jsonl: the header line, then one row per finished point. A last line cut short by a kill is
// ignored (that point runs again).
std::optional<Journal> read_journal(const fs::path& dir) {
  std::ifstream in(dir / kJournal);
  if (!in) return std::nullopt;
  Journal j;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline after it: written part-way
    Json v = Json::parse(line, nullptr, false);
    if (v.is_discarded()) break;
    if (first) {
      j.header = v;
      first = false;
      continue;
    }
    j.rows[v.at("point").get<std::size_t>()] = v;
  }
  if (first) return std::nullopt;
  return j;
}

// Appends whole lines with one write each, synced, so that a crash leaves at most a part-written last line.
class JournalWriter {
 public:
  explicit JournalWriter(const fs::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw report::OutputError(fmt::format("cannot write '{}'", path.string()));
  }
  ~JournalWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  void append(const Json& v) {
    const std::string line = v.dump() + "\n";
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n <= 0) {
        throw report::OutputError(
            fmt::format("cannot write '{}' (disk full?); the points journaled so far are kept", path_.string()));
      }
      done += static_cast<std::size_t>(n);
    }
    ::fdatasync(fd_);
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

void write_results(const fs::path& dir, const std::map<std::size_t, Json>& rows) {
  std::string csv;
  const auto& cols = sweep_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (i) csv += ',';
    csv += cols[i];
  }
  csv += "\n";
  std::string jsonl;
  for (const auto& [point, row] : rows) {
    Json ordered;
    ordered["schema_version"] = kJsonSchemaVersion;  // a sweep row's schema, as documented in the README
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const Json v = row.contains(cols[i]) ? row[cols[i]] : Json();
      if (i) csv += ',';
      csv += csv_cell(v);
      ordered[cols[i]] = v;
    }
    if (row.contains("roles")) ordered["roles"] = row["roles"];  // JSON Lines only: nested
    csv += "\n";
    jsonl += ordered.dump() + "\n";
  }
  report::OutputFiles outputs;  // both or neither
  outputs.add((dir / "results.csv").string(), csv);
  outputs.add((dir / "results.jsonl").string(), jsonl);
  outputs.commit();
}

// The results folder, made when missing.
void make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw report::OutputError(fmt::format("cannot create the folder '{}'", dir.string()));
}

std::pair<std::size_t, std::size_t> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  std::size_t i = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument(s);
    i = std::stoul(s.substr(0, slash));
    n = std::stoul(s.substr(slash + 1));
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--shard: expected i/N (e.g. 2/8), got '{}'", s));
  }
  if (n < 1 || n > 100000 || i < 1 || i > n) throw UsageError(fmt::format("--shard: expected 1 <= i <= N, got '{}'", s));
  return {i - 1, n};
}

}  // namespace

const std::vector<std::string>& sweep_columns() {
  static const std::vector<std::string> kColumns = {
      "point",        "variant",      "status",     "reason",      "engine",       "model",
      "params",       "cluster",      "nodes",      "devices",     "device",       "dp",
      "tp",           "pp",           "zero_stage", "framework",   "micro_batch",  "global_batch",
      "recompute",    "strategy",     "iteration_time_s", "tokens_per_s", "samples_per_s", "model_tflops_per_gpu",
      "mfu",          "memory_bytes", "memory_capacity_bytes", "fits", "compute_s", "exposed_comm_s",
      "exposed_host_s", "idle_s"};
  return kColumns;
}

int cmd_sweep(const std::vector<std::string>& args) {
  po::options_description opts(
      "shardsim sweep SCENARIO.yaml -o DIR [options]\n\nEvaluates every point of the scenario's sweep: axes (one point "
      "without them) in parallel and writes DIR/results.csv and DIR/results.jsonl, one row per point in point order "
      "(columns: see the README). A point that is invalid or does not fit is a row with its reason. Rows are journaled "
      "in DIR/journal.jsonl as points finish: run the same command again to resume after an interruption.\n\noptions");
  opts.add_options()("help,h", "show this help")("scenario", po::value<std::string>(), "the scenario file")(
      "output,o", po::value<std::string>(), "results folder (created if missing)")(
      "jobs,j", po::value<int>()->default_value(0), "points evaluated at once (0: one per core; under MPI, one per "
      "rank)")(
      "shard", po::value<std::string>(), "i/N: only every N-th point from the i-th (1-based), for job arrays; "
      "join the shards' folders with shardsim merge")(
      "mpi", "hand the points out to the ranks of an MPI job (on by itself under mpirun): rank 0 keeps the folder, "
      "the others evaluate a point at a time");
  const auto parsed = parse_command(args, opts, "scenario");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("scenario")) throw UsageError("missing the scenario file (shardsim sweep SCENARIO.yaml -o DIR)");
  if (!vm.count("output")) throw UsageError("missing the results folder (-o DIR)");
  const int jobs_asked = thread_count(vm, "jobs");
  const auto [shard, shards] = vm.count("shard") ? parse_shard(vm["shard"].as<std::string>()) : std::pair<std::size_t, std::size_t>{0, 1};

  const std::string file = vm["scenario"].as<std::string>();
  const std::string text = scenario::read_text_file(file, "scenario file");
  const scenario::SweepPlan plan(scenario::ConfigNode::parse(text, file), file, text);
  std::vector<std::size_t> mine;
  for (std::size_t i = shard; i < plan.size(); i += shards) mine.push_back(i);

  // Under MPI, ranks other than 0 only evaluate the points rank 0 hands them.
  std::optional<MpiJob> mpi;
  if (launched_by_mpi(vm.count("mpi") > 0)) mpi.emplace();
  if (mpi && mpi->rank() > 0) {
    mpi->work([&](std::size_t i) { return row_of(plan.try_point(i)).dump(); });
    return kOk;
  }
  // Should rank 0 fail before it hands out points (an unwritable folder, another sweep's journal), the other
  // ranks are let go rather than left waiting.
  struct LetGo {
    const MpiJob* job;
    ~LetGo() {
      if (job) job->coordinate({}, {});
    }
  } let_go{mpi && mpi->size() > 1 ? &*mpi : nullptr};

  const fs::path dir(vm["output"].as<std::string>());
  make_folder(dir);
  Json header = {{"sweep", fs::path(file).filename().string()},
                 {"fingerprint", fingerprint(text)},
                 {"points", plan.size()},
                 {"shard", fmt::format("{}/{}", shard + 1, shards)}};
  std::map<std::size_t, Json> rows;
  if (auto j = read_journal(dir)) {
    if (j->header != header) {
      throw report::OutputError(fmt::format("'{}' holds the journal of another sweep ({}); use another folder",
                                            dir.string(), j->header.dump()));
    }
    rows = std::move(j->rows);
  } else {
    // A journal without its header line (a kill before the first write) starts over.
    std::error_code ec;
    fs::remove(dir / kJournal, ec);
    JournalWriter(dir / kJournal).append(header);
  }
  std::vector<std::size_t> todo;
  for (std::size_t i : mine) {
    if (!rows.count(i)) todo.push_back(i);
  }

  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers =
      std::min<std::size_t>(jobs_asked > 0 ? static_cast<std::size_t>(jobs_asked) : cores, std::max<std::size_t>(1, todo.size()));
  JournalWriter journal(dir / kJournal);
  std::mutex lock, parse_lock;
  std::atomic<std::size_t> next{0};
  std::size_t done = mine.size() - todo.size();
  std::size_t not_evaluated = 0;
  for (const auto& [i, r] : rows) not_evaluated += r.at("status") == "ok" ? 0 : 1;
  // Progress from the first point on (the ETA counts only the points evaluated by this command).
  ProgressLine progress_line("sweep", 0.0);
  const std::size_t done_before = done;
  auto progress = [&](bool final = false) {
    const std::size_t total = mine.size();
    const std::string detail = fmt::format("{}/{} points, {} not evaluated", done, total, not_evaluated);
    const double here = total > done_before ? static_cast<double>(done - done_before) / static_cast<double>(total - done_before) : 1.0;
    if (final) {
      progress_line.finish(detail);
    } else {
      progress_line.update(here, detail);
    }
  };
  std::exception_ptr failure;
  // A finished point: journaled first (a crash after this keeps it), then counted. The callers serialise calls.
  auto record = [&](std::size_t point, Json row) {
    journal.append(row);
    not_evaluated += row.at("status") == "ok" ? 0 : 1;
    rows[point] = std::move(row);
    ++done;
    progress();
  };
  auto work = [&] {
    for (;;) {
      const std::size_t k = next++;
      if (k >= todo.size()) return;
      // yaml-cpp's nodes are not safe to read from several threads: points are made one at a time, evaluated at once.
      scenario::SweepPoint point;
      {
        std::lock_guard<std::mutex> g(parse_lock);
        point = plan.try_point(todo[k]);
      }
      Json row = row_of(point);
      std::lock_guard<std::mutex> g(lock);
      if (failure) return;
      try {
        record(todo[k], std::move(row));
      } catch (...) {
        failure = std::current_exception();
        return;
      }
    }
  };
  if (mpi && mpi->size() > 1) {
    let_go.job = nullptr;
    mpi->coordinate(todo, [&](std::size_t point, const std::string& row_text) { record(point, Json::parse(row_text)); });
  } else {
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  }
  progress(true);
  std::map<std::size_t, Json> out;
  for (std::size_t i : mine) out[i] = rows.at(i);
  write_results(dir, out);
  std::cout << fmt::format("{} points of {} ({} not evaluated: invalid, not fitting or refused): {}\n", mine.size(),
                           plan.size(), not_evaluated, (dir / "results.csv").string());
  return kOk;
}

int cmd_merge(const std::vector<std::string>& args) {
  po::options_description opts(
      "shardsim merge DIR... -o DIR\n\nJoins the folders of a sweep's shards (shardsim sweep --shard i/N) into one "
      "results.csv and results.jsonl in point order.\n\noptions");
  opts.add_options()("help,h", "show this help")("folders", po::value<std::vector<std::string>>()->multitoken(),
                                                 "the shards' folders")(
      "output,o", po::value<std::string>(), "the merged results folder");
  po::positional_options_description pos;
  pos.add("folders", -1);
  if (std::find(args.begin(), args.end(), "--help") != args.end() || std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << opts;
    return kOk;
  }
  const auto vm = parse(args, opts, pos);
  if (!vm.count("folders") || !vm.count("output")) throw UsageError("shardsim merge DIR... -o DIR");
  std::map<std::size_t, Json> rows;
  std::optional<Json> sweep;
  std::size_t points = 0;
  for (const auto& d : vm["folders"].as<std::vector<std::string>>()) {
    const auto j = read_journal(d);
    if (!j) throw UsageError(fmt::format("'{}' holds no sweep journal ({})", d, kJournal));
    Json id = j->header;
    id.erase("shard");
    if (sweep && *sweep != id) throw UsageError(fmt::format("'{}' is another sweep's shard ({})", d, j->header.dump()));
    sweep = id;
    points = j->header.at("points").get<std::size_t>();
    for (const auto& [i, r] : j->rows) {
      if (rows.count(i) && rows[i] != r) throw UsageError(fmt::format("point {} differs between shards", i));
      rows[i] = r;
    }
  }
  const fs::path out(vm["output"].as<std::string>());
  make_folder(out);
  write_results(out, rows);
  std::cout << fmt::format("{} of {} points: {}\n", rows.size(), points, (out / "results.csv").string());
  if (rows.size() < points) {
    std::cerr << fmt::format("shardsim: note: {} points are in no shard's journal yet\n", points - rows.size());
  }
  return kOk;
}

}  // namespace shardsim::cli
