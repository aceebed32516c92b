#pragma once
// LinkTopology: a machine link by link, for the SimGrid engine and for export. Vertices are devices (GPUs /
// GCDs), host CPUs, NICs and switches; links are full duplex with a bandwidth per direction and a latency.
// Every node is one copy of a node graph (the node template); nodes hang off a fabric (Frontier's dragonfly,
// Lassen's dual-plane fat tree, DGX's rail-optimised fat tree, or one crossbar for topologies derived from a
// cluster's network levels). Routes are shardsim's own, computed on demand and deterministic:
//   - inside a node: fewest hops, then the widest bottleneck, then the lowest vertex numbers; traffic may
//     transit devices, CPUs and switches (Infinity Fabric forwards through GCDs), never a NIC;
//   - between nodes: source device -> the NIC serving it -> fabric -> a NIC of the destination node -> the
//     destination device. On rail fabrics (separate planes per NIC index) the destination is entered through
//     the NIC of the source's rail; on a single fabric, through the NIC serving the destination device.
// Every preset link cites hardware.md's sources (F1-F3, S1-S3, NVIDIA) or is marked [guess] / [unverified].
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/units.hpp"

namespace shardsim::topology {

enum class VertexKind : std::uint8_t { kDevice, kHost, kNic, kSwitch };

struct Vertex {
  std::string name;
  VertexKind kind = VertexKind::kDevice;
  int node = -1;  ///< node index; -1 for fabric switches
};

struct Link {
  std::string name;
  int a = 0;  ///< vertex
  int b = 0;  ///< vertex
  core::BytesPerSec bandwidth;  ///< per direction
  core::Seconds latency;
  std::string source;  ///< citation or [guess]
};

/** @brief One link of a route and the direction it is crossed in (forward: from link.a to link.b). */
struct Hop {
  int link = 0;
  bool forward = true;
};

/** @brief How a LinkTopology is derived from a cluster. */
enum class TopologyKind : std::uint8_t {
  kAuto,    ///< link-accurate preset when the cluster is a built-in machine, else kLevels
  kLinks,   ///< link-accurate preset (frontier, lassen, dgx-h100)
  kLevels,  ///< from the cluster's network levels: one port per `shared_by` ranks per level
  kIdeal,   ///< from the levels, every rank with private links of its per-rank bandwidth (no shared link)
};

/** @brief Applies `cluster.fabric` changes to a fabric. */
void apply_fabric_override(const core::FabricOverride& o, core::FabricSpec& f);

/** @brief Parses "auto" | "links" | "levels" | "ideal"; throws core::ConfigError naming `key` otherwise. */
TopologyKind parse_topology_kind(const std::string& text, const std::string& key);

/** @brief The node template: one node's vertices and links, with local vertex numbers. */
struct NodeGraph {
  std::vector<Vertex> vertices;  ///< names without the node prefix
  std::vector<Link> links;       ///< a, b: local vertex numbers
  std::vector<int> devices;      ///< local vertex of device i
  std::vector<int> nic_of_device;   ///< local vertex of the NIC serving device i
  std::vector<int> host_of_device;  ///< local vertex of the CPU serving device i
  std::vector<int> nics;            ///< local vertices of the NICs, in rail order
  /// CPUs relay device-to-device traffic (true for real node graphs, where GPUs may reach each other through
  /// the root complex); false in nodes derived from network levels, whose CPU only serves host copies
  bool hosts_forward = true;

  int add_vertex(std::string name, VertexKind kind);
  void add_link(int a, int b, double gb_per_s, double latency_us, std::string source);
};

class LinkTopology {
 public:
  /** @brief Builds `cluster`'s machine as `kind` says (cluster.nodes nodes). Throws core::ConfigError for a
   *  preset that does not fit the cluster (device count, node count) or a cluster it cannot derive. */
  static LinkTopology build(const core::ClusterSpec& cluster, TopologyKind kind);
  /** @brief `nodes` copies of `node` joined by `fabric`; throws core::ConfigError when the graph's device count
   *  is not `expected_devices` or the fabric's parameters do not fit. */
  static LinkTopology from_node_graph(std::string name, NodeGraph node, int nodes, int expected_devices,
                                      bool devices_forward, const core::FabricSpec& fabric);
  /** @brief A scenario's `cluster.topology` (names resolved; NICs and CPUs not given: the nearest). */
  static LinkTopology from_spec(const core::NodeGraphSpec& spec, std::string name, int nodes, int expected_devices);

