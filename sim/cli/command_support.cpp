#include "sim/cli/command_support.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <iostream>
#include <sstream>

#include "topology/cluster_presets.hpp"

namespace shardsim::cli {

ProgressLine::ProgressLine(std::string what, double quiet_s)
    : what_(std::move(what)), quiet_s_(quiet_s), start_(Clock::now()), last_(start_) {}

void ProgressLine::update(double fraction, const std::string& detail) {
  const auto now = Clock::now();
  if (std::chrono::duration<double>(now - start_).count() < quiet_s_) return;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  if (printed_ && now - last_ < std::chrono::milliseconds(tty ? 200 : 5000)) return;
  last_ = now;
  print(fraction, detail, false);
}

void ProgressLine::finish(const std::string& detail) {
  if (!printed_ && std::chrono::duration<double>(Clock::now() - start_).count() < quiet_s_) return;
  print(1.0, detail, true);
}

void ProgressLine::print(double fraction, const std::string& detail, bool final) {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double eta = fraction > 0.0 ? elapsed / fraction * (1.0 - fraction) : 0.0;
  std::cerr << (tty ? "\r" : "")
            << fmt::format("{}: {} ({:.0f}%), {:.1f} s, ETA {:.1f} s", what_, detail, 100.0 * fraction, elapsed, eta)
            << (tty && !final ? "" : "\n") << std::flush;
  printed_ = true;
}

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& opts,
                        const po::positional_options_description& pos) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

std::optional<po::variables_map> parse_command(const std::vector<std::string>& args, const po::options_description& opts,
                                               const char* positional) {
  po::positional_options_description pos;
  if (positional) pos.add(positional, 1);
  auto vm = parse(args, opts, pos);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return std::nullopt;
  }
  return vm;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

scenario::Scenario load_machine(const std::string& name) {
  if (name.ends_with(".yaml") || name.ends_with(".yml")) return scenario::load_scenarios(name).front();
  const auto* preset = topology::find_cluster_preset(name);
  if (!preset) {
    throw UsageError(fmt::format("unknown cluster '{}'; a preset ({}) or a scenario file", name,
                                 fmt::join(topology::cluster_preset_names(), ", ")));
  }
  scenario::Scenario machine;
  machine.cluster = *preset;
  machine.name = name;
  return machine;
}

engine::EngineKind engine_of(const std::string& name) {
  const auto kind = engine::parse_engine_kind(name);
  if (!kind) throw UsageError(fmt::format("unknown engine '{}'; available: analytical, simgrid", name));
  return *kind;
}

int thread_count(const po::variables_map& vm, const char* option) {
  const int n = vm[option].as<int>();
  if (n < 0 || n > kMaxThreads) {
    throw UsageError(fmt::format("--{}: 0 (one per core) to {}, got {}", option, kMaxThreads, n));
  }
  return n;
}

core::Bytes size_option(const std::string& option, const std::string& text) {
  try {
    return core::parse_bytes(text);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: {}", option, e.what()));
  }
}

}  // namespace shardsim::cli
