#pragma once
// NodeGraphSpec: a user-described machine link by link, as a scenario's `cluster.topology` gives it: one node's
// devices, CPUs, NICs and switches with the links between them, and the fabric that joins the nodes. The
// SimGrid engine builds its platform from it (topology/link_topology.hpp); the analytical engine keeps using
// the cluster's network levels. Names are checked when the scenario is read; reachability when the topology is
// built (both before anything is simulated).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/units.hpp"

namespace shardsim::core {

struct NodeLinkSpec {
  std::string a;  ///< vertex name
  std::string b;
  BytesPerSec bandwidth;  ///< per direction
  Seconds latency;
  std::string source;  ///< citation or "[guess]"
};

/** @brief How nodes are joined. Every kind enters a node through its NICs; the first switch port of a NIC is
 *  `port_bandwidth`. */
struct FabricSpec {
  enum class Kind : std::uint8_t {
    kCrossbar,   ///< one non-blocking switch
    kFatTree,    ///< two-level fat tree per rail (leaves of `leaf_nodes` nodes, `spines` spines per plane)
    kDragonfly,  ///< groups of `group_nodes` nodes, switches all-to-all inside a group, global links between
  };
  Kind kind = Kind::kCrossbar;
  BytesPerSec port_bandwidth;  ///< NIC <-> first switch, per direction
  Seconds port_latency;
  BytesPerSec switch_bandwidth;  ///< leaf <-> spine (fat tree), switch <-> switch in a group (dragonfly)
  Seconds switch_latency;
  /// rails are separate planes: a transfer enters the destination node on the source's rail (fat trees are
  /// always one plane per rail)
  bool rails_are_planes = false;
  std::string port_source;  ///< citation or "[guess]" of the port links
  std::string switch_source;
  std::string global_source;
  // fat tree
  int leaf_nodes = 0;
  int spines = 0;
  // dragonfly
  int group_nodes = 0;
  int group_switches = 0;
  int endpoints_per_switch = 0;  ///< nodes whose NIC r shares switch r of a switch set
  int global_links = 0;          ///< links between every pair of groups
  BytesPerSec global_bandwidth;
  Seconds global_latency;
};

/** @brief The nodes of one first-tier domain of `f`: a fat tree's leaf, a dragonfly group; 0 for a crossbar (one
 *  domain). A machine described link by link has this as its outermost network level's group_nodes. */
inline int first_tier_nodes(const FabricSpec& f) {
  switch (f.kind) {
    case FabricSpec::Kind::kFatTree: return f.leaf_nodes;
    case FabricSpec::Kind::kDragonfly: return f.group_nodes;
    case FabricSpec::Kind::kCrossbar: break;
  }
  return 0;
}

/** @brief Changes to the fabric of a link-by-link machine (built-in or the scenario's), from `cluster.fabric`:
 *  what-if studies and calibrated link rates. Unset fields keep the machine's values. */
struct FabricOverride {
  std::optional<BytesPerSec> port_bandwidth;
  std::optional<Seconds> port_latency;
  std::optional<BytesPerSec> switch_bandwidth;
  std::optional<Seconds> switch_latency;
  std::optional<BytesPerSec> global_bandwidth;
  std::optional<Seconds> global_latency;
  std::string source;  ///< shown on the links it changes (the scenario file)
};

struct NodeGraphSpec {
  std::vector<std::string> devices;  ///< in rank order inside a node
  std::vector<std::string> hosts;
  std::vector<std::string> nics;  ///< in rail order
  std::vector<std::string> switches;
  std::vector<NodeLinkSpec> links;
  /// per device: the NIC that serves it and its CPU; empty name = the nearest one (fewest hops, then first)
  std::vector<std::string> nic_of_device;
  std::vector<std::string> host_of_device;
  bool devices_forward = false;  ///< devices relay traffic between other vertices (as Infinity Fabric does)
  FabricSpec fabric;
  std::string source;  ///< where the description came from (the scenario file), for links without a source of their own
  std::string description;  ///< what the machine is (the built-in ones); empty: described from its shape
};

}  // namespace shardsim::core
