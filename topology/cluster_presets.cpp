#include "topology/cluster_presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

namespace shardsim::topology {
namespace {

using core::BytesPerSec;
using core::Dtype;
using core::FlopPerSec;
using core::Seconds;

constexpr double GBps = 1e9;
constexpr double TF = 1e12;
constexpr double us = 1e-6;
// [guess] Launch and framework time per kernel (a CUDA/HIP launch is a few microseconds; eager PyTorch adds
// its dispatch), until fitted.
constexpr double kKernelOverheadGuess = 5.0;
// GEMMs beside a 16-block copy kernel (NCCL's channel shape; unthrottled and held to 60-180 GB/s) on an H100: the
// median slowdown of the 12 such rows of validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23-overlap.csv (1.23-1.65;
// 4-32 blocks: 1.14-1.82). The test DeviceFit.H100CommSlowdownIsItsMeasurement recomputes it. The same GEMMs beside a
// device-to-device copy (cudaMemcpyAsync, the copy kernels' stand-in) slow 1.11-1.78x (median 1.23): the model slows
// compute by this one factor beside either.
constexpr double kMeasuredH100CommSlowdown = 1.367;

void set_peak(core::DeviceSpec& d, Dtype t, double flops_per_s) { d.peak[static_cast<int>(t)] = FlopPerSec(flops_per_s); }

core::NetworkLevel level(const char* name, int ranks, double link_gbps, int shared_by, double latency_us,
                         const char* source) {
  core::NetworkLevel l;
  l.name = name;
  l.domain_ranks = ranks;
  l.link_bandwidth = BytesPerSec(link_gbps * GBps);
  l.shared_by = shared_by;
  l.latency = Seconds(latency_us * us);
  l.source = source;
  return l;
}

using Library = core::CollectiveLibrarySpec;

// The fit of the DGX A100's NVSwitch level and of NCCL's latency scale (see make_dgx_a100); a test refits them.
constexpr double kA100NvswitchBandwidth = 216.962;  // GB/s
constexpr double kA100NvswitchLatency = 8.874;      // us per step
constexpr double kNcclA100LatencyScale = 1.9145;  // NCCL picking by its own table, the scale pricing the pick
// What NCCL's rings get of an H100's NVLink4 through NVSwitch (450 GB/s per direction on the datasheet): 363.5 GB/s,
// +- 6.9, fitted (shardsim calibrate --collectives validate/data/collectives/h100_1x8_*.txt --cluster dgx-h100 --fit
// network.nvswitch.bandwidth) to an 8-GPU all-gather of 32 MB to 16 GB with NCCL 2.28 at its defaults (role=fit:
// 16.8% -> 3.5% mean error), its reduce-scatter held out (17.4% -> 5.3%). The same run's send/recv reaches 361-368
// GB/s and its all-to-all 348: one rate for every copy between two GPUs. Its all-reduce reaches 480 GB/s of bus
// bandwidth: NCCL's NVLS (the switch reduces; NCCL 2.17 and later on NVSwitch systems), held out: 3.6% mean error
// with NVLS at NCCL's Hopper efficiency of this rate (CollectiveLibrarySpec::nvls), 33% slow at the rings' rate.
constexpr double kH100NvswitchBandwidth = 363.5;  // GB/s
// What NCCL gets of Polaris's Slingshot-11 through libfabric's CXI provider and the AWS OFI plugin: a ring's network
// step of 19.89 us under LL and 83.15 us under LL128 (NCCL's table: 2.7 and 4), a tree's network hop of 9.77 us under
// LL and 53.0 us under LL128 (NCCL's table: 5 and 8.5), and 18.46 GB/s of each 25 GB/s NIC. Fitted (shardsim
// calibrate --collectives validate/data/collectives/polaris_*.txt --cluster polaris --fit
// collectives.net_step.LL,collectives.net_step.LL128,network.slingshot.bandwidth,collectives.tree_step.LL,
// collectives.tree_step.LL128, from NCCL's table and the NICs' 25 GB/s) to ALCF's nccl-tests on 8 Polaris nodes and
// its all-gather on 128 (the files marked role=fit), the 2- and 540-node runs of NCCL 2.18 and the 2- to 540-node
// runs of NCCL 2.21 held out. The 128-node all-gather is in the fit for its ring's small-message time: a ring's LL
// step is that time's slope in the ranks, which 32 ranks alone leave loose. Measured, the small all-gathers take
// 7.5-7.9 us per ring step from 32 to 2,160 ranks, and the small all-reduces (NCCL's trees: 2 log2(nodes) network
// hops) 23, 62 and 207 us on 2, 8 and 540 nodes, NCCL 2.18 and 2.21 alike (the 540-node pair ran in one allocation
// with the same plugin build): a tree's hop costs about half a ring's step through the same transport, whatever the
// version. Simple's step and hop are not identifiable from them (its sizes are bandwidth-bound): NCCL's table. A
// test refits. Refitted when a tree's pipeline fill was modelled (engine::tree_pipeline_fill: each chunk crosses the
// 2 log2(nodes) network stages whole; what the 2-, 8- and 540-node all-reduces add from 1 KiB to 64 KiB grows with
// that depth, ~30 us a stage at 64 KiB at every scale): 21.8% -> 19.9% mean |error| fitted, 25.2% -> 23.2% held out,
// the tree hops down from 11.0 and 60.9 us, whose fit had taken in part of the fill. [finding] NCCL enables LL128 on Ampere only where the GPU reaches its NIC within a PCIe switch
// (src/graph/tuning.cc); ALCF's machine overview ("Polaris Device Affinity Information") shows each NIC PHB from its
// nearest GPU, which would leave LL128 off, but its table names the mlx5 NICs of Polaris's first network, and the
// runs here show three regimes, as with LL128: 128 nodes' all-gather takes 3.9-4.4 ms to 2 MiB (LL), 15-16 ms from 8
// to 32 MiB, 12.6 ms at 64 MiB (Simple). Refitted with LL and Simple only (their ring steps and tree hops and the NIC
// share) the files come out worse: 22% -> 30% fitted, 25% -> 29% held out. So LL128 stays; on Alps, whose NICs hang
// off the Grace CPUs by design, the same rule is applied and fits better (machines/alps-gh200.yaml).
constexpr double kOfiSlingshotStepLL = 19.89446315e-6;
constexpr double kOfiSlingshotStepLL128 = 83.15256697e-6;
constexpr double kPolarisTreeHopLL = 9.774364317e-6;
constexpr double kPolarisTreeHopLL128 = 53.00079206e-6;
constexpr double kPolarisSlingshotBandwidth = 18.45799947;  // GB/s per NIC
// What RCCL gets of a Frontier-class node (4 MI250X = 8 GCDs, 4 Slingshot-11 NICs) through libfabric's CXI provider
// and aws-ofi-rccl, priced from RCCL's tuning model 3 (the node's own, rome_model_74): a tree hop of 5.05 us under LL
// and 27.6 us under Simple, 24.7 GB/s of each 25 GB/s NIC, and 2.80 times its table's base and in-node hops. Fitted
// (shardsim calibrate --collectives validate/data/collectives/lumi_*x8_all_reduce.txt --cluster frontier --fit
// collectives.latency_scale,collectives.tree_step.LL,collectives.tree_step.Simple,network.slingshot.bandwidth), with
// the rings paced at their step below, to RCCL's all-reduce on 1 and 8 LUMI-G nodes, the same node as Frontier's (De
// Sensi et al., SC24: the files marked role=fit; 44% -> 14% mean error there from the table and the NICs' 25 GB/s),
// the 4-, 16-, 32- and 64-node runs held out (39% -> 18%; under tuning model 0, which the preset ran before RCCL's
// model of the node was found, 18% fitted and 21% held out). Refitted with trees' pipeline fill
// (engine::tree_pipeline_fill; RCCL keeps the Simple tree's depth-halved chunks): 46% -> 13% fitted, 42% -> 17% held
// out from the same start (the hops were 6.08 and 36.1 us and the NIC share 21.5 GB/s before: the fill now carries
// the mid sizes' loss that the lower share had). A test refits. An all-reduce's small and mid sizes are
// trees', its large ones rings' at their bandwidth: a ring's network step is not identifiable from them.
constexpr double kRcclSlingshotLatencyScale = 2.798338442;
constexpr double kRcclSlingshotTreeLL = 5.045555501e-06;
constexpr double kRcclSlingshotTreeSimple = 2.760175647e-05;
constexpr double kRcclSlingshotBandwidth = 24.72132199;  // GB/s per NIC
// RCCL's ring step over Frontier's Slingshot under Simple, which paces its rings (CollectiveLibrarySpec::paced_rings):
// 62.56 us per step. Fitted (shardsim calibrate --collectives validate/data/collectives/frontier_*.txt --cluster
// frontier --fit collectives.net_step.Simple) to RCCL 2.20's all-gathers on 1 to 256 Frontier nodes, 64 MiB to 512 MiB
// (Singh et al., arXiv 2504.18658 v2, Figs. 1, 3 and 10: the files marked role=fit; under tuning model 3, 46% -> 35%
// mean error there from its table's 19.8 us), its reduce-scatters and the all-reduces held out (43% -> 38%); refitted
// under model 3 it was 62.4 us, inside 0.2% and its 4.6 us 1-sigma; refitted with trees' pipeline fill and the LUMI
// fit above, 62.56 us (43% -> 32% fitted, 47% -> 41% held out from the table's step). RCCL's all-gathers and reduce-scatters
// take (ranks - 1) x 67-90 us from 32 nodes on whatever their size: paced steps. On 2 to 16 nodes the steps the same
// runs imply are 32-37 us, and there the fit is up to 1.9x slow where a call is latency-bound; from 32 nodes on it is
// 16-25% fast. What doubles the step at 32 nodes is not modelled: RCCL 2.20's choices (algorithm, protocol, channels,
// chunks under model 3), aws-ofi-rccl 1.4 and libfabric's CXI provider have no threshold there (ROCm/rccl@d380693772a8
// src/graph/tuning.cc, src/enqueue.cc, src/init.cc), and the authors find RCCL's messages landing on the NIC's
// overflow list 200x as often as their library's at 2,048 GCDs. NCCL 2.24 over the same fabric and libfabric settings
// on Perlmutter is not paced (validate/data/collectives/perlmutter_*.txt): the pacing is RCCL's.
constexpr double kRcclFrontierRingSimple = 62.56032364e-6;

// ---------------------------------------------------------------- the built-in machines link by link
// One node's devices, CPUs and NICs with the links between them, and the fabric between nodes: what the SimGrid
// engine builds its platform from (topology/link_topology.hpp), the same description a scenario's cluster.topology
// gives. The NIC ports' rate is left to the machine's outermost network level (port_bandwidth 0), so the levels
// and the link graph stay one description. Links: bandwidth per direction in GB/s; every hop 1 us [guess].
using core::FabricSpec;
using core::NodeGraphSpec;

void link(NodeGraphSpec& g, std::string a, std::string b, double gbps, const char* source) {
  g.links.push_back(core::NodeLinkSpec{std::move(a), std::move(b), BytesPerSec(gbps * GBps), Seconds(1.0 * us), source});
}

// Frontier: one HPE Cray EX235a node (F1, F2), 4 MI250X = 8 GCDs, one 64-core EPYC, 4 Slingshot-11 NICs; a
// dragonfly of 128-node groups.
std::shared_ptr<const NodeGraphSpec> frontier_graph() {
  auto g = std::make_shared<NodeGraphSpec>();
  for (int i = 0; i < 8; ++i) g->devices.push_back(fmt::format("gcd{}", i));
  g->hosts = {"cpu"};
  for (int k = 0; k < 4; ++k) g->nics.push_back(fmt::format("hsn{}", k));
  // Infinity Fabric between GCDs: one IF link = 50 GB/s per direction (F3); per-pair link counts from the node
  // diagram (F2).
  const char* if4 = "F2: 4 IF links (x 50 GB/s, F3); latency [guess]";
  const char* if2 = "F2: 2 IF links (x 50 GB/s, F3); latency [guess]";
  const char* if1 = "F2: 1 IF link (50 GB/s, F3); latency [guess]";
  auto gcd = [](int i) { return fmt::format("gcd{}", i); };
  for (int p = 0; p < 8; p += 2) link(*g, gcd(p), gcd(p + 1), 200.0, if4);
  link(*g, gcd(0), gcd(6), 100.0, if2);
  link(*g, gcd(2), gcd(4), 100.0, if2);
  for (auto [a, b] : {std::pair{0, 2}, {1, 3}, {4, 6}, {5, 7}, {1, 5}, {3, 7}}) link(*g, gcd(a), gcd(b), 50.0, if1);
  // One 36 GB/s CPU-GCD link per GCD (F1, F2).
  for (int i = 0; i < 8; ++i) link(*g, "cpu", gcd(i), 36.0, "F1, F2: 36 GB/s CPU-GCD link; latency [guess]");
  // hsn0-3 attached to GCD 1, 3, 5, 7 over PCIe Gen4 ESM, 50 GB/s (F2).
  for (int k = 0; k < 4; ++k) link(*g, gcd(2 * k + 1), fmt::format("hsn{}", k), 50.0, "F2: PCIe Gen4 ESM 50 GB/s; latency [guess]");
  for (int i = 0; i < 8; ++i) {
    g->nic_of_device.push_back(fmt::format("hsn{}", i / 2));  // the NIC on the GCD's own MI250X package
    g->host_of_device.push_back("cpu");
  }
  g->devices_forward = true;  // Infinity Fabric routes through other GCDs (F2)
  FabricSpec& f = g->fabric;
  f.kind = FabricSpec::Kind::kDragonfly;
  f.group_nodes = 128;           // one cabinet per dragonfly group [unverified]
  f.group_switches = 32;         // Rosetta switches per group [unverified]
  f.endpoints_per_switch = 16;   // 16 endpoint ports per switch [unverified]; see switch_of
  f.global_links = 4;            // about 4 links between every pair of groups [unverified]
  f.port_latency = Seconds(1.0 * us);
  f.port_source = "F1: Slingshot-11 NIC port; latency [guess]";
  f.switch_bandwidth = BytesPerSec(25.0 * GBps);
  f.switch_latency = Seconds(0.5 * us);
  f.switch_source = "[unverified] all-to-all 200 Gb/s switch links inside a group; latency [guess]";
  f.global_bandwidth = BytesPerSec(25.0 * GBps);
  f.global_latency = Seconds(1.0 * us);
  f.global_source = "[unverified] ~4 global 200 Gb/s links per group pair; latency [guess]";
  g->description = "Frontier: HPE Cray EX235a nodes (F1, F2), Slingshot-11 dragonfly (groups of 128 nodes)";
  return g;
}

// Lassen: one IBM AC922 node (S1-S3), 4 V100 and 2 POWER9, NVLink2 and the X-Bus, one EDR HCA per socket; a
// dual-rail fat tree.
// Lassen's links as MPI moves GPU data over them, measured (L1 = bienz2/BenchPress@ac2ede18
// benchmarks/lassen/04_19_21/ping_pong_gpu_mvapich.2442311.out: LLNL's mvapich2 module with MV2_USE_CUDA=1, one-way
// GPU-to-GPU ping-pong, 4 B to 32 MiB, April 2021; Spectrum MPI's runs beside it, benchmarks/lassen/spectrum/
// single_rs/09_15_20/ping_pong_large.out, agree on the sockets): two GPUs of one socket 67.3 GB/s at 32 MiB and
// 0.68 us at 4 B; of two sockets 40.2 GB/s and 1.06 us; of two nodes 20.3 GB/s (the two EDR rails striped) and 2.15 us.
constexpr double kLassenNvlink = 67.3;    // GB/s, GPU to GPU on one socket
constexpr double kLassenXbus = 40.2;      // GB/s, GPU to GPU across the X-Bus
constexpr double kLassenEdrRail = 10.15;  // GB/s per rail: one GPU pair's 20.3 over the node's two

std::shared_ptr<const NodeGraphSpec> lassen_graph() {
  auto g = std::make_shared<NodeGraphSpec>();
  g->devices = {"gpu0", "gpu1", "gpu2", "gpu3"};
  g->hosts = {"cpu0", "cpu1"};
  g->nics = {"ib0", "ib1"};
  // GPU to GPU as MPI moves it (L1): 67.3 GB/s on the socket's 3 NVLink2 bricks (75 GB/s, S1), 40.2 GB/s across the
  // X-Bus (64 GB/s, S1).
  const char* nvl = "L1: MVAPICH2 GPU ping-pong 67.3 GB/s (S1: 3 NVLink2 bricks x 25 GB/s); latency [guess]";
  link(*g, "gpu0", "gpu1", kLassenNvlink, nvl);
  link(*g, "gpu2", "gpu3", kLassenNvlink, nvl);
  const char* cpu_gpu = "S1, S3: 3 NVLink2 bricks CPU-GPU = 75 GB/s [derived]; latency [guess]";
  link(*g, "cpu0", "gpu0", 75.0, cpu_gpu);
  link(*g, "cpu0", "gpu1", 75.0, cpu_gpu);
  link(*g, "cpu1", "gpu2", 75.0, cpu_gpu);
  link(*g, "cpu1", "gpu3", 75.0, cpu_gpu);
  link(*g, "cpu0", "cpu1", kLassenXbus,
       "L1: GPU ping-pong across sockets 40.2 GB/s (S1: X-Bus 64 GB/s); latency [guess]");
  // Dual-rail EDR: one HCA per socket (S1, S2); its PCIe attachment is [unverified] (Gen4 x8, 16 GB/s).
  link(*g, "cpu0", "ib0", 16.0, "[unverified] PCIe Gen4 x8 to the HCA; latency [guess]");
  link(*g, "cpu1", "ib1", 16.0, "[unverified] PCIe Gen4 x8 to the HCA; latency [guess]");
  g->nic_of_device = {"ib0", "ib0", "ib1", "ib1"};  // the HCA of the GPU's socket [unverified]
  g->host_of_device = {"cpu0", "cpu0", "cpu1", "cpu1"};
  FabricSpec& f = g->fabric;
  f.kind = FabricSpec::Kind::kFatTree;
  f.rails_are_planes = true;  // dual-rail: one plane per HCA [unverified]
  f.leaf_nodes = 18;          // [guess] 36-port EDR leaves, 18 down / 18 up
  f.spines = 18;              // [guess] full bisection
  f.port_latency = Seconds(1.0 * us);
  f.port_source = "S1, S2: EDR per rail; latency [guess]";
  f.switch_bandwidth = BytesPerSec(12.5 * GBps);
  f.switch_latency = Seconds(0.5 * us);
  f.switch_source = "[guess] one EDR link from each leaf to each spine";
  g->description = "Lassen: IBM AC922 nodes (S1-S3), dual-rail EDR InfiniBand fat tree";
  return g;
}

// DGX H100 (and H200, the same system): 8 GPUs on NVSwitch, 2 Xeon 8480C, 8 x 400 Gb/s compute NICs, one per GPU
// behind its PCIe switch; a rail-optimised fat tree.
std::shared_ptr<const NodeGraphSpec> dgx_graph() {
  auto g = std::make_shared<NodeGraphSpec>();
  for (int i = 0; i < 8; ++i) g->devices.push_back(fmt::format("gpu{}", i));
  g->switches = {"nvswitch"};
  g->hosts = {"cpu0", "cpu1"};
  for (int k = 0; k < 8; ++k) g->nics.push_back(fmt::format("ib{}", k));
  // The four NVSwitch chips modelled as one non-blocking switch; 18 NVLink4 links = 900 GB/s bidirectional per
  // GPU (NVIDIA MLPerf system file) = 450 GB/s per direction, of which NCCL gets kH100NvswitchBandwidth: the same
  // rate as the preset's nvswitch level, so both engines see one machine.
  for (int i = 0; i < 8; ++i) {
    link(*g, fmt::format("gpu{}", i), "nvswitch", kH100NvswitchBandwidth,
         "NVIDIA: 18 NVLink4, 450 GB/s per direction, at the share NCCL reaches (8-GPU all-gather, NCCL 2.28); "
         "latency [guess]");
  }
  for (int i = 0; i < 8; ++i) {
    link(*g, i < 4 ? "cpu0" : "cpu1", fmt::format("gpu{}", i), 64.0,
         "datasheet: PCIe Gen5 x16, 128 GB/s bidirectional; socket attachment [unverified]; latency [guess]");
  }
  link(*g, "cpu0", "cpu1", 62.4, "[guess] UPI between the two Xeon 8480C");
  // 8 x 400 Gb/s compute NICs, one per GPU behind its PCIe switch (MLPerf system file; pairing [unverified]).
  for (int k = 0; k < 8; ++k) {
    link(*g, fmt::format("gpu{}", k), fmt::format("ib{}", k), 64.0,
         "[unverified] PCIe Gen5 x16 GPU-NIC through a PCIe switch; latency [guess]");
  }
  for (int i = 0; i < 8; ++i) {
    g->nic_of_device.push_back(fmt::format("ib{}", i));
    g->host_of_device.push_back(i < 4 ? "cpu0" : "cpu1");
  }
  g->devices_forward = true;  // a transfer entering on another GPU's rail crosses NVLink through it (PXN)
  FabricSpec& f = g->fabric;
  f.kind = FabricSpec::Kind::kFatTree;
  f.rails_are_planes = true;  // rail-optimised: NIC k of every node on rail k's leaves
  f.leaf_nodes = 32;          // [unverified] 32 DGX per scalable unit, one leaf per rail per SU
  f.spines = 16;              // [guess] 64-port switches: 32 uplinks per leaf as 2 x 400 Gb/s to 16 spines
  f.port_latency = Seconds(1.0 * us);
  f.port_source = "MLPerf system file: one NIC per GPU; latency [guess]";
  f.switch_bandwidth = BytesPerSec(100.0 * GBps);
  f.switch_latency = Seconds(0.5 * us);
  f.switch_source = "[guess] 2 x 400 Gb/s from each leaf to each spine";
  g->description = "DGX H100: NVSwitch nodes, rail-optimised InfiniBand fat tree (NDR 400 Gb/s)";
  return g;
}

// NCCL 2.18's tuning model (engine/collective_library.hpp) on a machine of GPU generation `g`.
Library nccl(Library::Generation g, bool amd_host, Library::IntraLink intra, const char* source) {
  Library l;
  l.family = Library::Family::kNccl;
  l.generation = g;
  l.amd_host = amd_host;
  l.intra = intra;
  l.source = source;
  return l;
}

// The V100 SXM2 / SXM3 (V1 = NVIDIA V100 datasheet: 125 TFLOP/s FP16 tensor, 900 GB/s HBM2, 80 SMs; it has no bf16).
core::DeviceSpec v100(const char* name, double hbm_gib) {
  core::DeviceSpec d;
  d.name = name;
  set_peak(d, Dtype::kFp16, 125.0 * TF);  // V1
  set_peak(d, Dtype::kFp32, 15.7 * TF);   // [unverified] V1 (SXM2 clocks)
  d.hbm = core::Bytes(hbm_gib * core::kGiB);
  d.hbm_bandwidth = BytesPerSec(900.0 * GBps);  // V1
  d.gemm_efficiency = core::kFittedV100GemmEfficiency;  // fitted on DGX-2 V100s (see there)
  d.memory_efficiency = 0.80;                            // [guess]
  d.compute_units = 80;                                  // V1
  d.kernel_overhead = Seconds(kKernelOverheadGuess * us);
  d.runtime_reserved = core::Bytes(0.5 * core::kGiB);  // [guess] CUDA context + communication library
  d.efficiency_source = "GEMM ceiling fitted on zeropp-v100-fit (ZeRO++'s 18B GPT on 384 DGX-2 V100s); memory-bound [guess]";
  return d;
}

core::ClusterSpec make_frontier() {
  core::ClusterSpec c;
  c.name = "frontier";
  c.devices_per_node = 8;  // 4x MI250X = 8 GCDs, each one device to software (F1)
  c.max_nodes = 9408;      // 74 cabinets of 128 nodes as built (F1, press); the guide now lists 9,856
  c.source = "OLCF Frontier User Guide (F1) and node diagram (F2); ROCm MI250 microarchitecture (F3)";
  auto& d = c.device;
  d.name = "MI250X GCD";
  set_peak(d, Dtype::kBf16, 191.5 * TF);  // 1024 FLOP/clk/CU x 110 CU x 1.7 GHz (F3, derived)
  set_peak(d, Dtype::kFp16, 191.5 * TF);  // same matrix rate as bf16 (F3, derived)
  set_peak(d, Dtype::kFp32, 47.9 * TF);   // [unverified] 256 FLOP/clk/CU matrix FP32 x 110 x 1.7 GHz
  d.hbm = core::Bytes(64.0 * core::kGiB);              // 64 GB HBM2E per GCD (F1); HBM capacity is binary
  d.hbm_bandwidth = BytesPerSec(1600.0 * GBps);        // 1.6 TB/s per GCD (F1)
  // Fitted on Megatron-DeepSpeed runs on LUMI-G (core::kFittedMi250xGemmEfficiency).
  d.gemm_efficiency = core::kFittedMi250xGemmEfficiency;
  // "theoretical 1.6 TB/s but achievable 1.3 TB/s per GCD" (AMD's answer on hip-stream in the LUMI course of May
  // 2023: Lumi-supercomputer/LUMI-training-materials@63255a79 docs/4day-20230530/
  // extra_2_06_Introduction_to_AMD_ROCm_Ecosystem.md)
  d.memory_efficiency = 1.3 / 1.6;
  // Causal FlashAttention-2 (ROCm's CK port of 2023) on an MI250 GCD, fp16, head dim 128, the mean of its 8 x 2,048
  // and 2 x 8,192 token runs: 53.5 TFLOP/s forward and 44.4 backward (ROCm/flash-attention@2554f490 README.md,
  // "Benchmark results(MI250...)"; its benchmark counts the causal half and the backward as 2.5 forwards, as
  // shardsim does) of the MI250 GCD's 181.0 (362.1 per MI250); taken as the same fraction of the MI250X GCD's peak
  // (the same CDNA2 compute unit, 110 instead of 104 of them).
  d.attention_efficiency = 53.535 / 181.05;
  d.attention_backward_efficiency = 44.415 / 181.05;
  d.compute_units = 110;       // 110 CUs per GCD (F1)
  // Compute beside RCCL's kernels: not measured on the GCD, and left unslowed [guess]. RCCL's channels are kernels
  // too, taking CUs from a GEMM's waves as NCCL's take SMs, and AMD's study of concurrent GEMMs and collectives on
  // MI300X finds the pair realising 21% of the ideal overlap on average (arXiv 2412.14335, abstract); with the
  // H100's slowdown (cluster.device.comm_compute_slowdown: 1.367, a what-if) ZeRO++'s gain over ZeRO-3 on 384 GCDs
  // is 1.07x instead of 1.03x. Each slowed device costs the analytical engine up to 8 schedules per plan.
  d.kernel_overhead = Seconds(kKernelOverheadGuess * us);
  d.runtime_reserved = core::Bytes(0.5 * core::kGiB);  // [guess] HIP context + RCCL channels
  d.source = "F1, F3";
  d.efficiency_source =
      "GEMM ceiling fitted on lumi-megatron (Megatron-DeepSpeed GPT on LUMI-G, ROCm 5.2); HBM 1.3 of "
      "1.6 TB/s (AMD, LUMI course 2023); FlashAttention from ROCm's CK port on MI250 (ROCm/flash-attention@2554f490)";
  c.host.memory = core::Bytes(512e9);                  // 512 GB DDR4 (F1)
  c.host.memory_bandwidth = BytesPerSec(205.0 * GBps);  // (F2)
  c.host.link_bandwidth = BytesPerSec(36.0 * GBps);     // one 36 GB/s CPU-GCD link per GCD (F1, F2)
  c.host.cores = 64;                                    // one 64-core EPYC 7A53 (F1; 56 in low-noise mode)
  c.levels = {
      // 4 IF links = 200 GB/s between the two GCDs of one MI250X (F2).
      level("gcd-pair", 2, 200.0, 1, 2.0, "F2 (4 IF links); latency [guess]"),
      // Between packages a GCD has 1 or 2 IF links (50/100 GB/s) to some GCDs and none to others (F2);
      // 50 GB/s = one IF link (F3) is the rate a ring across packages can count on.
      level("node", 8, 50.0, 1, 3.0, "F2, F3 (1 IF link = 50 GB/s); latency [guess]"),
      // 4 Slingshot-11 NICs of 25 GB/s per node, each attached to one GCD of a pair (F1, F2); what RCCL gets of
      // each through libfabric, as fitted on LUMI-G (kRcclSlingshotBandwidth).
      level("slingshot", 9408 * 8, kRcclSlingshotBandwidth, 2, 5.0,
            "F1, F2 (25 GB/s NIC per 2 GCDs); 24.7 GB/s through libfabric as fitted on LUMI-G's RCCL; latency [guess]"),
  };
  c.library.net_step_s = {kOfiSlingshotStepLL, -1.0, kRcclFrontierRingSimple};
  c.library.tree_step_s = {kRcclSlingshotTreeLL, -1.0, kRcclSlingshotTreeSimple};
  c.library.latency_scale = kRcclSlingshotLatencyScale;
  c.library.paced_rings = true;
  // RCCL's tuning model 3, the one its system model of this node names (rome_model_74 in ROCm/rccl@d380693772a8
  // src/graph/rome_models.cc lines 523-533: 8 GCDs at PCI c1-de, 4 NICs at c5/cd/d5/dd as Frontier's and LUMI-G's
  // nodes enumerate them, option "tuning=3"); Infinity Fabric counts as NVLink-class, the hosts are AMD EPYC (F1).
  // LL128 off: model 3 has none (its ratio is 0), and RCCL 2.20 tries LL128 only where every GCD pair is on xGMI
  // (src/enqueue.cc line 1548). RCCL reaches Slingshot-11 through libfabric's CXI
  // provider and the OFI plugin (aws-ofi-rccl). Its tree hops, its share of each NIC and its in-node latency are the
  // fit to RCCL's all-reduce on LUMI-G, whose node is Frontier's (kRcclSlingshot*, above). Its rings' network steps,
  // which those all-reduces cannot show: under Simple the fit to RCCL's own all-gathers on Frontier, which pace its
  // rings (kRcclFrontierRingSimple, paced_rings); under LL (small calls), the one assumption, what a ring step
  // through the same transport was measured to take on Polaris (kOfiSlingshotStepLL, 20 us; Kestrel's NCCL 2.21
  // all-gathers imply 26-37 us). On Slingshot a ring's step costs several tree hops: Polaris's A100 nodes pay 11 us per
  // tree hop (NCCL 2.18 and 2.21 alike), Alps's and Kestrel's H100-class nodes ~5.6 us
  // (validate/data/collectives/machines). Frontier's
  // own RCCL all-reduce of 2025 at 256-2,048 GCDs (frontier_*_all_reduce.txt) is held out.
  c.library.family = Library::Family::kRccl;
  c.library.rccl_tuning_model = 3;
  c.library.amd_host = true;
  c.library.protocols = {true, false, true};
  c.library.source =
      "RCCL tuning model 3, the MI250X node's (ROCm/rccl@d380693772a8 src/graph/rome_models.cc rome_model_74); no "
      "LL128; tree hops, NIC share and latency "
      "scale fitted on LUMI-G's RCCL all-reduce (De Sensi et al., SC24); rings paced by their Simple step, fitted on "
      "RCCL's all-gathers on 1-256 Frontier nodes (Singh et al., arXiv 2504.18658); ring LL steps as measured on "
      "Polaris (one assumption)";
  c.topology = frontier_graph();
  return c;
}

core::ClusterSpec make_lassen() {
  core::ClusterSpec c;
  c.name = "lassen";
  c.devices_per_node = 4;  // IBM AC922: 2 POWER9 + 4 V100 (S2)
  c.max_nodes = 795;       // [unverified]
  c.source = "OLCF Summit guide (S1, same AC922 family), TOP500 Sierra news (S2), IBM REDP-5472 (S3), MPI "
             "ping-pong on Lassen (L1)";
  c.device = v100("V100 16GB", 16.0);  // 16 GB HBM2 (S1)
  c.device.source = "S1, S2; V100 datasheet (V1)";
  c.host.memory = core::Bytes(256e9);                  // [unverified] ~256 GB per node
  c.host.memory_bandwidth = BytesPerSec(340.0 * GBps);  // 170 GB/s per socket x 2 (S1)
  c.host.link_bandwidth = BytesPerSec(75.0 * GBps);     // 3 NVLink2 bricks CPU-GPU (S1, derived)
  c.host.cores = 44;                                    // 2 x 22-core POWER9 (S1, S3)
  c.levels = {
      // Two GPUs per socket joined by 3 NVLink2 bricks of 25 GB/s (S1), as MPI moves data over them (L1).
      level("socket", 2, kLassenNvlink, 1, 0.68,
            "S1 (3 x 25 GB/s NVLink2); L1 (MVAPICH2 GPU ping-pong: 67.3 GB/s, 0.68 us)"),
      // GPUs on different sockets cross the 64 GB/s X-Bus (S1), shared by the socket's two GPUs; as MPI moves GPU
      // data across it (L1).
      level("node", 4, kLassenXbus, 2, 1.06,
            "S1 (X-Bus 64 GB/s); L1 (GPU ping-pong across sockets: 40.2 GB/s, 1.06 us)"),
      // Dual-rail EDR InfiniBand: 2 x 12.5 GB/s per node, one rail per two GPUs (S1, S2); one GPU pair gets 20.3
      // GB/s of the two rails (L1).
      level("infiniband", 795 * 4, kLassenEdrRail, 2, 2.15,
            "S1, S2 (EDR 12.5 GB/s per rail); L1 (MVAPICH2 GPU ping-pong across nodes: 20.3 GB/s of two rails, "
            "2.15 us)"),
  };
  // The Lassen studies run MVAPICH2-GDR, whose algorithm selection is not modelled: rings and trees at the
  // levels' latencies.
  c.library.family = Library::Family::kAlphaBeta;
  c.library.source = "MVAPICH2-GDR: alpha-beta over the levels (its selection is not modelled)";
  c.topology = lassen_graph();
  return c;
}

// NVIDIA DGX-2 (2018), the machine of the ZeRO++ evaluation (Wang et al., arXiv 2306.10209; DeepSpeed's ZeRO++ blog
// and tutorial, microsoft/DeepSpeed@38327e07 blogs/zeropp/, docs/_tutorials/zeropp.md). Sources:
//   X1 = NVIDIA's DGX-2 announcement as reported (pcper.com, 2018-03; datacenterdynamics.com, 2018-03): 16 Tesla
//        V100 32GB joined by 12 NVSwitches at 300 GB/s per GPU (bidirectional), two Xeon Platinum CPUs, 1.5 TB of
//        system memory, eight EDR InfiniBand (100 Gb/s) NICs, "just under 2 petaFLOPS" of tensor-core FP16.
//   V1 = the V100 datasheet (v100() above); its NVLink2: 25 GB/s per link and direction, six links per GPU.
core::ClusterSpec make_dgx2() {
  core::ClusterSpec c;
  c.name = "dgx-2";
  c.devices_per_node = 16;  // X1
  c.max_nodes = 0;          // clusters of DGX-2 are built to order
  c.source = "NVIDIA DGX-2 announcement (X1), V100 datasheet (V1)";
  c.device = v100("V100 SXM3 32GB", 32.0);  // X1 (16 x 125 TFLOP/s = 2 PFLOP/s)
  // [guess] as measured on the H100 and taken for the A100s: NCCL's channels are kernels that take SMs from a GEMM's
  // waves, here of 80 SMs.
  c.device.comm_compute_slowdown = kMeasuredH100CommSlowdown;
  c.device.source = "V1, X1";
  c.host.memory = core::Bytes(1.5e12);                  // X1
  c.host.memory_bandwidth = BytesPerSec(256.0 * GBps);  // [derived] 2 x Xeon Platinum 8168, 6 ch DDR4-2666 each
  c.host.link_bandwidth = BytesPerSec(16.0 * GBps);     // PCIe Gen3 x16 per GPU [derived from V1]
  c.host.cores = 48;                                    // 2 x 24-core Xeon Platinum 8168 (X1)
  c.levels = {
      // Six NVLink2 links per V100 into the NVSwitch planes: 150 GB/s per direction (V1; X1's 300 GB/s is both ways).
      level("nvswitch", 16, 150.0, 1, 2.0, "V1, X1 (6 x 25 GB/s NVLink2 through NVSwitch); latency [guess]"),
      // Eight EDR InfiniBand NICs of 12.5 GB/s per node, one per two GPUs (X1). The ZeRO++ runs used 1, 2, 4 or 8
      // of them (its figures' "IB: 1", "IB: 4", 200 and 800 Gbps): a scenario says how many GPUs share one.
      level("infiniband", 1 << 20, 12.5, 2, 4.0, "X1 (8 x EDR 100 Gb/s per node); latency [guess]"),
  };
  // NCCL's Volta row; Intel hosts (X1); the latency scale as fitted on A100 NVSwitch nodes [guess for V100].
  c.library = nccl(Library::Generation::kVolta, false, Library::IntraLink::kNvlink,
                   "NCCL 2.18 tuning model (Volta); latency scale fitted on A100 NVSwitch (vTrain) [guess for V100]");
  c.library.latency_scale = kNcclA100LatencyScale;
  return c;
}

core::ClusterSpec make_dgx_h100() {
  core::ClusterSpec c;
  c.name = "dgx-h100";
  c.devices_per_node = 8;
  c.max_nodes = 0;  // a DGX SuperPOD is built to order
  c.source = "NVIDIA DGX H100 datasheet and MLPerf system description";
  auto& d = c.device;
  d.name = "H100 SXM 80GB";
  set_peak(d, Dtype::kBf16, 989.0 * TF);  // dense (datasheet)
  set_peak(d, Dtype::kFp16, 989.0 * TF);  // dense (datasheet)
  set_peak(d, Dtype::kFp8, 1979.0 * TF);  // [unverified] dense FP8 (datasheet)
  set_peak(d, Dtype::kFp32, 67.0 * TF);   // [unverified] non-tensor FP32 (datasheet)
  d.hbm = core::Bytes(80.0 * core::kGiB);        // 80 GB HBM3 (datasheet)
  d.hbm_bandwidth = BytesPerSec(3350.0 * GBps);  // 3.35 TB/s (datasheet)
  // The compute model fitted to an H100 SXM's own measurements (`shardsim calibrate` of
  // validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23.yaml: 1,416 cuBLAS GEMMs of the built-in models' shapes,
  // 224 PyTorch FlashAttention runs, 8 memory-bound PyTorch operations; the test Presets.H100DeviceIsItsOwnFit
  // refits it). Each value is the fit +- 1 sigma; the kernel overhead is one eager PyTorch operation measured on
  // the same machine.
  d.gemm_efficiency = 0.6991;                 // +- 0.0017
  // GEMMs whose operand rows allow only narrow loads (24 with a dimension of 2 or 4 x k bf16 elements, 24 with an
  // odd one, cuBLAS: 66% / 81% -> 7.9% / 18% mean error; the 48 through PyTorch, held out: 73% -> 12%).
  d.gemm_efficiency_narrow = 0.23795;         // +- 0.0046
  d.gemm_efficiency_odd = 0.13369;            // +- 0.0055
  d.memory_efficiency = 0.5438;               // +- 0.079 (PyTorch's norms, activations, softmax, AdamW)
  d.stream_efficiency = 0.8356;               // +- 0.026 (device-to-device copies of 64 MiB to 1 GiB)
  // Causal FlashAttention by its schedule (DeviceSpec::attention_slots): two resident blocks per SM (of one to
  // three, two fits the 224 runs best), each direction's tile ceiling fitted with its blocks' fixed cost (mean
  // |error| 7.1% forward, 7.9% backward; one efficiency at every shape: 23.2% and 20.0%).
  d.attention_slots = 2;
  d.attention_efficiency = 0.3842;            // +- 0.0133, causal flash forward, per tile
  d.attention_block_cost = 2.149;             // +- 0.48 tiles
  d.attention_backward_efficiency = 0.3948;   // +- 0.0197
  d.attention_backward_block_cost = 6.844;    // +- 0.94 tiles
  // llm-foundry's Triton FlashAttention (flash-attn's Triton port; attn_impl triton), which MosaicML's H100
  // benchmarks ran: fitted on their bf16 runs of 8,192-65,536 tokens, where it is most of the work
  // (core::kFittedH100TritonAttentionForward).
  d.triton_attention_efficiency = core::kFittedH100TritonAttentionForward;
  d.triton_attention_backward_efficiency = core::kFittedH100TritonAttentionBackward;
  d.triton_attention_source = "fitted on mosaic-mpt-h100-long (llm-foundry's Triton FlashAttention on 8 H100s)";
  // cuDNN's fused attention (what scaled_dot_product_attention runs when left to choose, with cuDNN 9.9 or newer):
  // FlashAttention-2's schedule at cuDNN's speed-up over it measured on an H100 SXM (cuDNN 9.19, PyTorch 2.11;
  // core::kMeasuredH100CudnnAttentionSpeedup: 1.68x forward, 1.65x backward, 11% / 9% mean |error| over 112 shapes;
  // head dimension 96 runs about 20% slower than the speed-up gives). Published for cuDNN 9: 1.62x / 1.60x.
  d.cudnn_attention_speedup = core::kMeasuredH100CudnnAttentionSpeedup;
  d.cudnn_attention_backward_speedup = core::kMeasuredH100CudnnAttentionBackwardSpeedup;
  d.cudnn_attention_source =
      "FlashAttention-2's fit at cuDNN's speed-up over it measured on an H100 SXM: "
      "validate/results/NVIDIA-H100-80GB-HBM3-2026-11-27-attention.yaml";
  d.kernel_overhead = Seconds(9.5209 * us);   // torch.add_ on a tiny tensor, eager, back to back
  d.comm_compute_slowdown = kMeasuredH100CommSlowdown;
  d.efficiency_source = "calibrated on an H100 SXM: validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23.yaml";
  // shardsim's codec kernels on the same H100 (core::kH100ZfpCompressBps and beside it).
  d.codec = core::CodecRates{BytesPerSec(core::kH100ZfpCompressBps), BytesPerSec(core::kH100ZfpDecompressBps),
                             BytesPerSec(core::kH100MpcCompressBps), BytesPerSec(core::kH100MpcDecompressBps),
                             "shardsim's kernels measured on an H100 SXM (validate/results/, 1 GiB)"};
  d.compute_units = 132;  // 132 SMs in the SXM5 part (NVIDIA H100 datasheet)
  d.runtime_reserved = core::Bytes(0.5 * core::kGiB);  // [guess] CUDA context + NCCL
  d.source = "datasheet; measured GEMM and copy rates";
  c.host.memory = core::Bytes(2e12);                     // 2 TB (MLPerf system file)
  c.host.memory_bandwidth = BytesPerSec(614.0 * GBps);    // [unverified] 2 sockets x 8 ch DDR5-4800
  c.host.cores = 112;                                     // 2 x 56-core Xeon Platinum 8480C (MLPerf system file)
  // PCIe Gen5 x16 (64 GB/s per direction, datasheet); pinned host-to-device copies reached 54.8 GB/s on an H100
  // SXM (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23.yaml, the copy fit of `shardsim calibrate`); again
  // 54-55 GB/s each way on two other machines (...-2026-11-26-hostlink.csv). Per direction: both at once, each
  // kept 42-52 GB/s there, so the link is modelled full duplex (a loss of 6-24% per direction left out), and GEMMs
  // beside copy-engine transfers ran unslowed (host copies do not interfere with compute, graph::interferes).
  c.host.link_bandwidth = BytesPerSec(54.81 * GBps);
  c.levels = {
      // NVLink4 through NVSwitch: 900 GB/s bidirectional per GPU = 450 GB/s per direction (MLPerf file), at what
      // NCCL's rings get of it (kH100NvswitchBandwidth).
      level("nvswitch", 8, kH100NvswitchBandwidth, 1, 2.0,
            "NVIDIA (900 GB/s bidirectional per GPU) at the share NCCL's rings reach (8-GPU all-gather, NCCL 2.28: "
            "validate/data/collectives/h100_1x8_all_gather.txt); latency [guess]"),
      // 8 x 400 Gb/s InfiniBand compute NICs, one per GPU (MLPerf system file).
      level("infiniband", 1 << 20, 50.0, 1, 4.0, "NVIDIA (400 Gb/s per GPU); latency [guess]"),
  };
  // Intel Xeon 8480C hosts (datasheet); latency scale as fitted on A100s (see kNcclA100LatencyScale) [guess].
  c.library = nccl(Library::Generation::kHopper, false, Library::IntraLink::kNvlink,
                   "NCCL 2.18 tuning model; latency scale fitted on A100 NVSwitch (vTrain all-reduce) [guess for H100]");
  c.library.latency_scale = kNcclA100LatencyScale;
  // The third-generation NVSwitch reduces and multicasts (NVLink SHARP): NCCL runs a node's all-reduces as NVLS. The
  // 8-GPU all-reduce of h100_1x8_all_reduce.txt (held out) reaches 480 GB/s of bus bandwidth, what NVLS at NCCL's
  // Hopper efficiency (0.85) of the rings' 363.5 GB/s gives.
  c.library.nvls = true;
  c.topology = dgx_graph();
  return c;
}

// DGX H200: the DGX H100 system with H200 SXM GPUs (NVIDIA DGX H200 datasheet: 8 x H200 141 GB, NVLink4 900 GB/s
// per GPU through NVSwitch, 8 x ConnectX-7 400 Gb/s for compute, 2 x Xeon 8480C, 2 TB). The H200 is the H100's
// Hopper die with HBM3e (NVIDIA H200 datasheet: the same dense BF16/FP16 989 TFLOP/s and FP8 1,979, 4.8 TB/s, 141 GB).
core::ClusterSpec make_dgx_h200() {
  core::ClusterSpec c = make_dgx_h100();
  c.name = "dgx-h200";
  c.source = "NVIDIA DGX H200 and H200 datasheets; the DGX H100 system (MLPerf system description)";
  auto& d = c.device;
  d.name = "H200 SXM 141GB";
  // 143,771 MiB as nvidia-smi reports the measured H200 (the datasheet's 141 GB).
  d.hbm = core::Bytes(143771.0 * 1024.0 * 1024.0);
  d.hbm_bandwidth = BytesPerSec(4800.0 * GBps);  // 4.8 TB/s (datasheet)
  // The compute model fitted to an H200 SXM's own measurements (`shardsim calibrate` of
  // validate/results/NVIDIA-H200-2026-11-26.yaml: the same GEMM, FlashAttention and memory-bound sweep as the
  // H100's; the test DeviceFit.H200PresetIsTheFitOfItsMeasurements refits it). Each value is the fit +- 1 sigma.
  d.gemm_efficiency = 0.7006;                // +- 0.0016 (the H100: 0.6991)
  d.gemm_efficiency_narrow = 0.23896;        // +- 0.0040 (the H100: 0.2380)
  d.gemm_efficiency_odd = 0.13033;           // +- 0.0052 (the H100: 0.1337)
  // PyTorch's memory-bound operations reach a smaller share of the faster HBM than on the H100 (0.5438): softmax
  // and SwiGLU take the same time on both GPUs (bound by the SMs, which are the same), residual adds scale with HBM.
  d.memory_efficiency = 0.4411;              // +- 0.078
  d.stream_efficiency = 0.8030;              // +- 0.036 (device-to-device copies of 64 MiB to 1 GiB)
  // FlashAttention by its schedule, two resident blocks per SM as on the H100 (the same SM); the fits' mean |error|
  // 7.0% forward, 6.4% backward (one efficiency at every shape: 23% and 20%).
  d.attention_slots = 2;
  d.attention_efficiency = 0.3550;           // +- 0.0129, causal flash forward, per tile
  d.attention_block_cost = 1.049;            // +- 0.46 tiles
  d.attention_backward_efficiency = 0.3763;  // +- 0.0137
  d.attention_backward_block_cost = 5.668;   // +- 0.63 tiles
  // The Triton FlashAttention rates: the H100's fit, kept [guess]: the same SMs run the same kernels, which are
  // bound by them (the H100's fit is 224 / 155 TFLOP/s of 989, far from its HBM's bound).
  d.triton_attention_source = "[guess] the H100's fit (mosaic-mpt-h100-long): the same SMs";
  // cuDNN's attention: the H100's measured speed-up over FlashAttention-2 (kept from make_dgx_h100), on the H200's
  // own FlashAttention-2 fit: the same SMs.
  d.cudnn_attention_source =
      "FlashAttention-2's fit at cuDNN's speed-up over it measured on an H100 SXM [guess: the same SMs] "
      "(validate/results/NVIDIA-H100-80GB-HBM3-2026-11-27-attention.yaml)";
  d.kernel_overhead = Seconds(11.2626 * us);  // torch.add_ on a tiny tensor, eager, back to back
  d.efficiency_source = "calibrated on an H200 SXM: validate/results/NVIDIA-H200-2026-11-26.yaml";
  // shardsim's codec kernels on the same H200 at 1 GiB (the test Presets.H200CodecRatesAreItsKernelMeasurements).
  d.codec = core::CodecRates{BytesPerSec(228.48e9), BytesPerSec(136.01e9), BytesPerSec(145.97e9), BytesPerSec(80.98e9),
                             "shardsim's kernels measured on an H200 SXM (validate/results/, 1 GiB)"};
  // Pinned host-to-device copies on the measured H200 (the copy fit of `shardsim calibrate`); PCIe Gen5 x16.
  c.host.link_bandwidth = BytesPerSec(55.3916 * GBps);
  auto g = std::make_shared<NodeGraphSpec>(*dgx_graph());
  g->description = "DGX H200 (the DGX H100 system): NVSwitch nodes, rail-optimised InfiniBand fat tree (NDR 400 Gb/s)";
  c.topology = std::move(g);
  return c;
}

// The A100 family. Sources:
//   A1 = NVIDIA A100 Tensor Core GPU datasheet (nvidia.com, a100 datasheet r4), as transcribed by third parties;
//        NVIDIA's "Introducing NVIDIA HGX A100" developer blog (12 NVLink3 ports per GPU, 600 GB/s).
//   A2 = NVIDIA's A800 announcement (Nov 2022, reported by Reuters): the A100 with NVLink at 400 GB/s.
//   D1 = NVIDIA's MLPerf Training system descriptions of DGX A100 (mlcommons/training_results_v1.0@8200377f,
//        NVIDIA/systems/dgxa100_n32_ngc21.05_pytorch.json): 8 x A100-SXM4-80GB, NVSwitch 600 GB/s,
//        2 x EPYC 7742, 2 TB, 8 x ConnectX-6 HDR 200 Gb/s for compute.
//   P1 = ALCF Polaris machine overview (argonne-lcf/user-guides@7d04a3f9, docs/polaris/index.md): 560 nodes,
//        1 x EPYC 7543P, 512 GB DDR4 (8 channels), 4 x A100-SXM4-40GB with NV4 links between every pair,
//        2 x Slingshot-11 adapters.
// NVIDIA A100 datasheet (A1): dense BF16/FP16 tensor 312 TFLOP/s, FP32 19.5 TFLOP/s, 80 GB HBM2e
// at 2,039 GB/s (40 GB: 1,555 GB/s), NVLink3 600 GB/s bidirectional per GPU (12 links of 25 GB/s per direction),
// PCIe Gen4 x16 (32 GB/s per direction). A800 = A100 with NVLink cut to 400 GB/s bidirectional (A2: NVIDIA A800
// datasheet).
core::DeviceSpec a100(const char* name, double hbm_gib, double hbm_gbps) {
  core::DeviceSpec d;
  d.name = name;
  set_peak(d, Dtype::kBf16, 312.0 * TF);  // A1, dense
  set_peak(d, Dtype::kFp16, 312.0 * TF);  // A1, dense
  set_peak(d, Dtype::kFp32, 19.5 * TF);   // A1, non-tensor
  d.hbm = core::Bytes(hbm_gib * core::kGiB);
  d.hbm_bandwidth = BytesPerSec(hbm_gbps * GBps);
  d.compute_units = 108;  // 108 SMs (A1)
  // GEMM ceiling, memory-bound kernels and causal flash attention: fitted on the A100's fit sets (see
  // core::kFittedA100GemmEfficiency).
  d.gemm_efficiency = core::kFittedA100GemmEfficiency;
  d.memory_efficiency = core::kFittedA100MemoryEfficiency;
  // The attention fit is of llm-foundry's Triton kernels (its long runs); FlashAttention-2's CUDA kernels on the
  // A100 borrow it, reported as a [guess], until a run or a measurement of them is fitted.
  d.triton_attention_efficiency = core::kFittedA100AttentionForward;
  d.triton_attention_backward_efficiency = core::kFittedA100AttentionBackward;
  d.triton_attention_source = "fitted on mosaic-mpt-a100-long (llm-foundry's Triton FlashAttention on 8 A100s)";
  d.efficiency_source =
      "GEMM ceiling, memory-bound and flash attention fitted on vtrain-single and mosaic-mpt-a100-long (Megatron and "
      "MosaicML runs)";
  // [guess] as measured on the H100 (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23-overlap.csv): NCCL's
  // channels are the same kernels, taking SMs from a GEMM's waves, on a GPU with 108 SMs instead of 132.
  d.comm_compute_slowdown = kMeasuredH100CommSlowdown;
  d.kernel_overhead = Seconds(kKernelOverheadGuess * us);
  d.runtime_reserved = core::Bytes(0.5 * core::kGiB);  // [guess] CUDA context + NCCL
  d.source = "A1 (NVIDIA A100 datasheet)";
  return d;
}


// Nodes in a DGX A100 SuperPOD's scalable unit, whose leaf switches (one per rail) join them [unverified].
constexpr int kDgxA100UnitNodes = 20;

core::ClusterSpec make_dgx_a100() {
  core::ClusterSpec c;
  c.name = "dgx-a100";
  c.devices_per_node = 8;
  c.max_nodes = 0;  // a SuperPOD is built to order
  c.source = "NVIDIA DGX A100 user guide and datasheet (D1); A100 datasheet (A1)";
  c.device = a100("A100 SXM4 80GB", 80.0, 2039.0);
  c.host.memory = core::Bytes(2e12);                     // 2 TB in the 640 GB (8 x 80 GB) system (D1)
  c.host.memory_bandwidth = BytesPerSec(409.6 * GBps);    // [derived] 2x EPYC 7742, 8 ch DDR4-3200 each
  c.host.link_bandwidth = BytesPerSec(32.0 * GBps);       // PCIe Gen4 x16 per GPU (A1)
  c.host.cores = 128;                                      // 2 x 64-core EPYC 7742 (D1)
  c.levels = {
      // NVLink3 through 6 NVSwitches: 600 GB/s bidirectional per GPU = 300 GB/s per direction (A1, D1). What
      // NCCL gets of it: 217 GB/s, with NCCL's latency table x 1.91 (kNcclA100LatencyScale), fitted (shardsim
      // calibrate --collectives --fit collectives.latency_scale,network.nvswitch.bandwidth) to vTrain's measured
      // all-reduce on 2-8 A100s, 1 MiB - 1 GiB (validate/data/vtrain/allreduce/: 5.2% mean error over 7,168 sizes;
      // the datasheet's 300 GB/s and the table as NCCL ships it were 8.1% rms-log off). The 8.9 us per step is the
      // alpha-beta fit of the same data (the links' latency under `best` and the hierarchical what-if).
      level("nvswitch", 8, kA100NvswitchBandwidth, 1, kA100NvswitchLatency,
            "fitted to NCCL all-reduce measured on 2-8 A100s (vTrain, validate/data/vtrain/allreduce); link: A1, D1"),
      // 8 single-port ConnectX-6 HDR 200 Gb/s compute NICs, one per GPU (D1).
      level("infiniband", 1 << 20, 25.0, 1, 4.0,
            "D1 (8 x HDR 200 Gb/s per node); latency [guess]; groups: a SuperPOD unit's leaves [unverified]"),
  };
  c.levels.back().group_nodes = kDgxA100UnitNodes;
  c.library = nccl(Library::Generation::kAmpere, true, Library::IntraLink::kNvlink,
                   "NCCL 2.18 tuning model; latency scale fitted to vTrain's measured A100 all-reduce");
  c.library.latency_scale = kNcclA100LatencyScale;
  return c;
}

core::ClusterSpec make_a800() {
  core::ClusterSpec c;
  c.name = "a800";
  c.devices_per_node = 8;
  c.max_nodes = 0;
  c.source = "AMSP testbed (Chen et al., arXiv 2311.00257 v2, Sec. VI-A): 8 x A800-80GB per node, 4 x HDR per node";
  c.device = a100("A800 SXM4 80GB", 80.0, 2039.0);
  c.device.source = "A2 (A800 = A100 with 400 GB/s NVLink)";
  c.host.memory = core::Bytes(1e12);                   // [unverified] not stated by the testbed's paper
  c.host.memory_bandwidth = BytesPerSec(409.6 * GBps);  // [unverified] two-socket DDR4-3200 server
  c.host.link_bandwidth = BytesPerSec(32.0 * GBps);     // PCIe Gen4 x16 (A1)
  c.levels = {
      // NVLink 400 GB/s bidirectional per GPU = 200 GB/s per direction (A2): 8 of the A100's 12 links, behind the
      // same NVSwitches, so NCCL gets the share of it that the DGX A100 fit found of its 300 GB/s (217), at that
      // fit's step latency.
      level("nvswitch", 8, 200.0 * kA100NvswitchBandwidth / 300.0, 1, kA100NvswitchLatency,
            "A2 (NVLink 400 GB/s bidirectional per GPU) at the share and step NCCL reaches on DGX A100 (vTrain fit)"),
      // 4 x HDR 200 Gb/s per node (800 Gb/s, no SHARP): one 25 GB/s port per two GPUs (AMSP v2 Sec. VI-A).
      level("infiniband", 1 << 20, 25.0, 2, 4.0,
            "AMSP v2 Sec. VI-A (4 x HDR per node); latency [guess]; groups [guess]: a SuperPOD unit's 20 nodes"),
  };
  // The fabric's first tier is not described: [guess] a DGX A100 SuperPOD's scalable unit of 20 nodes.
  c.levels.back().group_nodes = kDgxA100UnitNodes;
  // NCCL (the testbed's PyTorch 2.1 ships 2.18); the host CPU is not stated [guess: Intel]; latency scale as
  // fitted on A100 NVSwitch nodes (the same GPU and switch).
  c.library = nccl(Library::Generation::kAmpere, false, Library::IntraLink::kNvlink,
                   "NCCL 2.18 tuning model (PyTorch 2.1); host CPU [guess]; latency scale fitted on A100 (vTrain)");
  c.library.latency_scale = kNcclA100LatencyScale;
  return c;
}

core::ClusterSpec make_polaris() {
  core::ClusterSpec c;
  c.name = "polaris";
  c.devices_per_node = 4;
  c.max_nodes = 560;  // P1
  c.source = "ALCF Polaris machine overview (P1): HPE Apollo 6500 Gen10+ nodes";
  c.device = a100("A100 SXM4 40GB", 40.0, 1555.0);
  c.host.memory = core::Bytes(512e9);                  // 512 GB DDR4 (P1)
  c.host.memory_bandwidth = BytesPerSec(204.8 * GBps);  // [derived] one EPYC 7543P, 8 ch DDR4-3200
  c.host.link_bandwidth = BytesPerSec(32.0 * GBps);     // PCIe Gen4 x16 per GPU (A1, P1)
  c.host.cores = 32;                                    // one 32-core EPYC 7543P (P1)
  // The EPYC host's page faults on the fresh pageable temporaries of DeepSpeed's gradient copies: fitted with
  // host.memory_efficiency on the offload-single set (see core::kFittedPolarisPageFaultS).
  c.host.page_fault = Seconds(core::kFittedPolarisPageFaultS);
  c.levels = {
      // Four A100 fully connected by NVLink3: 4 links of 25 GB/s per direction between each pair (A1, P1).
      level("nvlink", 4, 100.0, 1, 2.0, "A1, P1 (4 NVLink3 links per GPU pair); latency [guess]"),
      // 2 Slingshot-11 NICs of 25 GB/s per node, one per two GPUs (P1); what NCCL's rings get of them, fitted
      // (kPolarisSlingshotBandwidth).
      level("slingshot", 560 * 4, kPolarisSlingshotBandwidth, 2, 5.0,
            "P1 (2 x Slingshot-11 200 Gb/s per node); NCCL's share fitted to ALCF's nccl-tests; latency [guess]; "
            "dragonfly groups [guess]: four racks"),
  };
  // Dragonfly groups of the Slingshot fabric: not published; [guess] four racks of 14 nodes (P1: 7 chassis of 2
  // nodes per rack).
  c.levels.back().group_nodes = 56;
  c.library = nccl(Library::Generation::kAmpere, true, Library::IntraLink::kNvlink,
                   "NCCL 2.18 tuning model; EPYC host (P1); latency scale fitted on A100 NVSwitch (vTrain); network "
                   "steps and tree hops through the OFI plugin fitted to ALCF's nccl-tests on Polaris");
  c.library.latency_scale = kNcclA100LatencyScale;
  c.library.net_step_s = {kOfiSlingshotStepLL, kOfiSlingshotStepLL128, -1.0};
  c.library.tree_step_s = {kPolarisTreeHopLL, kPolarisTreeHopLL128, -1.0};
  return c;
}

const std::vector<core::ClusterSpec>& presets() {
  static const std::vector<core::ClusterSpec> kPresets = [] {
    std::vector<core::ClusterSpec> p = {make_frontier(), make_lassen(), make_dgx_h100(), make_dgx_h200(),
                                        make_dgx_a100(), make_a800(),    make_polaris(),
                                        make_dgx2()};
    for (auto& c : p) {
      c.preset = c.name;
      // A machine link by link: its fabric's first tier is the outermost level's groups (one description).
      if (c.topology) c.levels.back().group_nodes = core::first_tier_nodes(c.topology->fabric);
    }
    return p;
  }();
  return kPresets;
}

}  // namespace

std::vector<std::string> cluster_preset_names() {
  std::vector<std::string> names;
  for (const auto& c : presets()) names.push_back(c.name);
  return names;
}

const core::ClusterSpec* find_cluster_preset(const std::string& name) {
  const auto& p = presets();
  auto it = std::find_if(p.begin(), p.end(), [&](const core::ClusterSpec& c) { return c.name == name; });
  return it == p.end() ? nullptr : &*it;
}

const core::ClusterSpec* find_preset_for_device(const std::string& device_name) {
  struct Rule {
    std::vector<const char*> has, lacks;
    const char* preset;
  };
  // The runtime's names carry the memory size; PCIe and NVL parts have other clocks and power limits.
  static const std::vector<Rule> kRules = {{{"H100"}, {"PCIe", "NVL", "94GB"}, "dgx-h100"},
                                           {{"H200"}, {"NVL"}, "dgx-h200"},
                                           {{"A100", "80GB"}, {"PCIe"}, "dgx-a100"},
                                           {{"A100", "40GB"}, {"PCIe"}, "polaris"},
                                           {{"A800", "80GB"}, {"PCIe"}, "a800"},
                                           {{"V100", "16GB"}, {"PCIe"}, "lassen"},
                                           {{"V100", "32GB"}, {"PCIe"}, "dgx-2"},
                                           {{"MI250X"}, {}, "frontier"}};
  for (const Rule& r : kRules) {
    const auto in = [&](const char* t) { return device_name.find(t) != std::string::npos; };
    if (std::all_of(r.has.begin(), r.has.end(), in) && std::none_of(r.lacks.begin(), r.lacks.end(), in)) {
      return find_cluster_preset(r.preset);
    }
  }
  return nullptr;
}

}  // namespace shardsim::topology
