#include "sim/scenario/cluster_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/text_file.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/link_topology.hpp"

namespace shardsim::scenario {
namespace {

using core::ConfigError;

void apply_device(const ConfigNode& n, core::DeviceSpec& d) {
  n.expect_map({"name", "peak", "hbm", "hbm_bandwidth", "gemm_efficiency", "gemm_efficiency_narrow", "gemm_efficiency_odd",
                "memory_efficiency", "attention_efficiency",
                "attention_backward_efficiency", "attention_slots", "attention_block_cost", "attention_backward_block_cost",
                "triton_attention_efficiency", "triton_attention_backward_efficiency", "cudnn_attention_speedup",
                "cudnn_attention_backward_speedup", "comm_compute_slowdown", "runtime_reserved", "compute_units", "kernel_overhead", "stream_efficiency"});
  if (auto v = n.find("name")) d.name = v->as_string();
  if (auto p = n.find("peak")) {
    p->expect_map({"fp32", "fp16", "bf16", "fp8", "int8"});
    d.peak = {};
    for (const auto& [key, val] : p->entries()) d.peak[static_cast<int>(*core::parse_dtype(key))] = val.as_flop_rate();
  }
  if (auto v = n.find("hbm")) d.hbm = v->as_bytes();
  if (auto v = n.find("hbm_bandwidth")) d.hbm_bandwidth = v->as_bandwidth();
  if (auto v = n.find("gemm_efficiency")) d.gemm_efficiency = v->as_fraction();
  if (auto v = n.find("gemm_efficiency_narrow")) d.gemm_efficiency_narrow = v->as_fraction();
  if (auto v = n.find("gemm_efficiency_odd")) d.gemm_efficiency_odd = v->as_fraction();
  if (auto v = n.find("memory_efficiency")) d.memory_efficiency = v->as_fraction();
  if (auto v = n.find("stream_efficiency")) d.stream_efficiency = v->as_fraction();
  if (auto v = n.find("attention_efficiency")) d.attention_efficiency = v->as_fraction();
  if (auto v = n.find("attention_backward_efficiency")) d.attention_backward_efficiency = v->as_fraction();
  for (const auto& [key, field] : {std::pair{"triton_attention_efficiency", &core::DeviceSpec::triton_attention_efficiency},
                                   std::pair{"triton_attention_backward_efficiency",
                                             &core::DeviceSpec::triton_attention_backward_efficiency}}) {
    if (auto v = n.find(key)) {
      d.*field = v->as_fraction();
      d.triton_attention_source = n.file();
    }
  }
  for (const auto& [key, field] : {std::pair{"cudnn_attention_speedup", &core::DeviceSpec::cudnn_attention_speedup},
                                   std::pair{"cudnn_attention_backward_speedup",
                                             &core::DeviceSpec::cudnn_attention_backward_speedup}}) {
    if (auto v = n.find(key)) {
      d.*field = v->as_double();
      if (!(d.*field >= 0.1 && d.*field <= 10.0)) v->fail("expected cuDNN's speed-up over FlashAttention-2, 0.1 to 10");
      d.cudnn_attention_source = n.file();
    }
  }
  if (auto v = n.find("attention_slots")) d.attention_slots = static_cast<int>(v->as_int(0, 64));
  for (const auto& [key, field] : {std::pair{"attention_block_cost", &core::DeviceSpec::attention_block_cost},
                                   std::pair{"attention_backward_block_cost", &core::DeviceSpec::attention_backward_block_cost}}) {
    if (auto v = n.find(key)) {
      d.*field = v->as_double();
      if (!(d.*field >= 0.0 && d.*field <= 64.0)) v->fail("expected a block's fixed cost from 0 to 64 tiles");
    }
  }
  if (auto v = n.find("comm_compute_slowdown")) {
    d.comm_compute_slowdown = v->as_double();
    if (!(d.comm_compute_slowdown >= 1.0 && d.comm_compute_slowdown <= 10.0)) {
      v->fail("expected a factor from 1 (compute unaffected by collectives beside it) to 10");
    }
  }
  // Any of the compute model's numbers given here makes this file their source.
  for (const char* key : {"gemm_efficiency", "gemm_efficiency_narrow", "gemm_efficiency_odd", "memory_efficiency",
                          "stream_efficiency", "attention_efficiency", "attention_backward_efficiency", "attention_slots",
                          "attention_block_cost", "attention_backward_block_cost", "kernel_overhead"}) {
    if (n.has(key)) d.efficiency_source = n.file();
  }
  if (auto v = n.find("compute_units")) d.compute_units = static_cast<int>(v->as_int(0, 1 << 20));
  // FlashAttention's schedule deals blocks to the compute units' slots; its block costs mean nothing without it.
  if (d.attention_slots > 0 && d.compute_units <= 0) {
    n.get("attention_slots").fail("attention slots per compute unit on a device with compute_units");
  }
  for (const char* key : {"attention_block_cost", "attention_backward_block_cost"}) {
    if (auto v = n.find(key); v && d.attention_slots <= 0) {
      v->fail("a block cost on a device timed by FlashAttention's schedule (attention_slots > 0)");
    }
  }
  if (auto v = n.find("kernel_overhead")) d.kernel_overhead = v->as_duration();
  if (auto v = n.find("runtime_reserved")) d.runtime_reserved = v->as_bytes(true);
}

void apply_host(const ConfigNode& n, core::HostSpec& h) {
  n.expect_map({"memory", "memory_bandwidth", "link_bandwidth", "fetch_hook", "tensor_hook", "module_hook", "zero_step",
                "block_forward",
                "block_backward", "megatron_block_forward", "megatron_block_backward", "rank_slice", "gather_split",
                "pageable_d2h",
                "pageable_h2d", "page_fault", "memory_efficiency", "nvme_read", "nvme_write", "nvme_capacity", "cores",
                "fault_threads", "staging_processes"});
  if (auto v = n.find("memory")) h.memory = v->as_bytes();
  if (auto v = n.find("nvme_read")) h.nvme_read = v->as_bandwidth();
  if (auto v = n.find("nvme_write")) h.nvme_write = v->as_bandwidth();
  if (auto v = n.find("nvme_capacity")) h.nvme_capacity = v->as_bytes();
  if (auto v = n.find("memory_bandwidth")) h.memory_bandwidth = v->as_bandwidth();
  if (auto v = n.find("link_bandwidth")) h.link_bandwidth = v->as_bandwidth();
  if (auto v = n.find("memory_efficiency")) h.memory_efficiency = v->as_fraction();
  if (auto v = n.find("pageable_d2h")) h.pageable_d2h = v->as_bandwidth();
  if (auto v = n.find("pageable_h2d")) h.pageable_h2d = v->as_bandwidth();
  if (auto v = n.find("cores")) h.cores = static_cast<int>(v->as_int(1, 100000));
  if (auto v = n.find("fault_threads")) {
    h.fault_threads = v->as_double();
    if (!(h.fault_threads >= 1.0 && h.fault_threads <= 1024.0)) v->fail("a thread count in [1, 1024]");
  }
  if (auto v = n.find("staging_processes")) {
    h.staging_processes = v->as_double();
    if (!(h.staging_processes >= 1.0 && h.staging_processes <= 1024.0)) v->fail("a process count in [1, 1024]");
  }
  for (auto [key, field] : {std::pair{"fetch_hook", &h.fetch_hook}, std::pair{"tensor_hook", &h.tensor_hook},
                            std::pair{"module_hook", &h.module_hook}, std::pair{"zero_step", &h.zero_step},
                            std::pair{"block_forward", &h.block_forward}, std::pair{"block_backward", &h.block_backward},
                            std::pair{"megatron_block_forward", &h.megatron_block_forward},
                            std::pair{"megatron_block_backward", &h.megatron_block_backward},
                            std::pair{"rank_slice", &h.rank_slice}, std::pair{"gather_split", &h.gather_split},
                            std::pair{"page_fault", &h.page_fault}}) {
    if (auto v = n.find(key)) {
      *field = v->as_duration();
      // Host work per block or fetch of a second or more is no training framework: a unit slip (ms for us).
      if (field->value() >= 1.0) v->fail(fmt::format("a host time under 1 s, got {}", v->as_string()));
      h.hook_source = n.file();
    }
  }
}

// `cluster.collective_library`: a library name, or a map that changes the machine's library (a preset's, or
// NCCL for a user's machine).
void apply_library(const ConfigNode& n, core::CollectiveLibrarySpec& l) {
  using Spec = core::CollectiveLibrarySpec;
  // The family named; NVLS is NCCL's algorithm (the preset's goes with another library).
  auto set_family = [&l](const ConfigNode& v) {
    l.family = *core::parse_library(v.as_choice({"nccl", "rccl", "alpha-beta"}));
    if (l.family != Spec::Family::kNccl) l.nvls = false;
  };
  l.source = n.file();
  if (n.is_scalar()) {
    set_family(n);
    return;
  }
  n.expect_map({"library", "version", "tuning_model", "latency_scale", "net_latency_scale", "net_step_latency",
                "tree_step_latency", "host_cpu", "intra_link", "generation", "protocols", "paced_rings", "nvls",
                "tree_cross_group_share"});
  if (auto v = n.find("library")) set_family(*v);
  if (auto v = n.find("version")) {
    // NCCL's version, whose tuning table it picks by: "2.18" to "2.30".
    if (l.family != Spec::Family::kNccl) v->fail("a version for NCCL only (the library here is not NCCL)");
    const std::string text = v->as_string();
    const auto minor = core::parse_nccl_version(text);
    if (!minor) v->fail(fmt::format("{} (got '{}')", core::nccl_version_range(), text));
    l.nccl_minor = *minor;
  }
  if (auto v = n.find("tuning_model")) {
    // RCCL's tuning model (CollectiveLibrarySpec::rccl_tuning_model).
    if (l.family != Spec::Family::kRccl) v->fail("a tuning model for RCCL only (the library here is not RCCL)");
    const auto m = v->as_int(0, 3);
    if (m != 0 && m != 3) v->fail("RCCL's tuning model 0 (its default) or 3 (the MI250X node's, rome_model_74)");
    l.rccl_tuning_model = static_cast<int>(m);
  }
  auto scale = [](const ConfigNode& v) {
    const double x = v.as_double();
    if (!(x >= Spec::kMinLatencyScale && x <= Spec::kMaxLatencyScale)) {
      v.fail(fmt::format("expected a factor from {} to {} over the library's latency table", Spec::kMinLatencyScale,
                         Spec::kMaxLatencyScale));
    }
    return x;
  };
  if (auto v = n.find("latency_scale")) l.latency_scale = scale(*v);
  if (auto v = n.find("net_latency_scale")) l.net_latency_scale = scale(*v);
  if (auto v = n.find("protocols")) {
    const auto items = v->items();
    if (items.empty()) v->fail("expected a list of protocols: LL, LL128, Simple");
    l.protocols = {false, false, false};
    for (const ConfigNode& it : items) {
      l.protocols[*core::parse_protocol(it.as_choice({"LL", "LL128", "Simple"}))] = true;
    }
  }
  // Measured network steps per protocol, a ring's and a tree's: {LL: 11us, LL128: 50us, Simple: 60us} (any subset of
  // the protocols the library runs here: a step of another would go unused, and is refused where it is written).
  auto steps = [&l](const ConfigNode& v, std::array<double, 3>& out) {
    v.expect_map({"LL", "LL128", "Simple"});
    for (const char* p : {"LL", "LL128", "Simple"}) {
      if (auto d = v.find(p)) {
        if (!l.protocols[*core::parse_protocol(p)]) {
          d->fail(fmt::format("{} is not among the library's protocols here (collective_library.protocols): a step "
                              "for it would go unused",
                              p));
        }
        const double s = d->as_duration().value();
        if (!(s > 0.0 && s <= 1e-3)) d->fail("expected a network step from above 0 to 1 ms");
        out[*core::parse_protocol(p)] = s;
      }
    }
  };
  if (auto v = n.find("net_step_latency")) steps(*v, l.net_step_s);
  if (auto v = n.find("tree_step_latency")) steps(*v, l.tree_step_s);
  // Rings across nodes at the pace of their network step (CollectiveLibrarySpec::paced_rings).
  if (auto v = n.find("paced_rings")) l.paced_rings = v->as_bool();
  // What a tree gets of its bandwidth past one group of the fabric (CollectiveLibrarySpec::tree_cross_group_share).
  if (auto v = n.find("tree_cross_group_share")) l.tree_cross_group_share = v->as_fraction();
  // NVLS inside a node (CollectiveLibrarySpec::nvls): NCCL's, on an NVSwitch that reduces.
  if (auto v = n.find("nvls")) {
    l.nvls = v->as_bool();
    if (l.nvls && l.family != Spec::Family::kNccl) v->fail("NVLS is NCCL's (the library here is not NCCL)");
  }
  if (auto v = n.find("host_cpu")) l.amd_host = v->as_choice({"intel", "amd", "other"}) == "amd";
  if (auto v = n.find("intra_link")) {
    l.intra = v->as_choice({"nvlink", "pci"}) == "nvlink" ? Spec::IntraLink::kNvlink : Spec::IntraLink::kPci;
  }
  if (auto v = n.find("generation")) {
    const std::string g = v->as_choice({"volta", "ampere", "hopper"});
    l.generation = g == "volta" ? Spec::Generation::kVolta : g == "ampere" ? Spec::Generation::kAmpere
                                                                           : Spec::Generation::kHopper;
  }
}

std::vector<core::NetworkLevel> parse_network(const ConfigNode& n) {
  std::vector<core::NetworkLevel> levels;
  const auto items = n.items();
  if (items.empty()) n.fail("expected at least one network level");
  if (items.size() > 6) n.fail("at most 6 network levels are supported");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ConfigNode& it = items[i];
    it.expect_map({"name", "ranks", "bandwidth", "shared_by", "latency", "group_nodes"});
    core::NetworkLevel l;
    l.name = it.get("name").as_string();
    const ConfigNode ranks = it.get("ranks");
    if (ranks.is_scalar() && ranks.as_string() == "all") {
      if (i + 1 != items.size()) ranks.fail("only the outermost level may span 'all' ranks");
      l.domain_ranks = std::numeric_limits<int>::max();
    } else {
      l.domain_ranks = ranks.as_positive_int();
    }
    l.link_bandwidth = it.get("bandwidth").as_bandwidth();
    if (auto s = it.find("shared_by")) l.shared_by = s->as_positive_int();
    l.latency = it.get("latency").as_duration();
    // The nodes of one first-tier group of the fabric (a leaf, a dragonfly group): the outermost level's.
    if (auto g = it.find("group_nodes")) {
      if (i + 1 != items.size()) g->fail("group_nodes on the outermost level only (the fabric between the nodes)");
      l.group_nodes = g->as_positive_int();
    }
    l.source = n.file();
    const bool spans_all = l.domain_ranks == std::numeric_limits<int>::max();
    if (i > 0 && !spans_all) {
      const int prev = levels.back().domain_ranks;
      if (l.domain_ranks <= prev || l.domain_ranks % prev != 0) {
        ranks.fail(fmt::format("expected a multiple of the previous level's {} ranks, larger than it", prev));
      }
    }
    levels.push_back(l);
  }
  return levels;
}

// cluster.topology: one node link by link and the fabric between nodes (names checked here; routes when the
// topology is built, see parse_cluster).
std::shared_ptr<const core::NodeGraphSpec> parse_topology(const ConfigNode& n, const core::ClusterSpec& c) {
  n.expect_map({"devices", "hosts", "nics", "switches", "devices_forward", "links", "attach", "fabric"});
  auto t = std::make_shared<core::NodeGraphSpec>();
  t->source = n.file();
  std::vector<std::string> names;
  auto read_names = [&](const char* key, std::vector<std::string>& into, bool required) {
    const auto v = required ? std::optional<ConfigNode>(n.get(key)) : n.find(key);
    if (!v) return;
    for (const ConfigNode& it : v->items()) {
      std::string name = it.as_string();
      if (name.empty()) it.fail("expected a vertex name");
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        it.fail(fmt::format("expected a name not used before in the node graph (got '{}' again)", name));
      }
      names.push_back(name);
      into.push_back(std::move(name));
    }
  };
  read_names("devices", t->devices, true);
  read_names("hosts", t->hosts, false);
  read_names("nics", t->nics, false);
  read_names("switches", t->switches, false);
  const ConfigNode devices = n.get("devices");
  if (static_cast<int>(t->devices.size()) != c.devices_per_node) {
    devices.fail(fmt::format("expected {} devices (the cluster's devices_per_node); got {}", c.devices_per_node,
                             t->devices.size()));
  }
  auto known = [&](const ConfigNode& at) {
    std::string v = at.as_string();
    if (std::find(names.begin(), names.end(), v) == names.end()) {
      at.fail(fmt::format("expected a vertex of the node graph (devices, hosts, nics, switches); got '{}'{}", v,
                          suggest(v, names)));
    }
    return v;
  };
  if (auto v = n.find("devices_forward")) t->devices_forward = v->as_bool();
  for (const ConfigNode& it : n.get("links").items()) {
    it.expect_map({"between", "bandwidth", "latency", "source"});
    const ConfigNode between = it.get("between");
    const auto ends = between.items();
    if (ends.size() != 2) between.fail("expected two vertex names: [a, b]");
    core::NodeLinkSpec l;
    l.a = known(ends[0]);
    l.b = known(ends[1]);
    if (l.a == l.b) between.fail("expected two different vertices");
    l.bandwidth = it.get("bandwidth").as_bandwidth();
    l.latency = core::Seconds(0.0);
    if (auto v = it.find("latency")) l.latency = v->as_duration();
    if (auto v = it.find("source")) l.source = v->as_string();
    t->links.push_back(std::move(l));
  }
  t->nic_of_device.assign(t->devices.size(), "");
  t->host_of_device.assign(t->devices.size(), "");
  if (auto a = n.find("attach")) {
    for (const auto& [dev, what] : a->entries()) {
      const auto it = std::find(t->devices.begin(), t->devices.end(), dev);
      if (it == t->devices.end()) what.fail(fmt::format("expected a device name as the key; '{}' is not one", dev));
      const auto i = static_cast<std::size_t>(it - t->devices.begin());
      what.expect_map({"nic", "host"});
      if (auto v = what.find("nic")) {
        t->nic_of_device[i] = known(*v);
        if (std::find(t->nics.begin(), t->nics.end(), t->nic_of_device[i]) == t->nics.end()) v->fail("expected a NIC");
      }
      if (auto v = what.find("host")) {
        t->host_of_device[i] = known(*v);
        if (std::find(t->hosts.begin(), t->hosts.end(), t->host_of_device[i]) == t->hosts.end()) v->fail("expected a host");
      }
    }
  }
  // The fabric: by default a crossbar whose ports are the network level above the node.
  core::FabricSpec& f = t->fabric;
  const int above = c.node_level() + 1;
  if (above < static_cast<int>(c.levels.size())) {
    const auto& lv = c.levels[static_cast<std::size_t>(above)];
    f.port_bandwidth = lv.link_bandwidth;
    f.port_latency = core::Seconds(lv.latency.value() / 2.0);
  }
  f.port_source = f.switch_source = f.global_source = n.file();
  if (auto fn = n.find("fabric")) {
    const std::string kind = fn->get("kind").as_choice({"crossbar", "fat_tree", "dragonfly"});
    if (kind == "crossbar") {
      fn->expect_map({"kind", "port_bandwidth", "port_latency", "rails"});
    } else if (kind == "fat_tree") {
      fn->expect_map({"kind", "port_bandwidth", "port_latency", "switch_bandwidth", "switch_latency", "leaf_nodes",
                      "spines"});
      f.kind = core::FabricSpec::Kind::kFatTree;
      f.rails_are_planes = true;
      f.switch_bandwidth = fn->get("switch_bandwidth").as_bandwidth();
      f.leaf_nodes = fn->get("leaf_nodes").as_positive_int();
      f.spines = fn->get("spines").as_positive_int();
    } else {
      fn->expect_map({"kind", "port_bandwidth", "port_latency", "switch_bandwidth", "switch_latency", "rails",
                      "group_nodes", "group_switches", "endpoints_per_switch", "global_links", "global_bandwidth",
                      "global_latency"});
      f.kind = core::FabricSpec::Kind::kDragonfly;
      f.switch_bandwidth = fn->get("switch_bandwidth").as_bandwidth();
      f.group_nodes = fn->get("group_nodes").as_positive_int();
      f.group_switches = fn->get("group_switches").as_positive_int();
      f.endpoints_per_switch = fn->get("endpoints_per_switch").as_positive_int();
      f.global_links = fn->get("global_links").as_positive_int();
      f.global_bandwidth = fn->get("global_bandwidth").as_bandwidth();
      if (auto v = fn->find("global_latency")) f.global_latency = v->as_duration();
    }
    if (auto v = fn->find("port_bandwidth")) f.port_bandwidth = v->as_bandwidth();
    if (auto v = fn->find("port_latency")) f.port_latency = v->as_duration();
    if (auto v = fn->find("switch_latency")) f.switch_latency = v->as_duration();
    if (auto v = fn->find("rails")) f.rails_are_planes = v->as_choice({"planes", "shared"}) == "planes";
  }
  return t;
}

