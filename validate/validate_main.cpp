// shardsim-validate: measures the hardware shardsim models and writes the results `shardsim calibrate` fits.
// Exit codes: 0 success, 2 bad usage, 1 failure.
#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "sim/report/report.hpp"
#include "validate/harness.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  po::options_description opts(
      "shardsim-validate bench [options]\n\nTimes the kernels (quantisation, ZFP, MPC), memory copies and GEMMs on the "
      "backend present (a GPU where there is one, else the CPU reference backend) from 4 KiB up, and writes the measurements as YAML for "
      "`shardsim calibrate`.\n\noptions");
  opts.add_options()("help,h", "show this help")("version", "print the version")("command", po::value<std::string>(), "bench")(
      "output,o", po::value<std::string>()->default_value("results.yaml"), "where to write the measurements")(
      "min-size", po::value<std::string>()->default_value("4KiB"), "smallest buffer to measure")(
      "max-size", po::value<std::string>()->default_value("64MiB"), "largest buffer to measure (up to 1GiB)")(
      "seconds", po::value<double>()->default_value(0.02), "time spent on each point")(
      "gemm-seconds", po::value<double>()->default_value(0.01), "time spent on each GEMM shape")(
      "cpu", "measure the CPU reference backend even where a GPU is present")(
      "no-gemms", "skip the GEMM sweep (e.g. to profile the kernels alone)")(
      "environment", po::value<std::vector<std::string>>(), "KEY=VALUE recorded with the results (driver, library "
                                                            "versions; repeatable)")(
      "torch", po::value<std::string>(), "also time the PyTorch baselines of this script (validate/torch_baseline.py) "
                                         "in the same run, with python3");
  po::positional_options_description pos;
  pos.add("command", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "shardsim-validate: " << e.what() << "\n\n" << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "shardsim-validate " << SHARDSIM_VERSION << "\n";
    return 0;
  }
  if (!vm.count("command") || vm["command"].as<std::string>() != "bench") {
    std::cerr << "shardsim-validate: expected the command 'bench'\n\n" << opts << "\n";
    return 2;
  }
  try {
    shardsim::validate::HarnessOptions o;
    o.min_bytes = shardsim::core::parse_bytes(vm["min-size"].as<std::string>()).value();
    o.max_bytes = shardsim::core::parse_bytes(vm["max-size"].as<std::string>()).value();
    if (!(o.min_bytes >= 4096) || o.max_bytes < o.min_bytes || o.max_bytes > 1024.0 * 1024 * 1024) {
      std::cerr << "shardsim-validate: expected 4KiB <= --min-size <= --max-size <= 1GiB\n";
      return 2;
    }
    o.seconds_per_point = vm["seconds"].as<double>();
    o.gemm_seconds = vm["gemm-seconds"].as<double>();
    if (!(o.seconds_per_point > 0.0 && o.seconds_per_point <= 10.0) || !(o.gemm_seconds > 0.0 && o.gemm_seconds <= 10.0)) {
      std::cerr << "shardsim-validate: --seconds and --gemm-seconds must be above 0 and at most 10\n";
      return 2;
    }
    o.cpu_only = vm.count("cpu") > 0;
    o.gemms = vm.count("no-gemms") == 0;
    std::vector<std::pair<std::string, std::string>> environment;
    if (vm.count("environment")) {
      for (const std::string& kv : vm["environment"].as<std::vector<std::string>>()) {
        const auto eq = kv.find('=');
        const std::string key = eq == std::string::npos ? "" : kv.substr(0, eq);
        if (key.empty() || key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos ||
            kv.find('"') != std::string::npos || kv.find('\\') != std::string::npos) {
          std::cerr << "shardsim-validate: --environment: expected KEY=VALUE with a lower-case key and no quotes, got '" << kv
                    << "'\n";
          return 2;
        }
        environment.emplace_back(key, kv.substr(eq + 1));
      }
    }
    auto results = shardsim::validate::run_harness(o, [](const std::string& line) { std::cerr << line << "\n"; });
    results.environment = environment;
    if (vm.count("torch")) {
      // The script times the same GEMM and attention cases; they travel in a file beside the output.
      const std::string cases = vm["output"].as<std::string>() + ".cases";
      shardsim::report::write_file_atomic(cases, shardsim::validate::write_cases(shardsim::validate::transformer_gemms(),
                                                                               shardsim::validate::transformer_attention()));
      const std::string cmd = fmt::format("python3 '{}' --min-bytes {} --max-bytes {} --seconds {} --gemm-seconds {} --cases '{}'",
                                          vm["torch"].as<std::string>(), o.min_bytes, o.max_bytes, o.seconds_per_point,
                                          o.gemm_seconds, cases);
      std::cerr << "running the PyTorch baselines: " << cmd << "\n";
      FILE* p = popen(cmd.c_str(), "r");
      if (!p) throw std::runtime_error("cannot run " + cmd);
      std::string text;
      char buf[4096];
      std::size_t got = 0;
      while ((got = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, got);
      const int rc = pclose(p);
      std::remove(cases.c_str());
      if (rc != 0) {
        results.errors.push_back("the PyTorch baselines failed: " + cmd);
      } else {
        const auto torch = shardsim::validate::parse_results(text, "<torch baselines>");
        results.measurements.insert(results.measurements.end(), torch.measurements.begin(), torch.measurements.end());
      }
    }
    shardsim::report::write_file_atomic(vm["output"].as<std::string>(), shardsim::validate::write_results(results));
    std::cout << shardsim::validate::speed_summary(results);
    std::cout << fmt::format("wrote {} measurements to {}\n", results.measurements.size(), vm["output"].as<std::string>());
    for (const auto& e : results.errors) std::cerr << "shardsim-validate: failed part-way: " << e << "\n";
    return results.errors.empty() ? 0 : 1;
  } catch (const shardsim::report::OutputError& e) {
    std::cerr << "shardsim-validate: " << e.what() << "\n";
    return 2;
  } catch (const shardsim::core::UnitError& e) {
    std::cerr << "shardsim-validate: --max-size: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "shardsim-validate: " << e.what() << "\n";
    return 1;
  }
}
