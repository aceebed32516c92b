#include "sim/engine/simgrid_adapter.hpp"

#include <cmath>
#include <mutex>

#include "sim/core/errors.hpp"

#ifdef SHARDSIM_HAVE_SIMGRID
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#endif

namespace shardsim::engine {

#ifdef SHARDSIM_HAVE_SIMGRID

namespace sg = simgrid::s4u;
namespace sgr = simgrid::kernel::routing;

namespace {

// A netzone whose routes come from shardsim's router, computed when a transfer starts: no route table, so
// the platform costs memory linear in its links and hosts.
class RouterZone : public sgr::NetZoneImpl {
 public:
  RouterZone(const std::string& name, const topology::LinkTopology& topology)
      : sgr::NetZoneImpl(name), topology_(topology) {}

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    const auto [a, lane] = vertex_of(src);
    const auto [b, lane_b] = vertex_of(dst);
    SHARDSIM_ASSERT(a >= 0 && b >= 0 && lane == lane_b, "a route to a host outside the topology or its lane");
    topology_.route(a, b, hops_);
    const std::size_t base = static_cast<std::size_t>(lane) * topology_.link_count();
    for (const topology::Hop& h : hops_) {
      const auto i = base + static_cast<std::size_t>(h.link);
      into->link_list_.push_back(h.forward ? up_[i] : down_[i]);
      if (latency) *latency += topology_.link_latency_s(h.link);
    }
  }

  void map(const sgr::NetPoint* p, int vertex, int lane) {
    const auto id = static_cast<std::size_t>(p->id());
    if (vertex_by_id_.size() <= id) vertex_by_id_.resize(id + 1, {-1, 0});
    vertex_by_id_[id] = {vertex, lane};
  }
  void add_link(simgrid::kernel::resource::StandardLinkImpl* up, simgrid::kernel::resource::StandardLinkImpl* down) {
    up_.push_back(up);
    down_.push_back(down);
  }

 private:
  [[nodiscard]] std::pair<int, int> vertex_of(const sgr::NetPoint* p) const {
    const auto id = static_cast<std::size_t>(p->id());
    return id < vertex_by_id_.size() ? vertex_by_id_[id] : std::pair<int, int>{-1, 0};
  }

  const topology::LinkTopology& topology_;
  std::vector<std::pair<int, int>> vertex_by_id_;  // (vertex, lane)
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> up_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> down_;
  std::vector<topology::Hop> hops_;
};

}  // namespace

struct NetSim::Impl {
  std::vector<std::string> arg_text;
  std::vector<char*> argv;
  int argc = 0;
  std::unique_ptr<sg::Engine> engine;
  RouterZone* zone = nullptr;
  std::vector<sg::Host*> hosts;  // per lane and topology vertex; nullptr for NICs and switches
  std::size_t vertices = 0;
  sg::Host* clock = nullptr;     // where actors live (they only sleep and start transfers)
  sg::MutexPtr mutex;
  sg::ConditionVariablePtr cv;
  std::vector<sg::ConditionVariablePtr> signals;

  void ensure_sync() {
    if (!mutex) {
      mutex = sg::Mutex::create();
      cv = sg::ConditionVariable::create();
    }
  }
};

namespace {

// CM02 without its TCP window bound or RTT weighting, cross-traffic off, no bandwidth or latency factors.
std::unique_ptr<sg::Engine> make_engine(std::vector<std::string>& arg_text, std::vector<char*>& argv, int& argc) {
  arg_text = {"shardsim",
              "--log=root.thres:critical",
              "--cfg=network/model:CM02",
              "--cfg=network/crosstraffic:0",
              "--cfg=network/weight-S:0",
              "--cfg=network/TCP-gamma:1e18",
              "--cfg=network/latency-factor:1.0",
              "--cfg=network/bandwidth-factor:1.0"};
  for (auto& a : arg_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  argc = static_cast<int>(arg_text.size());
  return std::make_unique<sg::Engine>(&argc, argv.data());
}

}  // namespace

double time_transfer_on_platform_file(const std::string& path, const std::string& src, const std::string& dst,
                                      double bytes) {
  std::vector<std::string> arg_text;
  std::vector<char*> argv;
  int argc = 0;
  auto engine = make_engine(arg_text, argv, argc);
  engine->load_platform(path);
  sg::Host* a = engine->host_by_name(src);
  sg::Host* b = engine->host_by_name(dst);
  double end = -1.0;
  sg::Actor::create("probe", a, [a, b, bytes, &end] {
    sg::Comm::sendto(a, b, static_cast<std::uint64_t>(std::ceil(bytes)));
    end = sg::Engine::get_clock();
  });
  engine->run();
  return end;
}

NetSim::NetSim(const topology::LinkTopology& topology, int lanes) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.engine = make_engine(m.arg_text, m.argv, m.argc);

