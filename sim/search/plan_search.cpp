#include "sim/search/plan_search.hpp"

#include <atomic>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "sim/core/dtype.hpp"
#include "strategies/memory_model.hpp"
#include "strategies/model_costs.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/partitioned_strategy.hpp"

namespace shardsim::search {
namespace {

int resolve(const std::string& f, const core::ClusterSpec& c, int dp, int tp) {
  if (f == "all") return dp;
  if (std::isdigit(static_cast<unsigned char>(f[0]))) return std::stoi(f);
  for (std::size_t l = 0; l < c.levels.size(); ++l) {
    if (c.levels[l].name == f) return std::max(1, std::min(dp, c.domain_ranks(static_cast<int>(l)) / tp));
  }
  return 0;
}

// The family a plan belongs to, for "best of each family" comparisons.
std::string family(const core::ModelSpec& m, const core::PlanSpec& p) {
  if (p.offload.optimizer) return p.offload.optimizer_nvme ? "nvme offload" : "offload";
  if (p.pp > 1 && strategies::deepspeed_bf16_optimizer(m, p)) return "3d bf16-optimizer";
  if (p.pp > 1) return p.shards().optimizer > 1 ? "3d zero-1" : "3d ddp";
  if (p.is_plain_zero()) return strategies::describe_partition(m, p);
  const auto s = p.shards();
  const bool quant = p.quantization.weights || p.quantization.gradients || s.secondary > 0;
  if (s.params == p.dp && s.grads == p.dp && s.optimizer == p.dp) return quant ? "zero++" : "zero-3";
  if (s.params == s.grads && s.grads == s.optimizer) return quant ? "mics+zero++" : "mics";
  return quant ? "amsp+zero++" : "amsp";
}

// One point of the partition space: shard factors and switches.
struct Layout {
  core::PartitionSpec partition;
  bool quantized_weights = false;
  bool quantized_gradients = false;
  int offload = 0;  ///< 0: none, 1: the optimizer to the host (ZeRO-Offload), 2: to NVMe (ZeRO-Infinity, ZeRO-3)
};

// Every layout of `space` for `dp` data-parallel ranks: shard factors from the space's candidates (optimizer
// states at least as finely sharded as gradients), hpZ groups that divide the parameter shard, qwZ/qgZ where
// there is something to quantise, optimizer offload where the optimizer is sharded (to NVMe too where ZeRO-3
// partitions everything and the machine's host has drives). Pipelines run with DDP or ZeRO-1 only.
std::vector<Layout> layouts(const SearchSpace& space, const core::ClusterSpec& c, int dp, int tp, int pp) {
  std::set<int> sizes;
  for (const auto& f : space.shard_factors) {
    const int v = resolve(f, c, dp, tp);
    if (v >= 1 && dp % v == 0) sizes.insert(v);
  }
  std::vector<Layout> out;
  if (pp > 1) {
    out.push_back(Layout{core::PartitionSpec{1, 1, 1, 0}});
    if (dp > 1) out.push_back(Layout{core::PartitionSpec{1, 1, dp, 0}});
    return out;
  }
  for (int sp : sizes) {
    for (int sg : sizes) {
      for (int so : sizes) {
        if (so % sg != 0) continue;
        std::vector<int> secondaries = {0};
        if (space.zero_plus_plus) {
          for (int h : sizes) {
            if (h > 1 && h < sp && sp % h == 0) secondaries.push_back(h);
          }
        }
        const int qw_max = space.zero_plus_plus && sp > 1 ? 1 : 0;
        const int qg_max = space.zero_plus_plus && sg > 1 ? 1 : 0;
        const bool zero3 = sp == dp && sg == dp && so == dp && dp > 1;
        const int off_max = space.offload && so > 1 ? (zero3 && c.host.has_nvme() ? 2 : 1) : 0;
        for (int h : secondaries) {
          for (int qw = 0; qw <= qw_max; ++qw) {
            for (int qg = 0; qg <= qg_max; ++qg) {
              for (int off = 0; off <= off_max; ++off) {
                out.push_back(Layout{core::PartitionSpec{sp, sg, so, h}, qw == 1, qg == 1, off});
              }
            }
          }
        }
      }
    }
  }
  return out;
}

struct Candidate {
  core::PlanSpec plan;
  double time = 0.0;
  double memory = 0.0;
  std::size_t order = 0;
};

}  // namespace

bool pipeline_depth_fits(const core::ModelSpec& model, const core::PlanSpec& plan, int pp) {
  if (pp < 1 || pp > model.layers) return false;
  return plan.framework != core::Framework::kMegatron || model.layers % pp == 0;
}

SearchSpace default_space(const scenario::Scenario& s) {
  SearchSpace sp;
  for (int t = 1; t <= s.cluster.devices_per_node; t *= 2) {
    if (s.model.heads % t == 0 && s.model.ffn_hidden % t == 0 && s.model.kv_heads % t == 0) {
      sp.tp.push_back(t);
    }
  }
  // Pipeline depths: powers of two and the multiples of three that machines of 3 x 2^k devices need (BLOOM's 384
  // GPUs ran pp 12), and the scenario's own; stages may differ by a layer where DeepSpeed partitions the model, not
  // under Megatron-LM (whose layers per stage must divide evenly).
  std::vector<int> depths = {1, 2, 3, 4, 6, 8, 12, 16};
  if (s.plan.pp > 1) depths.push_back(s.plan.pp);
  std::sort(depths.begin(), depths.end());
  for (int p : depths) {
    if (pipeline_depth_fits(s.model, s.plan, p)) sp.pp.push_back(p);
  }
  sp.micro_batch = {1, 2, 4, 8};
  sp.recompute = {core::Recompute::kNone, core::Recompute::kSelective, core::Recompute::kFull};
  // torchtitan's op-level policy is an FSDP2 recipe's: searched where the framework is FSDP.
  if (s.plan.framework == core::Framework::kFsdp) sp.recompute.push_back(core::Recompute::kSelectiveOp);
  sp.shard_factors.push_back("1");
  for (const auto& l : s.cluster.levels) sp.shard_factors.push_back(l.name);
  sp.shard_factors.push_back("all");
  // The scenario's search: section narrows any of these.
  const auto& st = s.search;
  if (!st.tp.empty()) sp.tp = st.tp;
  if (!st.pp.empty()) sp.pp = st.pp;
  if (!st.micro_batch.empty()) sp.micro_batch = st.micro_batch;
  if (!st.recompute.empty()) sp.recompute = st.recompute;
  if (!st.shard_factors.empty()) sp.shard_factors = st.shard_factors;
  sp.zero_plus_plus = st.zero_plus_plus;
  sp.offload = st.offload;
  sp.memory_margin = st.memory_margin;
  sp.group_within = st.group_within;
  // A value listed twice is one point of the space, not two.
  auto unique = [](auto& v) {
    std::vector<typename std::decay_t<decltype(v)>::value_type> out;
    for (const auto& x : v) {
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
    v = std::move(out);
  };
  unique(sp.tp);
  unique(sp.pp);
  unique(sp.micro_batch);
  unique(sp.recompute);
  unique(sp.shard_factors);
  return sp;
}

SearchResult search(const scenario::Scenario& base, const SearchSpace& space, int top, int threads,
                    const std::function<void(std::size_t, std::size_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const int devices = base.cluster.total_devices();
  const auto& m = base.model;

  // The (pp, tp) cells of the space with their layouts, counted against the budget before any plan is built.
  struct Cell {
    int pp, tp, dp;
    std::vector<Layout> shapes;
  };
  std::vector<Cell> cells;
  double count = 0.0;
  for (int pp : space.pp) {
    for (int tp : space.tp) {
      if (devices % (tp * pp) != 0 || m.heads % tp != 0 || !pipeline_depth_fits(m, base.plan, pp)) continue;
      const int dp = devices / (tp * pp);
      cells.push_back(Cell{pp, tp, dp, layouts(space, base.cluster, dp, tp, pp)});
      for (int mb : space.micro_batch) {
        if (base.plan.global_batch % (mb * dp) == 0) {
          count += static_cast<double>(cells.back().shapes.size()) * static_cast<double>(space.recompute.size());
        }
      }
    }
  }
  if (count > kMaxSearchPlans) {
    throw core::ConfigError(core::SourceLocation{base.file, 0, 0}, "search",
                            fmt::format("the plan space holds {:.3g} plans (shard factors x ZeRO++ switches x tp x pp x "
                                        "micro-batch x recomputation), over the limit of {:.3g}; narrow it with the "
                                        "search: section",
                                        count, kMaxSearchPlans));
  }
  // Enumerate every plan first (cheap), then evaluate in parallel.
  std::vector<core::PlanSpec> plans;
  for (const auto& [pp, tp, dp, shapes] : cells) {
    for (int mb : space.micro_batch) {
      if (base.plan.global_batch % (mb * dp) != 0) continue;
      for (core::Recompute rc : space.recompute) {
        // With flash attention selective recomputation has nothing left to recompute: the same plan as none.
        if (rc == core::Recompute::kSelective && base.plan.flash_attention &&
            std::find(space.recompute.begin(), space.recompute.end(), core::Recompute::kNone) != space.recompute.end()) {
          continue;
        }
        for (const Layout& l : shapes) {
          core::PlanSpec p = base.plan;
          p.tp = tp;
          p.pp = pp;
          p.virtual_stages = 1;
          p.dp = dp;
          p.micro_batch = mb;
          p.recompute = rc;
          p.partition = l.partition;
          p.quantization.weights = l.quantized_weights;
          p.quantization.gradients = l.quantized_gradients;
          p.offload = core::OffloadSpec{};
          p.offload.optimizer = l.offload > 0;
          p.offload.optimizer_nvme = l.offload == 2;
          p.hierarchy_levels = 0;
          // Name the equivalent ZeRO stage so plain points report as ddp / zero-1/2/3; MiCS (P = G = OS = m < dp)
          // is DeepSpeed's ZeRO-3 optimizer over sub-groups, as a scenario's mics_shard_size reads.
          const auto& s = l.partition;
          const bool mics = s.params > 1 && s.params == s.grads && s.grads == s.optimizer;
          p.zero_stage = (s.params == dp && dp > 1) || mics ? 3
                         : s.grads == dp && dp > 1          ? 2
                         : s.optimizer == dp && dp > 1      ? 1
                                                            : 0;
          if (p.framework_refusal()) continue;  // a layout the scenario's framework does not have
          plans.push_back(p);
        }
      }
    }
  }

  std::vector<Candidate> results(plans.size());
  std::vector<char> fits(plans.size(), 0);
  const int n_threads = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::atomic<std::size_t> evaluated{0};
  auto work = [&](std::size_t begin, std::size_t step) {
    scenario::Evaluator evaluator;
    scenario::Scenario s = base;
    for (std::size_t i = begin; i < plans.size(); i += step) {
      const std::size_t n = ++evaluated;
      if (begin == 0 && progress) progress(n, plans.size());  // from one thread only
      s.plan = plans[i];
      const auto costs = strategies::compute_model_costs(s.model, s.plan, &s.cluster.device);
      const auto mem = strategies::estimate_memory(s.model, s.cluster, s.plan, costs);
      results[i].order = i;
      results[i].memory = mem.total.value();
      if (!mem.fits || mem.headroom().value() < space.memory_margin.value()) continue;
      fits[i] = 1;
      results[i].time = evaluator.iteration_time(s, costs).value();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n_threads; ++t) pool.emplace_back(work, static_cast<std::size_t>(t), static_cast<std::size_t>(n_threads));
  work(0, static_cast<std::size_t>(n_threads));
  for (auto& t : pool) t.join();

  SearchResult r;
  r.memory_margin = space.memory_margin;
  std::vector<Candidate> feasible;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!fits[i]) {
      ++r.infeasible;
      continue;
    }
    results[i].plan = plans[i];
    feasible.push_back(results[i]);
  }
  r.feasible = feasible.size();
  std::sort(feasible.begin(), feasible.end(), [](const Candidate& a, const Candidate& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.memory != b.memory) return a.memory < b.memory;
    return a.order < b.order;
  });
  auto full = [&](const Candidate& c) {
    Ranked k{base, {}, {}};
    k.scenario.plan = c.plan;
    k.scenario.variant = "";
    engine::EngineOptions opts;
    opts.keep_timings = false;
    k.evaluation = scenario::evaluate(k.scenario, opts);
    return k;
  };
  // The top plans, each with the near-identical slower ones listed under it rather than taking a rank of their own.
  auto same_shape = [](const core::PlanSpec& a, const core::PlanSpec& b) {
    const auto sa = a.shards(), sb = b.shards();
    return sa.params == sb.params && sa.grads == sb.grads && sa.optimizer == sb.optimizer && a.tp == b.tp &&
           a.pp == b.pp && a.micro_batch == b.micro_batch && a.recompute == b.recompute &&
           a.hierarchy_levels == b.hierarchy_levels;
  };
  std::vector<std::size_t> leaders;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < feasible.size(); ++i) {
    bool grouped = false;
    for (std::size_t g = 0; g < leaders.size() && !grouped; ++g) {
      const Candidate& lead = feasible[leaders[g]];
      if (same_shape(lead.plan, feasible[i].plan) && feasible[i].time <= lead.time * (1.0 + space.group_within)) {
        members[g].push_back(i);
        grouped = true;
      }
    }
    if (grouped) continue;
    if (static_cast<int>(leaders.size()) == top) {
      // No later plan can join a listed group once all are slower than every group's window.
      bool any_window_open = false;
      for (std::size_t lead : leaders) any_window_open |= feasible[i].time <= feasible[lead].time * (1.0 + space.group_within);
      if (!any_window_open) break;
      continue;
    }
    leaders.push_back(i);
    members.emplace_back();
  }
  for (std::size_t g = 0; g < leaders.size(); ++g) {
    Ranked k = full(feasible[leaders[g]]);
    for (std::size_t j : members[g]) {
      k.similar.push_back(
          Similar{strategies::describe_partition(base.model, feasible[j].plan), feasible[j].plan, feasible[j].time});
    }
    r.best.push_back(std::move(k));
  }
  std::map<std::string, bool> seen;
  for (const auto& c : feasible) {
    const std::string f = family(base.model, c.plan);
    if (seen[f]) continue;
    seen[f] = true;
    r.family_best.emplace_back(f, full(c));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string rescore_on_simgrid(const SearchResult& r) {
  struct Row {
    std::size_t rank;
    scenario::Evaluation ev;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    scenario::Scenario s = r.best[i].scenario;
    s.engine = engine::EngineKind::kSimGrid;
    engine::EngineOptions opts;
    opts.keep_timings = false;
    rows.push_back(Row{i, scenario::evaluate(s, opts)});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.ev.run.iteration_time.value() < b.ev.run.iteration_time.value();
  });
  std::size_t w = 6;
  for (const auto& k : r.best) w = std::max(w, k.evaluation.strategy.size());
  std::string o = "\nre-scored on the SimGrid engine (links shared by concurrent transfers)\n";
  o += fmt::format("  {:>4}  {:>4}  {:<{}}  {:>3}  {:>3}  {:>3}  {:>10}  {:>10}  {:>8}  {}\n", "rank", "was", "layout", w,
                   "tp", "pp", "mb", "simgrid", "analytic", "diff", "link bounding most");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& k = r.best[rows[i].rank];
    const auto& p = k.scenario.plan;
    const double ts = rows[i].ev.run.iteration_time.value();
    const double ta = k.evaluation.run.iteration_time.value();
    const auto& bound = rows[i].ev.run.network.bounding;
    o += fmt::format("  {:>4}  {:>4}  {:<{}}  {:>3}  {:>3}  {:>3}  {:>10}  {:>10}  {:>+7.2f}%  {}\n", i + 1,
                     rows[i].rank + 1, k.evaluation.strategy, w, p.tp, p.pp, p.micro_batch,
                     core::format_seconds(rows[i].ev.run.iteration_time),
                     core::format_seconds(k.evaluation.run.iteration_time), ta > 0.0 ? 100.0 * (ts - ta) / ta : 0.0,
                     bound.empty() ? std::string("-") : bound[0].name);
  }
  return o;
}

