#pragma once
// TaskGraph: one training iteration, as the tasks each distinct rank role executes: compute (FLOPs plus
// memory-bound bytes), collectives (operation, rank group, payload bytes), copies, their streams and
// dependencies, and memory alloc/free events attached to task boundaries. Strategies build it; engines run
// it. Tasks on one (role, stream) run in the order they were added, as on a GPU stream; a task may only
// depend on tasks added before it, so insertion order is a topological order.
//
// Built for speed: the analytical engine evaluates thousands of graphs per second during plan search, so
// tasks are plain structs in one vector, dependencies are a CSR array, and labels are derived on demand.
#include <array>
#include <optional>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/core/units.hpp"

namespace shardsim::graph {

using TaskId = std::uint32_t;

inline constexpr int kMaxLevels = 6;

/** kCopy: host <-> device over the host link; kHostCompute: work on the host CPU, memory-bound (CPU Adam) or of a
 *  given duration (a framework's hooks). */
enum class TaskKind : std::uint8_t { kCompute, kCollective, kCopy, kHostCompute };

/** Streams, per rank role. Compute, the parameter-gather stream and the gradient-reduction stream are
 *  separate CUDA/HIP streams in DeepSpeed; with overlap off, strategies put everything on kCompute. kHostCpu is
 *  the framework's thread; kHostStep a second host thread, the one-step delayed update's optimizer step.
 *  kGroupNccl is the NCCL stream of a process group that a framework's parameter gathers and gradient reductions
 *  share: PyTorch's ProcessGroupNCCL launches every collective of a group on one stream per device, in the order
 *  its host issues them (pytorch/pytorch@0007e752 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, collective():
 *  ncclStreams_ keyed by the device), so those collectives run one at a time, whatever stream called them.
 *  kParamSync carries the previous step's parameter sync where the forward waits for it block by block
 *  (PlanSpec::overlap_sync_param): the zero1 group's own communicator. kTpOverlap carries the tensor-parallel
 *  exchanges Transformer Engine's userbuffers overlap with the GEMMs (PlanSpec::tp_comm_overlap): copy engines and a
 *  few SMs of their own, so they do not slow the kernels beside them as NCCL's kernels do. */
enum class Stream : std::uint8_t {
  kCompute, kParamGather, kGradReduce, kPipeline, kHostToDevice, kDeviceToHost, kHostCpu, kHostStep, kGroupNccl,
  kParamSync,
  kTpOverlap,
  kCount
};

enum class Phase : std::uint8_t { kForward, kBackward, kRecompute, kOptimizer, kNone, kCount };

enum class CollectiveOp : std::uint8_t { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSendRecv, kBroadcast, kCount };

/** Why a collective or copy exists; the breakdown of "where the time goes" is by purpose. */
enum class Purpose : std::uint8_t {
  kCompute,          ///< not communication
  kParamGatherFwd,   ///< ZeRO-3: gather a layer's parameters before its forward
  kParamGatherBwd,   ///< ZeRO-3: gather again before its backward
  kGradReduce,       ///< gradient all-reduce (DDP) or reduce-scatter (ZeRO)
  kGradNorm,         ///< the global gradient-norm all-reduce before clipping
  kParamUpdateGather,///< ZeRO-1/2: all-gather of updated parameter shards after the step
  kTensorParallel,   ///< Megatron TP all-reduces (or reduce-scatter/all-gather with sequence parallelism)
  kPipeline,         ///< activations and their gradients sent between pipeline stages
  kOffload,          ///< ZeRO-Offload: gradients to the host, the CPU optimizer, parameters back
  kFramework,        ///< the framework thread's own work: eager model code, sharding hooks, collective calls
  kCount
};

/** Memory categories of alloc/free events (what the bytes are). */
enum class MemKind : std::uint8_t { kActivations, kGatheredParams, kGradBuffer, kGatherBuffer, kLogits, kCount };

std::string_view stream_name(Stream s);
std::string_view phase_name(Phase p);
std::string_view collective_name(CollectiveOp op);
std::string_view purpose_name(Purpose p);
std::string_view mem_kind_name(MemKind k);

/** @brief What a rank holds all iteration long, in bytes: its model states and the memory set aside. */
struct ResidentMemory {
  double params = 0.0;     ///< its parameter shard (and hpZ's secondary copy)
  double grads = 0.0;      ///< its gradient shard
  double optimizer = 0.0;  ///< its optimizer-state shard
  double reserved = 0.0;   ///< workspace allowance and the runtime's reserve
  [[nodiscard]] double total() const { return params + grads + optimizer + reserved; }
};

/** @brief How a rank group sits on the network levels: ranks_within[l] = members of the group inside one
 *  domain of level l (uniform over domains). ranks_within[levels-1] == size. */
struct GroupShape {
  int size = 1;
  int levels = 0;
  std::array<int, kMaxLevels> ranks_within{};
  /** @brief Members inside one domain of level l; level -1 is a single rank. */
  [[nodiscard]] int within(int l) const { return l < 0 ? 1 : ranks_within[static_cast<std::size_t>(l)]; }
  /** @brief Highest level whose links this group uses; -1 for a single-rank group. */
  [[nodiscard]] int top_level() const;
};

struct CommGroup {
  std::string name;  ///< e.g. "dp", "tp"
  GroupShape shape;
};

struct Task {
  TaskKind kind = TaskKind::kCompute;
  Stream stream = Stream::kCompute;
  Phase phase = Phase::kNone;
  CollectiveOp op = CollectiveOp::kAllReduce;
  Purpose purpose = Purpose::kCompute;
  std::uint16_t role = 0;
  std::uint16_t group = 0;  ///< collectives: index into groups()
  std::int32_t unit = -1;   ///< model unit (0 = embedding, 1..L = blocks, L+1 = head); -1 = none
  std::int32_t micro = -1;  ///< micro-batch index; -1 = per iteration
  /// collectives: calls of the same kind issued back to back on the stream, `bytes` their sum, each costing what a
  /// call of bytes / calls costs (a framework's loop over tensors: one task stands for all of it)
  std::uint32_t calls = 1;
  double flops = 0.0;       ///< compute: FLOPs at the GEMM rate
  double bytes = 0.0;       ///< compute: memory-bound bytes; collective: payload M (see collective_cost.hpp)
  double time_s = -1.0;     ///< compute: duration from its kernels when >= 0 (else FLOPs and bytes at flat rates)
  std::uint32_t dep_begin = 0;
  std::uint32_t dep_count = 0;
};

/** @brief A device kernel that serves communication (a gather's copy out, a bucket's layout, quantisation): it
 *  runs beside the compute stream's kernels and takes SMs and memory bandwidth from them, as collectives do. */
[[nodiscard]] inline bool is_comm_kernel(const Task& t) {
  return t.kind == TaskKind::kCompute && t.purpose != Purpose::kCompute;
}

/** @brief Whether `t`, while it runs, slows kernels of its role (runs_slowed): a collective or a communication kernel. */
[[nodiscard]] inline bool interferes(const Task& t) {
  return (t.kind == TaskKind::kCollective && t.stream != Stream::kTpOverlap) || is_comm_kernel(t);
}

/** @brief Whether kernel `t` runs slowed (DeviceSpec::comm_compute_slowdown) while `collectives` collectives and
 *  `comm_kernels` communication kernels of its role run: collectives slow every kernel, communication kernels the
 *  compute stream's. Both engines apply this one rule. */
[[nodiscard]] inline bool runs_slowed(const Task& t, int collectives, int comm_kernels) {
  if (t.kind != TaskKind::kCompute) return false;
  return collectives > 0 || (!is_comm_kernel(t) && comm_kernels > 0);
}

/** @brief What compression does to one purpose's collectives, in the engine's terms. */
struct CodecCost {
  double ratio = 1.0;                  ///< payload on the wire = payload / ratio
  double compress_s_per_byte = 0.0;    ///< per uncompressed byte
  double decompress_s_per_byte = 0.0;  ///< per uncompressed byte
  [[nodiscard]] bool on() const { return ratio != 1.0 || compress_s_per_byte > 0.0 || decompress_s_per_byte > 0.0; }
};

struct MemEvent {
  TaskId task = 0;
  bool at_end = false;  ///< false: at the task's start
  MemKind kind = MemKind::kActivations;
  double bytes = 0.0;  ///< positive = allocate, negative = free
};

class TaskGraph {
 public:
  /** @brief Empties the graph but keeps its capacity (search re-lowers many plans into one graph). */
  void clear();

