#include "sim/engine/analytical_engine.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

#include "sim/core/errors.hpp"

namespace shardsim::engine {

using graph::Task;
using graph::TaskGraph;
using graph::TaskKind;

namespace {
constexpr std::size_t kStreams = static_cast<std::size_t>(graph::Stream::kCount);

constexpr std::uint32_t kNoTask = static_cast<std::uint32_t>(-1);
}  // namespace

AnalyticalEngine::AnalyticalEngine(const core::ClusterSpec& cluster, core::CollectiveAlgorithm algorithm)
    : cluster_(&cluster), algorithm_(algorithm) {}

void AnalyticalEngine::rebind(const core::ClusterSpec& cluster, core::CollectiveAlgorithm algorithm) {
  cluster_ = &cluster;
  algorithm_ = algorithm;
}

CollectiveEstimate AnalyticalEngine::collective(const TaskGraph& g, const Task& t) const {
  return repeated(estimate_compressed(*cluster_, g.groups()[t.group].shape, t.op, core::Bytes(t.bytes / t.calls),
                                      algorithm_, g.codecs[static_cast<std::size_t>(t.purpose)]),
                  t.calls);
}

const CollectiveEstimate& AnalyticalEngine::memo_collective(const TaskGraph& g, const Task& t) {
  const MemoKey key{t.group, t.op, t.purpose, t.calls, t.bytes};
  for (const auto& [k, e] : memo_) {
    if (k == key) return e;
  }
  memo_.emplace_back(key, collective(g, t));
  return memo_.back().second;
}

core::Seconds AnalyticalEngine::duration(const TaskGraph& g, const Task& t) const {
  switch (t.kind) {
    case TaskKind::kCompute: {
      if (t.time_s >= 0.0) return core::Seconds(t.time_s);  // timed from its kernels by the strategy
      const auto peak = cluster_->device.peak_for(g.compute_dtype);
      SHARDSIM_ASSERT(peak.has_value(), "device has no peak for the compute dtype");
      const double gemm = t.flops / (peak->value() * cluster_->device.gemm_efficiency);
      const double mem = t.bytes / (cluster_->device.hbm_bandwidth.value() * cluster_->device.memory_efficiency);
      return core::Seconds(gemm + mem);
    }
    case TaskKind::kCollective: return collective(g, t).time;
    case TaskKind::kCopy:
      SHARDSIM_ASSERT(cluster_->host.link_bandwidth.value() > 0.0, "a host copy on a cluster without a host link");
      return core::Seconds(t.bytes / cluster_->host.link_bandwidth.value());
    case TaskKind::kHostCompute:
      if (t.time_s >= 0.0) return core::Seconds(t.time_s);  // host work of a given duration
      SHARDSIM_ASSERT(cluster_->host.memory_bandwidth.value() > 0.0, "host work on a cluster without host memory");
      // Every device of the node runs its CPU optimizer at once: each gets its share of host memory bandwidth.
      return core::Seconds(t.bytes / cluster_->host.memory_share(cluster_->devices_per_node));
  }
  return core::Seconds(0.0);
}

RunResult AnalyticalEngine::run(const TaskGraph& g, const EngineOptions& options) {
  RunResult r;
  run(g, options, r);
  return r;
}

void AnalyticalEngine::run(const TaskGraph& g, const EngineOptions& options, RunResult& out) {
  const std::size_t n = g.tasks().size();
  timing_.resize(n);
  level_bytes_.resize(n);
  bottleneck_.resize(n);
  memo_.clear();
  // Without a slowdown every task's time is fixed: one list-scheduling pass in insertion order. With one, compute
  // slowed by the communication beside it moves that communication, so the schedule runs as events in time order.
  const double finish = cluster_->device.comm_compute_slowdown != 1.0 ? schedule_events(g) : schedule(g);
  finish_run(g, options, finish, out);
}

double AnalyticalEngine::price(const TaskGraph& g, std::size_t i) {
  const Task& t = g.tasks()[i];
  if (t.kind == TaskKind::kCollective) {
    const CollectiveEstimate& e = memo_collective(g, t);
    level_bytes_[i] = e.bytes_by_level;
    bottleneck_[i] = static_cast<std::int8_t>(e.bottleneck_level);
    return e.time.value();
  }
  level_bytes_[i] = {};
  bottleneck_[i] = -1;
  return duration(g, t).value();
}

double AnalyticalEngine::schedule(const TaskGraph& g) {
  const auto& tasks = g.tasks();
  const std::size_t n = tasks.size();
  const std::size_t roles = std::max<std::size_t>(1, g.roles().size());
  stream_free_.assign(roles * kStreams, 0.0);
  double finish = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const Task& t = tasks[i];
    double& free_at = stream_free_[t.role * kStreams + static_cast<std::size_t>(t.stream)];
    double ready = free_at;
    for (graph::TaskId d : g.deps(static_cast<graph::TaskId>(i))) ready = std::max(ready, timing_[d].end_s);
    const double dur = price(g, i);
    timing_[i] = TaskTiming{ready, ready + dur};
    free_at = ready + dur;
    finish = std::max(finish, ready + dur);
  }
  return finish;
}