// A job on part of a preset's node (2 of a DGX's 8 GPUs): the levels inside the node stop at the devices it
// uses, and levels that become the same size merge into the innermost (fastest) one.
std::vector<core::NetworkLevel> part_of_node(const ConfigNode& at, const core::ClusterSpec& c, int built) {
  const int dpn = c.devices_per_node;
  if (dpn > built || built % dpn != 0) {
    at.fail(fmt::format("a divisor of {}'s {} devices per node (a job on part of a node)", c.name, built));
  }
  std::vector<core::NetworkLevel> out;
  for (core::NetworkLevel l : c.levels) {
    if (l.domain_ranks <= built) {
      if (l.domain_ranks < dpn && dpn % l.domain_ranks != 0) {
        at.fail(fmt::format("a multiple of the {} level's {} ranks", l.name, l.domain_ranks));
      }
      l.domain_ranks = std::min(l.domain_ranks, dpn);
      if (!out.empty() && out.back().domain_ranks == l.domain_ranks) continue;
    }
    out.push_back(l);
  }
  return out;
}

}  // namespace

core::ClusterSpec parse_cluster(const ConfigNode& n) {
  auto preset_or_fail = [](const ConfigNode& at, const std::string& name) {
    const core::ClusterSpec* p = topology::find_cluster_preset(name);
    if (!p) {
      at.fail(fmt::format("unknown cluster preset '{}'{}; expected one of: {}", name,
                          suggest(name, topology::cluster_preset_names()), join(topology::cluster_preset_names())));
    }
    return *p;
  };
  core::ClusterSpec c;
  ConfigNode nodes_at = n;
  if (n.is_scalar()) {
    c = preset_or_fail(n, n.as_string());
  } else {
    n.expect_map({"preset", "machine", "name", "nodes", "devices_per_node", "device", "host", "network", "topology",
                  "fabric", "collective_library"});
    if (n.has("preset") && n.has("machine")) n.get("machine").fail("give either preset or machine, not both");
    if (auto p = n.find("preset")) {
      c = preset_or_fail(*p, p->as_string());
    } else if (auto m = n.find("machine")) {
      // A machine described once in a scenario file of its own (its path relative to this file): that file's
      // cluster, which the keys here then change as they change a preset.
      std::filesystem::path path = m->as_string();
      if (path.is_relative()) path = std::filesystem::path(n.file()).parent_path() / path;
      if (!std::filesystem::exists(path)) m->fail(fmt::format("file '{}' does not exist", path.string()));
      const std::string text = read_text_file(path.string(), "machine file");
      const ConfigNode inner = ConfigNode::parse(text, path.string());
      if (const auto ic = inner.find("cluster"); ic && !ic->is_scalar() && ic->has("machine")) {
        m->fail(fmt::format("a scenario file whose cluster is not itself another file's ('{}' names one)",
                            path.string()));
      }
      c = parse_scenarios(text, path.string()).at(0).cluster;
    } else {
      for (const char* key : {"nodes", "devices_per_node", "device", "network"}) (void)n.get(key);
      c.name = "custom";
      c.source = n.file();
      c.library.source = "NCCL 2.18 tuning model, NVLink inside a node [default for a described machine]";
      c.device.peak = {};
      c.device.runtime_reserved = core::Bytes(0.0);
      const ConfigNode d = n.get("device");
      for (const char* key : {"peak", "hbm", "hbm_bandwidth"}) (void)d.get(key);
    }
    if (auto v = n.find("name")) c.name = v->as_string();
    if (auto v = n.find("nodes")) {
      c.nodes = v->as_positive_int();
      nodes_at = *v;
    }
    if (auto v = n.find("devices_per_node")) {
      const int built = c.devices_per_node;
      c.devices_per_node = v->as_positive_int();
      if ((n.has("preset") || n.has("machine")) && !n.has("network") && c.devices_per_node != built) {
        c.levels = part_of_node(*v, c, built);
      }
    }
    if (auto v = n.find("device")) apply_device(*v, c.device);
    if (auto v = n.find("host")) apply_host(*v, c.host);
    if (auto v = n.find("network")) c.levels = parse_network(*v);
    // A node redefined is no longer the preset's switch: NVLS (an NVSwitch that reduces) only where restated.
    if (n.has("network")) c.library.nvls = false;
    if (auto v = n.find("collective_library")) apply_library(*v, c.library);
    // A preset whose node or network the scenario redefines is no longer the built-in machine: both engines
    // then see the levels as written (the SimGrid engine derives its links from them, unless the scenario gives a
    // node graph of its own, below).
    if (n.has("devices_per_node") || n.has("network")) {
      c.preset.clear();
      c.topology.reset();
    }
  }
  if (static_cast<long long>(c.nodes) * c.devices_per_node > std::numeric_limits<int>::max()) {
    nodes_at.fail(fmt::format("{} nodes x {} devices is more devices than shardsim counts (2^31 - 1)", c.nodes,
                              c.devices_per_node));
  }
  if (c.max_nodes > 0 && c.nodes > c.max_nodes) {
    nodes_at.fail(fmt::format("{} has {} nodes; got {}", c.name, c.max_nodes, c.nodes));
  }
  // The network must have a level that is exactly one node, and reach across all nodes.
  bool node_level = false;
  for (const auto& l : c.levels) node_level = node_level || l.domain_ranks == c.devices_per_node;
  const ConfigNode net_at = (!n.is_scalar() && n.has("network")) ? n.get("network") : n;
  if (!node_level) {
    net_at.fail(fmt::format("no network level has ranks = devices_per_node = {} (the node level)", c.devices_per_node));
  }
  if (c.levels.back().group_nodes > 0 && c.levels.back().domain_ranks <= c.devices_per_node) {
    net_at.fail("group_nodes on a level between nodes (the outermost level here is the node's own)");
  }
  if (c.levels.back().domain_ranks < c.total_devices()) {
    if (!n.is_scalar() && n.has("network")) {
      net_at.fail(fmt::format("the outermost level spans {} ranks but the job has {} devices; use ranks: all",
                              c.levels.back().domain_ranks, c.total_devices()));
    }
    // The machine's own network (a preset's): the job is larger than it reaches.
    nodes_at.fail(fmt::format("{} nodes x {} devices = {} devices, more than {}'s network reaches ({} ranks)", c.nodes,
                              c.devices_per_node, c.total_devices(), c.name, c.levels.back().domain_ranks));
  }
  if (!n.is_scalar() && n.has("fabric")) {
    const ConfigNode f = n.get("fabric");
    f.expect_map({"port_bandwidth", "port_latency", "switch_bandwidth", "switch_latency", "global_bandwidth",
                  "global_latency"});
    auto o = std::make_shared<core::FabricOverride>();
    o->source = n.file();
    if (auto v = f.find("port_bandwidth")) o->port_bandwidth = v->as_bandwidth();
    if (auto v = f.find("port_latency")) o->port_latency = v->as_duration();
    if (auto v = f.find("switch_bandwidth")) o->switch_bandwidth = v->as_bandwidth();
    if (auto v = f.find("switch_latency")) o->switch_latency = v->as_duration();
    if (auto v = f.find("global_bandwidth")) o->global_bandwidth = v->as_bandwidth();
    if (auto v = f.find("global_latency")) o->global_latency = v->as_duration();
    // The ports are the level above the node for the analytical engine too (a port hop is half the level's
    // per-message latency, as derived topologies split it), so a what-if on them moves both engines.
    const int ports = c.node_level() + 1;
    if (ports < static_cast<int>(c.levels.size())) {
      auto& lv = c.levels[static_cast<std::size_t>(ports)];
      if (o->port_bandwidth) lv.link_bandwidth = *o->port_bandwidth;
      if (o->port_latency) lv.latency = *o->port_latency * 2.0;
    }
    c.fabric_override = std::move(o);
  }
  if (!n.is_scalar() && n.has("topology")) {
    const ConfigNode at = n.get("topology");
    c.topology = parse_topology(at, c);
    // The fabric's first tier is the outermost level's groups (one machine): taken from it, or checked against it
    // where the scenario's network gives them.
    const int tier = core::first_tier_nodes(c.topology->fabric);
    auto& outer = c.levels.back();
    if (n.has("network") && outer.group_nodes > 0 && outer.group_nodes != tier) {
      at.fail(fmt::format("a fabric whose first tier (a leaf, a dragonfly group) holds the network's group_nodes of {} "
                          "nodes; this one's holds {}",
                          outer.group_nodes, tier > 0 ? std::to_string(tier) : std::string("every node (a crossbar)")));
    }
    if (outer.domain_ranks > c.devices_per_node) outer.group_nodes = tier;
    // Routes, bandwidths and the fabric's shape are checked by building the topology before anything is
    // simulated; two nodes suffice (the checks are per node and per fabric kind, not per node count).
    try {
      core::ClusterSpec small = c;
      small.nodes = std::min(c.nodes, 2);
      topology::LinkTopology::build(small, topology::TopologyKind::kLinks).validate();
    } catch (const ConfigError& e) {
      at.fail(e.expected());
    }
  }
  return c;
}

int find_level(const ConfigNode& at, const core::ClusterSpec& c, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& l : c.levels) names.push_back(l.name);
  for (std::size_t i = 0; i < c.levels.size(); ++i) {
    if (c.levels[i].name == name) return static_cast<int>(i);
  }
  at.fail(fmt::format("unknown network level '{}'{}; {} has: {}", name, suggest(name, names), c.name, join(names)));
}

}  // namespace shardsim::scenario
