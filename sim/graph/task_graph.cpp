#include "sim/graph/task_graph.hpp"

#include <fmt/format.h>

#include "sim/core/errors.hpp"

namespace shardsim::graph {

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kParamGather: return "param-gather";
    case Stream::kGradReduce: return "grad-reduce";
    case Stream::kPipeline: return "pipeline";
    case Stream::kHostToDevice: return "h2d";
    case Stream::kDeviceToHost: return "d2h";
    case Stream::kHostCpu: return "host-cpu";
    case Stream::kHostStep: return "host-step";
    case Stream::kGroupNccl: return "group-nccl";
    case Stream::kParamSync: return "param-sync";
    case Stream::kTpOverlap: return "tp-overlap";
    case Stream::kCount: break;
  }
  return "?";
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kRecompute: return "recompute";
    case Phase::kOptimizer: return "optimizer";
    case Phase::kNone: return "other";
    case Phase::kCount: break;
  }
  return "?";
}

std::string_view collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all-reduce";
    case CollectiveOp::kReduceScatter: return "reduce-scatter";
    case CollectiveOp::kAllGather: return "all-gather";
    case CollectiveOp::kAllToAll: return "all-to-all";
    case CollectiveOp::kSendRecv: return "send-recv";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kCount: break;
  }
  return "?";
}

std::string_view purpose_name(Purpose p) {
  switch (p) {
    case Purpose::kCompute: return "compute";
    case Purpose::kParamGatherFwd: return "param gather (fwd)";
    case Purpose::kParamGatherBwd: return "param gather (bwd)";
    case Purpose::kGradReduce: return "grad reduction";
    case Purpose::kGradNorm: return "grad norm";
    case Purpose::kParamUpdateGather: return "updated-param gather";
    case Purpose::kTensorParallel: return "tensor parallel";
    case Purpose::kPipeline: return "pipeline send/recv";
    case Purpose::kOffload: return "offload (PCIe, CPU Adam)";
    case Purpose::kFramework: return "framework (host)";
    case Purpose::kCount: break;
  }
  return "?";
}

std::string_view mem_kind_name(MemKind k) {
  switch (k) {
    case MemKind::kActivations: return "activations";
    case MemKind::kGatheredParams: return "gathered params";
    case MemKind::kGradBuffer: return "grad buffers";
    case MemKind::kGatherBuffer: return "gather buffers";
    case MemKind::kLogits: return "logits";
    case MemKind::kCount: break;
  }
  return "?";
}

int GroupShape::top_level() const {
  int top = -1;
  for (int l = 0; l < levels; ++l) {
    if (within(l) > within(l - 1)) top = l;
  }
  return top;
}

void TaskGraph::clear() {
  tasks_.clear();
  deps_.clear();
  groups_.clear();
  roles_.clear();
  mem_.clear();
  baseline_.clear();
  epilogues_.clear();
  last_launched_.clear();
  codecs = {};
  launch_blocking = false;
}

std::uint16_t TaskGraph::add_role(std::string name) {
  roles_.push_back(std::move(name));
  return static_cast<std::uint16_t>(roles_.size() - 1);
}

void TaskGraph::set_baseline(std::uint16_t role, const ResidentMemory& resident) {
  SHARDSIM_ASSERT(role < roles_.size(), "baseline for an unknown role");
  baseline_.resize(roles_.size());
  baseline_[role] = resident;
}

double TaskGraph::baseline(std::uint16_t role) const { return resident(role).total(); }

ResidentMemory TaskGraph::resident(std::uint16_t role) const {
  return role < baseline_.size() ? baseline_[role] : ResidentMemory{};
}

std::uint16_t TaskGraph::add_group(CommGroup group) {
  SHARDSIM_ASSERT(group.shape.size >= 1, "empty communication group");
  groups_.push_back(std::move(group));
  return static_cast<std::uint16_t>(groups_.size() - 1);
}

