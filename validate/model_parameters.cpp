#include "validate/model_parameters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <type_traits>

#include "sim/core/errors.hpp"
#include "sim/engine/collective_library.hpp"

namespace shardsim::validate {
namespace {

using scenario::Scenario;

constexpr std::string_view kLevel = "<level>";

// `Cluster` is ClusterSpec or const ClusterSpec: one lookup for the getters and the setters.
template <class Cluster>
auto& level_named(Cluster& c, const std::string& name) {
  const auto it = std::find_if(c.levels.begin(), c.levels.end(), [&](const auto& l) { return l.name == name; });
  SHARDSIM_ASSERT(it != c.levels.end(), "a network parameter of a level the cluster does not have: " + name);
  return *it;
}

// A DeviceSpec cites one source for all its figures; its efficiencies count as measured only where it says so
// (the presets mark them [guess] in their comments otherwise).
std::string efficiency_source(const Scenario& s, const std::string&) { return s.cluster.device.efficiency_source; }
std::string triton_attention_source(const Scenario& s, const std::string&) {
  return s.cluster.device.triton_attention_source;
}
std::string cudnn_attention_source(const Scenario& s, const std::string&) {
  return s.cluster.device.attention_source(core::AttentionKernel::kCudnn);
}

std::string latency_source(const Scenario& s, const std::string& level) {
  const std::string& src = level_named(s.cluster, level).source;
  return src.find("latency [guess]") != std::string::npos ? "[guess]" : src;
}

// One row per kind of parameter; a "<level>" row stands for one parameter per network level, `level` naming it
// (empty for the other rows). A relative range is a multiple of the value in the spec; where that value is
// zero the machine lacks the part (a cluster without a host link) and has no such parameter.
struct Kind {
  std::string_view pattern;
  std::string_view unit;
  bool affects_time;
  bool relative;
  double lower, upper;
  std::string (*source)(const Scenario& s, const std::string& level);
  double (*get)(const Scenario& s, const std::string& level);
  void (*set)(Scenario& s, const std::string& level, double v);
};

std::string library_source(const Scenario& s, const std::string&) { return s.cluster.library.source; }
// A library's measured step per protocol P: read as the library prices it (`Step`: its table where unmeasured), set
// into `Field` (net_step_s: a ring's network step; tree_step_s: a tree's network hop).
template <double (*Step)(const core::CollectiveLibrarySpec&, engine::Protocol), int P>
double library_step(const Scenario& s, const std::string&) {
  return Step(s.cluster.library, static_cast<engine::Protocol>(P));
}
template <auto Field, int P>
void set_library_step(Scenario& s, const std::string&, double v) {
  (s.cluster.library.*Field)[P] = v;
}
template <int P>
constexpr auto net_step = library_step<&engine::network_step_s, P>;
template <int P>
constexpr auto set_net_step = set_library_step<&core::CollectiveLibrarySpec::net_step_s, P>;
template <int P>
constexpr auto tree_step = library_step<&engine::tree_step_s, P>;
template <int P>
constexpr auto set_tree_step = set_library_step<&core::CollectiveLibrarySpec::tree_step_s, P>;
std::string megatron_source(const Scenario&, const std::string&) {
  return "fitted on vtrain-single (Megatron-DeepSpeed on DGX A100 hosts)";
}
std::string host_source(const Scenario& s, const std::string&) { return s.cluster.host.hook_source; }
std::string rank_slice_source(const Scenario&, const std::string&) {
  return "measured on an H100 host with PyTorch 2.11 on CUDA tensors (validate/results/); other hosts [guess]";
}
std::string module_hook_source(const Scenario&, const std::string&) {
  return "fitted on h100-deepspeed-fit (DeepSpeed 0.14 ZeRO-3 on one H100); other hosts [guess]";
}
std::string zero_step_source(const Scenario&, const std::string&) {
  return "fitted on h100-deepspeed-fit (DeepSpeed 0.14 ZeRO-1/2/3 steps on one H100); other hosts [guess]";
}
std::string host_memory_source(const Scenario&, const std::string&) {
  return "fitted on offload-single (CPU Adam on a Polaris EPYC host); other hosts [guess]";
}
std::string pageable_source(const Scenario&, const std::string&) {
  return "measured on an H100 host (validate/results/); Polaris d2h fitted (offload-single); other hosts [guess]";
}
std::string staging_source(const Scenario&, const std::string&) {
  return "fitted to an H100 host's copies by 1-4 processes at once (validate/results/); other hosts [guess]";
}
std::string page_fault_source(const Scenario&, const std::string&) {
  return "fitted on h100-deepspeed-fit (DeepSpeed 0.14 ZeRO-3 Offload on an H100 host); other hosts [guess]";
}
using core::HostSpec;
// The host's times and rates (cluster.host, typed units), one accessor pair per field.
template <auto Field>
double host_value(const Scenario& s, const std::string&) {
  return (s.cluster.host.*Field).value();
}
template <auto Field>
void set_host_value(Scenario& s, const std::string&, double v) {
  using Unit = std::remove_reference_t<decltype(s.cluster.host.*Field)>;
  s.cluster.host.*Field = Unit(v);
}
constexpr double kMinScale = core::CollectiveLibrarySpec::kMinLatencyScale;
constexpr double kMaxScale = core::CollectiveLibrarySpec::kMaxLatencyScale;

const std::array<Kind, 44>& kinds() {
  static const std::array<Kind, 44> kKinds = {{
      {"device.gemm_efficiency", "", true, false, 0.2, 0.95, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.gemm_efficiency; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.gemm_efficiency = v; }},
      // An H100's GEMMs with a dimension of a multiple of 2 or 4 bf16 elements only, or an odd one, reach a quarter
      // and a seventh of its peak (validate/results/).
      {"device.gemm_efficiency_narrow", "", true, false, 0.02, 0.95, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.gemm_efficiency_narrow_in_use(); },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.gemm_efficiency_narrow = v; }},
      {"device.gemm_efficiency_odd", "", true, false, 0.02, 0.95, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.gemm_efficiency_odd_in_use(); },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.gemm_efficiency_odd = v; }},
      {"device.memory_efficiency", "", true, false, 0.3, 1.0, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.memory_efficiency; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.memory_efficiency = v; }},
      // A device-to-device copy streams at 0.85-0.9 of HBM on Hopper (validate/results/).
      {"device.stream_efficiency", "", true, false, 0.3, 1.0, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.stream_efficiency_in_use(); },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.stream_efficiency = v; }},
      // FlashAttention reaches a third of a Hopper GPU's dense peak forward (validate/results/), less backward.
      {"device.attention_efficiency", "", true, false, 0.05, 0.95, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.attention_rates(core::AttentionKernel::kFlash2).forward; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.attention_efficiency = v; }},
      {"device.attention_backward_efficiency", "", true, false, 0.05, 0.95, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.attention_rates(core::AttentionKernel::kFlash2).backward; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.attention_backward_efficiency = v; }},
      // The Triton port of FlashAttention (flat model), where a run's plan says attention_kernel: triton.
      {"device.triton_attention_efficiency", "", true, false, 0.05, 0.95, triton_attention_source,
       [](const Scenario& s, const std::string&) {
         return s.cluster.device.attention_rates(core::AttentionKernel::kTriton).forward;
       },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.triton_attention_efficiency = v; }},
      {"device.triton_attention_backward_efficiency", "", true, false, 0.05, 0.95, triton_attention_source,
       [](const Scenario& s, const std::string&) {
         return s.cluster.device.attention_rates(core::AttentionKernel::kTriton).backward;
       },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.triton_attention_backward_efficiency = v; }},
      // cuDNN's attention over FlashAttention-2's schedule (a factor; 1 where the device has none), where a run's plan
      // says attention_kernel: cudnn: 1.6x both ways on an H100 as published (arXiv 2407.08608).
      {"device.cudnn_attention_speedup", "x", true, false, 0.5, 4.0, cudnn_attention_source,
       [](const Scenario& s, const std::string&) {
         const double v = s.cluster.device.cudnn_attention_speedup;
         return v > 0.0 ? v : 1.0;
       },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.cudnn_attention_speedup = v; }},
      {"device.cudnn_attention_backward_speedup", "x", true, false, 0.5, 4.0, cudnn_attention_source,
       [](const Scenario& s, const std::string&) {
         const double v = s.cluster.device.cudnn_attention_backward_speedup;
         return v > 0.0 ? v : 1.0;
       },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.cudnn_attention_backward_speedup = v; }},
      // A FlashAttention block's fixed cost in 128 x 128 tiles, on a device timed by the schedule (attention_slots):
      // an H100's forward fits 2.1, its backward 6.8 (validate/results/); 0 to 32.
      {"device.attention_block_cost", "tiles", true, false, 0.0, 32.0, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.attention_block_cost; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.attention_block_cost = v; }},
      {"device.attention_backward_block_cost", "tiles", true, false, 0.0, 32.0, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.attention_backward_block_cost; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.attention_backward_block_cost = v; }},
      // 1: collectives' kernels take nothing from compute; an H100 measured 1.14-1.82 (validate/results/).
      {"device.comm_compute_slowdown", "x", true, false, 1.0, 3.0, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.comm_compute_slowdown; },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.comm_compute_slowdown = v; }},
      // From a bare CUDA launch (~2-5 us) to an eager framework dispatching many small ops per modelled kernel.
      {"device.kernel_overhead", "s", true, false, 0.0, 200e-6, efficiency_source,
       [](const Scenario& s, const std::string&) { return s.cluster.device.kernel_overhead.value(); },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.kernel_overhead = core::Seconds(v); }},
      // From a lean C++ runtime to Python hooks that slice, copy and synchronise per parameter (FSDP2 on an H100
      // host: 0.63 ms per unit and 0.09 ms per tensor, validate/results/).
      {"host.fetch_hook", "s", true, false, 0.0, 10e-3, host_source, host_value<&HostSpec::fetch_hook>,
       set_host_value<&HostSpec::fetch_hook>},
      {"host.tensor_hook", "s", true, false, 0.0, 2e-3, host_source, host_value<&HostSpec::tensor_hook>,
       set_host_value<&HostSpec::tensor_hook>},
      // DeepSpeed ZeRO-3's Python hooks and fetch coordinator per submodule.
      {"host.module_hook", "s", true, false, 0.0, 5e-3, module_hook_source, host_value<&HostSpec::module_hook>,
       set_host_value<&HostSpec::module_hook>},
      // DeepSpeed ZeRO's step() on the host: from a lean loop to Python checks that synchronise per group.
      {"host.zero_step", "s", true, false, 0.0, 50e-3, zero_step_source, host_value<&HostSpec::zero_step>,
       set_host_value<&HostSpec::zero_step>},
      // From fused model code on a fast host to eager Python modules (Hugging Face LLaMA on an H100 host: 1.34 and
      // 2.18 ms per block, validate/results/).
      {"host.block_forward", "s", true, false, 0.0, 10e-3, host_source, host_value<&HostSpec::block_forward>,
       set_host_value<&HostSpec::block_forward>},
      {"host.block_backward", "s", true, false, 0.0, 20e-3, host_source, host_value<&HostSpec::block_backward>,
       set_host_value<&HostSpec::block_backward>},
      {"host.megatron_block_forward", "s", true, false, 0.0, 10e-3, host_source,
       host_value<&HostSpec::megatron_block_forward>, set_host_value<&HostSpec::megatron_block_forward>},
      {"host.megatron_block_backward", "s", true, false, 0.0, 20e-3, megatron_source,
       host_value<&HostSpec::megatron_block_backward>, set_host_value<&HostSpec::megatron_block_backward>},
      // From a C++ layout to Python slicing per rank (4.2-16 us per rank and tensor on CUDA tensors, validate/results/).
      {"host.rank_slice", "s", true, false, 0.0, 20e-6, rank_slice_source, host_value<&HostSpec::rank_slice>,
       set_host_value<&HostSpec::rank_slice>},
      {"host.gather_split", "s", true, false, 0.0, 30e-6, rank_slice_source, host_value<&HostSpec::gather_split>,
       set_host_value<&HostSpec::gather_split>},
      // From a naive loop to STREAM (~60-80% of the DDR peak); DeepSpeedCPUAdam streams 7 arrays.
      {"host.memory_efficiency", "x", true, false, 0.05, 1.0,
       host_memory_source, [](const Scenario& s, const std::string&) { return s.cluster.host.memory_efficiency; },
       [](Scenario& s, const std::string&, double v) { s.cluster.host.memory_efficiency = v; }},
      // Pageable copies' staging on the host: from a slow memcpy to a fast host's (15.8 / 9.9 GB/s on the H100
      // host, validate/results/).
      {"host.pageable_d2h", "B/s", true, false, 1e9, 50e9, pageable_source, host_value<&HostSpec::pageable_d2h>,
       set_host_value<&HostSpec::pageable_d2h>},
      {"host.pageable_h2d", "B/s", true, false, 1e9, 50e9, pageable_source, host_value<&HostSpec::pageable_h2d>,
       set_host_value<&HostSpec::pageable_h2d>},
      {"host.page_fault", "s", true, false, 0.0, 20e-6, page_fault_source, host_value<&HostSpec::page_fault>,
       set_host_value<&HostSpec::page_fault>},
      // From one process's staging at a time to every process at its own rate (a node of 8 devices).
      {"host.staging_processes", "processes", true, false, 1.0, 8.0, staging_source,
       [](const Scenario& s, const std::string&) { return s.cluster.host.staging_processes; },
       [](Scenario& s, const std::string&, double v) { s.cluster.host.staging_processes = v; }},
      // Pinned copies reach well below the link's rate on some hosts (PCIe protocol overhead, IOMMU).
      {"host.link_bandwidth", "B/s", true, true, 0.2, 1.0,
       [](const Scenario& s, const std::string&) { return s.cluster.source; },
       host_value<&HostSpec::link_bandwidth>, set_host_value<&HostSpec::link_bandwidth>},
      // Collectives reach a fraction of the datasheet's link rate; at scale (congestion, adaptive routing) as
      // little as a tenth.
      {"network.<level>.bandwidth", "B/s", true, true, 0.1, 1.0,
       [](const Scenario& s, const std::string& l) { return level_named(s.cluster, l).source; },
       [](const Scenario& s, const std::string& l) { return level_named(s.cluster, l).link_bandwidth.value(); },
       [](Scenario& s, const std::string& l, double v) { level_named(s.cluster, l).link_bandwidth = core::BytesPerSec(v); }},
      // From an NVLink hop to a software-heavy path across a large fabric.
      {"network.<level>.latency", "s", true, false, 0.5e-6, 100e-6, latency_source,
       [](const Scenario& s, const std::string& l) { return level_named(s.cluster, l).latency.value(); },
       [](Scenario& s, const std::string& l, double v) { level_named(s.cluster, l).latency = core::Seconds(v); }},
      // The collective library's measured latencies over its own tuning table: launches, proxy threads and
      // synchronisation that the table leaves out (A100 NVSwitch nodes: ~2x, validate/data/vtrain/allreduce).
      {"collectives.latency_scale", "x", true, false, kMinScale, kMaxScale, library_source,
       [](const Scenario& s, const std::string&) { return s.cluster.library.latency_scale; },
       [](Scenario& s, const std::string&, double v) { s.cluster.library.latency_scale = v; }},
      {"collectives.net_latency_scale", "x", true, false, kMinScale, kMaxScale, library_source,
       [](const Scenario& s, const std::string&) { return s.cluster.library.net_latency_scale; },
       [](Scenario& s, const std::string&, double v) { s.cluster.library.net_latency_scale = v; }},
      // One network step per protocol as the machine's transport takes it (NCCL's table: 2.7 / 4 / 14 us for a
      // ring; through libfabric's OFI plugin on Slingshot, tens of microseconds): from an RDMA write to a proxy
      // that waits on a congested fabric.
      {"collectives.net_step.LL", "s", true, false, 0.5e-6, 500e-6, library_source, net_step<0>, set_net_step<0>},
      {"collectives.net_step.LL128", "s", true, false, 0.5e-6, 500e-6, library_source, net_step<1>, set_net_step<1>},
      {"collectives.net_step.Simple", "s", true, false, 0.5e-6, 500e-6, library_source, net_step<2>, set_net_step<2>},
      // One network hop of a tree (an all-reduce's up and down), which the same transport may carry faster than a
      // ring's step.
      {"collectives.tree_step.LL", "s", true, false, 0.5e-6, 500e-6, library_source, tree_step<0>, set_tree_step<0>},
      {"collectives.tree_step.LL128", "s", true, false, 0.5e-6, 500e-6, library_source, tree_step<1>,
       set_tree_step<1>},
      {"collectives.tree_step.Simple", "s", true, false, 0.5e-6, 500e-6, library_source, tree_step<2>,
       set_tree_step<2>},
      // What an all-reduce tree gets of its bandwidth past one group of the fabric: from a congested upper tier to
      // none lost (1).
      {"collectives.tree_cross_group_share", "x", true, false, 0.2, 1.0, library_source,
       [](const Scenario& s, const std::string&) { return s.cluster.library.tree_cross_group_share; },
       [](Scenario& s, const std::string&, double v) { s.cluster.library.tree_cross_group_share = v; }},
      {"device.runtime_reserved", "B", false, false, 0.0, 4.0 * core::kGiB,
       [](const Scenario&, const std::string&) { return std::string("[guess] runtime context and communicator buffers"); },
       [](const Scenario& s, const std::string&) { return s.cluster.device.runtime_reserved.value(); },
       [](Scenario& s, const std::string&, double v) { s.cluster.device.runtime_reserved = core::Bytes(v); }},
      {"plan.workspace", "B", false, false, 0.0, 4.0 * core::kGiB,
       [](const Scenario&, const std::string&) {
         return std::string("[guess] GEMM workspaces, allocator fragmentation, temporaries");
       },
       [](const Scenario& s, const std::string&) { return s.plan.workspace.value(); },
       [](Scenario& s, const std::string&, double v) { s.plan.workspace = core::Bytes(v); }},
  }};
  return kKinds;
}