  m.zone = new RouterZone(topology.name(), topology);  // owned by SimGrid: the root netzone
  sg::NetZone* z = m.zone->get_iface();
  const std::size_t nv = topology.vertex_count();
  m.vertices = nv;
  m.hosts.assign(nv * static_cast<std::size_t>(lanes), nullptr);
  for (int lane = 0; lane < lanes; ++lane) {
    const std::string prefix = lane == 0 ? std::string() : "lane" + std::to_string(lane) + ".";
    for (std::size_t v = 0; v < nv; ++v) {
      const topology::Vertex x = topology.vertex(static_cast<int>(v));
      if (x.kind != topology::VertexKind::kDevice && x.kind != topology::VertexKind::kHost) continue;
      sg::Host* h = z->create_host(prefix + x.name, 1e9);
      h->seal();
      m.zone->map(h->get_netpoint(), static_cast<int>(v), lane);
      m.hosts[static_cast<std::size_t>(lane) * nv + v] = h;
    }
  }
  m.clock = z->create_host("shardsim.clock", 1e9);
  m.clock->seal();
  const std::size_t nl = topology.link_count();
  for (int lane = 0; lane < lanes; ++lane) {
    const std::string prefix = lane == 0 ? std::string() : "lane" + std::to_string(lane) + ".";
    for (std::size_t l = 0; l < nl; ++l) {
      const topology::Link k = topology.link(static_cast<int>(l));
      sg::SplitDuplexLink* link = z->create_split_duplex_link(prefix + k.name, k.bandwidth.value());
      link->set_latency(k.latency.value());
      link->seal();
      m.zone->add_link(link->get_link_up()->get_impl(), link->get_link_down()->get_impl());
    }
  }
  z->seal();
}

NetSim::~NetSim() = default;

void NetSim::spawn(const std::string& name, std::function<void()> body) {
  sg::Actor::create(name, impl_->clock, std::move(body));
}

void NetSim::run() { impl_->engine->run(); }

double NetSim::now() { return sg::Engine::get_clock(); }

void NetSim::sleep_for(double seconds) {
  if (seconds > 0.0) sg::this_actor::sleep_for(seconds);
}

void NetSim::transfer(const std::vector<NetFlow>& flows, int lane) {
  const std::size_t base = static_cast<std::size_t>(lane) * impl_->vertices;
  std::vector<sg::CommPtr> comms;
  comms.reserve(flows.size());
  for (const NetFlow& f : flows) {
    if (!(f.bytes > 0.0)) continue;
    sg::Host* a = impl_->hosts[base + static_cast<std::size_t>(f.src_vertex)];
    sg::Host* b = impl_->hosts[base + static_cast<std::size_t>(f.dst_vertex)];
    SHARDSIM_ASSERT(a && b, "transfers run between devices and CPUs");
    comms.push_back(sg::Comm::sendto_async(a, b, static_cast<std::uint64_t>(std::ceil(f.bytes))));
  }
  flows_ += comms.size();
  sg::Comm::wait_all(comms);
}

void NetSim::wait() {
  impl_->ensure_sync();
  std::unique_lock<sg::Mutex> lock(*impl_->mutex);
  impl_->cv->wait(lock);
}

bool NetSim::wait_until(double deadline) {
  impl_->ensure_sync();
  std::unique_lock<sg::Mutex> lock(*impl_->mutex);
  return impl_->cv->wait_until(lock, deadline) == std::cv_status::timeout;
}

void NetSim::wait(std::uint64_t seen) {
  impl_->ensure_sync();
  std::unique_lock<sg::Mutex> lock(*impl_->mutex);
  if (notifications_ != seen) return;  // no simcall between this check and the wait
  impl_->cv->wait(lock);
}

void NetSim::notify_all() {
  impl_->ensure_sync();
  ++notifications_;
  impl_->cv->notify_all();
}

std::uint64_t NetSim::signal_count(int id) const {
  const auto i = static_cast<std::size_t>(id);
  return i < signal_counts_.size() ? signal_counts_[i] : 0;
}

namespace {
sg::ConditionVariable& signal_cv(std::vector<sg::ConditionVariablePtr>& v, std::vector<std::uint64_t>& counts, int id) {
  const auto i = static_cast<std::size_t>(id);
  if (i >= v.size()) {
    v.resize(i + 1);
    counts.resize(i + 1, 0);
  }
  if (!v[i]) v[i] = sg::ConditionVariable::create();
  return *v[i];
}
}  // namespace

bool NetSim::wait_signal(int id, double deadline, std::uint64_t seen) {
  impl_->ensure_sync();
  sg::ConditionVariable& cv = signal_cv(impl_->signals, signal_counts_, id);
  std::unique_lock<sg::Mutex> lock(*impl_->mutex);
  if (signal_count(id) != seen) return false;  // no simcall between this check and the wait: nothing slips in
  return cv.wait_until(lock, deadline) == std::cv_status::timeout;
}

void NetSim::raise_signal(int id) {
  impl_->ensure_sync();
  sg::ConditionVariable& cv = signal_cv(impl_->signals, signal_counts_, id);
  ++signal_counts_[static_cast<std::size_t>(id)];
  cv.notify_all();
}

bool simgrid_available() { return true; }

#else  // no SimGrid in this build

struct NetSim::Impl {};

NetSim::NetSim(const topology::LinkTopology&, int) {
  throw core::ConfigError(core::SourceLocation{}, "engine",
                          "analytical: this shardsim was built without SimGrid (install libsimgrid-dev and rebuild)");
}
NetSim::~NetSim() = default;
void NetSim::spawn(const std::string&, std::function<void()>) {}
void NetSim::run() {}
double NetSim::now() { return 0.0; }
void NetSim::sleep_for(double) {}
void NetSim::transfer(const std::vector<NetFlow>&, int) {}
void NetSim::wait() {}
void NetSim::wait(std::uint64_t) {}
bool NetSim::wait_until(double) { return true; }
std::uint64_t NetSim::signal_count(int) const { return 0; }
bool NetSim::wait_signal(int, double, std::uint64_t) { return true; }
void NetSim::raise_signal(int) {}
void NetSim::notify_all() {}
double time_transfer_on_platform_file(const std::string&, const std::string&, const std::string&, double) {
  return -1.0;
}
bool simgrid_available() { return false; }

#endif

}  // namespace shardsim::engine
