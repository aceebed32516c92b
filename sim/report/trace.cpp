#include "sim/report/trace.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sim/core/csv_text.hpp"
#include "sim/core/errors.hpp"

namespace shardsim::report {

namespace {

// The bytes a rank holds at one sample, by category: what it holds all iteration, then the transient kinds.
std::vector<std::pair<std::string, double>> memory_parts(const graph::ResidentMemory& resident,
                                                         const engine::MemorySample& sample) {
  std::vector<std::pair<std::string, double>> parts = {{"params", resident.params},
                                                       {"grads", resident.grads},
                                                       {"optimizer", resident.optimizer},
                                                       {"reserved", resident.reserved}};
  for (std::size_t k = 0; k < engine::kMemKinds; ++k) {
    std::string name(graph::mem_kind_name(static_cast<graph::MemKind>(k)));
    std::replace(name.begin(), name.end(), ' ', '_');
    parts.emplace_back(std::move(name), sample.transient[k]);
  }
  return parts;
}

}  // namespace


std::string chrome_trace(const scenario::Evaluation& ev) {
  const graph::TaskGraph& g = ev.graph;
  SHARDSIM_ASSERT(ev.run.timings.size() == g.size(), "trace needs per-task timings");
  using J = nlohmann::ordered_json;
  J events = J::array();
  const std::size_t streams = static_cast<std::size_t>(graph::Stream::kCount);
  for (std::size_t r = 0; r < g.roles().size(); ++r) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", g.roles()[r]}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    for (std::size_t s = 0; s < streams; ++s) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", r},
                        {"tid", s},
                        {"args", {{"name", std::string(graph::stream_name(static_cast<graph::Stream>(s)))}}}});
    }
  }
  const auto& tasks = g.tasks();
  for (graph::TaskId i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    const auto& tm = ev.run.timings[i];
    J args = J::object();
    if (t.kind == graph::TaskKind::kCollective) {
      args["bytes"] = t.bytes;
      args["group"] = g.groups()[t.group].name;
      args["ranks"] = g.groups()[t.group].shape.size;
      if (t.calls > 1) args["calls"] = t.calls;  // back-to-back calls, `bytes` their sum
    } else if (t.flops > 0.0) {
      args["flops"] = t.flops;
    }
    if (t.kind != graph::TaskKind::kCollective && t.bytes > 0.0) args["memory_bytes"] = t.bytes;
    events.push_back({{"name", g.label(i)},
                      {"cat", std::string(graph::purpose_name(t.purpose))},
                      {"ph", "X"},
                      {"ts", tm.start_s * 1e6},
                      {"dur", (tm.end_s - tm.start_s) * 1e6},
                      {"pid", t.role},
                      {"tid", static_cast<int>(t.stream)},
                      {"args", args}});
  }
  for (std::size_t r = 0; r < ev.run.memory.size(); ++r) {
    for (const auto& m : ev.run.memory[r]) {
      events.push_back({{"name", "device memory"},
                        {"ph", "C"},
                        {"ts", m.time_s * 1e6},
                        {"pid", r},
                        {"args", {{"GiB", m.bytes / core::kGiB}}}});
      // The same by category, one series each (a stacked counter track in Perfetto and chrome://tracing).
      J parts = J::object();
      for (const auto& [name, bytes] : memory_parts(g.resident(static_cast<std::uint16_t>(r)), m)) {
        parts[name] = bytes / core::kGiB;
      }
      events.push_back({{"name", "device memory by category (GiB)"},
                        {"ph", "C"},
                        {"ts", m.time_s * 1e6},
                        {"pid", r},
                        {"args", parts}});
    }
  }
  // Host link activity per direction: the rate of the copies in flight, stepping at each copy's start and end.
  for (const auto& [stream, name] : {std::pair{graph::Stream::kHostToDevice, "host link h2d (GB/s)"},
                                     std::pair{graph::Stream::kDeviceToHost, "host link d2h (GB/s)"}}) {
    for (std::size_t r = 0; r < g.roles().size(); ++r) {
      std::vector<std::pair<double, double>> steps;  // (time, rate change)
      for (graph::TaskId i = 0; i < tasks.size(); ++i) {
        const auto& t = tasks[i];
        if (t.kind != graph::TaskKind::kCopy || t.stream != stream || t.role != r) continue;
        const auto& tm = ev.run.timings[i];
        const double dur = tm.end_s - tm.start_s;
        if (!(dur > 0.0)) continue;
        steps.emplace_back(tm.start_s, t.bytes / dur);
        steps.emplace_back(tm.end_s, -t.bytes / dur);
      }
      if (steps.empty()) continue;
      std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      double rate = 0.0;
      for (std::size_t k = 0; k < steps.size(); ++k) {
        rate += steps[k].second;
        if (k + 1 < steps.size() && steps[k + 1].first == steps[k].first) continue;  // one sample per instant
        events.push_back({{"name", name},
                          {"ph", "C"},
                          {"ts", steps[k].first * 1e6},
                          {"pid", r},
                          {"args", {{"GB/s", std::max(0.0, rate) / 1e9}}}});
      }
    }
  }
  J doc;
  doc["traceEvents"] = events;
  doc["displayTimeUnit"] = "ms";
  return doc.dump() + "\n";
}

std::string host_link_csv(const scenario::Evaluation& ev) {
  const graph::TaskGraph& g = ev.graph;
  SHARDSIM_ASSERT(ev.run.timings.size() == g.size(), "the host link timeline needs per-task timings");
  std::string o = "role,direction,phase,purpose,start_s,end_s,bytes,GBps\n";
  const auto& tasks = g.tasks();
  for (graph::TaskId i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    if (t.kind != graph::TaskKind::kCopy) continue;
    const auto& tm = ev.run.timings[i];
    const double dur = tm.end_s - tm.start_s;
    o += fmt::format("{},{},{},{},{:.9f},{:.9f},{:.0f},{:.3f}\n", core::csv_field(g.roles()[t.role]),
                     t.stream == graph::Stream::kHostToDevice ? "h2d" : "d2h", graph::phase_name(t.phase),
                     core::csv_field(graph::purpose_name(t.purpose)),
                     tm.start_s, tm.end_s, t.bytes, dur > 0.0 ? t.bytes / dur / 1e9 : 0.0);
  }
  return o;
}

std::string memory_csv(const scenario::Evaluation& ev) {
  const graph::TaskGraph& g = ev.graph;
  std::string o = "role,time_s,bytes";
  for (const auto& [name, bytes] : memory_parts({}, {})) o += "," + name;
  // Host memory each device's rank holds (ZeRO-Offload: its optimizer states and pinned buffers, allocated at start).
  o += ",host\n";
  for (std::size_t r = 0; r < ev.run.memory.size(); ++r) {
    const graph::ResidentMemory resident = g.resident(static_cast<std::uint16_t>(r));
    for (const auto& m : ev.run.memory[r]) {
      o += fmt::format("{},{:.9f},{:.0f}", core::csv_field(g.roles()[r]), m.time_s, m.bytes);
      for (const auto& [name, bytes] : memory_parts(resident, m)) o += fmt::format(",{:.0f}", bytes);
      o += fmt::format(",{:.0f}\n", ev.memory.host_bytes);
    }
  }
  return o;
}

}  // namespace shardsim::report
