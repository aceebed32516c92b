#include "sim/cli/collective_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "sim/cli/command_support.hpp"
#include "sim/engine/collective_cost.hpp"
#include "sim/report/report.hpp"
#include "topology/placement.hpp"
#include "validate/collective_runs.hpp"

namespace shardsim::cli {
namespace {

core::CollectiveAlgorithm algorithm_of(const std::string& name) {
  if (const auto a = core::parse_algorithm(name)) return *a;
  throw UsageError(fmt::format("unknown --algorithm '{}'; expected auto, ring, tree, hierarchical, best or pat", name));
}

}  // namespace

int cmd_collective(const std::vector<std::string>& args) {
  po::options_description opts(
      "shardsim collective CLUSTER [options]\n\nPredicts one collective on a machine (a cluster preset or a scenario "
      "file's cluster) size by size, as nccl-tests prints it: time, algorithm and bus bandwidth, and the algorithm, "
      "protocol and latency the cluster's collective library picks.\n\noptions");
  opts.add_options()("help,h", "show this help")("cluster", po::value<std::string>(), "cluster preset or scenario file")(
      "op", po::value<std::string>()->default_value("all_reduce"),
      "all_reduce, all_gather, reduce_scatter, alltoall, sendrecv or broadcast")(
      "ranks", po::value<int>(), "ranks in the group (default: one node)")(
      "stride", po::value<int>()->default_value(1), "rank distance between members (8: one rank per node of 8)")(
      "min-size", po::value<std::string>()->default_value("1KiB"), "smallest size (nccl-tests' size column)")(
      "max-size", po::value<std::string>()->default_value("1GiB"), "largest size; sizes double in between")(
      "algorithm", po::value<std::string>()->default_value("auto"), "auto (the library's choice), ring, tree, "
      "hierarchical, best (the fastest imaginable) or pat (NCCL_ALGO=PAT)")(
      "json", po::value<std::string>(), "also write the rows as JSON to this file (times in seconds, sizes in bytes)");
  const auto parsed = parse_command(args, opts, "cluster");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("cluster")) throw UsageError("name a cluster preset or a scenario file");
  scenario::Scenario machine = load_machine(vm["cluster"].as<std::string>());
  core::ClusterSpec& c = machine.cluster;
  const auto op = validate::parse_collective_op(vm["op"].as<std::string>());
  const int ranks = vm.count("ranks") ? vm["ranks"].as<int>() : c.devices_per_node;
  const int stride = vm["stride"].as<int>();
  if (ranks < 2) throw UsageError("--ranks: at least 2");
  if (stride < 1) throw UsageError("--stride: at least 1");
  const long long span = static_cast<long long>(ranks) * stride;
  if (span > (1LL << 30)) throw UsageError("--ranks x --stride: at most 2^30 devices");
  const long long nodes = c.nodes_for(span);
  if (c.max_nodes > 0 && nodes > c.max_nodes) {
    throw UsageError(fmt::format("{} ranks at stride {} need {} nodes; {} has {}", ranks, stride, nodes, c.name,
                                 c.max_nodes));
  }
  c.nodes = std::max<int>(c.nodes, static_cast<int>(nodes));
  if (c.levels.back().domain_ranks < c.total_devices()) {
    throw UsageError(fmt::format("{} ranks do not fit in {}'s outermost network level", ranks, c.name));
  }
  const double lo = size_option("--min-size", vm["min-size"].as<std::string>()).value();
  const double hi = size_option("--max-size", vm["max-size"].as<std::string>()).value();
  if (lo < 1.0 || hi < lo) throw UsageError("--min-size must be at least 1 B and at most --max-size");
  const auto algorithm = algorithm_of(vm["algorithm"].as<std::string>());
  const graph::GroupShape shape = topology::strided_group_shape(c, ranks, stride);
  const int ppn = shape.within(c.node_level());
  if (algorithm == core::CollectiveAlgorithm::kPat &&
      !engine::pat_available(c.library, engine::LibraryCall{op, ranks, ranks / ppn, 1.0, 1.0})) {
    throw UsageError(fmt::format("--algorithm pat: {}'s library has no PAT for this call (NCCL 2.23 or later, "
                                 "all_gather or reduce_scatter, one rank per node: --stride {})",
                                 c.name, c.devices_per_node));
  }

