#include "sim/report/report.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sim/core/dtype.hpp"
#include "sim/engine/collective_library.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/memory_model.hpp"

namespace shardsim::report {
namespace {
// Exposed host work, as a share of the iteration, from which a role counts as host-bound in the report [guess: a
// reporting threshold, not a model parameter].
constexpr double kHostBoundShare = 0.15;

using engine::kPhases;
using engine::kPurposes;

// What one network step of a ring (of a tree) costs per protocol, measured or the library's table (null under
// alpha-beta).
nlohmann::json net_steps(const core::CollectiveLibrarySpec& l,
                         double (*step)(const core::CollectiveLibrarySpec&, engine::Protocol)) {
  if (l.family == core::CollectiveLibrarySpec::Family::kAlphaBeta) return nullptr;
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t p = 0; p < 3; ++p) j[std::string(core::protocol_name(p))] = step(l, static_cast<engine::Protocol>(p));
  return j;
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / core::kGiB); }
std::string sec(double s) { return core::format_seconds(core::Seconds(s)); }
std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:5.1f}%", 100.0 * part / whole) : "    -"; }

std::string compression_line(const core::CompressionPlan& c) {
  std::string out;
  auto one = [&](const char* what, const core::CompressionSpec& k) {
    if (!k.on()) return;
    out += fmt::format("{}{} {}{} ({:.2f}x)", out.empty() ? "" : ", ", what, core::codec_name(k.codec),
                       k.codec == core::Codec::kZfp ? fmt::format(" rate {}", k.zfp_rate) : "", k.ratio);
  };
  one("gradients", c.gradients);
  one("parameters", c.parameters);
  one("tensor", c.tensor);
  one("pipeline", c.pipeline);
  return out;
}

// What DeepSpeed ZeRO-3's fetch coordinator does in one micro-batch, where the plan gathers parameters.
std::optional<strategies::FetchTotals> deepspeed_fetches(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  if (ev.costs.fetch.units.empty() || s.plan.shards().params <= 1 || s.plan.pp > 1) return std::nullopt;
  return strategies::totals(ev.costs.fetch);
}

// Whether the plan's gathers and gradient reductions queue on one process group's NCCL stream.
bool one_group_stream(const scenario::Evaluation& ev) {
  const auto& tasks = ev.graph.tasks();
  return std::any_of(tasks.begin(), tasks.end(), [](const graph::Task& t) { return t.stream == graph::Stream::kGroupNccl; });
}

std::string plan_line(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  const auto& p = s.plan;
  const std::string offload =
      p.offload.optimizer ? fmt::format(", optimizer offloaded to the CPU ({:.0f}%)", 100.0 * p.offload.ratio) : "";
  return fmt::format("{}{} ({}), dp {} x tp {} x pp {}, micro-batch {}, global batch {} ({} micro-batch{}), recompute {}, "
                     "overlap {}, flash-attention {}, collectives {}",
                     ev.strategy, offload, core::framework_name(p.framework), p.dp, p.tp, p.pp, p.micro_batch, p.global_batch, ev.grad_accumulation,
                     ev.grad_accumulation == 1 ? "" : "es",
                     p.recompute_label(),
                     p.overlaps_comm() ? "on" : "off", p.flash_attention ? fmt::format("on{}", core::attention_kernel_label(p.attention_kernel)) : "off",
                     core::algorithm_name(p.algorithm)) +
         (compression_line(p.compression).empty() ? "" : ", compressed: " + compression_line(p.compression)) +
         (p.float8.linear ? fmt::format(", float8 linears ({}{})", core::float8_recipe_name(p.float8.recipe),
                                        p.float8.all_gather ? ", fp8 gathers" : "")
                          : "") +
         fmt::format(", model code {}, loss {}", core::model_code_name(p.code_in_use()),
                     core::cross_entropy_name(p.loss_kernel())) +
         (p.reduce_scatter ? "" : ", reduce_scatter off (gradient buckets all-reduced)") +
         (p.overlap_sync_param ? ", parameter sync overlapped with the next forward" : "") +
         (p.overlap_sync_grad ? "" : ", gradients reduced after the backward (overlap_sync_grad off)") +
         (p.param_sync == core::ParamSync::kBroadcast ? ", parameters synced by a broadcast per owner (InternEvo)" : "") +
         (p.pp > 1 && p.framework == core::Framework::kMegatron && !p.p2p_sync ? ", pipeline exchanges asynchronous" : "") +
         (p.tp_comm_overlap ? ", TP exchanges overlapped with the GEMMs (userbuffers)" : "") +
         (p.grad_comm_dtype ? fmt::format(", gradients reduced in {}", core::dtype_name(*p.grad_comm_dtype)) : "");
}

