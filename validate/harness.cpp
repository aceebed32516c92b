#include "validate/harness.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/block_quant.hpp"
#include "kernels/mpc_codec.hpp"
#include "kernels/zfp_codec.hpp"
#include "sim/core/model_spec.hpp"
#include "strategies/kernel_model.hpp"
#include "topology/cluster_presets.hpp"

#ifdef SHARDSIM_HAVE_GPU_BENCH
#include "validate/gpu_bench.hpp"
#endif

namespace shardsim::validate {
namespace {

using Clock = std::chrono::steady_clock;

// Median time of `f` over repetitions lasting at least `budget` seconds (at least 3 runs).
template <class F>
double time_median(double budget, F&& f) {
  std::vector<double> samples;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    f();
    samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  } while (samples.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < budget);
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2), samples.end());
  return samples[samples.size() / 2];
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string describe_size(double bytes, double flops) {
  return bytes > 0 ? core::format_bytes(core::Bytes(bytes)) : fmt::format("{:.3g} GFLOP", flops / 1e9);
}

#ifdef SHARDSIM_HAVE_GPU_BENCH
// The dense BF16 peak of a measured device, from the built-in cluster that has it; none for other devices.
std::optional<core::FlopPerSec> known_peak(const std::string& name) {
  const core::ClusterSpec* preset = topology::find_preset_for_device(name);
  if (!preset) return std::nullopt;
  return preset->device.peak_for(core::Dtype::kBf16);
}

Results run_gpu(const HarnessOptions& o, const std::function<void(const std::string&)>& progress) {
  Results r;
  const auto d = gpu::describe();
  r.device = DeviceInfo{d.name, d.driver, d.backend, today()};
  r.peak = known_peak(d.name);
  try {
    gpu::run(o.min_bytes, o.max_bytes, o.seconds_per_point, o.gemms ? transformer_gemms() : std::vector<GemmCase>{}, o.gemm_seconds, [&](const gpu::Sample& s) {
      Measurement m{s.kind, s.name, s.bytes, 2.0 * s.m * static_cast<double>(s.n) * s.k, s.seconds, s.m, s.n, s.k};
      r.measurements.push_back(m);
      progress(fmt::format("{:<8} {:<22} {:>12} {:>12.3f} us", m.kind, m.name, describe_size(m.bytes, m.flops),
                           m.seconds * 1e6));
    });
  } catch (const std::exception& e) {
    // What was measured before the failure is kept (and the caller reports the failure).
    r.errors.push_back(e.what());
    progress(std::string("failed: ") + e.what());
  }
  return r;
}
#endif

constexpr int kBenchSizes[] = {1, 2, 4, 8};  // micro-batch sizes and tensor-parallel degrees swept
constexpr int kLongSequences[] = {8192, 16384};  // attention's long-context cases

}  // namespace

std::vector<GemmCase> transformer_gemms() {
  std::vector<GemmCase> out;
  std::set<std::tuple<int, int, int, bool, bool>> seen;
  for (const std::string& name : core::model_preset_names()) {
    const core::ModelSpec& model = *core::find_model_preset(name);
    for (int tp : kBenchSizes) {
      for (int mb : kBenchSizes) {
        core::PlanSpec plan;
        plan.tp = tp;
        plan.micro_batch = mb;
        // The fused layers (Megatron's code, and the logits), then the preset's own layout where its code runs q, k,
        // v or the gate and up apart (Hugging Face's LLaMA): the shapes the kernel timing meets.
        std::vector<strategies::LinearLayer> layers = strategies::linear_layers(model, plan);
        for (const auto& l : strategies::block_linears(model, plan)) layers.push_back(l);
        for (const auto& layer : layers) {
          const struct {
            const char* pass;
            strategies::GemmShape g;
            bool ta, tb;
          } passes[] = {{"fwd", layer.fwd, false, true},
                        {"dgrad", strategies::data_gradient(layer.fwd), false, false},
                        {"wgrad", strategies::weight_gradient(layer.fwd), true, false}};
          for (const auto& p : passes) {
            const int m = static_cast<int>(std::lround(p.g.m)), n = static_cast<int>(std::lround(p.g.n)),
                      k = static_cast<int>(std::lround(p.g.k));
            if (m <= 0 || n <= 0 || k <= 0 || !seen.emplace(m, n, k, p.ta, p.tb).second) continue;
            out.push_back(GemmCase{fmt::format("bf16_{}_{}", p.pass, layer.name), m, n, k, p.ta, p.tb});
          }
        }
      }
    }
  }
  return out;
}