std::string render_search(const scenario::Scenario& base, const SearchResult& r) {
  const auto& c = base.cluster;
  std::string o;
  o += fmt::format("search  {}: {} on {} x {} {} ({} devices), global batch {}, the layouts {} has\n", base.name,
                   base.model.name, c.nodes, c.devices_per_node, c.device.name, c.total_devices(), base.plan.global_batch,
                   core::framework_name(base.plan.framework));
  o += fmt::format("        {} plans: {} fit in memory with {:.3g} GiB to spare, {} do not\n\n", r.feasible + r.infeasible,
                   r.feasible, r.memory_margin.value() / core::kGiB, r.infeasible);
  if (r.feasible + r.infeasible == 0) {
    o += fmt::format("no plan of the search space splits the job: no tp x pp of it divides the {} devices (and the heads "
                     "and layers) with a data-parallel degree whose micro-batches divide the global batch of {}; "
                     "list other tp, pp or micro_batch values in the scenario's search: section, or change the global "
                     "batch\n",
                     c.total_devices(), base.plan.global_batch);
    return o;
  }
  if (r.best.empty()) {
    o += "no plan fits in memory with that margin: more devices, a smaller micro-batch, offloading or a smaller "
         "--memory-margin are needed\n";
    return o;
  }
  // One column per level, as wide as its whole name.
  std::string level_head;
  std::vector<std::size_t> level_w;
  for (const auto& l : c.levels) {
    const std::string head = "exp@" + l.name;
    level_w.push_back(std::max<std::size_t>(10, head.size()));
    level_head += fmt::format("  {:>{}}", head, level_w.back());
  }
  std::size_t w = 6;
  std::size_t rw = 9;  // the recompute column: as wide as the longest name shown
  for (const auto& k : r.best) {
    w = std::max(w, k.evaluation.strategy.size());
    rw = std::max(rw, core::recompute_name(k.scenario.plan.recompute).size());
  }
  for (const auto& [fam, k] : r.family_best) rw = std::max(rw, core::recompute_name(k.scenario.plan.recompute).size());
  o += fmt::format("  {:>4}  {:<{}}  {:>3}  {:>3}  {:>3}  {:<{}}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}{}\n", "rank",
                   "layout", w, "tp", "pp", "mb", "recompute", rw, "iteration", "TFLOPS/GPU", "memory", "headroom", "exposed", level_head);
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    const auto& p = r.best[i].scenario.plan;
    const auto& ev = r.best[i].evaluation;
    const auto& role = ev.run.roles[0];
    std::string levels;
    for (std::size_t l = 0; l < c.levels.size(); ++l) {
      levels += fmt::format("  {:>{}}", core::format_seconds(role.exposed_by_level[l]), level_w[l]);
    }
    o += fmt::format("  {:>4}  {:<{}}  {:>3}  {:>3}  {:>3}  {:<{}}  {:>10}  {:>10.1f}  {:>10}  {:>10}  {:>10}{}\n", i + 1,
                     ev.strategy, w, p.tp, p.pp, p.micro_batch, core::recompute_name(p.recompute), rw,
                     core::format_seconds(ev.run.iteration_time), ev.model_tflops_per_gpu,
                     fmt::format("{:.1f} GiB", ev.memory.total.value() / core::kGiB),
                     fmt::format("{:.1f} GiB", ev.memory.headroom().value() / core::kGiB),
                     core::format_seconds(role.exposed_comm), levels);
    const auto& sim = r.best[i].similar;
    if (!sim.empty()) {
      std::string names;
      for (const auto& x : sim) names += (names.empty() ? "" : ", ") + x.strategy;
      const double t = ev.run.iteration_time.value();
      o += fmt::format("  {:>4}  and {} more within {:.1f}%: {}\n", "", sim.size(),
                       100.0 * (sim.back().iteration_time_s - t) / t, names);
    }
  }
  o += "\nbest plan of each family\n";
  for (const auto& [fam, k] : r.family_best) {
    const auto& p = k.scenario.plan;
    o += fmt::format("  {:<12} {:<{}}  tp {} pp {} mb {} {:<{}}  {:>10}  {:>6.1f} TFLOPS/GPU  {:.1f} GiB\n", fam,
                     k.evaluation.strategy, w, p.tp, p.pp, p.micro_batch, core::recompute_name(p.recompute), rw,
                     core::format_seconds(k.evaluation.run.iteration_time), k.evaluation.model_tflops_per_gpu,
                     k.evaluation.memory.total.value() / core::kGiB);
  }

  // Why the winner wins.
  const auto& w0 = r.best[0];
  const auto& ev = w0.evaluation;
  const auto& role = ev.run.roles[0];
  const double t = ev.run.iteration_time.value();
  o += fmt::format("\nwhy #1 ({}, tp {}, pp {}, micro-batch {}, recompute {}) wins\n", ev.strategy, w0.scenario.plan.tp,
                   w0.scenario.plan.pp, w0.scenario.plan.micro_batch, core::recompute_name(w0.scenario.plan.recompute));
  o += fmt::format("  memory: {:.1f} of {:.1f} GiB, {:.1f} GiB headroom\n", ev.memory.total.value() / core::kGiB,
                   ev.memory.capacity.value() / core::kGiB, ev.memory.headroom().value() / core::kGiB);
  o += fmt::format("  time: compute {:.1f}%, exposed communication {:.1f}%, idle {:.1f}%; {:.1f}% of communication "
                   "hidden behind compute\n",
                   100 * role.compute_busy.value() / t, 100 * role.exposed_comm.value() / t, 100 * role.idle.value() / t,
                   role.comm_busy.value() > 0 ? 100 * role.hidden_comm().value() / role.comm_busy.value() : 100.0);
  std::string bytes;
  for (std::size_t l = 0; l < c.levels.size(); ++l) {
    bytes += fmt::format("{}{} {:.2f} GB (exposed {})", l ? ", " : "", c.levels[l].name, role.bytes_by_level[l] / 1e9,
                         core::format_seconds(role.exposed_by_level[l]));
  }
  o += fmt::format("  bytes per rank by level: {}\n", bytes);
  for (const auto& [fam, k] : r.family_best) {
    if (k.evaluation.strategy == ev.strategy && k.scenario.plan.tp == w0.scenario.plan.tp &&
        k.scenario.plan.pp == w0.scenario.plan.pp &&
        k.scenario.plan.micro_batch == w0.scenario.plan.micro_batch && k.scenario.plan.recompute == w0.scenario.plan.recompute) {
      continue;
    }
    const auto& kr = k.evaluation.run.roles[0];
    o += fmt::format("  vs best {:<12} {:.2f}x faster (its exposed communication {}, memory {:.1f} GiB)\n", fam,
                     k.evaluation.run.iteration_time.value() / t, core::format_seconds(kr.exposed_comm),
                     k.evaluation.memory.total.value() / core::kGiB);
  }
  return o;
}

}  // namespace shardsim::search
