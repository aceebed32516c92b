// Link-level machines: the node graphs follow the hardware reference, routes go where the hardware sends
// traffic, exports are well formed, and bad node graphs are refused before anything is simulated.
#include <gtest/gtest.h>

#include <string>

#include "sim/core/errors.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/link_topology.hpp"

namespace {

using namespace shardsim;
using topology::LinkTopology;
using topology::TopologyKind;

core::ClusterSpec preset(const char* name, int nodes) {
  core::ClusterSpec c = *topology::find_cluster_preset(name);
  c.nodes = nodes;
  return c;
}

double route_width(const LinkTopology& t, int a, int b, int* hops = nullptr) {
  std::vector<topology::Hop> r;
  t.route(a, b, r);
  if (hops) *hops = static_cast<int>(r.size());
  return t.route_bandwidth_Bps(r);
}

TEST(LinkTopology, FrontierNodeFollowsTheNodeDiagram) {
  const auto t = LinkTopology::build(preset("frontier", 1), TopologyKind::kLinks);
  t.validate();
  EXPECT_EQ(t.devices_per_node(), 8);
  int hops = 0;
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(0), t.device_vertex(1), &hops), 200e9);  // 4 IF links
  EXPECT_EQ(hops, 1);
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(2), t.device_vertex(4), &hops), 100e9);  // 2 IF links
  // GCD 0 and 3 have no direct link: two hops through another GCD.
  route_width(t, t.device_vertex(0), t.device_vertex(3), &hops);
  EXPECT_EQ(hops, 2);
  // Each GCD has its own 36 GB/s link to the CPU.
  EXPECT_DOUBLE_EQ(route_width(t, t.host_vertex(0), t.device_vertex(0), &hops), 36e9);
  EXPECT_EQ(hops, 1);
}

TEST(LinkTopology, FrontierDragonflyUsesAtMostThreeSwitchHops) {
  const auto t = LinkTopology::build(preset("frontier", 384), TopologyKind::kLinks);
  t.validate();
  std::vector<topology::Hop> r;
  t.route(t.device_vertex(0), t.device_vertex(383 * 8 + 7), r);
  int switch_hops = 0;
  for (const auto& h : r) {
    const auto l = t.link(h.link);
    if (t.vertex(l.a).kind == topology::VertexKind::kSwitch && t.vertex(l.b).kind == topology::VertexKind::kSwitch) {
      ++switch_hops;
    }
  }
  EXPECT_LE(switch_hops, 3);
  EXPECT_GE(switch_hops, 1);  // different groups: at least the global link
}

TEST(LinkTopology, LassenCrossSocketTrafficCrossesTheXBus) {
  const auto t = LinkTopology::build(preset("lassen", 2), TopologyKind::kLinks);
  t.validate();
  int hops = 0;
  // As MPI moves GPU data over the links (bienz2/BenchPress@ac2ede18, MVAPICH2 GPU ping-pong on Lassen): the X-Bus
  // 40.2 GB/s, the socket's NVLink2 67.3, one EDR rail half of the 20.3 GB/s a pair gets of two.
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(0), t.device_vertex(2), &hops), 40.2e9);
  EXPECT_EQ(hops, 3);
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(0), t.device_vertex(1)), 67.3e9);
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(0), t.device_vertex(4)), 10.15e9);  // one EDR rail
}

TEST(LinkTopology, DgxIsRailOptimised) {
  const auto t = LinkTopology::build(preset("dgx-h100", 64), TopologyKind::kLinks);
  t.validate();
  // NVLink4 at the share NCCL's rings reach (the preset's nvswitch level: one value for both engines)
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(0), t.device_vertex(7)), 363.5e9);
  EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(3), t.device_vertex(40 * 8 + 3)), 50e9);
}

