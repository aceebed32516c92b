#include "sim/core/cluster_spec.hpp"

#include <algorithm>

#include "sim/core/errors.hpp"

namespace shardsim::core {

int ClusterSpec::node_level() const {
  for (std::size_t i = 0; i < levels.size(); ++i) {
    if (levels[i].domain_ranks == devices_per_node) return static_cast<int>(i);
  }
  SHARDSIM_ASSERT(false, "cluster '" + name + "' has no node-sized network level");
}

int ClusterSpec::domain_ranks(int l) const {
  SHARDSIM_ASSERT(l >= 0 && l < static_cast<int>(levels.size()), "network level out of range");
  return std::min(levels[static_cast<std::size_t>(l)].domain_ranks, total_devices());
}

}  // namespace shardsim::core

namespace shardsim::core {

std::string_view library_name(CollectiveLibrarySpec::Family f) {
  switch (f) {
    case CollectiveLibrarySpec::Family::kNccl: return "nccl";
    case CollectiveLibrarySpec::Family::kRccl: return "rccl";
    case CollectiveLibrarySpec::Family::kAlphaBeta: return "alpha-beta";
  }
  return "?";
}

}  // namespace shardsim::core
