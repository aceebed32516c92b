#include "sim/cli/codec_error_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/engine/collective_cost.hpp"
#include "strategies/lowering_common.hpp"
#include "topology/placement.hpp"

namespace shardsim::cli {
namespace {

using kernels::CodecChoice;
using kernels::Reduction;
using kernels::SampleKind;

CodecChoice choice_of(const core::CompressionSpec& c) {
  CodecChoice k;
  k.kind = c.codec == core::Codec::kZfp ? CodecChoice::Kind::kZfp : CodecChoice::Kind::kMpc;
  k.zfp_rate = c.zfp_rate;
  return k;
}

std::string reduction_label(const Reduction& r) {
  switch (r.kind) {
    case Reduction::Kind::kNone: return "";
    case Reduction::Kind::kRing: return "ring";
    case Reduction::Kind::kHops: {
      std::string s = "hops";
      for (std::size_t i = 0; i < r.hops.size(); ++i) s += fmt::format("{}{}", i ? " x " : " ", r.hops[i]);
      return s;
    }
  }
  return "";
}

// A reduced sum whose error is as large as the sum itself carries nothing of it: at a low ZFP rate the ring's
// recompressed partial sums grow hop by hop (the inverse transform of a truncated block overshoots its values, and
// the next hop's block exponent follows), so past a few ranks the result is noise.
bool sum_lost(const kernels::CodecError& e) { return e.ranks > 0 && !(e.sum_rel_rms < 1.0); }

// A group of `ranks` reduced along a ring, at most kMaxSimulatedRanks of them simulated.
Reduction ring_of(int ranks) { return {Reduction::Kind::kRing, std::min(ranks, kMaxSimulatedRanks), {}}; }

}  // namespace

scenario::Scenario without_compression(const scenario::Scenario& s) {
  scenario::Scenario b = s;
  b.plan.compression = core::CompressionPlan{};
  b.plan.quantization.weights = false;
  b.plan.quantization.gradients = false;
  return b;
}

std::vector<CodecErrorRow> codec_error_rows(const scenario::Scenario& s, const std::vector<float>* user,
                                            const std::string& user_name) {
  const auto& p = s.plan;
  struct Stream {
    const char* name;
    CodecChoice codec;
    double ratio;
    SampleKind sample;
    Reduction how;
    int group;
    const core::CompressionSpec* spec = nullptr;  ///< MVAPICH-style streams: the codec's speeds
  };
  std::vector<Stream> streams;
  const int dp = std::max(p.dp, 1);
  if (p.compression.gradients.on() && dp > 1) {
    streams.push_back({"gradients", choice_of(p.compression.gradients), p.compression.gradients.ratio,
                       SampleKind::kGradient, ring_of(dp), dp, &p.compression.gradients});
  }
  if (p.compression.parameters.on()) {
    streams.push_back({"parameters", choice_of(p.compression.parameters), p.compression.parameters.ratio,
                       SampleKind::kWeight, {}, 0, &p.compression.parameters});
  }
  // Tensor-parallel groups inside a node are sent uncompressed (engine::compresses): no error to measure.
  const bool tp_across_nodes =
      p.tp > 1 && engine::crosses_nodes(s.cluster, topology::strided_group_shape(s.cluster, p.tp, 1));
  if (p.compression.tensor.on() && tp_across_nodes) {
    streams.push_back({"tensor", choice_of(p.compression.tensor), p.compression.tensor.ratio, SampleKind::kActivation,
                       ring_of(p.tp), p.tp, &p.compression.tensor});
  }
  if (p.compression.pipeline.on() && p.pp > 1) {
    streams.push_back({"pipeline", choice_of(p.compression.pipeline), p.compression.pipeline.ratio,
                       SampleKind::kActivation, {}, 0, &p.compression.pipeline});
  }
  const auto block = static_cast<std::size_t>(p.quantization.block);
  if (p.quantization.weights) {
    // (2 bytes in, 1 byte and a 4-byte scale per block out)
    streams.push_back({"qwZ", {CodecChoice::Kind::kInt8Block, 0.0, block}, 2.0 / (1.0 + 4.0 / p.quantization.block),
                       SampleKind::kWeight, {}, 0});
  }
  if (strategies::quantizes_gradients(s.cluster, p)) {
    const int ranks = std::max(p.shards().grads, 1);
    Reduction hops{Reduction::Kind::kHops, ranks,
                   strategies::qgz_hop_sizes(s.cluster, p.quantization, ranks, std::max(p.tp, 1))};
    // Past kMaxSimulatedRanks the outer hop is cut to what fits (the inner hops, where most error is made, stay).
    while (hops.ranks > kMaxSimulatedRanks && !hops.hops.empty() && hops.hops.back() > 1) {
      const int keep = std::max(1, hops.hops.back() * kMaxSimulatedRanks / hops.ranks);
      hops.ranks = hops.ranks / hops.hops.back() * keep;
      hops.hops.back() = keep;
      if (keep == 1) hops.hops.pop_back();
    }
    streams.push_back({"qgZ", {CodecChoice::Kind::kInt4Block, 0.0, block}, 2.0 / (0.5 + 4.0 / p.quantization.block),
                       SampleKind::kGradient, hops, ranks});
  }
  std::vector<CodecErrorRow> rows;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const Stream& st = streams[i];
    auto add = [&](const std::string& sample, const std::function<std::vector<float>(int)>& values) {
      CodecErrorRow r;
      r.stream = st.name;
      r.codec = kernels::codec_label(st.codec);
      r.plan_ratio = st.ratio;
      if (st.spec) {
        r.compress_Bps = st.spec->compress.value();
        r.decompress_Bps = st.spec->decompress.value();
      }
      r.sample = sample;
      r.reduction = reduction_label(st.how);
      r.group_ranks = st.group;
      r.error = kernels::measure_codec_error(st.codec, st.how, values);
      rows.push_back(std::move(r));
    };
    const std::uint64_t seed = 0x5eed0000 + 1000 * i;
    add(std::string(kernels::sample_name(st.sample)), [&](int r) {
      return kernels::representative_values(st.sample, kSampleValues, seed + static_cast<std::uint64_t>(r));
    });
    if (user) {
      // Each rank holds the sample turned by a different offset: the same distribution, different values.
      const std::size_t n = std::min(user->size(), std::size_t{4} * kSampleValues);
      const int ranks = std::max(st.how.ranks, 1);
      add(user_name, [&, n, ranks](int r) {
        std::vector<float> v(n);
        const std::size_t shift = static_cast<std::size_t>(r) * user->size() / static_cast<std::size_t>(ranks);
        for (std::size_t k = 0; k < n; ++k) v[k] = (*user)[(k + shift) % user->size()];
        return v;
      });
    }
  }
  return rows;
}