double AnalyticalEngine::schedule_events(const TaskGraph& g) {
  // The same schedule as schedule() (a task starts once its stream's previous task and its dependencies are done),
  // run as events in time order, because a kernel's speed depends on what runs beside it on its role
  // (graph::runs_slowed): the compute stream's kernels run at 1/slowdown while a collective or a communication
  // kernel of their role runs, communication kernels while a collective does. The SimGrid engine applies the same
  // rule to the same graph; on an ideal network the two agree.
  const auto& tasks = g.tasks();
  const std::size_t n = tasks.size();
  const std::size_t roles = std::max<std::size_t>(1, g.roles().size());
  const double slow = cluster_->device.comm_compute_slowdown;

  // Who waits for each task (CSR), and how many tasks each still waits for.
  ev_waiting_.assign(n, 0);
  ev_dependents_begin_.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto deps = g.deps(static_cast<graph::TaskId>(i));
    ev_waiting_[i] = static_cast<std::uint32_t>(deps.size());
    for (graph::TaskId d : deps) ++ev_dependents_begin_[d + 1];
  }
  for (std::size_t i = 0; i < n; ++i) ev_dependents_begin_[i + 1] += ev_dependents_begin_[i];
  ev_dependents_.resize(ev_dependents_begin_[n]);
  {
    std::vector<std::uint32_t> next(ev_dependents_begin_.begin(), ev_dependents_begin_.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      for (graph::TaskId d : g.deps(static_cast<graph::TaskId>(i))) ev_dependents_[next[d]++] = static_cast<std::uint32_t>(i);
    }
  }
  // Each (role, stream) queue in insertion order: a task waits for the one before it on its queue (+1 counted).
  const std::size_t queues = roles * kStreams;
  ev_queue_next_.assign(n, kNoTask);
  std::vector<std::uint32_t> last(queues, kNoTask);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t q = tasks[i].role * kStreams + static_cast<std::size_t>(tasks[i].stream);
    if (last[q] != kNoTask) {
      ev_queue_next_[last[q]] = static_cast<std::uint32_t>(i);
      ++ev_waiting_[i];
    }
    last[q] = static_cast<std::uint32_t>(i);
  }

  // Running kernels per role (their work left, as of `ev_since_`), and the interferers running on each role.
  ev_left_.assign(n, 0.0);
  ev_since_.assign(n, 0.0);
  ev_version_.assign(n, 0);
  ev_running_.assign(roles, {});
  std::vector<int> collectives(roles, 0), comm_kernels(roles, 0);
  // A kernel's speed now, as a fraction of its speed alone.
  auto rate = [&](const Task& t) {
    return graph::runs_slowed(t, collectives[t.role], comm_kernels[t.role]) ? 1.0 / slow : 1.0;
  };
  struct Event {
    double time;
    std::uint32_t task;
    std::uint32_t version;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : task > o.task; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  auto reschedule = [&](std::uint32_t k, double now) {
    events.push(Event{now + ev_left_[k] / rate(tasks[k]), k, ++ev_version_[k]});
  };
  // The kernels running on `role` have run at their rates until `now`; their rates may change now.
  auto settle = [&](std::uint16_t role, double now) {
    for (std::uint32_t k : ev_running_[role]) {
      ev_left_[k] = std::max(0.0, ev_left_[k] - (now - ev_since_[k]) * rate(tasks[k]));
      ev_since_[k] = now;
    }
  };
  auto rerate = [&](std::uint16_t role, double now) {
    for (std::uint32_t k : ev_running_[role]) reschedule(k, now);
  };
  auto start = [&](std::uint32_t i, double now) {
    const Task& t = tasks[i];
    timing_[i].start_s = now;
    const double dur = price(g, i);
    const bool interferes = graph::interferes(t);
    if (interferes) settle(t.role, now);
    if (t.kind == TaskKind::kCollective && interferes) ++collectives[t.role];
    if (graph::is_comm_kernel(t)) ++comm_kernels[t.role];
    if (t.kind == TaskKind::kCompute) {
      ev_left_[i] = dur;
      ev_since_[i] = now;
      ev_running_[t.role].push_back(i);
    }
    if (interferes) rerate(t.role, now);  // the new task too, where it is a kernel
    if (t.kind == TaskKind::kCompute) {
      if (!interferes) reschedule(i, now);
    } else {
      events.push(Event{now + dur, i, ++ev_version_[i]});  // a collective, copy or host work: its fixed time
    }
  };
  auto release = [&](std::uint32_t i, double now) {
    if (--ev_waiting_[i] == 0) start(i, now);
  };

  for (std::size_t i = 0; i < n; ++i) {
    if (ev_waiting_[i] == 0) start(static_cast<std::uint32_t>(i), 0.0);
  }
  double finish = 0.0;
  std::size_t done = 0;
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    if (e.version != ev_version_[e.task]) continue;  // superseded by a change of rate
    const std::uint32_t i = e.task;
    const Task& t = tasks[i];
    const double now = e.time;
    timing_[i].end_s = now;
    finish = std::max(finish, now);
    ++done;
    const bool interferes = graph::interferes(t);
    if (interferes) settle(t.role, now);
    if (t.kind == TaskKind::kCompute) {
      auto& running = ev_running_[t.role];
      running.erase(std::find(running.begin(), running.end(), i));
    }
    if (t.kind == TaskKind::kCollective && interferes) --collectives[t.role];
    if (graph::is_comm_kernel(t)) --comm_kernels[t.role];
    if (interferes) rerate(t.role, now);
    if (ev_queue_next_[i] != kNoTask) release(ev_queue_next_[i], now);
    for (std::uint32_t k = ev_dependents_begin_[i]; k < ev_dependents_begin_[i + 1]; ++k) release(ev_dependents_[k], now);
  }
  SHARDSIM_ASSERT(done == n, "every task of the graph runs (its dependencies come before it)");
  return finish;
}

