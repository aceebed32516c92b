#include "sim/core/cluster_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

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

std::string library_label(const CollectiveLibrarySpec& l) {
  std::string s(library_name(l.family));
  if (l.family == CollectiveLibrarySpec::Family::kNccl) s += " 2." + std::to_string(l.nccl_minor);
  if (l.family == CollectiveLibrarySpec::Family::kRccl) {
    s += " (tuning model " + std::to_string(l.rccl_tuning_model) + ")";
  }
  return s;
}

std::optional<int> parse_nccl_version(std::string_view text) {
  if (!text.starts_with("2.") || text.size() < 3 || text.size() > 4) return std::nullopt;
  const std::string_view minor = text.substr(2);
  if (minor.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  const int m = std::stoi(std::string(minor));
  if (m < CollectiveLibrarySpec::kMinNcclMinor || m > CollectiveLibrarySpec::kMaxNcclMinor) return std::nullopt;
  return m;
}

std::string nccl_version_range() {
  return "an NCCL version 2." + std::to_string(CollectiveLibrarySpec::kMinNcclMinor) + " to 2." +
         std::to_string(CollectiveLibrarySpec::kMaxNcclMinor);
}

std::optional<CollectiveLibrarySpec::Family> parse_library(std::string_view name) {
  using F = CollectiveLibrarySpec::Family;
  for (F f : {F::kNccl, F::kRccl, F::kAlphaBeta}) {
    if (library_name(f) == name) return f;
  }
  return std::nullopt;
}

namespace {
constexpr std::array<std::string_view, 3> kProtocolNames = {"LL", "LL128", "Simple"};
}

std::string_view protocol_name(std::size_t i) { return i < kProtocolNames.size() ? kProtocolNames[i] : "?"; }

std::optional<std::size_t> parse_protocol(std::string_view name) {
  for (std::size_t i = 0; i < kProtocolNames.size(); ++i) {
    if (kProtocolNames[i] == name) return i;
  }
  return std::nullopt;
}

std::vector<std::string> protocol_names(const CollectiveLibrarySpec& l, bool running) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < l.protocols.size(); ++i) {
    if (l.protocols[i] == running) out.emplace_back(kProtocolNames[i]);
  }
  return out;
}

CodecRates codec_rates(const DeviceSpec& d) {
  if (d.codec.zfp_compress.value() > 0.0) return d.codec;
  const double scale = d.compute_units > 0 ? static_cast<double>(d.compute_units) / kH100ComputeUnits : 1.0;
  CodecRates r;
  r.zfp_compress = BytesPerSec(kH100ZfpCompressBps * scale);
  r.zfp_decompress = BytesPerSec(kH100ZfpDecompressBps * scale);
  r.mpc_compress = BytesPerSec(kH100MpcCompressBps * scale);
  r.mpc_decompress = BytesPerSec(kH100MpcDecompressBps * scale);
  r.source = d.compute_units > 0
                 ? fmt::format("shardsim's kernels as measured on an H100, x {} / {} compute units [guess]",
                               d.compute_units, kH100ComputeUnits)
                 : std::string("shardsim's kernels as measured on an H100 (compute units unknown) [guess]");
  return r;
}

}  // namespace shardsim::core
