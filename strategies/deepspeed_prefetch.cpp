#include "strategies/deepspeed_prefetch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace shardsim::strategies {

namespace {

enum class Status : std::uint8_t { kNotAvailable, kInFlight, kAvailable };

struct Param {
  double numel = 0.0;
  int unit = 0;
  bool persist = false;
  std::array<int, 2> uses{-1, -1};  ///< the steps of the trace that use it: forward, backward
};

struct Step {
  int unit = 0;
  int pass = 0;
  int first = 0;  ///< its parameters: ids first .. first + count - 1
  int count = 0;
};

struct Gather {
  int first = 0;  ///< its parameters: members[first .. first + count - 1]
  int count = 0;
  bool waited = false;
};

}  // namespace

FetchPlan deepspeed_fetch_plan(std::span<const std::vector<ModuleParams>* const> unit_modules,
                               const core::PlanSpec& plan, double param_bytes, double largest_unit) {
  const std::size_t units = unit_modules.size();
  const double bucket = plan.prefetch_bucket.value() / param_bytes;
  const double max_live = plan.max_live_parameters.value() / param_bytes;
  const double max_reuse = plan.max_reuse_distance.value() / param_bytes;
  const double persist = plan.persistence_threshold.value() / param_bytes;
  const double model_persist = plan.model_persistence_threshold
                                   ? plan.model_persistence_threshold->value() / param_bytes
                                   : std::numeric_limits<double>::infinity();

  FetchPlan out;
  // The parameters, unit by unit, module by module; the forward's steps in that order, the backward's reversed.
  std::vector<Param> params;
  std::vector<Step> steps;
  std::vector<std::vector<std::pair<int, int>>> modules(units);  // per unit: (first parameter, count) per module
  for (std::size_t u = 0; u < units; ++u) {
    for (const ModuleParams& m : *unit_modules[u]) {
      modules[u].emplace_back(static_cast<int>(params.size()), m.count);
      for (int j = 0; j < m.count; ++j) {
        const double numel = m.tensors[static_cast<std::size_t>(j)];
        // (DeepSpeed walks named_parameters; the submodules' forward order stands in for it.)
        const bool persists = numel <= persist && out.persistent_elements + numel <= model_persist;
        params.push_back(Param{numel, static_cast<int>(u), persists, {-1, -1}});
        if (numel > 0.0 && persists) {
          ++out.persistent_tensors;
          out.persistent_elements += numel;
        }
      }
    }
  }
  for (std::size_t u = 0; u < units; ++u) {
    for (const auto& [first, count] : modules[u]) steps.push_back(Step{static_cast<int>(u), 0, first, count});
  }
  for (std::size_t u = units; u-- > 0;) {
    for (auto it = modules[u].rbegin(); it != modules[u].rend(); ++it) {
      steps.push_back(Step{static_cast<int>(u), 1, it->first, it->second});
    }
  }
  // Elements the trace has passed before each step (what the reuse distance counts), and each parameter's uses.
  std::vector<double> before(steps.size() + 1, 0.0);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    double numel = 0.0;
    for (int p = steps[s].first; p < steps[s].first + steps[s].count; ++p) {
      numel += params[static_cast<std::size_t>(p)].numel;
      params[static_cast<std::size_t>(p)].uses[static_cast<std::size_t>(steps[s].pass)] = static_cast<int>(s);
    }
    before[s + 1] = before[s] + numel;
  }

  out.units.resize(units);
  // The trace queue: one entry per (parameter, step that uses it), in step order; popped from `head` on.
  std::vector<std::pair<int, int>> queue;
  queue.reserve(2 * params.size());
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (int p = steps[s].first; p < steps[s].first + steps[s].count; ++p) queue.emplace_back(p, static_cast<int>(s));
  }
  std::size_t head = 0;
  std::vector<Status> status(params.size(), Status::kNotAvailable);
  for (std::size_t p = 0; p < params.size(); ++p) {
    if (params[p].persist) status[p] = Status::kAvailable;
  }
  std::vector<int> handle(params.size(), -1);
  std::vector<Gather> gathers;
  std::vector<int> members;
  constexpr int kNever = std::numeric_limits<int>::min();
  std::vector<int> fetched_for(params.size(), kNever);  // __most_recent_step_id_param_fetched_for
  double available = 0.0;
  auto gather = [&](const std::vector<int>& ps) {
    for (int p : ps) {
      status[static_cast<std::size_t>(p)] = Status::kInFlight;
      handle[static_cast<std::size_t>(p)] = static_cast<int>(gathers.size());
      available += params[static_cast<std::size_t>(p)].numel;
    }
    gathers.push_back(Gather{static_cast<int>(members.size()), static_cast<int>(ps.size()), false});
    members.insert(members.end(), ps.begin(), ps.end());
    out.peak_live_elements = std::max(out.peak_live_elements, available);
  };

  std::vector<int> chosen;
  bool prefetched = false;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    const int step = static_cast<int>(s);
    auto& here = out.units[static_cast<std::size_t>(st.unit)][static_cast<std::size_t>(st.pass)];
    // Gather what the submodule needs and nothing has fetched.
    chosen.clear();
    for (int p = st.first; p < st.first + st.count; ++p) {
      if (status[static_cast<std::size_t>(p)] == Status::kNotAvailable) chosen.push_back(p);
    }
    if (!chosen.empty()) gather(chosen);
    // Wait: the first wait on a gather completes all of it.
    for (int p = st.first; p < st.first + st.count; ++p) {
      if (status[static_cast<std::size_t>(p)] != Status::kInFlight) continue;
      Gather& g = gathers[static_cast<std::size_t>(handle[static_cast<std::size_t>(p)])];
      if (g.waited) continue;
      g.waited = true;
      ++here.gathers;
      if (g.count > 1) here.split_params += g.count;
      for (int k = g.first; k < g.first + g.count; ++k) {
        const auto q = static_cast<std::size_t>(members[static_cast<std::size_t>(k)]);
        status[q] = Status::kAvailable;
        out.units[static_cast<std::size_t>(params[q].unit)][static_cast<std::size_t>(st.pass)].elements +=
            params[q].numel;
      }
    }
    // Pop the submodule's own entries off the queue (those no prefetch passed yet).
    int own = 0;
    for (int p = st.first; p < st.first + st.count; ++p) own += fetched_for[static_cast<std::size_t>(p)] < step ? 1 : 0;
    for (int popped = 0; popped < own && head < queue.size(); ++popped) {
      const auto [q, at] = queue[head++];
      fetched_for[static_cast<std::size_t>(q)] = at;
    }
    // Prefetch up to a bucket, within the live bound.
    if (bucket > 0.0) {
      const double budget = std::min(max_live - available, bucket);
      double numel = 0.0;
      chosen.clear();
      while (head < queue.size() && numel < budget) {
        const auto [q, at] = queue[head++];
        const auto qi = static_cast<std::size_t>(q);
        const bool take = status[qi] == Status::kNotAvailable &&
                          std::find(chosen.begin(), chosen.end(), q) == chosen.end();
        fetched_for[qi] = std::max(fetched_for[qi], at);
        if (take) {
          chosen.push_back(q);
          numel += params[qi].numel;
        }
      }
      if (!chosen.empty()) {
        gather(chosen);
        prefetched = true;
      }
    }
    // Release after the submodule ran (the step counter has moved on): not what a prefetch already passed a
    // later use of, nor what the trace uses again within the reuse distance.
    const int next = step + 1;
    for (int p = st.first; p < st.first + st.count; ++p) {
      const auto pi = static_cast<std::size_t>(p);
      if (params[pi].persist || status[pi] != Status::kAvailable) continue;
      if (fetched_for[pi] > next) continue;
      const int again = st.pass == 0 ? params[pi].uses[1] : -1;
      const bool reused_soon = again > step && before[static_cast<std::size_t>(again)] -
                                                   before[static_cast<std::size_t>(next)] < max_reuse;
      if (reused_soon) continue;
      status[pi] = Status::kNotAvailable;
      available -= params[pi].numel;
    }
  }

  // At unit granularity a coordinator that prefetches at all has the next unit's first gathers in flight.
  if (prefetched && largest_unit > 0.0) {
    out.ahead = std::max(1, static_cast<int>(std::floor(out.peak_live_elements / largest_unit)) - 1);
  }
  return out;
}

FetchTotals totals(const FetchPlan& plan) {
  FetchTotals t;
  for (const auto& u : plan.units) {
    t.gathers += u[0].gathers + u[1].gathers;
    t.split_params += u[0].split_params + u[1].split_params;
    t.forward_elements += u[0].elements;
    t.kept_elements += u[0].elements - u[1].elements;
  }
  return t;
}

}  // namespace shardsim::strategies