std::vector<AttentionCase> transformer_attention() {
  std::vector<AttentionCase> out;
  std::set<std::tuple<int, int, int, int>> seen;
  for (const std::string& name : core::model_preset_names()) {
    const core::ModelSpec& model = *core::find_model_preset(name);
    for (int tp : kBenchSizes) {
      for (int mb : kBenchSizes) {
        if (model.heads % tp != 0) continue;
        const AttentionCase c{mb, model.heads / tp, model.seq_len, model.head_dim()};
        if (seen.emplace(c.batch, c.heads, c.seq, c.head_dim).second) out.push_back(c);
      }
      // Long contexts (8,192 and 16,384 tokens, one sequence): where training runs go and FlashAttention's schedule
      // (DeviceSpec::attention_slots) extrapolates from the presets' 2,048-4,096.
      if (model.heads % tp != 0) continue;
      for (int seq : kLongSequences) {
        if (seq <= model.seq_len) continue;
        const AttentionCase c{1, model.heads / tp, seq, model.head_dim()};
        if (seen.emplace(c.batch, c.heads, c.seq, c.head_dim).second) out.push_back(c);
      }
    }
  }
  // Head dimensions beside the presets' 96 and 128 (FlashAttention picks its tiles per head dimension), at a few
  // and many heads of 2,048 and 4,096 tokens.
  for (int d : {64, 80, 96, 128, 256}) {
    for (int heads : {16, 64, 256}) {
      for (int seq : {2048, 4096}) {
        const AttentionCase c{1, heads, seq, d};
        if (seen.emplace(c.batch, c.heads, c.seq, c.head_dim).second) out.push_back(c);
      }
    }
  }
  return out;
}

std::string write_cases(const std::vector<GemmCase>& gemms, const std::vector<AttentionCase>& attention) {
  std::string o;
  for (const auto& g : gemms) {
    o += fmt::format("gemm {} {} {} {} {} {}\n", g.name, g.m, g.n, g.k, g.a_transposed ? 1 : 0, g.b_transposed ? 1 : 0);
  }
  for (const auto& a : attention) o += fmt::format("attention {} {} {} {}\n", a.batch, a.heads, a.seq, a.head_dim);
  return o;
}

bool gpu_present() {
#ifdef SHARDSIM_HAVE_GPU_BENCH
  return gpu::available();
#else
  return false;
#endif
}

Results run_harness(const HarnessOptions& o, const std::function<void(const std::string&)>& progress) {
#ifdef SHARDSIM_HAVE_GPU_BENCH
  if (!o.cpu_only && gpu::available()) return run_gpu(o, progress);
#endif
  Results r;
  r.device = DeviceInfo{"host CPU (CPU reference backend)", "", "cpu", today()};
  volatile float sink = 0.0F;  // keeps results alive against the optimiser
  auto record = [&](const char* kind, const std::string& name, double bytes, double flops, double seconds) {
    r.measurements.push_back(Measurement{kind, name, bytes, flops, seconds});
    progress(fmt::format("{:<7} {:<16} {:>12} {:>12.3f} us", kind, name, describe_size(bytes, flops), seconds * 1e6));
  };
  for (double bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 8) {
    const std::size_t n = static_cast<std::size_t>(bytes) / sizeof(float);
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(0.001F * static_cast<float>(i));
    record("copy", "host_memcpy", bytes, 0.0, time_median(o.seconds_per_point, [&] {
             std::memcpy(y.data(), x.data(), n * sizeof(float));
             sink = sink + y[n / 2];
           }));
    const std::size_t block = 8192;
    std::vector<std::uint8_t> packed(n);
    std::vector<float> scales(kernels::scale_count(n, block));
    for (auto bits : {kernels::QuantBits::kInt8, kernels::QuantBits::kInt4}) {
      const std::string tag = bits == kernels::QuantBits::kInt8 ? "int8" : "int4";
      record("kernel", "quantize_" + tag, bytes, 0.0, time_median(o.seconds_per_point, [&] {
               kernels::quantize(x, block, bits, packed, scales);
               sink = sink + scales[0];
             }));
      record("kernel", "dequantize_" + tag, bytes, 0.0, time_median(o.seconds_per_point, [&] {
               kernels::dequantize(packed, scales, block, bits, y);
               sink = sink + y[n / 2];
             }));
    }
    record("kernel", "zfp_rate8", bytes, 0.0, time_median(o.seconds_per_point, [&] {
             const auto s = kernels::zfp_compress(x, 8.0);
             sink = sink + static_cast<float>(s.size());
           }));
    record("kernel", "mpc", bytes, 0.0, time_median(o.seconds_per_point, [&] {
             const auto s = kernels::mpc_compress(x);
             sink = sink + static_cast<float>(s.size());
           }));
  }
  // GEMMs of a transformer's shapes on the host (Eigen, one thread): tokens x hidden times hidden x out.
  for (int d : {128, 256, 512}) {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(d, d), b = Eigen::MatrixXf::Random(d, d), c(d, d);
    const double flops = 2.0 * d * d * d;
    record("gemm", "fp32", 0.0, flops, time_median(o.seconds_per_point, [&] {
             c.noalias() = a * b;
             sink = sink + c(0, 0);
           }));
    r.measurements.back().bytes = 0.0;
  }
  (void)sink;
  return r;
}