// The host link and the optimizer step of an offloaded run, for rank role `role`: bytes and busy time per direction,
// how much of it compute hides, and where the time after the last backward goes (CPU optimizer, upload). Empty
// where the role copies nothing or the run kept no timings.
std::string host_link_section(const scenario::Scenario& sc, const scenario::Evaluation& ev, std::uint16_t role) {
  const auto& g = ev.graph;
  if (ev.run.timings.size() != g.size()) return {};
  const auto& tasks = g.tasks();
  std::vector<std::pair<double, double>> compute;
  double last_backward = 0.0;
  for (graph::TaskId i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    if (t.role != role || t.kind != graph::TaskKind::kCompute || t.purpose != graph::Purpose::kCompute) continue;
    compute.emplace_back(ev.run.timings[i].start_s, ev.run.timings[i].end_s);
    if (t.phase == graph::Phase::kBackward || t.phase == graph::Phase::kRecompute) {
      last_backward = std::max(last_backward, ev.run.timings[i].end_s);
    }
  }
  std::sort(compute.begin(), compute.end());
  // Time of [a, b) during which the role computes (compute intervals are in one in-order stream: disjoint).
  auto covered = [&](double a, double b) {
    double c = 0.0;
    for (const auto& [s, e] : compute) {
      if (s >= b) break;
      c += std::max(0.0, std::min(b, e) - std::max(a, s));
    }
    return c;
  };
  struct Dir {
    double bytes = 0.0, busy = 0.0, hidden = 0.0;
    std::array<double, kPhases> by_phase{};
  };
  Dir d2h, h2d;
  // The host's work (CPU Adam, gradient staging and conversion) and the uploads, in all and after the last backward.
  double cpu = 0.0, cpu_after = 0.0, upload_after = 0.0;
  auto after = [&](double a, double b) { return std::max(0.0, b - std::max(a, last_backward)); };
  for (graph::TaskId i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    if (t.role != role) continue;
    const auto& tm = ev.run.timings[i];
    if (t.kind == graph::TaskKind::kHostCompute && t.purpose == graph::Purpose::kOffload) {
      cpu += tm.end_s - tm.start_s;
      cpu_after += after(tm.start_s, tm.end_s);
    }
    if (t.kind != graph::TaskKind::kCopy) continue;
    Dir& d = t.stream == graph::Stream::kHostToDevice ? h2d : d2h;
    d.bytes += t.bytes;
    d.busy += tm.end_s - tm.start_s;
    d.hidden += covered(tm.start_s, tm.end_s);
    d.by_phase[static_cast<std::size_t>(t.phase)] += t.bytes;
    if (t.stream == graph::Stream::kHostToDevice) upload_after += after(tm.start_s, tm.end_s);
  }
  if (d2h.bytes <= 0.0 && h2d.bytes <= 0.0 && cpu <= 0.0) return {};
  std::string o = "  host link and optimizer step (offload)\n";
  for (const auto& [name, d] : {std::pair<const char*, const Dir&>{"device -> host", d2h}, {"host -> device", h2d}}) {
    if (d.bytes <= 0.0) continue;
    std::string phases;
    for (std::size_t p = 0; p < kPhases; ++p) {
      if (d.by_phase[p] <= 0.0) continue;
      phases += fmt::format("{}{} {:.0f}%", phases.empty() ? "" : ", ", graph::phase_name(static_cast<graph::Phase>(p)),
                            100.0 * d.by_phase[p] / d.bytes);
    }
    o += fmt::format("    {:<24}{:>12}  in {} busy, {:.0f}% hidden behind compute ({})\n", name,
                     fmt::format("{:.3f} GB", d.bytes / 1e9), core::format_seconds(core::Seconds(d.busy)),
                     d.busy > 0.0 ? 100.0 * d.hidden / d.busy : 0.0, phases);
  }
  if (cpu > 0.0) {
    o += fmt::format("    {:<24}{:>12}  CPU optimizer and gradient staging on the host, {} of it after the last "
                     "backward\n",
                     "host CPU", core::format_seconds(core::Seconds(cpu)), core::format_seconds(core::Seconds(cpu_after)));
  }
  const auto& off = sc.plan.offload;
  if (off.optimizer_nvme || off.params_nvme) {
    const strategies::NvmeRates rates = strategies::nvme_share(sc.cluster);
    o += fmt::format("    {:<24}{:>12}  read {:.2f} GB/s, write {:.2f} GB/s per device (the node's drives shared by {}): "
                     "{}{}{} (part of the host's time)\n",
                     "NVMe (swap files)", "", rates.read / 1e9, rates.write / 1e9, sc.cluster.devices_per_node,
                     off.optimizer_nvme ? "the fp32 gradients written at the boundary, the optimizer's sub-groups read "
                                          "before CPU Adam and written after"
                                        : "",
                     off.optimizer_nvme && off.params_nvme ? "; " : "",
                     off.params_nvme ? "each fetch's parameter partition read first, the updated one written" : "");
  }
  const double step = ev.run.iteration_time.value() - last_backward;
  if (step > 0.0) {
    o += fmt::format("    {:<24}{:>12}  after the last backward: host CPU {}, uploads {}, the rest (reductions, "
                     "waits) {}\n",
                     "step", core::format_seconds(core::Seconds(step)), core::format_seconds(core::Seconds(cpu_after)),
                     core::format_seconds(core::Seconds(upload_after)),
                     core::format_seconds(core::Seconds(std::max(0.0, step - cpu_after - upload_after))));
  }
  return o;
}

}  // namespace