void AnalyticalEngine::summarise(const TaskGraph& g, const std::vector<TaskTiming>& timings,
                                 const EngineOptions& options, RunResult& out) {
  SHARDSIM_ASSERT(timings.size() == g.size(), "one timing per task");
  const auto& tasks = g.tasks();
  timing_ = timings;
  level_bytes_.resize(tasks.size());
  bottleneck_.resize(tasks.size());
  double finish = 0.0;
  memo_.clear();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    level_bytes_[i] = {};
    bottleneck_[i] = -1;
    if (tasks[i].kind == TaskKind::kCollective) {
      const CollectiveEstimate& e = memo_collective(g, tasks[i]);
      level_bytes_[i] = e.bytes_by_level;
      bottleneck_[i] = static_cast<std::int8_t>(e.bottleneck_level);
    }
    finish = std::max(finish, timing_[i].end_s);
  }
  finish_run(g, options, finish, out);
}

void AnalyticalEngine::index_roles(const TaskGraph& g, std::size_t roles) {
  // One role (every data-parallel plan): its tasks are the graph's, no index needed.
  indexed_ = roles > 1;
  if (!indexed_) return;
  // A counting sort by role, stable: each role's tasks (and memory events) keep the graph's order.
  auto bucket = [roles](std::size_t n, auto role_of, std::vector<std::uint32_t>& begin,
                        std::vector<std::uint32_t>& items) {
    begin.assign(roles + 1, 0);
    for (std::size_t i = 0; i < n; ++i) ++begin[role_of(i) + 1];
    for (std::size_t r = 0; r < roles; ++r) begin[r + 1] += begin[r];
    items.resize(n);
    std::vector<std::uint32_t> next(begin.begin(), begin.end() - 1);
    for (std::size_t i = 0; i < n; ++i) items[next[role_of(i)]++] = static_cast<std::uint32_t>(i);
  };
  const auto& tasks = g.tasks();
  bucket(tasks.size(), [&](std::size_t i) { return static_cast<std::size_t>(tasks[i].role); }, role_task_begin_,
         role_tasks_);
  const auto& mems = g.mem_events();
  bucket(mems.size(), [&](std::size_t i) { return static_cast<std::size_t>(tasks[mems[i].task].role); },
         role_mem_begin_, role_mems_);
}