TaskId TaskGraph::append_compute(std::uint16_t role, Stream stream, Phase phase, std::int32_t unit,
                                 std::int32_t micro, core::Flops flops, core::Bytes memory_bytes, core::Seconds time) {
  Task t;
  t.kind = TaskKind::kCompute;
  t.stream = stream;
  t.phase = phase;
  t.role = role;
  t.unit = unit;
  t.micro = micro;
  t.flops = flops.value();
  t.bytes = memory_bytes.value();
  t.time_s = time.value();
  t.dep_begin = static_cast<std::uint32_t>(deps_.size());
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

void TaskGraph::note_launch(TaskId t) {
  if (!launch_blocking) return;  // only add_host_work under launch_blocking reads them (set before the first task)
  const Task& k = tasks_[t];
  if (k.stream == Stream::kHostCpu || k.stream == Stream::kHostStep) return;
  if (last_launched_.size() <= k.role) {
    std::array<TaskId, static_cast<std::size_t>(Stream::kCount)> none{};
    none.fill(kNone);
    last_launched_.resize(static_cast<std::size_t>(k.role) + 1, none);
  }
  last_launched_[k.role][static_cast<std::size_t>(k.stream)] = t;
}

std::optional<TaskId> TaskGraph::previous_on_stream(TaskId t) const {
  const Task& k = tasks_[t];
  for (TaskId i = t; i-- > 0;) {
    if (tasks_[i].role == k.role && tasks_[i].stream == k.stream) return i;
  }
  return std::nullopt;
}

TaskId TaskGraph::add_compute(std::uint16_t role, Phase phase, std::int32_t unit, std::int32_t micro,
                              core::Flops flops, core::Bytes memory_bytes, core::Seconds time) {
  const TaskId t = append_compute(role, Stream::kCompute, phase, unit, micro, flops, memory_bytes, time);
  note_launch(t);
  return t;
}

TaskId TaskGraph::add_kernel(std::uint16_t role, Stream stream, Purpose purpose, std::int32_t unit,
                             std::int32_t micro, core::Bytes memory_bytes) {
  const TaskId t =
      append_compute(role, stream, Phase::kNone, unit, micro, core::Flops(0.0), memory_bytes, core::Seconds(-1.0));
  tasks_[t].purpose = purpose;
  note_launch(t);
  return t;
}

TaskId TaskGraph::add_copy(std::uint16_t role, Stream stream, Purpose purpose, Phase phase, core::Bytes bytes,
                           std::int32_t unit, std::int32_t micro) {
  const TaskId t = append_compute(role, stream, phase, unit, micro, core::Flops(0.0), bytes, core::Seconds(-1.0));
  tasks_[t].kind = TaskKind::kCopy;
  tasks_[t].purpose = purpose;
  note_launch(t);
  return t;
}

TaskId TaskGraph::add_host_compute(std::uint16_t role, Stream stream, Purpose purpose, core::Bytes bytes) {
  const TaskId t =
      append_compute(role, stream, Phase::kOptimizer, -1, -1, core::Flops(0.0), bytes, core::Seconds(-1.0));
  tasks_[t].kind = TaskKind::kHostCompute;
  tasks_[t].purpose = purpose;
  note_launch(t);
  return t;
}

TaskId TaskGraph::add_host_work(std::uint16_t role, Purpose purpose, Phase phase, core::Seconds time,
                                std::int32_t unit, std::int32_t micro, Stream stream) {
  SHARDSIM_ASSERT(stream == Stream::kHostCpu || stream == Stream::kHostStep, "host work runs on a host stream");
  const TaskId t = append_compute(role, stream, phase, unit, micro, core::Flops(0.0), core::Bytes(0.0), time);
  tasks_[t].kind = TaskKind::kHostCompute;
  tasks_[t].purpose = purpose;
  // The framework thread under CUDA_LAUNCH_BLOCKING: each launch returned only once its work was done.
  if (launch_blocking && stream == Stream::kHostCpu && role < last_launched_.size()) {
    for (const TaskId before : last_launched_[role]) {
      if (before != kNone) add_dep(t, before);
    }
  }
  return t;
}

TaskId TaskGraph::add_collective(std::uint16_t role, Stream stream, CollectiveOp op, Purpose purpose,
                                 std::uint16_t group, core::Bytes payload, std::int32_t unit, std::int32_t micro,
                                 std::uint32_t calls) {
  SHARDSIM_ASSERT(group < groups_.size(), "collective on an unknown group");
  SHARDSIM_ASSERT(calls >= 1, "a collective task stands for one call or more");
  Task t;
  t.kind = TaskKind::kCollective;
  t.stream = stream;
  t.op = op;
  t.purpose = purpose;
  t.role = role;
  t.group = group;
  t.unit = unit;
  t.micro = micro;
  t.bytes = payload.value();
  t.calls = calls;
  t.dep_begin = static_cast<std::uint32_t>(deps_.size());
  tasks_.push_back(t);
  const auto id = static_cast<TaskId>(tasks_.size() - 1);
  note_launch(id);
  return id;
}

void TaskGraph::add_dep(TaskId t, TaskId on) {
  SHARDSIM_ASSERT(t + 1 == tasks_.size(), "dependencies must be added right after their task");
  SHARDSIM_ASSERT(on < t, "a task may only depend on earlier tasks");
  deps_.push_back(on);
  ++tasks_[t].dep_count;
}

void TaskGraph::add_mem(TaskId t, bool at_end, MemKind kind, core::Bytes delta) {
  SHARDSIM_ASSERT(t < tasks_.size(), "memory event on an unknown task");
  mem_.push_back(MemEvent{t, at_end, kind, delta.value()});
}

std::span<const TaskId> TaskGraph::deps(TaskId t) const {
  const Task& task = tasks_[t];
  return {deps_.data() + task.dep_begin, task.dep_count};
}

std::string TaskGraph::label(TaskId id) const {
  const Task& t = tasks_[id];
  std::string where;
  if (t.unit >= 0) where += fmt::format(" u{}", t.unit);
  if (t.micro >= 0) where += fmt::format(" mb{}", t.micro);
  if (t.kind == TaskKind::kCopy) return fmt::format("copy {} {}{}", stream_name(t.stream), purpose_name(t.purpose), where);
  if (t.kind == TaskKind::kHostCompute) return fmt::format("host {}{}", purpose_name(t.purpose), where);
  if (t.kind == TaskKind::kCompute && t.purpose == Purpose::kCompute) return fmt::format("{}{}", phase_name(t.phase), where);
  if (t.kind == TaskKind::kCompute) return fmt::format("kernel {}{}", purpose_name(t.purpose), where);
  const std::string calls = t.calls > 1 ? fmt::format(" x{}", t.calls) : std::string();
  return fmt::format("{}({}){} {}{}", collective_name(t.op), groups_[t.group].name, calls, purpose_name(t.purpose),
                     where);
}

}  // namespace shardsim::graph