std::string speed_summary(const Results& r) {
  std::string o;
  const char* copy = nullptr;
  for (const auto& m : r.measurements) {
    if (m.kind == "copy" && (m.name == "d2d" || m.name == "host_memcpy")) copy = m.name == "d2d" ? "d2d" : "host_memcpy";
  }
  auto find = [&](const std::string& kind, const std::string& name, const Measurement& like) -> const Measurement* {
    for (const auto& m : r.measurements) {
      if (m.kind == kind && m.name == name && m.bytes == like.bytes && m.m == like.m && m.n == like.n && m.k == like.k) {
        return &m;
      }
    }
    return nullptr;
  };
  if (copy) {
    o += fmt::format("kernel bandwidth vs the {} copy (bytes read + written; target >= 80% from 64 MiB):\n", copy);
    bool any = false;
    for (const auto& m : r.measurements) {
      if (m.kind != "kernel" || m.bytes < 64.0 * 1024 * 1024) continue;
      const bool q = m.name.rfind("quantize_", 0) == 0;
      const bool dq = m.name.rfind("dequantize_", 0) == 0;
      if (!q && !dq) continue;
      const Measurement* c = find("copy", copy, m);
      if (!c) continue;
      // fp32 in, int8 (1 B) or int4 (0.5 B) out, or the reverse; the copy reads and writes the fp32 bytes.
      const double packed = m.name.find("int4") != std::string::npos ? m.bytes / 8.0 : m.bytes / 4.0;
      const double moved = m.bytes + packed;
      const double ratio = (moved / m.seconds) / (2.0 * c->bytes / c->seconds);
      o += fmt::format("  {:<18} {:>10}  {:>7.1f} GB/s vs {:>7.1f} GB/s  {:>5.1f}%  {}\n", m.name,
                       core::format_bytes(core::Bytes(m.bytes)), moved / m.seconds / 1e9, 2.0 * c->bytes / c->seconds / 1e9,
                       100.0 * ratio, ratio >= 0.8 ? "ok" : "BELOW TARGET");
      any = true;
    }
    if (!any) o += "  (no kernel measured at 64 MiB or more: run with --max-size 64MiB or larger)\n";
  }
  bool header = false;
  for (const auto& m : r.measurements) {
    if (m.name.rfind("torch_", 0) == 0) continue;
    const Measurement* t = find(m.kind, "torch_" + m.name, m);
    if (!t) continue;
    if (!header) {
      o += "against PyTorch on the same device (time ratio > 1: shardsim's kernel is faster):\n";
      header = true;
    }
    o += fmt::format("  {:<7} {:<22} {:>12}  {:>10.3f} us vs {:>10.3f} us  {:>6.2f}x\n", m.kind, m.name,
                     describe_size(m.bytes, m.flops), m.seconds * 1e6, t->seconds * 1e6, t->seconds / m.seconds);
  }
  return o;
}

std::string write_results(const Results& r) {
  std::string o = "# shardsim-validate bench: measured times (see validate/calibration.hpp for the format)\n";
  o += fmt::format("device: {{name: \"{}\", driver: \"{}\", backend: {}, date: \"{}\"}}\n", r.device.name,
                   r.device.driver, r.device.backend, r.device.date);
  if (!r.environment.empty()) {
    o += "environment:\n";
    for (const auto& [key, value] : r.environment) o += fmt::format("  {}: \"{}\"\n", key, value);
  }
  if (r.peak) o += fmt::format("peak: {}TFLOP/s\n", r.peak->value() / 1e12);
  for (const auto& e : r.errors) o += "# failed part-way: " + e + "\n";
  o += "measurements:\n";
  for (const auto& m : r.measurements) {
    if (m.kind == "gemm") {
      const int d = static_cast<int>(std::lround(std::cbrt(m.flops / 2.0)));  // square when no shape was kept
      o += fmt::format("  - {{kind: gemm, name: {}, m: {}, n: {}, k: {}, seconds: {}s}}\n", m.name, m.m > 0 ? m.m : d,
                       m.n > 0 ? m.n : d, m.k > 0 ? m.k : d, m.seconds);
    } else if (m.kind == "attention") {
      o += fmt::format("  - {{kind: attention, name: {}, batch: {}, heads: {}, seq: {}, head_dim: {}, seconds: {}s}}\n",
                       m.name, m.batch, m.heads, m.seq, m.head_dim, m.seconds);
    } else if (m.kind == "overhead") {
      o += fmt::format("  - {{kind: overhead, name: {}, seconds: {}s}}\n", m.name, m.seconds);
    } else {
      o += fmt::format("  - {{kind: {}, name: {}, bytes: {}B, seconds: {}s}}\n", m.kind, m.name, m.bytes, m.seconds);
    }
  }
  return o;
}

}  // namespace shardsim::validate
