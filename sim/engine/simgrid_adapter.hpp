#pragma once
// NetSim: the one place shardsim touches SimGrid (3.32). It builds a SimGrid platform from a LinkTopology —
// a host per device and CPU, a split-duplex link per link, routes answered on demand by shardsim's own router
// through a custom netzone (no N^2 route table) — configured as the project's SimGrid notes recommend: CM02
// without its TCP window bound or RTT weighting, cross-traffic off, no bandwidth or latency factors. Actors
// (one per rank role and stream) sleep for compute and move payload-free bytes between hosts.
//
// SimGrid keeps global state: create at most one NetSim per process (the SimGrid engine runs each simulation
// in a child process). Everything here is deterministic: same topology and actors, same timeline.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "topology/link_topology.hpp"

namespace shardsim::engine {

/** @brief One payload-free transfer between two topology vertices (devices or CPUs). */
struct NetFlow {
  int src_vertex = 0;
  int dst_vertex = 0;
  double bytes = 0.0;
};

class NetSim {
 public:
  /** @brief Builds the SimGrid platform of `topology`, `lanes` disjoint copies of it (a transfer runs in one
   *  lane and shares links only with transfers of the same lane). Precondition: no other NetSim in this
   *  process. */
  explicit NetSim(const topology::LinkTopology& topology, int lanes = 1);
  ~NetSim();
  NetSim(const NetSim&) = delete;
  NetSim& operator=(const NetSim&) = delete;

  /** @brief Creates an actor running `body` when run() starts. */
  void spawn(const std::string& name, std::function<void()> body);
  /** @brief Runs the simulation until every actor has finished. */
  void run();

  /** @brief Simulated time in seconds. */
  [[nodiscard]] static double now();
  /** @brief Blocks the calling actor for `seconds` of simulated time. */
  static void sleep_for(double seconds);
  /** @brief Starts every flow at once in lane `lane` and blocks the calling actor until all have arrived. */
  void transfer(const std::vector<NetFlow>& flows, int lane = 0);
  /** @brief Blocks the calling actor until notify_all(). */
  void wait();
  /** @brief The same, returning at once if notify_all() was called since notifications() read `seen` (taking
   *  the mutex yields to other actors: a notification in between is not lost). */
  void wait(std::uint64_t seen);
  /** @brief How many times notify_all() was called. */
  [[nodiscard]] std::uint64_t notifications() const { return notifications_; }
  /** @brief Blocks until notify_all() or until simulated time `deadline`; true when the deadline was reached. */
  bool wait_until(double deadline);
  /** @brief Wakes every actor blocked in wait() or wait_until(). */
  void notify_all();

  /** @brief Signals: one condition per id (a device), which one actor waits on and others raise. `id` >= 0;
   *  created on first use. signal_count(id): how many times it was raised. */
  [[nodiscard]] std::uint64_t signal_count(int id) const;
  /** @brief Blocks until raise_signal(id) or simulated time `deadline`; true when the deadline was reached. Returns
   *  false at once if the signal was raised since signal_count read `seen` (taking the mutex yields to other
   *  actors: a raise in between is not lost). */
  bool wait_signal(int id, double deadline, std::uint64_t seen);
  void raise_signal(int id);

  /** @brief Flows started so far. */
  [[nodiscard]] std::uint64_t flows_started() const { return flows_; }

 private:
  std::vector<std::uint64_t> signal_counts_;
  std::uint64_t notifications_ = 0;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t flows_ = 0;
};

/** @brief Loads a SimGrid platform file (e.g. `shardsim topology --export`) with NetSim's configuration and
 *  returns the simulated seconds one payload-free transfer of `bytes` from host `src` to host `dst` takes.
 *  Uses SimGrid's global state: call it at most once per process, with no NetSim alive. */
double time_transfer_on_platform_file(const std::string& path, const std::string& src, const std::string& dst,
                                      double bytes);

/** @brief Whether this build has SimGrid (the engine is unavailable otherwise). */
bool simgrid_available();

}  // namespace shardsim::engine