std::optional<ModelParameter> make(const Kind& k, const Scenario& s, const std::string& level) {
  const double current = k.get(s, level);
  if (k.relative && current <= 0.0) return std::nullopt;
  ModelParameter p;
  p.name = std::string(k.pattern);
  if (const auto at = p.name.find(kLevel); at != std::string::npos) p.name.replace(at, kLevel.size(), level);
  p.unit = std::string(k.unit);
  p.source = k.source(s, level);
  p.affects_time = k.affects_time;
  const double scale = k.relative ? current : 1.0;
  // A spec may already hold a value outside the usual range (a user's measured efficiency): a fit starts there.
  p.lower = std::min(k.lower * scale, current);
  p.upper = std::max(k.upper * scale, current);
  p.get = [get = k.get, level](const Scenario& sc) { return get(sc, level); };
  p.set = [set = k.set, level](Scenario& sc, double v) { set(sc, level, v); };
  return p;
}

bool per_level(const Kind& k) { return k.pattern.find(kLevel) != std::string_view::npos; }

// The library's scales exist where a tuned library prices the collectives (not under alpha-beta).
bool applies(const Kind& k, const Scenario& s) {
  return !k.pattern.starts_with("collectives.") ||
         s.cluster.library.family != core::CollectiveLibrarySpec::Family::kAlphaBeta;
}

}  // namespace