std::string render_table(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  const auto& m = s.model;
  const auto& c = s.cluster;
  std::string o;
  o += fmt::format("scenario  {}{}\n", s.name, s.variant.empty() ? "" : fmt::format("  [{}]", s.variant));
  if (!s.description.empty()) o += fmt::format("          {}\n", s.description);
  o += fmt::format("model     {}: {:.2f} B parameters, {} layers, hidden {}, {} heads ({} kv), ffn {}, vocab {}, "
                   "seq {}, {}\n",
                   m.name, m.total_params() / 1e9, m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab,
                   m.seq_len, core::dtype_name(m.param_dtype));
  if (!m.note.empty()) o += fmt::format("          note: {}\n", m.note);
  o += fmt::format("cluster   {}: {} nodes x {} {} = {} devices; {:.1f} TFLOP/s {} peak, {} HBM\n", c.name, c.nodes,
                   c.devices_per_node, c.device.name, c.total_devices(),
                   c.device.peak_for(m.param_dtype)->value() / 1e12, core::dtype_name(m.param_dtype),
                   gib(c.device.hbm.value()));
  // The network levels with their sources, guesses marked as the presets mark them.
  for (std::size_t l = 0; l < c.levels.size(); ++l) {
    const auto& lv = c.levels[l];
    o += fmt::format("{}{}: {} ranks, {:.4g} GB/s per link{}, {:.3g} us{} ({})\n", l == 0 ? "network   " : "          ",
                     lv.name, l + 1 == c.levels.size() ? std::string("all") : std::to_string(lv.domain_ranks),
                     lv.link_bandwidth.value() / 1e9,
                     lv.shared_by > 1 ? fmt::format(" shared by {}", lv.shared_by) : std::string(),
                     lv.latency.value() * 1e6,
                     lv.group_nodes > 0 ? fmt::format(", groups of {} nodes", lv.group_nodes) : std::string(),
                     lv.source.empty() ? std::string("[guess]") : lv.source);
  }
  const auto& d = c.device;
  // The attention rates of the kernels this plan runs: FlashAttention-2's, or the Triton port's or cuDNN's where the
  // plan says.
  const core::AttentionKernel kernel = s.plan.attention_kernel;
  const core::AttentionRates att = d.attention_rates(kernel);
  const std::string attention_schedule =
      att.slots > 0 ? fmt::format(" ({} blocks per unit, {:.1f}/{:.1f} tiles each)", att.slots, att.block_cost,
                                  att.backward_block_cost)
                    : std::string();
  // Where the rates come from where that is not the device's efficiency source, which closes the line.
  const std::string& att_source = d.attention_source(kernel);
  const std::string attention_guess =
      att.guessed ? fmt::format(" [guess: {}{}]", att.borrowed,
                                &att_source != &d.efficiency_source ? fmt::format(", {}", att_source) : std::string())
      : &att_source != &d.efficiency_source ? fmt::format(" ({})", att_source)
                                            : std::string();
  const std::string misaligned =
      d.gemm_efficiency_narrow > 0.0 || d.gemm_efficiency_odd > 0.0
          ? fmt::format(" ({:.2f} / {:.2f} with a dimension of 4-8 / 2 bytes)", d.gemm_efficiency_narrow_in_use(),
                        d.gemm_efficiency_odd_in_use())
          : std::string();
  o += fmt::format("device    GEMM ceiling {:.2f}{}, flash attention{} {:.2f}/{:.2f}{}{}, memory-bound {:.2f} (eager streams {:.2f}) of {:.0f} GB/s, {} compute "
                   "units, {:.1f} us per kernel, compute {} beside communication ({})\n",
                   d.gemm_efficiency, misaligned, core::attention_kernel_label(kernel),
                   att.forward, att.backward, attention_schedule, attention_guess, d.memory_efficiency,
                   d.stream_efficiency_in_use(), d.hbm_bandwidth.value() / 1e9, d.compute_units,
                   d.kernel_overhead.value() * 1e6,
                   d.comm_compute_slowdown == 1.0 ? std::string("unslowed [guess]")
                                                  : fmt::format("{:.2f}x slower", d.comm_compute_slowdown),
                   d.efficiency_source);
  const auto& lib = c.library;
  if (lib.family == core::CollectiveLibrarySpec::Family::kAlphaBeta) {
    o += fmt::format("library   alpha-beta over the network levels ({})\n", lib.source);
  } else {
    std::string net = fmt::format("network hops x{:.3g}", lib.net_latency_scale);
    const auto measured = [](const std::array<double, 3>& a) { return a[0] >= 0.0 || a[1] >= 0.0 || a[2] >= 0.0; };
    // One step per protocol the library may use (an LL128 it never runs prints nothing).
    const auto steps = [&](double (*step)(const core::CollectiveLibrarySpec&, engine::Protocol)) {
      std::string out;
      for (std::size_t p = 0; p < 3; ++p) {
        if (lib.protocols[p]) {
          out += fmt::format(" {} {:.3g} us", core::protocol_name(p), step(lib, static_cast<engine::Protocol>(p)) * 1e6);
        }
      }
      return out;
    };
    if (measured(lib.net_step_s) || measured(lib.tree_step_s)) net = "network steps" + steps(engine::network_step_s);
    if (measured(lib.tree_step_s)) net += "; tree hops" + steps(engine::tree_step_s);
    if (lib.paced_rings) net += "; rings across nodes paced by their Simple step";
    // Past one group of the fabric (the outermost level's group_nodes) a tree keeps a share of its bandwidth.
    if (c.levels.back().spans_groups(c.nodes) && lib.tree_cross_group_share < 1.0) {
      net += fmt::format("; trees past a group of {} nodes at {:.2f} of their bandwidth", c.levels.back().group_nodes,
                         lib.tree_cross_group_share);
    }
    if (lib.nvls) net += "; NVLS all-reduce inside a node";
    o += fmt::format("library   {}: picks by its tuning model; latency x{:.3g} ({}) ({})\n", core::library_label(lib),
                     lib.latency_scale, net, lib.source);
  }
  const strategies::BlockHostTimes blocks = strategies::block_host_times(c.host, s.plan);
  const bool zero_step = s.plan.framework == core::Framework::kDeepSpeed && s.plan.zero_stage >= 1;
  o += fmt::format("host      {} blocks {:.3g} / {:.3g} ms (forward / backward){}{}, {}\n",
                   s.plan.fused_model_code() ? "fused" : "eager", blocks.forward.value() * 1e3, blocks.backward.value() * 1e3,
                   strategies::assembles_units(s.plan)
                       ? fmt::format("; framework hooks {:.3g} ms per {} + {:.3g} ms per parameter tensor, each pass{}",
                                     (s.plan.framework == core::Framework::kDeepSpeed ? c.host.module_hook
                                                                                      : c.host.fetch_hook)
                                             .value() * 1e3,
                                     s.plan.framework == core::Framework::kDeepSpeed ? "submodule" : "fetch",
                                     c.host.tensor_hook.value() * 1e3,
                                     s.plan.framework == core::Framework::kDeepSpeed
                                         ? fmt::format("; gradient layout {:.3g} us and gather split {:.3g} us "
                                                       "per rank and tensor",
                                                       c.host.rank_slice.value() * 1e6, c.host.gather_split.value() * 1e6)
                                         : std::string())
                       : std::string(),
                   zero_step ? fmt::format("; ZeRO's step() {:.3g} ms", c.host.zero_step.value() * 1e3) : std::string(),
                   c.host.hook_source);
  o += fmt::format("plan      {}\n", plan_line(s, ev));
  if (const auto f = deepspeed_fetches(s, ev)) {
    o += fmt::format("fetches   DeepSpeed's coordinator: {} all-gathers per micro-batch ({} parameters in coalesced ones, "
                     "split per rank on the host), {} units ahead (stage3_max_live_parameters), {:.1f}% of the "
                     "parameters kept from the forward for the backward (stage3_max_reuse_distance); {} persistent "
                     "parameters (stage3_param_persistence_threshold) gathered one by one after the step\n",
                     f->gathers, f->split_params, ev.costs.fetch.ahead,
                     f->forward_elements > 0.0 ? 100.0 * f->kept_elements / f->forward_elements : 0.0,
                     ev.costs.fetch.persistent_tensors);
  }
  if (one_group_stream(ev)) {
    o += "groups    parameter gathers and gradient reductions on one process group: its one NCCL stream runs them one "
         "at a time, in the order they are issued\n";
  }
  o += fmt::format("engine    {} ({} tasks)\n\n", engine::engine_name(s.engine), ev.tasks);

  const double t = ev.run.iteration_time.value();
  o += "performance\n";
  o += fmt::format("  iteration time           {}\n", sec(t));
  o += fmt::format("  throughput               {:.0f} tokens/s, {:.2f} samples/s\n", ev.tokens_per_s, ev.samples_per_s);
  o += fmt::format("  TFLOPS per GPU (model)   {:.1f}  (MFU {:.1f}%)\n", ev.model_tflops_per_gpu, 100.0 * ev.mfu);
  o += fmt::format("  TFLOPS per GPU (hw)      {:.1f}  (includes recomputation)\n\n", ev.hardware_tflops_per_gpu);

  for (std::size_t ri = 0; ri < ev.run.roles.size(); ++ri) {
    // Long pipelines: the first and the last stage tell the story (the JSON has every stage).
    if (ev.run.roles.size() > 2 && ri != 0 && ri + 1 != ev.run.roles.size()) continue;
    const auto& r = ev.run.roles[ri];
    o += fmt::format("where the time goes (rank role '{}')\n", r.role);
    o += fmt::format("  {:<26}{:>12}{:>9}\n", "", "time", "share");
    o += fmt::format("  {:<26}{:>12}{:>9}\n", "compute", sec(r.compute_busy.value()), pct(r.compute_busy.value(), t));
    for (std::size_t i = 0; i < kPhases; ++i) {
      const double v = r.compute_by_phase[i].value();
      if (v <= 0.0) continue;
      o += fmt::format("    {:<24}{:>12}{:>9}\n", graph::phase_name(static_cast<graph::Phase>(i)), sec(v), pct(v, t));
    }
    if (r.compute_slowed.value() > 0.0) {
      // Not a part of its own: the phases above include it.
      o += fmt::format("    {:<24}{:>12}{:>9}\n", "(slowed beside comm.)", sec(r.compute_slowed.value()),
                       pct(r.compute_slowed.value(), t));
    }
    o += fmt::format("  {:<26}{:>12}{:>9}\n", "exposed communication", sec(r.exposed_comm.value()),
                     pct(r.exposed_comm.value(), t));
    constexpr auto kHooks = static_cast<std::size_t>(graph::Purpose::kFramework);
    for (std::size_t i = 0; i < kPurposes; ++i) {
      const double v = r.exposed_by_purpose[i].value();
      if (r.comm_by_purpose[i].value() <= 0.0 || i == kHooks) continue;
      o += fmt::format("    {:<24}{:>12}{:>9}\n", graph::purpose_name(static_cast<graph::Purpose>(i)), sec(v), pct(v, t));
    }
    if (r.host_busy.value() > 0.0) {
      o += fmt::format("  {:<26}{:>12}{:>9}\n", "exposed host work", sec(r.exposed_host.value()),
                       pct(r.exposed_host.value(), t));
      for (std::size_t i = 0; i < kPurposes; ++i) {
        const double v = r.exposed_host_by_purpose[i].value();
        if (v <= 0.0) continue;
        o += fmt::format("    {:<24}{:>12}{:>9}\n", graph::purpose_name(static_cast<graph::Purpose>(i)), sec(v), pct(v, t));
      }
    }
    if (r.exposed_host.value() >= kHostBoundShare * t) {
      // The host times are one measured machine's; hosts of one kind of machine ran the same host-bound steps up to
      // 1.7x apart (validate/results/NVIDIA-H200-2026-11-26-fsdp-check-repeat.csv, ...-H100-...-2026-11-26-*.csv).
      o += fmt::format("    host-bound: the least certain part of this prediction (hosts of one machine kind ran such\n"
                       "    steps up to 1.7x apart; `calibrate` fits host.* to your own runs)\n");
    }
    o += fmt::format("  {:<26}{:>12}{:>9}\n", s.plan.pp > 1 ? "idle (bubble, waiting)" : "idle (waiting)",
                     sec(r.idle.value()), pct(r.idle.value(), t));
    if (const double tail = t - r.finish.value(); tail > 0.0) {
      o += fmt::format("    {:<24}{:>12}{:>9}\n", "after its last task", sec(tail), pct(tail, t));
    }
    o += fmt::format("  communication busy {} of which hidden behind compute {} ({})\n", sec(r.comm_busy.value()),
                     sec(r.hidden_comm().value()), pct(r.hidden_comm().value(), r.comm_busy.value()));
    o += "  communication by purpose (busy time, summed over streams)\n";
    for (std::size_t i = 0; i < kPurposes; ++i) {
      const double v = r.comm_by_purpose[i].value();
      if (v <= 0.0 || i == kHooks) continue;
      o += fmt::format("    {:<24}{:>12}\n", graph::purpose_name(static_cast<graph::Purpose>(i)), sec(v));
    }
    if (r.comm_by_purpose[kHooks].value() > 0.0) {
      o += fmt::format("  host busy {} running the framework (eager model code, sharding hooks)\n",
                       sec(r.comm_by_purpose[kHooks].value()));
    }
    // Collectives of this rank in flight at once (summed durations beyond their union). The analytical engine
    // gives each its full bandwidth; where this is large, the SimGrid engine shows what sharing costs.
    double summed = 0.0;
    for (const auto& v : r.comm_by_purpose) summed += v.value();
    summed -= r.comm_by_purpose[kHooks].value();
    const double concurrent = summed - r.comm_busy.value();
    if (s.engine == engine::EngineKind::kAnalytical && concurrent > 0.01 * t) {
      o += fmt::format("  collectives overlapping each other {} ({} of the iteration), each at full bandwidth here:\n"
                       "    optimistic where they share links; --engine simgrid shares them\n",
                       sec(concurrent), pct(concurrent, t));
    }
    o += "  bytes sent per rank by network level\n";
    for (std::size_t l = 0; l < c.levels.size(); ++l) {
      o += fmt::format("    {:<24}{:>12}\n", c.levels[l].name, fmt::format("{:.3f} GB", r.bytes_by_level[l] / 1e9));
    }
    o += host_link_section(s, ev, static_cast<std::uint16_t>(ri));
    o += "\n";
  }

  o += ev.memory.stage >= 0 ? fmt::format("memory per device (pipeline stage {}, the fullest)\n", ev.memory.stage)
                            : std::string("memory per device\n");
  for (const auto& it : ev.memory.items) {
    o += fmt::format("  {:<26}{:>12}   {}\n", it.name, gib(it.bytes.value()), it.note);
  }
  o += fmt::format("  {:<26}{:>12}   of {} HBM\n", "total", gib(ev.memory.total.value()), gib(ev.memory.capacity.value()));
  if (ev.memory.host_bytes > 0.0) {
    o += fmt::format("  {:<26}{:>12}   of {} (the node's host memory shared by {} devices)\n", "host (offloaded)",
                     gib(ev.memory.host_bytes), gib(ev.memory.host_capacity), c.devices_per_node);
  }
  if (ev.memory.nvme_bytes > 0.0) {
    o += ev.memory.nvme_capacity > 0.0
             ? fmt::format("  {:<26}{:>12}   of {} (the node's NVMe shared by {} devices)\n", "NVMe (swap files)",
                           gib(ev.memory.nvme_bytes), gib(ev.memory.nvme_capacity), c.devices_per_node)
             : fmt::format("  {:<26}{:>12}   (the node's NVMe capacity not given: not checked)\n", "NVMe (swap files)",
                           gib(ev.memory.nvme_bytes));
  }
  if (ev.memory.fits) {
    o += fmt::format("  verdict: FITS, {} headroom\n", gib(ev.memory.headroom().value()));
  } else if (ev.memory.headroom().value() >= 0.0 && ev.memory.nvme_capacity > 0.0 &&
             ev.memory.nvme_bytes > ev.memory.nvme_capacity) {
    o += fmt::format("  verdict: DOES NOT FIT on the node's NVMe, short by {}\n",
                     gib(ev.memory.nvme_bytes - ev.memory.nvme_capacity));
  } else if (ev.memory.headroom().value() >= 0.0) {
    o += fmt::format("  verdict: DOES NOT FIT in host memory, short by {}\n",
                     gib(ev.memory.host_bytes - ev.memory.host_capacity));
  } else {
    o += fmt::format("  verdict: DOES NOT FIT, short by {}\n", gib(-ev.memory.headroom().value()));
  }
  if (!ev.run.roles.empty() && ev.run.roles[0].peak_memory_bytes > 0.0) {
    double peak = 0.0;
    for (const auto& r : ev.run.roles) peak = std::max(peak, r.peak_memory_bytes);
    o += fmt::format("  timeline peak (task-graph memory events): {}\n", gib(peak));
  }
  return o;
}

