#include "topology/link_topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "sim/core/errors.hpp"

namespace shardsim::topology {
namespace {

using FabricKind = core::FabricSpec::Kind;

constexpr double kGBps = 1e9;
constexpr double kUs = 1e-6;
// Links that only exist to attach a shared port (levels topology): never a bottleneck.
constexpr double kUnlimitedGBps = 1e6;

core::ConfigError topology_error(const std::string& name, const std::string& what) {
  return core::ConfigError(core::SourceLocation{"<topology:" + name + ">", 0, 0}, "cluster.topology", "expected " + what);
}

// A node derived from the cluster's levels: per intra-node level a switch per domain; ports per `shared_by`
// ranks (or private per-rank links when `ideal`); NICs for the level above the node.
NodeGraph levels_node(const core::ClusterSpec& c, bool ideal, int node_level) {
  NodeGraph n;
  const int dpn = c.devices_per_node;
  for (int i = 0; i < dpn; ++i) n.devices.push_back(n.add_vertex(fmt::format("dev{}", i), VertexKind::kDevice));
  for (int l = 0; l <= node_level; ++l) {
    const auto& lv = c.levels[static_cast<std::size_t>(l)];
    const int domain = lv.domain_ranks;
    const double lat_us = lv.latency.value() / kUs / 2.0;
    const int share = ideal ? 1 : std::max(1, std::min(lv.shared_by, domain));
    const double bw = (ideal ? lv.per_rank_bandwidth() : lv.link_bandwidth).value() / kGBps;
    const std::string src = fmt::format("level {} ({})", lv.name, ideal ? "private per-rank link" : "shared port");
    for (int d = 0; d < dpn / domain; ++d) {
      const int sw = n.add_vertex(fmt::format("{}{}", lv.name, d), VertexKind::kSwitch);
      for (int p = 0; p < domain; p += share) {
        if (share == 1) {
          n.add_link(n.devices[d * domain + p], sw, bw, lat_us, src);
          continue;
        }
        const int port = n.add_vertex(fmt::format("{}{}.port{}", lv.name, d, p / share), VertexKind::kSwitch);
        for (int q = 0; q < share && p + q < domain; ++q) {
          n.add_link(n.devices[d * domain + p + q], port, kUnlimitedGBps, 0.0, "[derived] attachment, not a bottleneck");
        }
        n.add_link(port, sw, bw, lat_us, src);
      }
    }
  }
  // The CPU serves host copies only: the levels say how devices reach each other, so it relays nothing (a
  // cluster without a host link would otherwise lend intra-node collectives an unlimited path).
  const int cpu = n.add_vertex("cpu", VertexKind::kHost);
  n.hosts_forward = false;
  const double host_gbps = c.host.link_bandwidth.value() > 0.0 ? c.host.link_bandwidth.value() / kGBps : kUnlimitedGBps;
  for (int i = 0; i < dpn; ++i) n.add_link(cpu, n.devices[i], host_gbps, 0.0, "host link");
  if (node_level + 1 < static_cast<int>(c.levels.size())) {
    const auto& lv = c.levels[static_cast<std::size_t>(node_level + 1)];
    const int share = ideal ? 1 : std::max(1, std::min(lv.shared_by, dpn));
    for (int p = 0; p < dpn; p += share) {
      const int nic = n.add_vertex(fmt::format("nic{}", p / share), VertexKind::kNic);
      n.nics.push_back(nic);
      for (int q = 0; q < share && p + q < dpn; ++q) {
        n.add_link(n.devices[p + q], nic, kUnlimitedGBps, 0.0, "[derived] attachment, not a bottleneck");
      }
    }
  }
  for (int i = 0; i < dpn; ++i) {
    n.nic_of_device.push_back(n.nics.empty() ? -1 : n.nics[static_cast<std::size_t>(i * static_cast<int>(n.nics.size()) / dpn)]);
    n.host_of_device.push_back(cpu);
  }
  return n;
}

bool transit_ok(VertexKind k, bool devices_forward, bool hosts_forward = true) {
  return k == VertexKind::kSwitch || (k == VertexKind::kHost && hosts_forward) ||
         (k == VertexKind::kDevice && devices_forward);
}

}  // namespace

int NodeGraph::add_vertex(std::string name, VertexKind kind) {
  vertices.push_back(Vertex{std::move(name), kind, 0});
  return static_cast<int>(vertices.size()) - 1;
}

void NodeGraph::add_link(int a, int b, double gb_per_s, double latency_us, std::string source) {
  Link l;
  l.name = fmt::format("{}-{}", vertices[static_cast<std::size_t>(a)].name, vertices[static_cast<std::size_t>(b)].name);
  l.a = a;
  l.b = b;
  l.bandwidth = core::BytesPerSec(gb_per_s * kGBps);
  l.latency = core::Seconds(latency_us * kUs);
  l.source = std::move(source);
  links.push_back(std::move(l));
}

void apply_fabric_override(const core::FabricOverride& o, core::FabricSpec& f) {
  const std::string src = "cluster.fabric of " + o.source;
  if (o.port_bandwidth) f.port_bandwidth = *o.port_bandwidth;
  if (o.port_latency) f.port_latency = *o.port_latency;
  if (o.port_bandwidth || o.port_latency) f.port_source = src;
  if (o.switch_bandwidth) f.switch_bandwidth = *o.switch_bandwidth;
  if (o.switch_latency) f.switch_latency = *o.switch_latency;
  if (o.switch_bandwidth || o.switch_latency) f.switch_source = src;
  if (o.global_bandwidth) f.global_bandwidth = *o.global_bandwidth;
  if (o.global_latency) f.global_latency = *o.global_latency;
  if (o.global_bandwidth || o.global_latency) f.global_source = src;
}

TopologyKind parse_topology_kind(const std::string& text, const std::string& key) {
  if (text == "auto") return TopologyKind::kAuto;
  if (text == "links") return TopologyKind::kLinks;
  if (text == "levels") return TopologyKind::kLevels;
  if (text == "ideal") return TopologyKind::kIdeal;
  throw core::ConfigError(core::SourceLocation{"<command line>", 0, 0}, key,
                          fmt::format("one of auto, links, levels, ideal (got '{}')", text));
}

LinkTopology LinkTopology::build(const core::ClusterSpec& c, TopologyKind kind) {
  // A machine is link by link where it has a node graph: the built-in ones carry theirs (topology/cluster_presets.cpp),
  // a scenario may give its own (cluster.topology).
  if (kind == TopologyKind::kAuto) kind = c.topology ? TopologyKind::kLinks : TopologyKind::kLevels;
  if (c.nodes < 1) throw topology_error(c.name, "at least one node");
  if (c.max_nodes > 0 && c.nodes > c.max_nodes) {
    throw topology_error(c.name, fmt::format("at most {} nodes (the machine's size), got {}", c.max_nodes, c.nodes));
  }
  if (kind == TopologyKind::kLinks) {
    if (!c.topology) {
      throw topology_error(c.name, "a machine with a node graph (the built-in frontier, lassen, dgx-h100 and dgx-h200, "
                                   "or a cluster.topology section) for the link-accurate topology; use the levels or "
                                   "ideal topology otherwise");
    }
    core::NodeGraphSpec spec = *c.topology;
    if (!(spec.fabric.port_bandwidth.value() > 0.0)) {
      // A NIC port carries what the machine's outermost network level says one link gives (the datasheet's rate, or
      // what the collective library was measured to get of it): the levels and the link graph are one description,
      // and a scenario's cluster.network changes both engines.
      const auto& nic = c.levels.back();
      spec.fabric.port_bandwidth = nic.link_bandwidth;
      spec.fabric.port_source += fmt::format("; bandwidth from level {} ({})", nic.name, nic.source);
    }
    if (c.fabric_override) apply_fabric_override(*c.fabric_override, spec.fabric);
    return from_spec(spec, c.name, c.nodes, c.devices_per_node);
  }
  LinkTopology t;
  t.name_ = c.name;
  t.nodes_ = c.nodes;
  {  // a node derived from the cluster's levels
    const int levels = static_cast<int>(c.levels.size());
    int node_level = -1;
    for (int l = 0; l < levels; ++l) {
      if (c.levels[static_cast<std::size_t>(l)].domain_ranks == c.devices_per_node) node_level = l;
    }
    if (node_level < 0) throw topology_error(c.name, "a network level whose domain is one node");
    if (node_level + 2 < levels) {
      throw topology_error(c.name, "at most one network level above the node for the derived topology");
    }
    if (node_level + 1 == levels && c.nodes > 1) throw topology_error(c.name, "a network level above the node");
    t.node_ = levels_node(c, kind == TopologyKind::kIdeal, node_level);
    t.fab_.kind = FabricKind::kCrossbar;
    t.description_ = fmt::format("{}: derived from its network levels ({})", c.name,
                                 kind == TopologyKind::kIdeal ? "private per-rank links, the SimGrid engine runs one copy per stream: nothing shared"
                                                              : "ports shared as the levels say");
    if (node_level + 1 < levels) {
      const auto& lv = c.levels[static_cast<std::size_t>(node_level + 1)];
      t.fab_.port_latency = core::Seconds(lv.latency.value() / 2.0);
      t.fab_.port_bandwidth = kind == TopologyKind::kIdeal ? lv.per_rank_bandwidth() : lv.link_bandwidth;
      t.fab_.port_source = fmt::format("level {}", lv.name);
    }
  }
  if (t.devices_per_node() != c.devices_per_node) {
    throw topology_error(c.name, fmt::format("a node graph with {} devices per node (the cluster has {})",
                                             t.devices_per_node(), c.devices_per_node));
  }
  t.check_fabric();
  t.build_fabric();
  t.finish_node_routes();
  return t;
}

LinkTopology LinkTopology::from_node_graph(std::string name, NodeGraph node, int nodes, int expected_devices,
                                           bool devices_forward, const core::FabricSpec& fabric) {
  LinkTopology t;
  t.name_ = std::move(name);
  t.description_ = fmt::format("{}: node graph of the scenario ({} devices, {} links), {} fabric", t.name_,
                               node.devices.size(), node.links.size(),
                               fabric.kind == FabricKind::kCrossbar  ? "crossbar"
                               : fabric.kind == FabricKind::kFatTree ? "fat-tree"
                                                                     : "dragonfly");
  if (nodes < 1) throw topology_error(t.name_, "at least one node");
  t.nodes_ = nodes;
  t.node_ = std::move(node);
  if (t.devices_per_node() != expected_devices) {
    throw topology_error(t.name_, fmt::format("a node graph with {} devices per node (the cluster has {})",
                                              t.devices_per_node(), expected_devices));
  }
  t.devices_forward_ = devices_forward;
  t.fab_ = fabric;
  t.check_fabric();
  t.build_fabric();
  t.finish_node_routes();
  return t;
}

LinkTopology LinkTopology::from_spec(const core::NodeGraphSpec& spec, std::string name, int nodes,
                                     int expected_devices) {
  NodeGraph n;
  auto add_all = [&](const std::vector<std::string>& names, VertexKind kind, std::vector<int>* into) {
    for (const std::string& v : names) {
      const int id = n.add_vertex(v, kind);
      if (into) into->push_back(id);
    }
  };
  add_all(spec.devices, VertexKind::kDevice, &n.devices);
  std::vector<int> hosts;
  add_all(spec.hosts, VertexKind::kHost, &hosts);
  add_all(spec.nics, VertexKind::kNic, &n.nics);
  add_all(spec.switches, VertexKind::kSwitch, nullptr);
  auto find = [&](const std::string& v) {
    for (std::size_t i = 0; i < n.vertices.size(); ++i) {
      if (n.vertices[i].name == v) return static_cast<int>(i);
    }
    throw topology_error(name, fmt::format("a known vertex name (got '{}')", v));
  };
  for (const core::NodeLinkSpec& l : spec.links) {
    n.add_link(find(l.a), find(l.b), l.bandwidth.value() / kGBps, l.latency.value() / kUs,
               l.source.empty() ? spec.source : l.source);
  }
  // NIC and CPU of each device: as given, else the nearest by hops through the node graph (first on ties).
  auto nearest = [&](int from, const std::vector<int>& among) {
    std::vector<int> dist(n.vertices.size(), -1);
    std::vector<int> frontier{from};
    dist[static_cast<std::size_t>(from)] = 0;
    while (!frontier.empty()) {
      std::vector<int> next;
      for (int u : frontier) {
        for (const Link& l : n.links) {
          const int v = l.a == u ? l.b : l.b == u ? l.a : -1;
          if (v < 0 || dist[static_cast<std::size_t>(v)] >= 0) continue;
          dist[static_cast<std::size_t>(v)] = dist[static_cast<std::size_t>(u)] + 1;
          const VertexKind k = n.vertices[static_cast<std::size_t>(v)].kind;
          if (transit_ok(k, spec.devices_forward)) next.push_back(v);
        }
      }
      frontier = std::move(next);
    }
    int best = -1;
    for (int c : among) {
      const int d = dist[static_cast<std::size_t>(c)];
      if (d >= 0 && (best < 0 || d < dist[static_cast<std::size_t>(best)])) best = c;
    }
    return best;
  };
  for (std::size_t i = 0; i < n.devices.size(); ++i) {
    const std::string& nic = i < spec.nic_of_device.size() ? spec.nic_of_device[i] : std::string();
    const std::string& host = i < spec.host_of_device.size() ? spec.host_of_device[i] : std::string();
    n.nic_of_device.push_back(!nic.empty() ? find(nic) : nearest(n.devices[i], n.nics));
    const int h = !host.empty() ? find(host) : nearest(n.devices[i], hosts);
    if (h < 0) {
      throw topology_error(name, fmt::format("a CPU linked to {} (host copies and offload need one)", spec.devices[i]));
    }
    n.host_of_device.push_back(h);
  }
  LinkTopology t =
      from_node_graph(std::move(name), std::move(n), nodes, expected_devices, spec.devices_forward, spec.fabric);
  if (!spec.description.empty()) t.description_ = spec.description;
  return t;
}

void LinkTopology::check_fabric() const {
  const auto& f = fab_;
  const int nics = static_cast<int>(node_.nics.size());
  if (nodes_ > 1 && nics == 0) {
    throw topology_error(name_, "at least one NIC per node (the job spans more than one node)");
  }
  if (nics == 0) return;
  if (!(f.port_bandwidth.value() > 0.0)) throw topology_error(name_, "a positive fabric port_bandwidth");
  if (f.kind == FabricKind::kFatTree) {
    if (f.leaf_nodes < 1 || f.spines < 1) throw topology_error(name_, "a fat tree with leaf_nodes >= 1 and spines >= 1");
    if (!(f.switch_bandwidth.value() > 0.0)) throw topology_error(name_, "a positive fat-tree switch_bandwidth");
  }
  if (f.kind == FabricKind::kDragonfly) {
    if (f.group_nodes < 1 || f.group_switches < 1 || f.endpoints_per_switch < 1 || f.global_links < 1) {
      throw topology_error(name_, "a dragonfly with group_nodes, group_switches, endpoints_per_switch and "
                                  "global_links >= 1");
    }
    // switch_of puts NIC r of `endpoints_per_switch` consecutive nodes on switch r of a set of `nics` switches.
    const int sets = (f.group_nodes + f.endpoints_per_switch - 1) / f.endpoints_per_switch;
    if (static_cast<long long>(sets) * nics > f.group_switches) {
      throw topology_error(name_, fmt::format("at least {} switches per dragonfly group ({} nodes, {} NICs each, {} "
                                              "endpoints per switch); got {}",
                                              static_cast<long long>(sets) * nics, f.group_nodes, nics,
                                              f.endpoints_per_switch, f.group_switches));
    }
    if (!(f.switch_bandwidth.value() > 0.0) || !(f.global_bandwidth.value() > 0.0)) {
      throw topology_error(name_, "positive dragonfly switch_bandwidth and global_bandwidth");
    }
  }
}

void LinkTopology::build_fabric() {
  const int nics = static_cast<int>(node_.nics.size());
  const int base = nodes_ * static_cast<int>(node_.vertices.size());
  auto add_fabric_vertex = [&](std::string n) {
    fabric_vertices_.push_back(Vertex{std::move(n), VertexKind::kSwitch, -1});
    return base + static_cast<int>(fabric_vertices_.size()) - 1;
  };
  auto add_fabric_link = [&](std::string n, int a, int b, double bw_Bps, double lat_s, std::string src) {
    fabric_links_.push_back(Link{std::move(n), a, b, core::BytesPerSec(bw_Bps), core::Seconds(lat_s), std::move(src)});
  };
  auto nic_name = [&](int rail) {
    return node_.vertices[static_cast<std::size_t>(node_.nics[static_cast<std::size_t>(rail)])].name;
  };
  auto nic_vertex = [&](int node, int rail) {
    return node * static_cast<int>(node_.vertices.size()) + node_.nics[static_cast<std::size_t>(rail)];
  };
  fabric_links_.clear();
  fabric_vertices_.clear();
  uplink_.clear();
  if (nics == 0) {
    fabric_first_link_ = 0;
    return;
  }
  switch (fab_.kind) {
    case FabricKind::kCrossbar: {
      const int x = add_fabric_vertex("fabric");
      for (int k = 0; k < nodes_; ++k) {
        for (int r = 0; r < nics; ++r) {
          uplink_.push_back(static_cast<int>(fabric_links_.size()));
          add_fabric_link(fmt::format("n{}.{}-fabric", k, nic_name(r)), nic_vertex(k, r), x, fab_.port_bandwidth.value(),
                          fab_.port_latency.value(), fab_.port_source);
        }
      }
      fabric_first_link_ = static_cast<int>(fabric_links_.size());
      break;
    }
    case FabricKind::kDragonfly: {
      groups_ = (nodes_ + fab_.group_nodes - 1) / fab_.group_nodes;
      for (int g = 0; g < groups_; ++g) {
        for (int s = 0; s < fab_.group_switches; ++s) add_fabric_vertex(fmt::format("g{}.sw{}", g, s));
      }
      const int first_switch = base;
      for (int k = 0; k < nodes_; ++k) {
        const int g = k / fab_.group_nodes;
        for (int r = 0; r < nics; ++r) {
          const int s = switch_of(k, r);
          uplink_.push_back(static_cast<int>(fabric_links_.size()));
          add_fabric_link(fmt::format("n{}.{}-g{}.sw{}", k, nic_name(r), g, s), nic_vertex(k, r),
                          first_switch + g * fab_.group_switches + s, fab_.port_bandwidth.value(),
                          fab_.port_latency.value(), fab_.port_source);
        }
      }
      fabric_first_link_ = static_cast<int>(fabric_links_.size());
      for (int g = 0; g < groups_; ++g) {
        for (int s = 0; s < fab_.group_switches; ++s) {
          for (int u = s + 1; u < fab_.group_switches; ++u) {
            add_fabric_link(fmt::format("g{}.sw{}-sw{}", g, s, u), first_switch + g * fab_.group_switches + s,
                            first_switch + g * fab_.group_switches + u, fab_.switch_bandwidth.value(),
                            fab_.switch_latency.value(), fab_.switch_source);
          }
        }
      }
      global_first_link_ = static_cast<int>(fabric_links_.size());
      for (int ga = 0; ga < groups_; ++ga) {
        for (int gb = ga + 1; gb < groups_; ++gb) {
          for (int j = 0; j < fab_.global_links; ++j) {
            const int sa = (gb * fab_.global_links + j) % fab_.group_switches;
            const int sb = (ga * fab_.global_links + j) % fab_.group_switches;
            add_fabric_link(fmt::format("global.g{}-g{}.{}", ga, gb, j), first_switch + ga * fab_.group_switches + sa,
                            first_switch + gb * fab_.group_switches + sb, fab_.global_bandwidth.value(),
                            fab_.global_latency.value(), fab_.global_source);
          }
        }
      }
      break;
    }
    case FabricKind::kFatTree: {
      planes_ = nics;
      leaves_ = (nodes_ + fab_.leaf_nodes - 1) / fab_.leaf_nodes;
      for (int p = 0; p < planes_; ++p) {
        for (int i = 0; i < leaves_; ++i) add_fabric_vertex(fmt::format("rail{}.leaf{}", p, i));
        for (int s = 0; s < fab_.spines; ++s) add_fabric_vertex(fmt::format("rail{}.spine{}", p, s));
      }
      for (int k = 0; k < nodes_; ++k) {
        for (int r = 0; r < nics; ++r) {
          uplink_.push_back(static_cast<int>(fabric_links_.size()));
          add_fabric_link(fmt::format("n{}.{}-rail{}.leaf{}", k, nic_name(r), r, k / fab_.leaf_nodes), nic_vertex(k, r),
                          base + r * (leaves_ + fab_.spines) + k / fab_.leaf_nodes, fab_.port_bandwidth.value(),
                          fab_.port_latency.value(), fab_.port_source);
        }
      }
      fabric_first_link_ = static_cast<int>(fabric_links_.size());
      for (int p = 0; p < planes_; ++p) {
        for (int i = 0; i < leaves_; ++i) {
          for (int s = 0; s < fab_.spines; ++s) {
            add_fabric_link(fmt::format("rail{}.leaf{}-spine{}", p, i, s), base + p * (leaves_ + fab_.spines) + i,
                            base + p * (leaves_ + fab_.spines) + leaves_ + s, fab_.switch_bandwidth.value(),
                            fab_.switch_latency.value(), fab_.switch_source);
          }
        }
      }
      break;
    }
  }
}

int LinkTopology::switch_of(int node, int rail) const {
  // [guess] a node's NICs on different switches: `endpoints_per_switch` consecutive nodes share a set of `nics`
  // switches, NIC r of each on the r-th of them (Frontier: 16 nodes, 16 endpoint ports per switch).
  const int nics = static_cast<int>(node_.nics.size());
  return ((node % fab_.group_nodes) / fab_.endpoints_per_switch) * nics + rail;
}

void LinkTopology::finish_node_routes() {
  const int n = static_cast<int>(node_.vertices.size());
  local_routes_.assign(static_cast<std::size_t>(n), std::vector<std::vector<Hop>>(static_cast<std::size_t>(n)));
  constexpr int kInf = std::numeric_limits<int>::max();
  for (int s = 0; s < n; ++s) {
    std::vector<int> hops(static_cast<std::size_t>(n), kInf);
    std::vector<double> width(static_cast<std::size_t>(n), 0.0);
    std::vector<Hop> pred(static_cast<std::size_t>(n));
    hops[static_cast<std::size_t>(s)] = 0;
    width[static_cast<std::size_t>(s)] = std::numeric_limits<double>::infinity();
    // Bellman-Ford over a small graph, links in index order: fewest hops, then widest; ties keep the first
    // path found, so routes are deterministic.
    for (int iter = 0; iter < n; ++iter) {
      bool changed = false;
      for (int li = 0; li < static_cast<int>(node_.links.size()); ++li) {
        const Link& l = node_.links[static_cast<std::size_t>(li)];
        for (int dir = 0; dir < 2; ++dir) {
          const int u = dir == 0 ? l.a : l.b;
          const int v = dir == 0 ? l.b : l.a;
          const auto ui = static_cast<std::size_t>(u);
          const auto vi = static_cast<std::size_t>(v);
          if (hops[ui] == kInf) continue;
          if (u != s && !transit_ok(node_.vertices[ui].kind, devices_forward_, node_.hosts_forward)) continue;
          const int h = hops[ui] + 1;
          const double w = std::min(width[ui], l.bandwidth.value());
          if (h < hops[vi] || (h == hops[vi] && w > width[vi])) {
            hops[vi] = h;
            width[vi] = w;
            pred[vi] = Hop{li, dir == 0};
            changed = true;
          }
        }
      }
      if (!changed) break;
    }
    for (int d = 0; d < n; ++d) {
      if (d == s || hops[static_cast<std::size_t>(d)] == kInf) continue;
      auto& r = local_routes_[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
      for (int v = d; v != s;) {
        const Hop h = pred[static_cast<std::size_t>(v)];
        r.push_back(h);
        const Link& l = node_.links[static_cast<std::size_t>(h.link)];
        v = h.forward ? l.a : l.b;
      }
      std::reverse(r.begin(), r.end());
    }
  }
}

void LinkTopology::validate() const {
  for (std::size_t l = 0; l < link_count(); ++l) {
    const Link k = link(static_cast<int>(l));
    if (!(k.bandwidth.value() > 0.0)) {
      throw topology_error(name_, fmt::format("a positive bandwidth on link {} (got {})", k.name,
                                              core::format_bandwidth(k.bandwidth)));
    }
    if (k.latency.value() < 0.0) throw topology_error(name_, fmt::format("a latency >= 0 on link {}", k.name));
  }
  auto need = [&](int a, int b) {
    if (a == b) return;
    if (local_routes_[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)].empty()) {
      throw topology_error(name_, fmt::format("a route from {} to {} inside a node (none exists)",
                                              node_.vertices[static_cast<std::size_t>(a)].name,
                                              node_.vertices[static_cast<std::size_t>(b)].name));
    }
  };
  for (std::size_t i = 0; i < node_.devices.size(); ++i) {
    for (std::size_t j = 0; j < node_.devices.size(); ++j) need(node_.devices[i], node_.devices[j]);
    need(node_.host_of_device[i], node_.devices[i]);
    need(node_.devices[i], node_.host_of_device[i]);
    if (nodes_ > 1) {
      if (node_.nic_of_device[i] < 0) {
        throw topology_error(name_, fmt::format("a NIC serving {} (the job spans {} nodes)",
                                                node_.vertices[static_cast<std::size_t>(node_.devices[i])].name, nodes_));
      }
      need(node_.devices[i], node_.nic_of_device[i]);
      if (fab_.rails_are_planes) {
        for (int nic : node_.nics) need(nic, node_.devices[i]);  // a transfer may enter on any rail
      } else {
        need(node_.nic_of_device[i], node_.devices[i]);
      }
    }
  }
}

std::size_t LinkTopology::vertex_count() const {
  return static_cast<std::size_t>(nodes_) * node_.vertices.size() + fabric_vertices_.size();
}

std::size_t LinkTopology::link_count() const {
  return static_cast<std::size_t>(nodes_) * node_.links.size() + fabric_links_.size();
}

int LinkTopology::node_of(int v) const {
  const int per = static_cast<int>(node_.vertices.size());
  return v < nodes_ * per ? v / per : -1;
}

Vertex LinkTopology::vertex(int v) const {
  const int per = static_cast<int>(node_.vertices.size());
  if (v < nodes_ * per) {
    const Vertex& t = node_.vertices[static_cast<std::size_t>(v % per)];
    return Vertex{fmt::format("n{}.{}", v / per, t.name), t.kind, v / per};
  }
  return fabric_vertices_[static_cast<std::size_t>(v - nodes_ * per)];
}

std::pair<int, int> LinkTopology::link_in_node(int l) const {
  const int per = static_cast<int>(node_.links.size());
  if (l < nodes_ * per) return {l / per, l % per};
  return {-1, -1};
}

Link LinkTopology::link(int l) const {
  const int per = static_cast<int>(node_.links.size());
  if (l < nodes_ * per) {
    const int node = l / per;
    const Link& t = node_.links[static_cast<std::size_t>(l % per)];
    const int vo = node * static_cast<int>(node_.vertices.size());
    return Link{fmt::format("n{}.{}", node, t.name), t.a + vo, t.b + vo, t.bandwidth, t.latency, t.source};
  }
  return fabric_links_[static_cast<std::size_t>(l - nodes_ * per)];
}

double LinkTopology::link_bandwidth_Bps(int l) const {
  const int per = static_cast<int>(node_.links.size());
  if (l < nodes_ * per) return node_.links[static_cast<std::size_t>(l % per)].bandwidth.value();
  return fabric_links_[static_cast<std::size_t>(l - nodes_ * per)].bandwidth.value();
}

double LinkTopology::link_latency_s(int l) const {
  const int per = static_cast<int>(node_.links.size());
  if (l < nodes_ * per) return node_.links[static_cast<std::size_t>(l % per)].latency.value();
  return fabric_links_[static_cast<std::size_t>(l - nodes_ * per)].latency.value();
}

int LinkTopology::device_vertex(int rank) const {
  const int dpn = devices_per_node();
  return (rank / dpn) * static_cast<int>(node_.vertices.size()) + node_.devices[static_cast<std::size_t>(rank % dpn)];
}

int LinkTopology::host_vertex(int rank) const {
  const int dpn = devices_per_node();
  return (rank / dpn) * static_cast<int>(node_.vertices.size()) +
         node_.host_of_device[static_cast<std::size_t>(rank % dpn)];
}

void LinkTopology::local_route(int src_local, int dst_local, int node, std::vector<Hop>& out) const {
  const int off = node * static_cast<int>(node_.links.size());
  for (const Hop& h : local_routes_[static_cast<std::size_t>(src_local)][static_cast<std::size_t>(dst_local)]) {
    out.push_back(Hop{h.link + off, h.forward});
  }
}

void LinkTopology::fabric_route(int node_a, int rail_a, int node_b, int rail_b, std::vector<Hop>& out) const {
  const int nics = static_cast<int>(node_.nics.size());
  const int links_base = nodes_ * static_cast<int>(node_.links.size());
  auto fl = [&](int f) { return links_base + f; };
  out.push_back(Hop{fl(uplink_[static_cast<std::size_t>(node_a * nics + rail_a)]), true});
  switch (fab_.kind) {
    case FabricKind::kCrossbar: break;
    case FabricKind::kDragonfly: {
      const int ga = node_a / fab_.group_nodes;
      const int gb = node_b / fab_.group_nodes;
      const int sa = switch_of(node_a, rail_a);
      const int sb = switch_of(node_b, rail_b);
      const int per_group = fab_.group_switches * (fab_.group_switches - 1) / 2;
      auto intra = [&](int g, int s, int u) {
        if (s == u) return;
        const int lo = std::min(s, u);
        const int hi = std::max(s, u);
        const int idx = lo * fab_.group_switches - lo * (lo + 1) / 2 + (hi - lo - 1);
        out.push_back(Hop{fl(fabric_first_link_ + g * per_group + idx), s < u});
      };
      if (ga == gb) {
        intra(ga, sa, sb);
        break;
      }
      // Minimal routing: to the gateway switch of the destination group, one global link, then to the
      // destination switch. The global link of the pair is picked by the endpoints and the NIC, so the NICs of a
      // node spread over the pair's links (deterministic; Slingshot's adaptive routing is not modelled).
      const int j = (node_a + node_b + rail_a) % fab_.global_links;
      const int gw_a = (gb * fab_.global_links + j) % fab_.group_switches;
      const int gw_b = (ga * fab_.global_links + j) % fab_.group_switches;
      intra(ga, sa, gw_a);
      const int lo = std::min(ga, gb);
      const int hi = std::max(ga, gb);
      const int pair = lo * groups_ - lo * (lo + 1) / 2 + (hi - lo - 1);
      out.push_back(Hop{fl(global_first_link_ + pair * fab_.global_links + j), ga < gb});
      intra(gb, gw_b, sb);
      break;
    }
    case FabricKind::kFatTree: {
      SHARDSIM_ASSERT(rail_a == rail_b, "fat-tree planes do not meet");
      const int la = node_a / fab_.leaf_nodes;
      const int lb = node_b / fab_.leaf_nodes;
      if (la == lb) break;
      const int spine = node_b % fab_.spines;  // destination-mod-k
      const int plane_base = fabric_first_link_ + rail_a * leaves_ * fab_.spines;
      out.push_back(Hop{fl(plane_base + la * fab_.spines + spine), true});
      out.push_back(Hop{fl(plane_base + lb * fab_.spines + spine), false});
      break;
    }
  }
  out.push_back(Hop{fl(uplink_[static_cast<std::size_t>(node_b * nics + rail_b)]), false});
}

void LinkTopology::route(int src, int dst, std::vector<Hop>& out) const {
  out.clear();
  const int per = static_cast<int>(node_.vertices.size());
  const int na = node_of(src);
  const int nb = node_of(dst);
  SHARDSIM_ASSERT(na >= 0 && nb >= 0, "routes run between devices and hosts");
  const int la = src % per;
  const int lb = dst % per;
  if (na == nb) {
    local_route(la, lb, na, out);
    return;
  }
  auto device_index = [&](int local) {
    const auto it = std::find(node_.devices.begin(), node_.devices.end(), local);
    return it == node_.devices.end() ? 0 : static_cast<int>(it - node_.devices.begin());
  };
  auto rail_of = [&](int nic_local) {
    return static_cast<int>(std::find(node_.nics.begin(), node_.nics.end(), nic_local) - node_.nics.begin());
  };
  const int nic_a = node_.nic_of_device[static_cast<std::size_t>(device_index(la))];
  const int rail_a = rail_of(nic_a);
  const int rail_b = fab_.rails_are_planes ? rail_a : rail_of(node_.nic_of_device[static_cast<std::size_t>(device_index(lb))]);
  const int nic_b = node_.nics[static_cast<std::size_t>(rail_b)];
  local_route(la, nic_a, na, out);
  fabric_route(na, rail_a, nb, rail_b, out);
  local_route(nic_b, lb, nb, out);
}

double LinkTopology::route_latency_s(const std::vector<Hop>& hops) const {
  double s = 0.0;
  for (const Hop& h : hops) s += link_latency_s(h.link);
  return s;
}

double LinkTopology::route_bandwidth_Bps(const std::vector<Hop>& hops) const {
  double w = std::numeric_limits<double>::infinity();
  for (const Hop& h : hops) w = std::min(w, link_bandwidth_Bps(h.link));
  return w;
}

std::string LinkTopology::to_simgrid_xml() const {
  std::string o;
  o += "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  o += fmt::format("<!-- {} ({} nodes); generated by shardsim topology. Routing is SimGrid's Dijkstra over the link "
                   "graph: shortest paths, ties possibly broken differently from shardsim's own router. -->\n",
                   description_, nodes_);
  o += "<platform version=\"4.1\">\n";
  o += fmt::format("  <zone id=\"{}\" routing=\"Dijkstra\">\n", name_);
  const std::size_t nv = vertex_count();
  for (std::size_t v = 0; v < nv; ++v) {
    const Vertex x = vertex(static_cast<int>(v));
    if (x.kind == VertexKind::kDevice || x.kind == VertexKind::kHost) {
      o += fmt::format("    <host id=\"{}\" speed=\"1Gf\"/>\n", x.name);
    } else {
      o += fmt::format("    <router id=\"{}\"/>\n", x.name);
    }
  }
  const std::size_t nl = link_count();
  for (std::size_t l = 0; l < nl; ++l) {
    const Link k = link(static_cast<int>(l));
    o += fmt::format("    <link id=\"{}\" bandwidth=\"{:.6g}GBps\" latency=\"{:.6g}us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                     k.name, k.bandwidth.value() / kGBps, k.latency.value() / kUs);
  }
  for (std::size_t l = 0; l < nl; ++l) {
    const Link k = link(static_cast<int>(l));
    o += fmt::format("    <route src=\"{}\" dst=\"{}\" symmetrical=\"YES\"><link_ctn id=\"{}\" direction=\"UP\"/></route>\n",
                     vertex(k.a).name, vertex(k.b).name, k.name);
  }
  o += "  </zone>\n</platform>\n";
  return o;
}

std::string LinkTopology::node_to_dot() const {
  std::string o = fmt::format("graph \"{}\" {{\n  label=\"{}: one node\";\n", name_, description_);
  for (const Vertex& v : node_.vertices) {
    const char* shape = v.kind == VertexKind::kDevice ? "box" : v.kind == VertexKind::kHost ? "ellipse"
                        : v.kind == VertexKind::kNic  ? "diamond" : "hexagon";
    o += fmt::format("  \"{}\" [shape={}];\n", v.name, shape);
  }
  for (const Link& l : node_.links) {
    o += fmt::format("  \"{}\" -- \"{}\" [label=\"{:.4g} GB/s\"];\n", node_.vertices[static_cast<std::size_t>(l.a)].name,
                     node_.vertices[static_cast<std::size_t>(l.b)].name, l.bandwidth.value() / kGBps);
  }
  if (!node_.nics.empty()) {
    o += "  \"fabric\" [shape=plaintext];\n";
    for (std::size_t r = 0; r < node_.nics.size(); ++r) {
      const double bw = uplink_.empty() ? 0.0 : fabric_links_[static_cast<std::size_t>(uplink_[r])].bandwidth.value();
      o += fmt::format("  \"{}\" -- \"fabric\" [label=\"{:.4g} GB/s\", style=dashed];\n",
                       node_.vertices[static_cast<std::size_t>(node_.nics[r])].name, bw / kGBps);
    }
  }
  o += "}\n";
  return o;
}

std::string LinkTopology::describe() const {
  std::string o = fmt::format("{}\n  {} nodes, {} vertices, {} links ({} per node, {} in the fabric)\n", description_,
                              nodes_, vertex_count(), link_count(), node_.links.size(), fabric_links_.size());
  o += "  node links:\n";
  for (const Link& l : node_.links) {
    o += fmt::format("    {:<24} {:>9.4g} GB/s  {:>5.2f} us  [{}]\n", l.name, l.bandwidth.value() / kGBps,
                     l.latency.value() / kUs, l.source);
  }
  if (!fabric_links_.empty()) {
    o += "  fabric links (first of each kind):\n";
    std::vector<std::string> seen;
    for (const Link& l : fabric_links_) {
      if (std::find(seen.begin(), seen.end(), l.source) != seen.end()) continue;
      seen.push_back(l.source);
      o += fmt::format("    {:<24} {:>9.4g} GB/s  {:>5.2f} us  [{}]\n", l.name, l.bandwidth.value() / kGBps,
                       l.latency.value() / kUs, l.source);
    }
  }
  return o;
}

}  // namespace shardsim::topology