  /** @brief Checks bandwidths and reachability (every device to every device of its node, to its NIC and
   *  CPU, and the first node to the last); throws core::ConfigError before anything is simulated. */
  void validate() const;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  [[nodiscard]] int nodes() const { return nodes_; }
  [[nodiscard]] int devices_per_node() const { return static_cast<int>(node_.devices.size()); }
  [[nodiscard]] const NodeGraph& node_graph() const { return node_; }
  [[nodiscard]] std::size_t vertex_count() const;
  [[nodiscard]] std::size_t link_count() const;
  /** @brief Vertex `v` (names carry the node, e.g. "n3.gcd5"). */
  [[nodiscard]] Vertex vertex(int v) const;
  /** @brief Link `l` with global vertex numbers and node-prefixed name. */
  [[nodiscard]] Link link(int l) const;
  /** @brief Vertex of device `rank` (node-major numbering). */
  [[nodiscard]] int device_vertex(int rank) const;
  /** @brief Vertex of the CPU serving device `rank`. */
  [[nodiscard]] int host_vertex(int rank) const;

  /** @brief The route between two device or host vertices, appended to `out` (cleared first). */
  void route(int src, int dst, std::vector<Hop>& out) const;
  /** @brief Summed latency of a route. */
  [[nodiscard]] double route_latency_s(const std::vector<Hop>& hops) const;
  /** @brief The narrowest link of a route, bytes/s (infinite for an empty route). */
  [[nodiscard]] double route_bandwidth_Bps(const std::vector<Hop>& hops) const;
  /** @brief Bandwidth of link `l` in bytes/s (fast path for engines). */
  [[nodiscard]] double link_bandwidth_Bps(int l) const;
  /** @brief Latency of link `l` in seconds (fast path for engines). */
  [[nodiscard]] double link_latency_s(int l) const;
  /** @brief The node whose internal link `l` is, and its index in the node template; {-1, -1} for a fabric
   *  link (NIC ports, switch and global links). */
  [[nodiscard]] std::pair<int, int> link_in_node(int l) const;

  /** @brief SimGrid platform XML (version 4.1): hosts for devices and CPUs, routers for NICs and switches,
   *  split-duplex links, one route per link, Dijkstra routing (SimGrid recomputes shortest paths). */
  [[nodiscard]] std::string to_simgrid_xml() const;
  /** @brief One node as Graphviz (links labelled with GB/s per direction). */
  [[nodiscard]] std::string node_to_dot() const;
  /** @brief A readable summary: vertices, links, their sources. */
  [[nodiscard]] std::string describe() const;

 private:
  void check_fabric() const;
  void build_fabric();
  void finish_node_routes();
  void local_route(int src_local, int dst_local, int node, std::vector<Hop>& out) const;
  void fabric_route(int node_a, int rail_a, int node_b, int rail_b, std::vector<Hop>& out) const;
  [[nodiscard]] int node_of(int v) const;
  [[nodiscard]] int switch_of(int node, int rail) const;

  std::string name_;
  std::string description_;
  int nodes_ = 0;
  NodeGraph node_;
  std::vector<std::vector<std::vector<Hop>>> local_routes_;  ///< [src][dst] local links, node 0
  std::vector<Vertex> fabric_vertices_;
  std::vector<Link> fabric_links_;  ///< a, b: global vertex numbers
  std::vector<int> uplink_;         ///< [node * nics + rail]: fabric link from that NIC (forward = up)
  core::FabricSpec fab_;
  bool devices_forward_ = false;  ///< devices may forward traffic inside a node (Infinity Fabric)
  int groups_ = 0;                ///< dragonfly groups in the job
  int leaves_ = 0;                ///< fat-tree leaves per plane
  int planes_ = 0;
  int fabric_first_link_ = 0;  ///< index of the first inter-switch link in fabric_links_
  int global_first_link_ = 0;  ///< dragonfly: index of the first global link in fabric_links_
};

}  // namespace shardsim::topology