  /** @brief Adds a rank role ("rank", "stage0"...); returns its index. */
  std::uint16_t add_role(std::string name);
  /** @brief Adds a communication group; returns its index. */
  std::uint16_t add_group(CommGroup group);

  /** @brief Appends a compute task on the compute stream of `role`. */
  TaskId add_compute(std::uint16_t role, Phase phase, std::int32_t unit, std::int32_t micro, core::Flops flops,
                     core::Bytes memory_bytes, core::Seconds time = core::Seconds(-1.0));
  /** @brief Appends a memory-bound kernel that belongs to communication (quantise, dequantise-reduce) on
   *  `stream`; engines cost it like compute but account it under `purpose`. */
  TaskId add_kernel(std::uint16_t role, Stream stream, Purpose purpose, std::int32_t unit, std::int32_t micro,
                    core::Bytes memory_bytes);
  /** @brief Appends a host <-> device copy of `bytes` on `stream` (kHostToDevice or kDeviceToHost), in `phase`
   *  (the pass it serves: forward or backward fetches, backward gradients, the optimizer's upload). */
  TaskId add_copy(std::uint16_t role, Stream stream, Purpose purpose, Phase phase, core::Bytes bytes,
                  std::int32_t unit, std::int32_t micro);
  /** @brief Appends memory-bound host-CPU work touching `bytes` of host memory, on `stream`. */
  TaskId add_host_compute(std::uint16_t role, Stream stream, Purpose purpose, core::Bytes bytes);
  /** @brief Appends `time` of host-CPU work on host stream `stream` (by default the framework's thread), which
   *  tasks that it issues wait for. */
  TaskId add_host_work(std::uint16_t role, Purpose purpose, Phase phase, core::Seconds time, std::int32_t unit,
                       std::int32_t micro, Stream stream = Stream::kHostCpu);
  /** @brief Appends a collective of `payload` bytes over group `group` on `stream`. */
  TaskId add_collective(std::uint16_t role, Stream stream, CollectiveOp op, Purpose purpose, std::uint16_t group,
                        core::Bytes payload, std::int32_t unit, std::int32_t micro, std::uint32_t calls = 1);
  /** @brief Makes the most recently added task `t` wait for `on`. Precondition: t is the last task, on < t. */
  void add_dep(TaskId t, TaskId on);
  /** @brief Records a memory event at the start or end of task `t`. */
  void add_mem(TaskId t, bool at_end, MemKind kind, core::Bytes delta);