  nlohmann::json rows = nlohmann::json::array();
  std::cout << fmt::format("{} on {}: {} ranks ({} nodes x {}), library {} ({}), algorithm {}\n",
                           vm["op"].as<std::string>(), c.name, ranks, ranks / ppn, ppn,
                           core::library_label(c.library), c.library.source, core::algorithm_name(algorithm));
  // A library that does not run every protocol here (NCCL's LL128 rule, or the scenario's list): say which it runs.
  if (c.library.family != core::CollectiveLibrarySpec::Family::kAlphaBeta) {
    const auto off = core::protocol_names(c.library, false);
    if (!off.empty()) {
      std::cout << fmt::format("protocols: {} ({} not run on this machine)\n",
                               fmt::join(core::protocol_names(c.library), ", "), fmt::join(off, ", "));
    }
  }
  // A library whose rings are paced: say what floor its Simple rings across these nodes put under a call.
  const bool paced = c.library.paced_rings && c.library.family != core::CollectiveLibrarySpec::Family::kAlphaBeta &&
                     ranks / ppn > 1;
  if (paced) {
    const int steps = engine::ring_steps(op, ranks);
    const double step_s = engine::network_step_s(c.library, engine::Protocol::kSimple);
    std::cout << fmt::format("rings paced: under Simple a ring takes at least its {} steps x {:.3g} us = {:.4g} ms, "
                             "its transfer beneath them\n",
                             steps, step_s * 1e6, steps * step_s * 1e3);
  }
  // An all-reduce whose nodes span more than one group of the fabric: say what its trees keep there.
  if (op == graph::CollectiveOp::kAllReduce && c.library.family != core::CollectiveLibrarySpec::Family::kAlphaBeta &&
      c.levels.back().spans_groups(ranks / ppn)) {
    std::cout << fmt::format("trees past a group: {} nodes span more than the fabric's groups of {}; a tree keeps {:.3g} of "
                             "its bandwidth (collective_library.tree_cross_group_share)\n",
                             ranks / ppn, c.levels.back().group_nodes, c.library.tree_cross_group_share);
  }
  std::cout << fmt::format("{:>12}  {:>11}  {:>10}  {:>10}  {:>12}  {:>8}  {:>10}\n", "size (B)", "time (us)",
                           "algbw GB/s", "busbw GB/s", "algorithm", "protocol", "latency us");
  for (double size = lo; size <= hi * (1.0 + 1e-12); size *= 2.0) {
    const auto e = engine::estimate_collective(c, shape, op, core::Bytes(size), algorithm);
    const double t = e.time.value();
    const double algbw = t > 0.0 ? size / t / 1e9 : 0.0;
    const double busbw = algbw * engine::ring_edge_factor(op, ranks);
    const std::string protocol = e.protocol ? std::string(engine::protocol_name(*e.protocol)) : "-";
    std::cout << fmt::format("{:>12.0f}  {:>11.2f}  {:>10.2f}  {:>10.2f}  {:>12}  {:>8}  {:>10.2f}\n", size, t * 1e6,
                             algbw, busbw, core::algorithm_name(e.algorithm), protocol, e.latency_s * 1e6);
    rows.push_back({{"bytes", size}, {"time_s", t}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw},
                    {"algorithm", core::algorithm_name(e.algorithm)}, {"protocol", protocol}, {"latency_s", e.latency_s},
                    {"paced_s", e.paced_s}});
  }
  if (vm.count("json")) {
    nlohmann::json j = json_document<nlohmann::json>("collective");
    j.update(nlohmann::json{{"cluster", c.name},
                              {"op", vm["op"].as<std::string>()},
                              {"ranks", ranks},
                              {"stride", stride},
                              {"nodes", ranks / ppn},
                              {"library", core::library_name(c.library.family)},
                              {"library_source", c.library.source},
                              {"algorithm", core::algorithm_name(algorithm)},
                              {"rows", rows}});
    report::write_file_atomic(vm["json"].as<std::string>(), j.dump(2) + "\n");
  }
  return kOk;
}

}  // namespace shardsim::cli
