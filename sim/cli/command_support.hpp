#pragma once
// What the commands of the `shardsim` CLI share: exit codes, the usage error, option parsing with --help, and
// small argument helpers.
#include <boost/program_options.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::cli {

namespace po = boost::program_options;

constexpr int kOk = 0;
constexpr int kInternal = 1;
constexpr int kBadInput = 2;

/** @brief A command line that does not parse, or misses what the command needs (exit 2 with the usage). */
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief Parses `args` against `opts` and `pos`; boost's errors become UsageError. */
po::variables_map parse(const std::vector<std::string>& args, const po::options_description& opts,
                        const po::positional_options_description& pos);
/** @brief Parses a command's options (with at most one positional argument); prints the command's help and returns
 *  nothing when --help was given. */
std::optional<po::variables_map> parse_command(const std::vector<std::string>& args, const po::options_description& opts,
                                               const char* positional = nullptr);
/** @brief "a,b,,c" -> {a, b, c}. */
std::vector<std::string> split_commas(const std::string& s);
/** @brief The machine a command names: a cluster preset, or a scenario file's cluster (the scenario as loaded).
 *  UsageError for an unknown preset; ConfigError from the file. */
scenario::Scenario load_machine(const std::string& name);
/// The most worker threads a command may start (--threads): well past any host's cores, far short of what the
/// system refuses to create.
constexpr int kMaxThreads = 1024;
/** @brief A thread-count option (--threads, or `option`), checked: 0 (one per core) to kMaxThreads; UsageError
 *  otherwise. */
int thread_count(const po::variables_map& vm, const char* option = "threads");
/** @brief A size given on the command line ("2GiB"); UsageError naming `option` otherwise. */
core::Bytes size_option(const std::string& option, const std::string& text);
/** @brief The engine named on the command line; UsageError unless analytical or simgrid. */
engine::EngineKind engine_of(const std::string& name);

/** @brief Progress of a long command on stderr: nothing before `quiet_s` has passed, then in place on a terminal
 *  (at most every 0.2 s) or a line every 5 s otherwise, with the elapsed time and an ETA from the fraction done;
 *  finish() ends the line where one was printed. stdout is left alone (results stay byte-identical). */
class ProgressLine {
 public:
  ProgressLine(std::string what, double quiet_s);
  /** @brief `fraction` of the work done (0..1), `detail` says of what ("12/40 points, 2 not evaluated"). */
  void update(double fraction, const std::string& detail);
  void finish(const std::string& detail);

 private:
  void print(double fraction, const std::string& detail, bool final);
  using Clock = std::chrono::steady_clock;
  std::string what_;
  double quiet_s_;
  Clock::time_point start_, last_;
  bool printed_ = false;
};

/// The version of the JSON documents shardsim writes (run, search, validate, collective, a sweep's results.jsonl
/// rows): raised when a key changes meaning or goes away, not when one is added.
constexpr int kJsonSchemaVersion = 1;
/** @brief The head every JSON document shardsim writes starts with: the schema version, the shardsim that wrote it
 *  and the command; the command's own keys follow. */
template <class Json>
Json json_document(std::string_view command) {
  Json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["shardsim"] = SHARDSIM_VERSION;
  j["command"] = std::string(command);
  return j;
}

}  // namespace shardsim::cli