// The built-in machines that are link by link carry their node graph as data, in the form a scenario's
// cluster.topology gives: the DGX H200 is the DGX H100 system, link for link; the others derive theirs from their
// network levels.
TEST(LinkTopology, PresetsCarryTheirNodeGraphs) {
  for (const char* name : {"frontier", "lassen", "dgx-h100", "dgx-h200"}) {
    const core::ClusterSpec c = preset(name, 2);
    ASSERT_TRUE(c.topology) << name;
    EXPECT_FALSE(c.topology->description.empty()) << name;
    const LinkTopology t = LinkTopology::build(c, TopologyKind::kAuto);
    EXPECT_EQ(t.description(), c.topology->description) << name;
    // The NIC ports run at the outermost level's link rate: the narrowest hop from a device to its peer on the
    // next node.
    EXPECT_DOUBLE_EQ(route_width(t, t.device_vertex(1), t.device_vertex(c.devices_per_node + 1)),
                     c.levels.back().link_bandwidth.value())
        << name;
  }
  const core::ClusterSpec h100 = preset("dgx-h100", 2);
  const core::ClusterSpec h200 = preset("dgx-h200", 2);
  ASSERT_EQ(h200.topology->links.size(), h100.topology->links.size());
  for (std::size_t i = 0; i < h100.topology->links.size(); ++i) {
    EXPECT_EQ(h200.topology->links[i].a, h100.topology->links[i].a);
    EXPECT_EQ(h200.topology->links[i].b, h100.topology->links[i].b);
    EXPECT_EQ(h200.topology->links[i].bandwidth.value(), h100.topology->links[i].bandwidth.value());
  }
  for (const char* name : {"dgx-a100", "a800", "polaris", "dgx-2"}) {
    const core::ClusterSpec c = preset(name, 2);
    EXPECT_FALSE(c.topology) << name;
    EXPECT_NE(LinkTopology::build(c, TopologyKind::kAuto).description().find("derived from its network levels"),
              std::string::npos)
        << name;
  }
}

TEST(LinkTopology, ExportsAreWellFormed) {
  const auto t = LinkTopology::build(preset("frontier", 2), TopologyKind::kLinks);
  const std::string xml = t.to_simgrid_xml();
  EXPECT_NE(xml.find("<platform version=\"4.1\">"), std::string::npos);
  EXPECT_NE(xml.find("<host id=\"n1.gcd7\""), std::string::npos);
  EXPECT_NE(xml.find("sharing_policy=\"SPLITDUPLEX\""), std::string::npos);
  const std::string dot = t.node_to_dot();
  EXPECT_NE(dot.find("\"gcd0\" -- \"gcd1\" [label=\"200 GB/s\"]"), std::string::npos);
}

TEST(LinkTopology, RefusesBadNodeGraphs) {
  topology::NodeGraph n;
  const int a = n.add_vertex("a", topology::VertexKind::kDevice);
  const int b = n.add_vertex("b", topology::VertexKind::kDevice);
  const int cpu = n.add_vertex("cpu", topology::VertexKind::kHost);
  n.devices = {a, b};
  n.host_of_device = {cpu, cpu};
  n.nic_of_device = {-1, -1};
  n.add_link(cpu, a, 10.0, 1.0, "test");
  n.add_link(cpu, b, 10.0, 1.0, "test");
  // Device count that does not match the cluster.
  EXPECT_THROW(LinkTopology::from_node_graph("x", n, 1, 4, false, core::FabricSpec{}), core::ConfigError);
  // A zero-bandwidth link.
  auto zero = n;
  zero.add_link(a, b, 0.0, 1.0, "test");
  EXPECT_THROW(LinkTopology::from_node_graph("x", zero, 1, 2, false, core::FabricSpec{}).validate(),
               core::ConfigError);
  // A device with no route to another (b only reaches the CPU, which does not forward here: make it a NIC).
  auto cut = n;
  cut.vertices[static_cast<std::size_t>(cpu)].kind = topology::VertexKind::kNic;
  EXPECT_THROW(LinkTopology::from_node_graph("x", cut, 1, 2, false, core::FabricSpec{}).validate(),
               core::ConfigError);
  // The good one passes.
  EXPECT_NO_THROW(LinkTopology::from_node_graph("x", n, 1, 2, false, core::FabricSpec{}).validate());
}