void AnalyticalEngine::finish_run(const TaskGraph& g, const EngineOptions& options, double finish, RunResult& out) {
  if (!options.breakdown) {
    out.iteration_time = core::Seconds(finish);
    out.roles.clear();
    out.memory.clear();
    out.timings.clear();
    out.exposed.clear();
    return;
  }
  const std::size_t roles = std::max<std::size_t>(1, g.roles().size());
  index_roles(g, roles);
  exposed_.assign(g.tasks().size(), 0.0);
  out.iteration_time = core::Seconds(finish);
  out.roles.resize(roles);
  out.memory.resize(options.memory_timeline ? roles : 0);
  for (std::size_t r = 0; r < roles; ++r) {
    RoleBreakdown& b = out.roles[r];
    b = RoleBreakdown{};
    b.role = g.roles().empty() ? std::string("rank") : g.roles()[r];
    analyse_role(g, static_cast<std::uint16_t>(r), b);
    // A role done before the iteration ends (a pipeline's last stage, which waits for the first stage's last
    // backward and the step) idles until then: the four parts add up to the iteration for every role.
    b.idle += core::Seconds(std::max(0.0, finish - b.finish.value()));
    if (options.memory_timeline) replay_memory(g, static_cast<std::uint16_t>(r), b, out.memory[r]);
  }
  if (options.keep_timings) {
    out.timings.assign(timing_.begin(), timing_.end());
    out.exposed.assign(exposed_.begin(), exposed_.end());
  } else {
    out.timings.clear();
    out.exposed.clear();
  }
}

