#pragma once
// What an engine reports for one iteration: when each task ran, and per rank role where the time went
// (compute by phase, communication by purpose, how much communication was hidden behind compute), bytes sent
// per network level, and the memory timeline's peak when it was tracked.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/graph/task_graph.hpp"

namespace shardsim::engine {

struct TaskTiming {
  double start_s = 0.0;
  double end_s = 0.0;
};

constexpr std::size_t kPhases = static_cast<std::size_t>(graph::Phase::kCount);
constexpr std::size_t kPurposes = static_cast<std::size_t>(graph::Purpose::kCount);
constexpr std::size_t kMemKinds = static_cast<std::size_t>(graph::MemKind::kCount);

struct RoleBreakdown {
  std::string role;
  core::Seconds finish;
  core::Seconds compute_busy;   ///< time the compute stream spent computing
  /// of compute_busy, what communication running beside it added (DeviceSpec::comm_compute_slowdown): the compute
  /// stream's time over what its kernels take alone
  core::Seconds compute_slowed;
  core::Seconds comm_busy;      ///< time at least one collective or copy was in progress
  core::Seconds exposed_comm;   ///< communication time with no compute running beside it
  core::Seconds host_busy;      ///< summed host-CPU work (framework hooks, CPU Adam)
  core::Seconds exposed_host;   ///< host-CPU work with neither compute nor communication beside it
  core::Seconds idle;           ///< none of these (waiting on dependencies, or done before the iteration ends)
  std::array<core::Seconds, kPhases> compute_by_phase{};
  std::array<core::Seconds, kPurposes> comm_by_purpose{};     ///< summed durations per purpose (host work too)
  std::array<core::Seconds, kPurposes> exposed_by_purpose{};  ///< exposed communication per purpose
  std::array<core::Seconds, kPurposes> exposed_host_by_purpose{};  ///< exposed host work per purpose
  std::array<double, graph::kMaxLevels> bytes_by_level{};     ///< bytes one rank sent per network level
  std::array<core::Seconds, graph::kMaxLevels> exposed_by_level{};  ///< exposed time by each collective's bottleneck level
  double peak_memory_bytes = 0.0;                             ///< 0 unless the memory timeline was tracked
  std::array<double, kMemKinds> peak_memory_by_kind{};        ///< transient bytes per kind at the peak

  /** @brief Communication time hidden behind compute. */
  [[nodiscard]] core::Seconds hidden_comm() const { return comm_busy - exposed_comm; }
};

struct MemorySample {
  double time_s = 0.0;
  double bytes = 0.0;                         ///< bytes in use after the events at time_s (resident + transient)
  std::array<double, kMemKinds> transient{};  ///< of which allocated and freed during the iteration, per kind
};

/** @brief A link of the SimGrid engine's platform and how busy one iteration kept it (one direction). */
struct LinkLoad {
  std::string name;           ///< e.g. "n0.gcd1->hsn0"
  double bytes = 0.0;         ///< bytes moved over it in one iteration
  double bandwidth_Bps = 0.0;
  double utilisation = 0.0;   ///< bytes / (bandwidth x iteration time)
  double bound_s = 0.0;       ///< summed bytes/bandwidth of the collectives this link bounds
};

/** @brief What the SimGrid engine adds to a run (empty for the analytical engine). */
struct NetworkReport {
  std::string topology;                  ///< the platform simulated
  std::uint64_t flows = 0;               ///< transfers simulated
  std::uint64_t live_collectives = 0;    ///< collectives simulated as transfers
  std::uint64_t cached_collectives = 0;  ///< identical collectives replayed from an isolated run
  double wall_s = 0.0;                   ///< wall time of the simulation
  double peak_rss_mb = 0.0;              ///< peak resident memory of the simulation process
  std::vector<LinkLoad> busiest;         ///< highest utilisation first; one per kind of link (see link_kind)
  std::vector<LinkLoad> bounding;        ///< links that bound collectives, most bound time first; one per kind
  double step_latency_s = 0.0;           ///< per-step latency summed over the collectives (not wall time)
  double bandwidth_s = 0.0;              ///< bytes/bandwidth of each collective's bounding link, summed
};

struct RunResult {
  core::Seconds iteration_time;
  std::vector<RoleBreakdown> roles;
  std::vector<TaskTiming> timings;               ///< per task, index = TaskId
  /// per task, with the timings: the part of its time that no compute of its role covered and that no
  /// communication or host work started before it claimed (RoleBreakdown's exposed_by_purpose, task by task);
  /// 0 for compute
  std::vector<double> exposed;
  std::vector<std::vector<MemorySample>> memory;  ///< per role, when tracked
  NetworkReport network;                         ///< SimGrid engine only
};

/** @brief When the framework's thread of `role` returns from its last call (the end of its last task on
 *  graph::Stream::kHostCpu, which waits where the framework synchronises, as DeepSpeed's step() waits for the
 *  gradients): what a host clock stopped there without synchronising the device reads, the work still queued on the
 *  device not counted. It says what such a clock reads only where the framework waits for its device inside the
 *  iteration; a thread that never waits runs ahead of its device, by as much as the launch queue lets it in a real
 *  loop. nullopt where the run kept no timings or the role's host does no modelled work. */
std::optional<double> host_returns_s(const graph::TaskGraph& g, const RunResult& r, std::uint16_t role = 0);

}  // namespace shardsim::engine