std::string render_codec_errors(const std::vector<CodecErrorRow>& rows, double compressed_s, double uncompressed_s) {
  if (rows.empty()) return "";
  std::string o = fmt::format(
      "\ncompression  {:.3f}x the speed of the same plan uncompressed ({} vs {} per iteration); what it does to the "
      "values, measured with shardsim's codecs ({} values per rank, 32-bit):\n",
      uncompressed_s / compressed_s, core::format_seconds(core::Seconds(compressed_s)),
      core::format_seconds(core::Seconds(uncompressed_s)), kSampleValues);
  o += fmt::format("  {:<11}{:<22}{:<18}{:>11}{:>8}{:>24}{:>26}{:>14}\n", "stream", "codec", "sample", "bits/value",
                   "ratio", "value error rms / max", "reduced over", "sum error");
  int lost = 0;
  for (const auto& r : rows) {
    const auto& e = r.error;
    std::string over = "-";
    if (e.ranks > 0) {
      over = e.ranks < r.group_ranks ? fmt::format("{}, {} of {} ranks", r.reduction, e.ranks, r.group_ranks)
                                     : fmt::format("{}, {} ranks", r.reduction, e.ranks);
    }
    o += fmt::format("  {:<11}{:<22}{:<18}{:>11.2f}{:>8}{:>24}{:>26}{:>14}\n", r.stream, r.codec, r.sample,
                     e.bits_per_value, fmt::format("{:.2f}x", 32.0 / e.bits_per_value),
                     fmt::format("{:.2e} / {:.2e}", e.value_rel_rms, e.value_rel_max), over,
                     e.ranks > 0 ? fmt::format("{:.2e}{}", e.sum_rel_rms, sum_lost(e) ? " LOST" : "") : std::string("-"));
    lost += sum_lost(e) ? 1 : 0;
  }
  if (lost > 0) {
    o += "  LOST: a sum error of 1 or more: the reduced sum carries none of the exact one (its recompressed partial sums\n"
         "  grow hop by hop at this setting); a codec setting that keeps more bits per value keeps the sum\n";
  }
  o += "  (ratio: of 32-bit values; the cost model takes each codec's ratio and speed from the plan: ";
  std::vector<std::string> seen;
  for (const auto& r : rows) {
    const std::string s =
        r.compress_Bps > 0.0
            ? fmt::format("{} {:.2f}x at {:.0f} / {:.0f} GB/s", r.stream, r.plan_ratio, r.compress_Bps / 1e9, r.decompress_Bps / 1e9)
            : fmt::format("{} {:.2f}x", r.stream, r.plan_ratio);
    if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
  }
  for (std::size_t i = 0; i < seen.size(); ++i) o += (i ? ", " : "") + seen[i];
  o += ")\n";
  return o;
}

