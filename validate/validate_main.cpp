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
  opts.add_options()("help,h", "show this help")("command", po::value<std::string>(), "bench")(
      "output,o", po::value<std::string>()->default_value("results.yaml"), "where to write the measurements")(
      "max-size", po::value<std::string>()->default_value("64MiB"), "largest buffer to measure (up to 1GiB)")(
      "seconds", po::value<double>()->default_value(0.02), "time spent on each point")(
      "cpu", "measure the CPU reference backend even where a GPU is present")(
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
  if (!vm.count("command") || vm["command"].as<std::string>() != "bench") {
    std::cerr << "shardsim-validate: expected the command 'bench'\n\n" << opts << "\n";
    return 2;
  }
  try {
    shardsim::validate::HarnessOptions o;
    o.max_bytes = shardsim::core::parse_bytes(vm["max-size"].as<std::string>()).value();
    if (o.max_bytes < o.min_bytes || o.max_bytes > 1024.0 * 1024 * 1024) {
      std::cerr << "shardsim-validate: --max-size must be between 4KiB and 1GiB\n";
      return 2;
    }
    o.seconds_per_point = vm["seconds"].as<double>();
    o.cpu_only = vm.count("cpu") > 0;
    auto results = shardsim::validate::run_harness(o, [](const std::string& line) { std::cerr << line << "\n"; });
    if (vm.count("torch")) {
      const std::string cmd = fmt::format("python3 '{}' --min-bytes {} --max-bytes {} --seconds {}",
                                          vm["torch"].as<std::string>(), o.min_bytes, o.max_bytes, o.seconds_per_point);
      std::cerr << "running the PyTorch baselines: " << cmd << "\n";
      FILE* p = popen(cmd.c_str(), "r");
      if (!p) throw std::runtime_error("cannot run " + cmd);
      std::string text;
      char buf[4096];
      std::size_t got = 0;
      while ((got = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, got);
      if (pclose(p) != 0) throw std::runtime_error("the PyTorch baselines failed: " + cmd);
      const auto torch = shardsim::validate::parse_results(text, "<torch baselines>");
      results.measurements.insert(results.measurements.end(), torch.measurements.begin(), torch.measurements.end());
    }
    shardsim::report::write_file_atomic(vm["output"].as<std::string>(), shardsim::validate::write_results(results));
    std::cout << shardsim::validate::speed_summary(results);
    std::cout << fmt::format("wrote {} measurements to {}\n", results.measurements.size(), vm["output"].as<std::string>());
    return 0;
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