std::string render_sweep(const std::vector<scenario::Scenario>& ss, const std::vector<scenario::Evaluation>& evs) {
  std::string o;
  if (ss.empty()) return o;
  o += fmt::format("sweep of {} ({} variants)\n", ss[0].name, ss.size());
  std::size_t w = 7;
  std::size_t sw = 8;
  for (const auto& s : ss) w = std::max(w, s.variant.size());
  for (const auto& e : evs) sw = std::max(sw, e.strategy.size());
  // Bytes each rank sends per iteration on each network level (levels of the first variant's cluster).
  const auto& levels = ss[0].cluster.levels;
  // One column per level, as wide as its whole name.
  std::string level_head;
  std::vector<std::size_t> level_w;
  for (const auto& l : levels) {
    const std::string head = "GB@" + l.name;
    level_w.push_back(std::max<std::size_t>(12, head.size()));
    level_head += fmt::format("  {:>{}}", head, level_w.back());
  }
  // Weak/strong scaling: when the sweep varies cluster.nodes, each variant's per-GPU throughput relative to the
  // same variant on the fewest nodes.
  std::vector<std::string> keys(ss.size());
  bool scaling = false;
  for (std::size_t i = 0; i < ss.size(); ++i) {
    std::string rest = ss[i].variant;
    std::string key;
    for (std::size_t start = 0; start <= rest.size();) {
      const auto end = std::min(rest.find(", ", start), rest.size());
      const std::string part = rest.substr(start, end - start);
      if (part.rfind("cluster.nodes=", 0) == 0) {
        scaling = true;
      } else {
        key += part + ";";
      }
      start = end + 2;
    }
    keys[i] = key;
  }
  std::vector<double> efficiency(ss.size(), 1.0);
  if (scaling) {
    for (std::size_t i = 0; i < ss.size(); ++i) {
      std::size_t base = i;
      for (std::size_t j = 0; j < ss.size(); ++j) {
        if (keys[j] == keys[i] && ss[j].cluster.nodes < ss[base].cluster.nodes) base = j;
      }
      const double per_gpu = evs[i].tokens_per_s / ss[i].cluster.total_devices();
      const double base_per_gpu = evs[base].tokens_per_s / ss[base].cluster.total_devices();
      efficiency[i] = per_gpu / base_per_gpu;
    }
  }
  o += fmt::format("  {:<{}}  {:<{}}  {:>12}  {:>10}  {:>10}  {:>6}{}  {:>11}{}  {}\n", "variant", w, "strategy", sw,
                   "iteration", "tokens/s", "TFLOPS/GPU", "MFU", scaling ? fmt::format("  {:>7}", "scaling") : "",
                   "memory", level_head, "verdict");
  for (std::size_t i = 0; i < ss.size(); ++i) {
    const auto& ev = evs[i];
    std::string level_bytes;
    for (std::size_t l = 0; l < levels.size(); ++l) {
      const double b = (l < ss[i].cluster.levels.size() && !ev.run.roles.empty()) ? ev.run.roles[0].bytes_by_level[l] : 0.0;
      level_bytes += fmt::format("  {:>{}.2f}", b / 1e9, level_w[l]);
    }
    o += fmt::format("  {:<{}}  {:<{}}  {:>12}  {:>10.0f}  {:>10.1f}  {:>5.1f}%{}  {:>11}{}  {}\n", ss[i].variant, w,
                     ev.strategy, sw, sec(ev.run.iteration_time.value()), ev.tokens_per_s, ev.model_tflops_per_gpu,
                     100.0 * ev.mfu, scaling ? fmt::format("  {:>7.3f}", efficiency[i]) : "",
                     gib(ev.memory.total.value()), level_bytes, ev.memory.fits ? "fits" : "DOES NOT FIT");
  }
  return o;
}