TEST(LinkTopology, RefusesMoreNodesThanTheMachine) {
  EXPECT_THROW(LinkTopology::build(preset("frontier", 9409), TopologyKind::kLinks), core::ConfigError);
  EXPECT_THROW(LinkTopology::build(preset("frontier", 0), TopologyKind::kLinks), core::ConfigError);
}

}  // namespace

namespace {

using namespace shardsim;

TEST(LinkTopology, UserNodeGraphRoutesThroughItsSwitchesAndFindsTheNearestNicAndCpu) {
  core::NodeGraphSpec s;
  s.devices = {"gpu0", "gpu1", "gpu2", "gpu3"};
  s.hosts = {"cpu"};
  s.nics = {"nic0"};
  s.switches = {"plx0", "plx1"};
  auto link = [&](const char* a, const char* b) {
    s.links.push_back(core::NodeLinkSpec{a, b, core::BytesPerSec(64e9), core::Seconds(1e-6), ""});
  };
  link("gpu0", "plx0");
  link("gpu1", "plx0");
  link("gpu2", "plx1");
  link("gpu3", "plx1");
  link("plx0", "cpu");
  link("plx1", "cpu");
  link("plx0", "nic0");
  s.fabric.kind = core::FabricSpec::Kind::kFatTree;
  s.fabric.port_bandwidth = core::BytesPerSec(25e9);
  s.fabric.switch_bandwidth = core::BytesPerSec(25e9);
  s.fabric.leaf_nodes = 2;
  s.fabric.spines = 2;
  const auto t = topology::LinkTopology::from_spec(s, "box", 4, 4);
  t.validate();
  std::vector<topology::Hop> r;
  // gpu3 of node 0 to gpu3 of node 3 (another leaf): plx1, cpu, plx0, nic0, leaf, spine, leaf, nic0, plx0, cpu,
  // plx1: 12 links, the slowest the 25 GB/s fabric ports.
  t.route(t.device_vertex(3), t.device_vertex(15), r);
  EXPECT_EQ(r.size(), 12u);
  double w = 1e30;
  for (const auto& h : r) w = std::min(w, t.link_bandwidth_Bps(h.link));
  EXPECT_DOUBLE_EQ(w, 25e9);
  EXPECT_EQ(t.vertex(t.host_vertex(2)).name, "n0.cpu");
  // Inside the node gpu0 reaches gpu2 over the CPU: 4 links.
  t.route(t.device_vertex(0), t.device_vertex(2), r);
  EXPECT_EQ(r.size(), 4u);
}

}  // namespace

namespace {

// In a node derived from the network levels the CPU serves host copies only: two devices behind shared ports (4
// hops through the ports and the level's switch) are not routed through the CPU (2 hops), whose link is wider
// or, for a cluster that describes no host, unlimited.
TEST(LinkTopology, DerivedNodesDoNotRouteDeviceTrafficThroughTheCpu) {
  for (double host_gbps : {0.0, 500.0}) {
    core::ClusterSpec c = preset("lassen", 2);  // node level: 64 GB/s X-Bus shared by 2
    c.preset.clear();                           // the levels, not the link-by-link Lassen
    c.host.link_bandwidth = core::BytesPerSec(host_gbps * 1e9);
    const auto t = LinkTopology::build(c, TopologyKind::kLevels);
    std::vector<topology::Hop> r;
    t.route(t.device_vertex(0), t.device_vertex(3), r);
    ASSERT_FALSE(r.empty());
    for (const auto& h : r) {
      const auto l = t.link(h.link);
      EXPECT_EQ(l.name.find("cpu"), std::string::npos) << "host " << host_gbps << " GB/s: " << l.name;
    }
    EXPECT_LE(route_width(t, t.device_vertex(0), t.device_vertex(3)), 64e9);
  }
}

}  // namespace