  [[nodiscard]] const std::vector<Task>& tasks() const { return tasks_; }
  [[nodiscard]] std::span<const TaskId> deps(TaskId t) const;
  [[nodiscard]] const std::vector<CommGroup>& groups() const { return groups_; }
  [[nodiscard]] const std::vector<std::string>& roles() const { return roles_; }
  [[nodiscard]] const std::vector<MemEvent>& mem_events() const { return mem_; }
  [[nodiscard]] std::size_t size() const { return tasks_.size(); }

  /** @brief The last task before `t` on `t`'s role and stream, if any (a backward scan: meant for the few tasks a
   *  lowering has just added). */
  [[nodiscard]] std::optional<TaskId> previous_on_stream(TaskId t) const;

  /// Where a micro-batch's backward epilogue begins on a role: the first task of the reduction the framework issues
  /// after the pass (DeepSpeed ZeRO's independent_gradient_partition_epilogue: the last bucket's), which the
  /// backward waits for.
  struct Epilogue {
    std::uint16_t role = 0;
    std::int32_t micro = -1;
    TaskId first = 0;
  };
  /** @brief Marks task `first` as the first of micro-batch `micro`'s backward epilogue on `role`. */
  void mark_epilogue(std::uint16_t role, std::int32_t micro, TaskId first) { epilogues_.push_back({role, micro, first}); }
  [[nodiscard]] const std::vector<Epilogue>& epilogues() const { return epilogues_; }

  /** @brief A readable label, e.g. "fwd L12 mb0" or "all-gather(dp) L3 param-gather-fwd". */
  [[nodiscard]] std::string label(TaskId t) const;

  core::Dtype compute_dtype = core::Dtype::kBf16;  ///< dtype the GEMMs run in (picks the device peak)
  /// CUDA_LAUNCH_BLOCKING=1: every launch returns only when its work is done, so a role's framework thread (host
  /// work on kHostCpu) waits for all the device work that role launched before it (each device stream's last
  /// task); set it before adding tasks
  bool launch_blocking = false;
  std::array<CodecCost, static_cast<std::size_t>(Purpose::kCount)> codecs{};  ///< compression per purpose
  /** @brief Memory resident all iteration on a rank of `role` (model states, reserves), by what it holds. */
  void set_baseline(std::uint16_t role, const ResidentMemory& resident);
  /** @brief The resident bytes of `role` in all. */
  [[nodiscard]] double baseline(std::uint16_t role) const;
  [[nodiscard]] ResidentMemory resident(std::uint16_t role) const;

 private:
  std::vector<Task> tasks_;
  std::vector<TaskId> deps_;
  std::vector<CommGroup> groups_;
  std::vector<std::string> roles_;
  std::vector<MemEvent> mem_;
  std::vector<ResidentMemory> baseline_;  ///< per role
  std::vector<Epilogue> epilogues_;
  /// per role and stream, the last device task added (for launch_blocking)
  std::vector<std::array<TaskId, static_cast<std::size_t>(Stream::kCount)>> last_launched_;
  static constexpr TaskId kNone = static_cast<TaskId>(-1);

  TaskId append_compute(std::uint16_t role, Stream stream, Phase phase, std::int32_t unit, std::int32_t micro,
                        core::Flops flops, core::Bytes memory_bytes, core::Seconds time);
  /// records `t` as its role's last launch on its stream when that is a device stream
  void note_launch(TaskId t);
};

}  // namespace shardsim::graph