nlohmann::ordered_json roles_json(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  using J = nlohmann::ordered_json;
  const core::ClusterSpec& c = s.cluster;
  J roles = J::array();
  for (const auto& r : ev.run.roles) {
    J phases = J::object();
    for (std::size_t i = 0; i < kPhases; ++i) {
      phases[std::string(graph::phase_name(static_cast<graph::Phase>(i)))] = r.compute_by_phase[i].value();
    }
    J purposes = J::object();
    for (std::size_t i = 0; i < kPurposes; ++i) {
      if (i == static_cast<std::size_t>(graph::Purpose::kCompute)) continue;
      purposes[std::string(graph::purpose_name(static_cast<graph::Purpose>(i)))] = {
          {"busy_s", r.comm_by_purpose[i].value()},
          {"exposed_s", r.exposed_by_purpose[i].value() + r.exposed_host_by_purpose[i].value()}};
    }
    J bytes = J::object();
    for (std::size_t l = 0; l < c.levels.size(); ++l) bytes[c.levels[l].name] = r.bytes_by_level[l];
    roles.push_back({{"role", r.role},
                     {"finish_s", r.finish.value()},
                     {"compute_s", r.compute_busy.value()},
                     {"compute_by_phase_s", phases},
                     {"compute_slowed_s", r.compute_slowed.value()},
                     {"comm_busy_s", r.comm_busy.value()},
                     {"exposed_comm_s", r.exposed_comm.value()},
                     {"hidden_comm_s", r.hidden_comm().value()},
                     {"host_busy_s", r.host_busy.value()},
                     {"exposed_host_s", r.exposed_host.value()},
                     {"idle_s", r.idle.value()},
                     {"comm_by_purpose", purposes},
                     {"bytes_sent_by_level", bytes},
                     {"timeline_peak_memory_bytes", r.peak_memory_bytes}});
  }
  return roles;
}

