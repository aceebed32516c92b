#pragma once
// AnalyticalEngine: runs a TaskGraph with closed-form task durations over the streams (each (role, stream) is an
// in-order queue, like a GPU stream; a task starts when its stream is free and its dependencies have finished):
// one list-scheduling pass in insertion order, or, where the device's kernels slow beside communication, the same
// schedule as events in time order. No network contention: that is the SimGrid engine's job. Fast enough to sit
// inside plan search (thousands to tens of thousands of evaluations per second).
#include <array>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/engine/collective_cost.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/run_result.hpp"
#include "sim/graph/task_graph.hpp"
#include "topology/link_topology.hpp"

namespace shardsim::engine {

class AnalyticalEngine : public Engine {
 public:
  /** @brief Prices collectives with `algorithm` (kAuto: what NCCL / RCCL would run) on `cluster`. */
  AnalyticalEngine(const core::ClusterSpec& cluster, core::CollectiveAlgorithm algorithm);

  /** @brief Prices further runs on `cluster` with `algorithm`, keeping the buffers of earlier runs (search and
   *  benchmarks evaluate many plans with one engine). */
  void rebind(const core::ClusterSpec& cluster, core::CollectiveAlgorithm algorithm);

  /** @brief Duration of task `t` of `g`. Precondition: the device has a peak for g.compute_dtype. */
  [[nodiscard]] core::Seconds duration(const graph::TaskGraph& g, const graph::Task& t) const;
  /** @brief Estimate for one collective task of `g`. */
  [[nodiscard]] CollectiveEstimate collective(const graph::TaskGraph& g, const graph::Task& t) const;

  /** @brief Runs one iteration. `out` is reused between calls (search evaluates many graphs). */
  void run(const graph::TaskGraph& g, const EngineOptions& options, RunResult& out) override;
  /** @brief Convenience wrapper returning a fresh result. */
  RunResult run(const graph::TaskGraph& g, const EngineOptions& options = {});
  /** @brief Fills `out` from per-task timings measured by another engine (the SimGrid engine): the same
   *  breakdown, bytes per level and memory replay as run(). Precondition: timings.size() == g.size(). */
  void summarise(const graph::TaskGraph& g, const std::vector<TaskTiming>& timings, const EngineOptions& options,
                 RunResult& out);

 private:
  /** @brief Task `i`'s time at full speed; records what a collective sends per level and the level that paces it. */
  double price(const graph::TaskGraph& g, std::size_t i);
  /** @brief One list-scheduling pass in insertion order, every task at its fixed duration (no slowdown). Returns
   *  the finish time. */
  double schedule(const graph::TaskGraph& g);
  /** @brief The same schedule as events in time order, kernels slowed while what interferes with them runs on their
   *  role (graph::runs_slowed, DeviceSpec::comm_compute_slowdown). Returns the finish time. */
  double schedule_events(const graph::TaskGraph& g);
  void finish_run(const graph::TaskGraph& g, const EngineOptions& options, double finish, RunResult& out);
  void analyse_role(const graph::TaskGraph& g, std::uint16_t role, RoleBreakdown& out);
  void replay_memory(const graph::TaskGraph& g, std::uint16_t role, RoleBreakdown& out,
                     std::vector<MemorySample>& samples);
  /** @brief collective(), remembered for the run: an iteration repeats few distinct collectives many times
   *  (every submodule's gather, every micro-batch). */
  const CollectiveEstimate& memo_collective(const graph::TaskGraph& g, const graph::Task& t);

  struct MemoKey {
    std::uint16_t group;
    graph::CollectiveOp op;
    graph::Purpose purpose;
    std::uint32_t calls;
    double bytes;
    bool operator==(const MemoKey&) const = default;
  };

  // schedule_events' state, kept to reuse its capacity: per task, what it still waits for, who waits for it (CSR), the
  // next task on its stream, a kernel's work left as of `ev_since_`, its event's version; per role, running kernels
  std::vector<std::uint32_t> ev_waiting_;
  std::vector<std::uint32_t> ev_dependents_begin_;
  std::vector<std::uint32_t> ev_dependents_;
  std::vector<std::uint32_t> ev_queue_next_;
  std::vector<double> ev_left_;
  std::vector<double> ev_since_;
  std::vector<std::uint32_t> ev_version_;
  std::vector<std::vector<std::uint32_t>> ev_running_;
  const core::ClusterSpec* cluster_;
  core::CollectiveAlgorithm algorithm_;
  std::vector<TaskTiming> timing_;
  std::vector<double> exposed_;  ///< per task: its exposed time (analyse_role)
  std::vector<double> stream_free_;
  std::vector<std::array<double, graph::kMaxLevels>> level_bytes_;
  std::vector<std::int8_t> bottleneck_;  ///< per task: the level that paced a collective, -1 otherwise
  std::vector<std::uint32_t> scratch_;
  /// per stream, the communication tasks of the role being analysed (kept to reuse their capacity)
  std::array<std::vector<std::uint32_t>, static_cast<std::size_t>(graph::Stream::kCount)> comm_by_stream_;
  std::vector<std::pair<MemoKey, CollectiveEstimate>> memo_;  ///< this run's distinct collectives
  bool indexed_ = false;  ///< the run has several roles and the indexes below hold them
  /// the tasks and memory events of each role, in graph order (CSR: role r's are [begin[r], begin[r + 1])), built
  /// once per run so that each role's analysis reads its own and not the whole graph
  std::vector<std::uint32_t> role_task_begin_;
  std::vector<std::uint32_t> role_tasks_;
  std::vector<std::uint32_t> role_mem_begin_;
  std::vector<std::uint32_t> role_mems_;
  /** @brief Fills the per-role indexes above for `g`. */
  void index_roles(const graph::TaskGraph& g, std::size_t roles);
};

}  // namespace shardsim::engine
