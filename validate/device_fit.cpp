#include "validate/device_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "sim/core/errors.hpp"
#include "strategies/kernel_model.hpp"
#include "topology/cluster_presets.hpp"
#include "validate/model_parameters.hpp"

namespace shardsim::validate {
namespace {

using strategies::KernelModel;
using Predict = std::function<double(const KernelModel&, const Measurement&)>;

bool aligned_gemm(const Measurement& m) { return m.m % 8 == 0 && m.n % 8 == 0 && m.k % 8 == 0; }
bool from_torch(const Measurement& m) { return m.name.rfind("torch_", 0) == 0; }
// An attention measurement of the backward pass (torch_flash_bwd), else the forward.
bool backward(const Measurement& m) { return m.name.find("bwd") != std::string::npos; }
// FlashAttention-2's kernels (PyTorch's flash backend): the family the device's attention rates describe. The
// harness also times cuDNN's attention (torch_cudnn_*), which PyTorch prefers on Hopper; those rows fit cuDNN's
// speed-up over FlashAttention-2's schedule, not the schedule itself.
bool flash2_attention(const Measurement& m) { return m.kind == "attention" && m.name.rfind("torch_flash_", 0) == 0; }
bool cudnn_attention(const Measurement& m) { return m.kind == "attention" && m.name.rfind("torch_cudnn_", 0) == 0; }

double predict_gemm(const KernelModel& km, const Measurement& m) {
  return km.gemm({static_cast<double>(m.m), static_cast<double>(m.n), static_cast<double>(m.k)}).value();
}
double predict_attention(const KernelModel& km, const Measurement& m) {
  return km.flash_attention(static_cast<double>(m.batch) * m.heads, m.seq, m.head_dim, backward(m)).value();
}
// A memory-bound operation moving m.bytes.
double predict_memory(const KernelModel& km, const Measurement& m) { return km.memory(m.bytes, 1).value(); }

// A device copy moves its bytes twice (read and written): one read and one write stream, as an eager elementwise
// operation moves its operands.
double predict_copy(const KernelModel& km, const Measurement& m) { return km.stream(2.0 * m.bytes, 1).value(); }

struct Group {
  std::string what;
  bool fitted;
  std::vector<const Measurement*> rows;
  Predict predict;
  /// the attention kernels the device model times (cuDNN's rows: FlashAttention-2's schedule at cuDNN's speed-up)
  core::AttentionKernel attention = core::AttentionKernel::kFlash2;
};

std::vector<std::optional<double>> predict_all(const core::DeviceSpec& d, const Group& g) {
  const KernelModel km(d, core::Dtype::kBf16, g.attention);
  std::vector<std::optional<double>> out;
  for (const Measurement* m : g.rows) out.emplace_back(g.predict(km, *m));
  return out;
}

std::vector<double> measured_of(const Group& g) {
  std::vector<double> out;
  for (const Measurement* m : g.rows) out.push_back(m->seconds);
  return out;
}

}  // namespace

DeviceFit fit_device(const Results& r, const std::string& file) {
  const core::SourceLocation at{file, 0, 0};
  const core::ClusterSpec* preset = topology::find_preset_for_device(r.device.name);
  if (!preset) {
    throw core::ConfigError(at, "device.name",
                            fmt::format("'{}' is none of the built-in devices (H100 SXM, H200 SXM, A100 SXM4 40/80GB, A800, V100 "
                                        "16GB, MI250X): its peak and compute units are needed to fit the compute model",
                                        r.device.name));
  }
  DeviceFit f;
  f.preset = preset->name;
  f.before = preset->device;
  // The device being fitted, inside a scenario so that each parameter is read, set and bounded by the registry
  // (model_parameters.hpp): every value stays inside the range `run --calibration` checks.
  scenario::Scenario machine;
  machine.cluster = *preset;
  auto parameter = [&](const std::string& name) {
    auto p = find_model_parameter(machine, name);
    SHARDSIM_ASSERT(p.has_value(), "a device parameter the registry lacks: " + name);
    return *p;
  };

  auto rows = [&](const std::function<bool(const Measurement&)>& keep) {
    std::vector<const Measurement*> out;
    for (const auto& m : r.measurements) {
      if (keep(m)) out.push_back(&m);
    }
    return out;
  };

  // The per-kernel floor first (it bounds the small measurements of every group): one eager operation.
  for (const char* name : {"torch_eager_add", "empty_kernel"}) {
    const auto o = rows([&](const Measurement& m) { return m.kind == "overhead" && m.name == name; });
    if (o.empty()) continue;
    const ModelParameter p = parameter("device.kernel_overhead");
    p.set(machine, std::clamp(o.front()->seconds, p.lower, p.upper));
    f.parameters[p.name] = FittedParameter{p.get(machine), std::nullopt, at};
    break;
  }

  const Group memory{"memory-bound operations (PyTorch)", true,
                     rows([](const Measurement& m) { return m.kind == "memory"; }), predict_memory};
  const Group copies{"device copies >= 64 MiB", true,
                     rows([](const Measurement& m) {
                       return m.kind == "copy" && (m.name == "d2d" || m.name == "torch_d2d") && m.bytes >= 64.0 * (1 << 20);
                     }),
                     predict_copy};
  const Group gemms{"GEMMs, dimensions multiples of 8 (BLAS)", true,
                    rows([](const Measurement& m) { return m.kind == "gemm" && !from_torch(m) && aligned_gemm(m); }),
                    predict_gemm};
  const Group torch_gemms{"the same GEMMs through PyTorch", false,
                          rows([](const Measurement& m) { return m.kind == "gemm" && from_torch(m) && aligned_gemm(m); }),
                          predict_gemm};
  // A bf16 dimension of a multiple of 2 or 4 elements but not 8 (narrow operand loads), or an odd one.
  auto odd_gemm = [](const Measurement& m) { return m.m % 2 != 0 || m.n % 2 != 0 || m.k % 2 != 0; };
  const Group narrow{"GEMMs, a dimension of 2 or 4 x k elements (BLAS)", true,
                     rows([&](const Measurement& m) {
                       return m.kind == "gemm" && !from_torch(m) && !aligned_gemm(m) && !odd_gemm(m);
                     }),
                     predict_gemm};
  const Group odd{"GEMMs, an odd dimension (BLAS)", true,
                  rows([&](const Measurement& m) { return m.kind == "gemm" && !from_torch(m) && odd_gemm(m); }),
                  predict_gemm};
  const Group misaligned{"the same misaligned GEMMs through PyTorch", false,
                         rows([](const Measurement& m) { return m.kind == "gemm" && from_torch(m) && !aligned_gemm(m); }),
                         predict_gemm};
  const Group att_fwd{"FlashAttention forward (PyTorch)", true,
                      rows([](const Measurement& m) { return flash2_attention(m) && !backward(m); }),
                      predict_attention};
  const Group att_bwd{"FlashAttention backward (PyTorch)", true,
                      rows([](const Measurement& m) { return flash2_attention(m) && backward(m); }),
                      predict_attention};
  const Group cudnn_fwd{"cuDNN attention forward (PyTorch)", true,
                        rows([](const Measurement& m) { return cudnn_attention(m) && !backward(m); }), predict_attention,
                        core::AttentionKernel::kCudnn};
  const Group cudnn_bwd{"cuDNN attention backward (PyTorch)", true,
                        rows([](const Measurement& m) { return cudnn_attention(m) && backward(m); }), predict_attention,
                        core::AttentionKernel::kCudnn};

  // Fits `names` to `g` together (in order: each later group sees the earlier fits), from their current values.
  auto fit = [&](const Group& g, const std::vector<std::string>& names) {
    if (g.rows.empty()) return;  // not measured (a HIP build has no BLAS): the preset's values stay
    std::vector<ModelParameter> ps;
    RunFit rf;
    for (const auto& name : names) {
      ps.push_back(parameter(name));
      rf.names.push_back(name);
      rf.initial.push_back(ps.back().get(machine));
      rf.lower.push_back(ps.back().lower);
      rf.upper.push_back(ps.back().upper);
    }
    fit_log_ratio(
        rf,
        [&](const std::vector<double>& x) {
          scenario::Scenario trial = machine;
          for (std::size_t k = 0; k < ps.size(); ++k) ps[k].set(trial, x[k]);
          return predict_all(trial.cluster.device, g);
        },
        measured_of(g),
        // FlashAttention's schedule moves in steps as its blocks change slots: read the slope across them.
        names.size() > 1 ? kScheduleDifferenceStep : 0.0);
    for (std::size_t k = 0; k < ps.size(); ++k) {
      ps[k].set(machine, rf.fit.values[k]);
      const double se = rf.fit.std_errors[k];
      f.parameters[names[k]] =
          FittedParameter{rf.fit.values[k], std::isfinite(se) ? std::optional<double>(se) : std::nullopt, at};
    }
  };
  fit(memory, {"device.memory_efficiency"});
  fit(copies, {"device.stream_efficiency"});
  fit(gemms, {"device.gemm_efficiency"});
  fit(narrow, {"device.gemm_efficiency_narrow"});
  fit(odd, {"device.gemm_efficiency_odd"});
  // A device timed by FlashAttention's schedule fits each direction's ceiling with its blocks' fixed cost.
  const bool scheduled = machine.cluster.device.attention_slots > 0;
  fit(att_fwd, scheduled ? std::vector<std::string>{"device.attention_efficiency", "device.attention_block_cost"}
                         : std::vector<std::string>{"device.attention_efficiency"});
  fit(att_bwd, scheduled ? std::vector<std::string>{"device.attention_backward_efficiency",
                                                    "device.attention_backward_block_cost"}
                         : std::vector<std::string>{"device.attention_backward_efficiency"});
  // cuDNN's speed-up over the schedule just fitted, each direction (rows timed in the same run as FlashAttention's).
  fit(cudnn_fwd, {"device.cudnn_attention_speedup"});
  fit(cudnn_bwd, {"device.cudnn_attention_backward_speedup"});
  f.after = machine.cluster.device;

  auto report = [&](const Group& g) {
    if (g.rows.empty()) return;
    const auto measured = measured_of(g);
    f.groups.push_back(DeviceFitGroup{g.what, g.fitted, error_stats(predict_all(f.before, g), measured),
                                      error_stats(predict_all(f.after, g), measured)});
  };
  for (const Group* g :
       {&memory, &copies, &gemms, &torch_gemms, &narrow, &odd, &misaligned, &att_fwd, &att_bwd, &cudnn_fwd, &cudnn_bwd}) {
    report(*g);
    if (g->attention == core::AttentionKernel::kFlash2 && g != &att_fwd && g != &att_bwd) continue;
    // What the attention fit leaves, by sequence and head dimension (the heads vary within each).
    std::map<std::pair<int, int>, std::vector<const Measurement*>> shapes;
    for (const Measurement* m : g->rows) shapes[{static_cast<int>(m->seq), static_cast<int>(m->head_dim)}].push_back(m);
    for (const auto& [shape, rows_of] : shapes) {
      report(Group{fmt::format("  {} tokens, head dim {}", shape.first, shape.second), g->fitted, rows_of, g->predict,
                   g->attention});
    }
  }
  return f;
}

std::string render_device_fit(const DeviceFit& f) {
  std::string o = fmt::format("compute model of the {} device ({}), fitted to the measurements:\n", f.preset, f.after.name);
  for (const auto& [name, p] : f.parameters) {
    const auto unit = model_parameter_unit(name).value_or("");
    const std::string se = p.std_error ? " +- " + format_parameter_value(*p.std_error, unit, 3) : " (measured)";
    o += fmt::format("  {:<38} {:>10}{}\n", name, format_parameter_value(p.value, unit, 4), se);
  }
  o += fmt::format("  {:<50} {:>5} {:>5}  {:>22}  {:>22}\n", "measurements", "rows", "role", "before: mean|err| bias",
                   "after: mean|err| bias");
  // Percentages to one decimal, a rounded zero printed without its sign.
  const auto pct = [](double v) { return std::fabs(v) < 5e-4 ? 0.0 : 100.0 * v; };
  for (const auto& g : f.groups) {
    o += fmt::format("  {:<50} {:>5} {:>5}  {:>10.1f}% {:>+10.1f}%  {:>10.1f}% {:>+10.1f}%\n", g.what, g.after.count,
                     g.fitted ? "fit" : "check", pct(g.before.mean_abs), pct(g.before.bias), pct(g.after.mean_abs),
                     pct(g.after.bias));
  }
  return o;
}

}  // namespace shardsim::validate