nlohmann::ordered_json to_json(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  using J = nlohmann::ordered_json;
  const auto& m = s.model;
  const auto& c = s.cluster;
  const auto& p = s.plan;
  J j;
  j["scenario"] = s.name;
  if (!s.variant.empty()) j["variant"] = s.variant;
  j["model"] = {{"name", m.name},        {"parameters", m.total_params()}, {"layers", m.layers},
                {"hidden", m.hidden},    {"heads", m.heads},               {"kv_heads", m.kv_heads},
                {"ffn_hidden", m.ffn_hidden}, {"vocab", m.vocab},          {"seq_len", m.seq_len},
                {"dtype", core::dtype_name(m.param_dtype)}};
  if (!m.note.empty()) j["model"]["note"] = m.note;
  J levels = J::array();
  for (const auto& l : c.levels) {
    levels.push_back({{"name", l.name},
                      {"ranks", l.domain_ranks},
                      {"link_bandwidth_Bps", l.link_bandwidth.value()},
                      {"shared_by", l.shared_by},
                      {"latency_s", l.latency.value()},
                      {"group_nodes", l.group_nodes}});
  }
  j["cluster"] = {{"name", c.name},
                  {"nodes", c.nodes},
                  {"devices_per_node", c.devices_per_node},
                  {"devices", c.total_devices()},
                  {"device", c.device.name},
                  {"device_model",
                   {{"gemm_efficiency", c.device.gemm_efficiency},
                    {"gemm_efficiency_narrow", c.device.gemm_efficiency_narrow},
                    {"gemm_efficiency_odd", c.device.gemm_efficiency_odd},
                    {"memory_efficiency", c.device.memory_efficiency},
                    {"stream_efficiency", c.device.stream_efficiency_in_use()},
                    {"attention_efficiency", c.device.attention_efficiency},
                    {"attention_backward_efficiency", c.device.attention_backward_efficiency},
                    {"attention_slots", c.device.attention_slots},
                    {"attention_block_cost", c.device.attention_block_cost},
                    {"attention_backward_block_cost", c.device.attention_backward_block_cost},
                    {"triton_attention_efficiency", c.device.triton_attention_efficiency},
                    {"triton_attention_backward_efficiency", c.device.triton_attention_backward_efficiency},
                    {"cudnn_attention_speedup", c.device.cudnn_attention_speedup},
                    {"cudnn_attention_backward_speedup", c.device.cudnn_attention_backward_speedup},
                    {"attention_in_use",
                     [&] {
                       const core::AttentionRates a = c.device.attention_rates(s.plan.attention_kernel);
                       return nlohmann::ordered_json{{"kernel", core::attention_kernel_name(s.plan.attention_kernel)},
                                                     {"forward", a.forward},
                                                     {"backward", a.backward},
                                                     {"slots", a.slots},
                                                     {"borrowed", a.guessed ? a.borrowed : ""},
                                                     {"source", c.device.attention_source(s.plan.attention_kernel)}};
                     }()},
                    {"comm_compute_slowdown", c.device.comm_compute_slowdown},
                    {"hbm_bandwidth_Bps", c.device.hbm_bandwidth.value()},
                    {"compute_units", c.device.compute_units},
                    {"kernel_overhead_s", c.device.kernel_overhead.value()},
                    {"source", c.device.efficiency_source}}},
                  {"host",
                   {{"fetch_hook_s", c.host.fetch_hook.value()},
                    {"tensor_hook_s", c.host.tensor_hook.value()},
                    {"module_hook_s", c.host.module_hook.value()},
                    {"zero_step_s", c.host.zero_step.value()},
                    {"block_forward_s", c.host.block_forward.value()},
                    {"block_backward_s", c.host.block_backward.value()},
                    {"megatron_block_forward_s", c.host.megatron_block_forward.value()},
                    {"megatron_block_backward_s", c.host.megatron_block_backward.value()},
                    {"rank_slice_s", c.host.rank_slice.value()},
                    {"gather_split_s", c.host.gather_split.value()},
                    {"memory_efficiency", c.host.memory_efficiency},
                    {"pageable_d2h_Bps", c.host.pageable_d2h.value()},
                    {"pageable_h2d_Bps", c.host.pageable_h2d.value()},
                    {"page_fault_s", c.host.page_fault.value()},
                    {"cores", c.host.cores},
                    {"fault_threads", c.host.fault_threads},
                    {"staging_processes", c.host.staging_processes},
                    {"nvme_read_Bps", c.host.nvme_read.value()},
                    {"nvme_write_Bps", c.host.nvme_write.value()},
                    {"nvme_capacity_bytes", c.host.nvme_capacity.value()},
                    {"hook_source", c.host.hook_source}}},
                  {"levels", levels},
                  {"collective_library",
                   {{"library", core::library_name(c.library.family)},
                    {"nccl_version",
                     c.library.family == core::CollectiveLibrarySpec::Family::kNccl
                         ? nlohmann::json(fmt::format("2.{}", c.library.nccl_minor))
                         : nlohmann::json(nullptr)},
                    {"rccl_tuning_model",
                     c.library.family == core::CollectiveLibrarySpec::Family::kRccl
                         ? nlohmann::json(c.library.rccl_tuning_model)
                         : nlohmann::json(nullptr)},
                    {"latency_scale", c.library.latency_scale},
                    {"net_latency_scale", c.library.net_latency_scale},
                    {"net_step_s", net_steps(c.library, engine::network_step_s)},
                    {"tree_step_s", net_steps(c.library, engine::tree_step_s)},
                    {"protocols", core::protocol_names(c.library)},
                    {"paced_rings", c.library.paced_rings},
                    {"tree_cross_group_share", c.library.tree_cross_group_share},
                    {"nvls", c.library.nvls},
                    {"amd_host", c.library.amd_host},
                    {"source", c.library.source}}}};
  j["plan"] = {{"strategy", ev.strategy},
               {"dp", p.dp},
               {"tp", p.tp},
               {"pp", p.pp},
               {"micro_batch", p.micro_batch},
               {"global_batch", p.global_batch},
               {"grad_accumulation", ev.grad_accumulation},
               {"recompute", core::recompute_name(p.recompute)},
               {"recompute_every", p.recompute_every},
               {"zero_stage", p.zero_stage},
               {"framework", core::framework_name(p.framework)},
               {"overlap_comm", p.overlaps_comm()},
               {"reduce_scatter", p.reduce_scatter},
               {"overlap_sync_param", p.overlap_sync_param},
               {"overlap_sync_grad", p.overlap_sync_grad},
               {"param_sync", core::kParamSyncNames[static_cast<std::size_t>(p.param_sync)]},
               {"p2p_sync", p.p2p_sync},
               {"tp_comm_overlap", p.tp_comm_overlap},
               {"grad_comm_dtype", p.grad_comm_dtype ? std::string(core::dtype_name(*p.grad_comm_dtype)) : "the training dtype"},
               {"gradient_buckets_all_reduced", p.reduces_buckets_by_all_reduce()},
               {"flash_attention", p.flash_attention},
               {"attention_kernel", core::attention_kernel_name(p.attention_kernel)},
               {"collective_algorithm", core::algorithm_name(p.algorithm)},
               {"compression", compression_line(p.compression)},
               {"model_code", core::model_code_name(p.code_in_use())},
               {"cross_entropy", core::cross_entropy_name(p.loss_kernel())},
               {"float8", {{"linear", p.float8.linear},
                           {"recipe", core::float8_recipe_name(p.float8.recipe)},
                           {"fsdp_all_gather", p.float8.all_gather}}}};
  if (const auto f = deepspeed_fetches(s, ev)) {
    j["plan"]["deepspeed_fetches"] = {{"all_gathers_per_micro_batch", f->gathers},
                                      {"split_parameters", f->split_params},
                                      {"units_ahead", ev.costs.fetch.ahead},
                                      {"peak_live_elements", ev.costs.fetch.peak_live_elements},
                                      {"kept_for_backward_elements", f->kept_elements},
                                      {"forward_elements", f->forward_elements},
                                      {"persistent_parameters", ev.costs.fetch.persistent_tensors},
                                      {"persistent_elements", ev.costs.fetch.persistent_elements}};
  }
  j["plan"]["gathers_and_reductions_share_a_stream"] = one_group_stream(ev);
  j["engine"] = engine::engine_name(s.engine);
  j["tasks"] = ev.tasks;
  j["performance"] = {{"iteration_time_s", ev.run.iteration_time.value()},
                      {"tokens_per_s", ev.tokens_per_s},
                      {"samples_per_s", ev.samples_per_s},
                      {"model_tflops_per_gpu", ev.model_tflops_per_gpu},
                      {"hardware_tflops_per_gpu", ev.hardware_tflops_per_gpu},
                      {"mfu", ev.mfu},
                      {"flop_convention", "Narayanan et al. 2021: 2 FLOP per MAC, 3x forward; hardware adds recomputation"}};
  j["roles"] = roles_json(s, ev);
  J items = J::array();
  for (const auto& it : ev.memory.items) items.push_back({{"name", it.name}, {"bytes", it.bytes.value()}, {"note", it.note}});
  j["memory"] = {{"items", items},
                 {"total_bytes", ev.memory.total.value()},
                 {"capacity_bytes", ev.memory.capacity.value()},
                 {"host_bytes", ev.memory.host_bytes},
                 {"host_capacity_bytes", ev.memory.host_capacity},
                 {"nvme_bytes", ev.memory.nvme_bytes},
                 {"nvme_capacity_bytes", ev.memory.nvme_capacity},
                 {"fits", ev.memory.fits}};
  j["engine"] = engine::engine_name(s.engine);
  if (s.engine == engine::EngineKind::kSimGrid) {
    // The SimGrid engine's network section (its wall time and memory are left out: outputs are deterministic).
    const auto& n = ev.run.network;
    auto links = [](const std::vector<engine::LinkLoad>& v) {
      J a = J::array();
      for (const auto& l : v) {
        a.push_back({{"link", l.name}, {"bandwidth_Bps", l.bandwidth_Bps}, {"bytes", l.bytes},
                     {"utilisation", l.utilisation}, {"bounds_s", l.bound_s}});
      }
      return a;
    };
    j["network"] = {{"platform", n.topology},
                    {"flows", n.flows},
                    {"collectives_simulated", n.live_collectives},
                    {"collectives_replayed", n.cached_collectives},
                    {"step_latency_s", n.step_latency_s},
                    {"bandwidth_s", n.bandwidth_s},
                    {"bounding_links", links(n.bounding)},
                    {"busiest_links", links(n.busiest)}};
  }
  return j;
}

}  // namespace shardsim::report