void AnalyticalEngine::analyse_role(const TaskGraph& g, std::uint16_t role, RoleBreakdown& b) {
  const auto& tasks = g.tasks();
  // Compute intervals are in start order (one in-order stream). Communication intervals come from several
  // in-order streams; merge them by start time.
  auto& comm_by_stream = comm_by_stream_;
  for (auto& v : comm_by_stream) v.clear();
  std::vector<std::uint32_t>& compute = scratch_;
  compute.clear();
  const std::size_t k_end = indexed_ ? role_task_begin_[role + 1u] : tasks.size();
  for (std::size_t k = indexed_ ? role_task_begin_[role] : 0; k < k_end; ++k) {
    const std::uint32_t i = indexed_ ? role_tasks_[k] : static_cast<std::uint32_t>(k);
    const Task& t = tasks[i];
    const double dur = timing_[i].end_s - timing_[i].start_s;
    b.finish = core::Seconds(std::max(b.finish.value(), timing_[i].end_s));
    if (t.kind == TaskKind::kCompute && t.purpose == graph::Purpose::kCompute) {
      compute.push_back(static_cast<std::uint32_t>(i));
      b.compute_busy += core::Seconds(dur);
      if (cluster_->device.comm_compute_slowdown != 1.0) {
        b.compute_slowed += core::Seconds(std::max(0.0, dur - duration(g, t).value()));
      }
      b.compute_by_phase[static_cast<std::size_t>(t.phase)] += core::Seconds(dur);
    } else {
      comm_by_stream[static_cast<std::size_t>(t.stream)].push_back(static_cast<std::uint32_t>(i));
      b.comm_by_purpose[static_cast<std::size_t>(t.purpose)] += core::Seconds(dur);
      for (int l = 0; l < graph::kMaxLevels; ++l) b.bytes_by_level[l] += level_bytes_[i][static_cast<std::size_t>(l)];
    }
  }

  std::array<std::size_t, kStreams> head{};
  double covered_until = 0.0;  // end of the union of communication and host work so far
  double comm_until = 0.0;     // end of the communication union so far
  std::size_t cj = 0;          // first compute interval that may still overlap
  double comm_union = 0.0;
  double exposed_total = 0.0;
  double exposed_host = 0.0;
  for (;;) {
    // Next communication interval by start time (ties: lower stream first, deterministic).
    std::size_t best_s = kStreams;
    double best_start = 0.0;
    for (std::size_t s = 0; s < kStreams; ++s) {
      if (head[s] >= comm_by_stream[s].size()) continue;
      const double st = timing_[comm_by_stream[s][head[s]]].start_s;
      if (best_s == kStreams || st < best_start) {
        best_s = s;
        best_start = st;
      }
    }
    if (best_s == kStreams) break;
    const std::uint32_t id = comm_by_stream[best_s][head[best_s]++];
    const bool host = tasks[id].kind == TaskKind::kHostCompute;
    if (host) b.host_busy += core::Seconds(timing_[id].end_s - timing_[id].start_s);
    if (!host && timing_[id].end_s > comm_until) {
      comm_union += timing_[id].end_s - std::max(timing_[id].start_s, comm_until);
      comm_until = timing_[id].end_s;
    }
    // Exposure: time that no compute covers goes to the communication or host work that started first.
    const double a = std::max(timing_[id].start_s, covered_until);
    const double e = timing_[id].end_s;
    if (e <= a) continue;
    covered_until = e;
    // Subtract compute overlapping [a, e).
    while (cj < compute.size() && timing_[compute[cj]].end_s <= a) ++cj;
    double overlap = 0.0;
    for (std::size_t k = cj; k < compute.size(); ++k) {
      const TaskTiming& c = timing_[compute[k]];
      if (c.start_s >= e) break;
      overlap += std::max(0.0, std::min(c.end_s, e) - std::max(c.start_s, a));
    }
    const double exposed = (e - a) - overlap;
    exposed_[id] = exposed;
    (host ? exposed_host : exposed_total) += exposed;
    (host ? b.exposed_host_by_purpose : b.exposed_by_purpose)[static_cast<std::size_t>(tasks[id].purpose)] +=
        core::Seconds(exposed);
    if (bottleneck_[id] >= 0) b.exposed_by_level[static_cast<std::size_t>(bottleneck_[id])] += core::Seconds(exposed);
  }
  b.comm_busy = core::Seconds(comm_union);
  b.exposed_comm = core::Seconds(exposed_total);
  b.exposed_host = core::Seconds(exposed_host);
  // Rounding can leave a -1e-16 where the four add up exactly.
  b.idle = core::Seconds(std::max(0.0, (b.finish - b.compute_busy - b.exposed_comm - b.exposed_host).value()));
}

void AnalyticalEngine::replay_memory(const TaskGraph& g, std::uint16_t role, RoleBreakdown& b,
                                     std::vector<MemorySample>& samples) {
  struct Ev {
    double t;
    double bytes;
    graph::MemKind kind;
  };
  std::vector<Ev> evs;
  const std::size_t k_end = indexed_ ? role_mem_begin_[role + 1u] : g.mem_events().size();
  const std::size_t k_begin = indexed_ ? role_mem_begin_[role] : 0;
  evs.reserve(k_end - k_begin);
  for (std::size_t k = k_begin; k < k_end; ++k) {
    const graph::MemEvent& m = g.mem_events()[indexed_ ? role_mems_[k] : k];
    const TaskTiming& tt = timing_[m.task];
    evs.push_back(Ev{m.at_end ? tt.end_s : tt.start_s, m.bytes, m.kind});
  }
  // Frees before allocations at the same instant: the allocator reuses the block.
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& x, const Ev& y) {
    if (x.t != y.t) return x.t < y.t;
    return x.bytes < y.bytes;
  });
  std::array<double, kMemKinds> live{};
  double cur = g.baseline(role);
  double peak = cur;
  b.peak_memory_by_kind = {};
  samples.clear();
  samples.push_back(MemorySample{0.0, cur, live});
  for (const Ev& e : evs) {
    cur += e.bytes;
    live[static_cast<std::size_t>(e.kind)] += e.bytes;
    if (!samples.empty() && samples.back().time_s == e.t) {
      samples.back().bytes = cur;
      samples.back().transient = live;
    } else {
      samples.push_back(MemorySample{e.t, cur, live});
    }
    if (cur > peak) {
      peak = cur;
      b.peak_memory_by_kind = live;
    }
  }
  b.peak_memory_bytes = peak;
}

}  // namespace shardsim::engine