std::vector<ModelParameter> model_parameters(const Scenario& s) {
  std::vector<ModelParameter> out;
  for (const Kind& k : kinds()) {
    if (!applies(k, s)) continue;
    if (per_level(k)) {
      for (const auto& l : s.cluster.levels) {
        if (auto p = make(k, s, l.name)) out.push_back(std::move(*p));
      }
    } else if (auto p = make(k, s, "")) {
      out.push_back(std::move(*p));
    }
  }
  return out;
}

std::optional<ModelParameter> find_model_parameter(const Scenario& s, const std::string& name) {
  for (auto& p : model_parameters(s)) {
    if (p.name == name) return std::move(p);
  }
  return std::nullopt;
}

std::vector<std::string> model_parameter_patterns() {
  std::vector<std::string> out;
  for (const Kind& k : kinds()) out.emplace_back(k.pattern);
  return out;
}

std::optional<std::string> model_parameter_unit(const std::string& name) {
  const std::string_view n = name;
  for (const Kind& k : kinds()) {
    if (!per_level(k)) {
      if (n == k.pattern) return std::string(k.unit);
      continue;
    }
    const std::size_t at = k.pattern.find(kLevel);
    const std::string_view head = k.pattern.substr(0, at), tail = k.pattern.substr(at + kLevel.size());
    if (n.size() > head.size() + tail.size() && n.starts_with(head) && n.ends_with(tail)) return std::string(k.unit);
  }
  return std::nullopt;
}

std::string format_parameter_value(double value, const std::string& unit, int digits) {
  // Files keep ten significant digits (a fitted value is known to far fewer, and the file stays readable);
  // tables show fewer.
  if (unit == "B/s") return fmt::format("{:.{}g}GB/s", value / 1e9, digits);
  if (unit == "s") return fmt::format("{:.{}g}us", value * 1e6, digits);
  if (unit == "B") return fmt::format("{:.{}g}GiB", value / core::kGiB, digits);
  SHARDSIM_ASSERT(unit.empty() || unit == "x" || unit == "tiles" || unit == "processes", "a model parameter in an unknown unit: " + unit);
  return fmt::format("{:.{}g}", value, digits);
}

}  // namespace shardsim::validate