std::string render_codec_error_summary(const std::string& variant, const std::vector<CodecErrorRow>& rows,
                                      double compressed_s, double uncompressed_s) {
  if (rows.empty()) return "";
  std::string o = fmt::format("  {}: {:.3f}x uncompressed", variant, uncompressed_s / compressed_s);
  for (const auto& r : rows) {
    o += fmt::format("; {} {} {:.1e}", r.stream, r.codec, r.error.value_rel_rms);
    if (r.error.ranks > 0) {
      o += fmt::format(" (sum over {} ranks {:.1e}{})",
                       r.error.ranks < r.group_ranks ? fmt::format("{} of {}", r.error.ranks, r.group_ranks)
                                                     : fmt::format("{}", r.error.ranks),
                       r.error.sum_rel_rms, sum_lost(r.error) ? ": lost, the partial sums grow hop by hop" : "");
    }
  }
  return o + "\n";
}

nlohmann::ordered_json codec_errors_json(const std::vector<CodecErrorRow>& rows, double compressed_s,
                                         double uncompressed_s) {
  nlohmann::ordered_json j;
  j["uncompressed_iteration_s"] = uncompressed_s;
  j["speedup"] = uncompressed_s / compressed_s;
  j["values_per_rank"] = kSampleValues;
  j["streams"] = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json s;
    s["stream"] = r.stream;
    s["codec"] = r.codec;
    s["plan_ratio"] = r.plan_ratio;
    if (r.compress_Bps > 0.0) {
      s["compress_Bps"] = r.compress_Bps;
      s["decompress_Bps"] = r.decompress_Bps;
    }
    s["sample"] = r.sample;
    s["bits_per_value"] = r.error.bits_per_value;
    s["value_rel_rms"] = r.error.value_rel_rms;
    s["value_rel_max"] = r.error.value_rel_max;
    s["reduction"] = r.reduction;
    s["group_ranks"] = r.group_ranks;
    s["simulated_ranks"] = r.error.ranks;
    s["sum_rel_rms"] = r.error.sum_rel_rms;
    s["sum_lost"] = sum_lost(r.error);
    j["streams"].push_back(std::move(s));
  }
  return j;
}

}  // namespace shardsim::cli
