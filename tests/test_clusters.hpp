#pragma once
// Small hand-made clusters for tests, with round numbers so closed forms are easy to write down.
#include "sim/core/cluster_spec.hpp"

namespace shardsim::testing {

inline core::NetworkLevel test_level(const char* name, int ranks, double gbps, int shared_by, double latency_us) {
  core::NetworkLevel l;
  l.name = name;
  l.domain_ranks = ranks;
  l.link_bandwidth = core::BytesPerSec(gbps * 1e9);
  l.shared_by = shared_by;
  l.latency = core::Seconds(latency_us * 1e-6);
  return l;
}

// `nodes` nodes of 4 devices: level "node" 100 GB/s per rank (2 us), level "net" 10 GB/s per rank (5 us).
// Collectives are alpha-beta over these levels (tests of a library's tuning model set one).
inline core::ClusterSpec two_level(int nodes) {
  core::ClusterSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.devices_per_node = 4;
  c.device.name = "dev";
  c.device.peak[static_cast<int>(core::Dtype::kBf16)] = core::FlopPerSec(100e12);
  c.device.hbm = core::Bytes(32.0 * core::kGiB);
  c.device.hbm_bandwidth = core::BytesPerSec(1e12);
  c.device.gemm_efficiency = 0.5;
  c.device.memory_efficiency = 1.0;
  c.host.link_bandwidth = core::BytesPerSec(10e9);
  c.host.memory = core::Bytes(512e9);
  c.host.memory_bandwidth = core::BytesPerSec(200e9);
  c.levels = {test_level("node", 4, 100.0, 1, 2.0), test_level("net", 1 << 20, 20.0, 2, 5.0)};
  c.library.family = core::CollectiveLibrarySpec::Family::kAlphaBeta;
  return c;
}

// One flat level: every pair of ranks at 50 GB/s, 1 us.
inline core::ClusterSpec flat(int devices) {
  core::ClusterSpec c = two_level(1);
  c.devices_per_node = devices;
  c.levels = {test_level("all", devices, 50.0, 1, 1.0)};
  return c;
}

}  // namespace shardsim::testing
