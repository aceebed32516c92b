#include "sim/scenario/deepspeed_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>
#include <nlohmann/json.hpp>

#include "sim/scenario/config_node.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/json_text.hpp"
#include "sim/scenario/text_file.hpp"

namespace shardsim::scenario {

using nlohmann::json;

namespace {

// DeepSpeed 0.14's zero_optimization fields and their aliases (deepspeed@v0.14.4 runtime/zero/config.py,
// DeepSpeedZeroConfig: extra = "forbid", so DeepSpeed refuses any other key).
const std::vector<std::string>& zero_keys() {
  static const std::vector<std::string> kKeys = {
      "stage", "contiguous_gradients", "reduce_scatter", "reduce_bucket_size", "use_multi_rank_bucket_allreduce",
      "allgather_partitions", "allgather_bucket_size", "overlap_comm", "load_from_fp32_weights", "elastic_checkpoint",
      "offload_param", "offload_optimizer", "sub_group_size", "cpu_offload_param", "cpu_offload_use_pin_memory",
      "cpu_offload", "prefetch_bucket_size", "stage3_prefetch_bucket_size", "param_persistence_threshold",
      "stage3_param_persistence_threshold", "model_persistence_threshold", "stage3_model_persistence_threshold",
      "max_live_parameters", "stage3_max_live_parameters", "max_reuse_distance", "stage3_max_reuse_distance",
      "gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
      "use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params",
      "stage3_gather_fp16_weights_on_model_save", "ignore_unused_parameters", "legacy_stage1", "round_robin_gradients",
      "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_nontrainable_weights",
      "zero_quantized_gradients", "mics_shard_size", "mics_hierarchical_params_gather", "memory_efficient_linear",
      "pipeline_loading_checkpoint", "override_module_apply"};
  return kKeys;
}

// The field a key names (DeepSpeed takes a field's alias and its name alike).
std::string field_of(const std::string& key) {
  for (const char* alias : {"stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
                            "stage3_model_persistence_threshold", "stage3_max_live_parameters",
                            "stage3_max_reuse_distance"}) {
    if (key == alias) return key.substr(7);
  }
  return key;
}

bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

}  // namespace

DeepSpeedPlan parse_deepspeed_config(const std::string& text, const std::string& file) {
  const json j = parse_json_text(text, file);
  const core::SourceLocation where{file, 0, 0};
  if (!j.is_object()) throw core::ConfigError(core::SourceLocation{file, 1, 1}, "", "expected a JSON object");
  DeepSpeedPlan out;
  out.file = file;
  auto add = [&](const char* plan_key, const std::string& value, const std::string& source_key) {
    out.overrides.push_back(PlanOverride{plan_key, YAML::Node(value), where, source_key});
  };
  auto count = [&](const json& v, const std::string& key) {
    if (is_auto(v)) {
      throw core::ConfigError(where, key,
                              "expected a number: the Hugging Face Trainer fills in \"auto\" only for the batch sizes, "
                              "gradient_accumulation_steps, gradient_clipping, fp16 / bf16, the optimizer's and "
                              "scheduler's parameters, reduce_bucket_size, stage3_prefetch_bucket_size and "
                              "stage3_param_persistence_threshold");
    }
    if (!v.is_number() || v.get<double>() < 1 || std::floor(v.get<double>()) != v.get<double>() ||
        v.get<double>() > 1e15) {
      throw core::ConfigError(where, key, fmt::format("expected a positive whole number up to 1e15, got {}", v.dump()));
    }
    return static_cast<long long>(v.get<double>());
  };
  auto flag = [&](const json& v, const std::string& key) {
    if (!v.is_boolean()) throw core::ConfigError(where, key, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>() ? std::string("true") : std::string("false");
  };
  // The batch: "auto" is the Trainer's (the scenario's); a number is taken (gradient accumulation: checked).
  if (j.contains("train_batch_size") && !is_auto(j["train_batch_size"])) {
    add("global_batch", std::to_string(count(j["train_batch_size"], "train_batch_size")), "train_batch_size");
  }
  if (j.contains("train_micro_batch_size_per_gpu") && !is_auto(j["train_micro_batch_size_per_gpu"])) {
    add("micro_batch", std::to_string(count(j["train_micro_batch_size_per_gpu"], "train_micro_batch_size_per_gpu")),
        "train_micro_batch_size_per_gpu");
  }
  if (j.contains("gradient_accumulation_steps") && !is_auto(j["gradient_accumulation_steps"])) {
    out.gradient_accumulation_steps = count(j["gradient_accumulation_steps"], "gradient_accumulation_steps");
  }
  // Precision: the scenario's model dtype; an explicit "enabled" is checked against it.
  for (const char* key : {"bf16", "fp16"}) {
    if (!j.contains(key)) continue;
    const json& p = j[key];
    if (!p.is_object()) throw core::ConfigError(where, key, "expected an object such as {\"enabled\": true}");
    if (!p.contains("enabled") || is_auto(p["enabled"])) continue;
    (std::string(key) == "bf16" ? out.bf16 : out.fp16) = flag(p["enabled"], std::string(key) + ".enabled") == "true";
  }
  // The dtype gradients accumulate in (data_types.grad_accum_dtype): fp32 with bf16 and no ZeRO stage is
  // DeepSpeed's BF16_Optimizer, and DeepSpeed's default there (runtime/engine.py get_data_types).
  bool accum_given = false;
  if (j.contains("data_types")) {
    const json& d = j["data_types"];
    if (!d.is_object()) {
      throw core::ConfigError(where, "data_types", "expected an object such as {\"grad_accum_dtype\": \"fp32\"}");
    }
    for (const auto& [key, v] : d.items()) {
      if (key != "grad_accum_dtype") {
        out.ignored.push_back("data_types." + key);
        continue;
      }
      if (v.is_null()) continue;
      const std::string name = v.is_string() ? v.get<std::string>() : std::string();
      if (name != "fp32" && name != "bf16" && name != "fp16") {
        throw core::ConfigError(where, "data_types.grad_accum_dtype",
                                fmt::format("expected \"fp32\", \"bf16\" or \"fp16\", got {}", v.dump()));
      }
      add("grad_accum_dtype", name, "data_types.grad_accum_dtype");
      accum_given = true;
    }
  }
  // The dtype gradient reductions travel in (communication_data_type; deepspeed@v0.14.0 runtime/config.py
  // get_communication_data_type: "fp32", "fp16" or "bf16", any case; null is the training dtype).
  if (j.contains("communication_data_type") && !j["communication_data_type"].is_null()) {
    const json& v = j["communication_data_type"];
    std::string name = v.is_string() ? v.get<std::string>() : std::string();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name != "fp32" && name != "bf16" && name != "fp16") {
      throw core::ConfigError(where, "communication_data_type",
                              fmt::format("expected \"fp32\", \"bf16\" or \"fp16\", got {}", v.dump()));
    }
    add("grad_comm_dtype", name, "communication_data_type");
  }
  auto bf16_without_zero = [&](const std::string& stage_key) {
    if (!accum_given && out.bf16 && *out.bf16) add("grad_accum_dtype", "fp32", stage_key + " with bf16.enabled");
  };
  // Everything else at the top level (optimizer, scheduler, clipping, logging) is not modelled: say so.
  for (const auto& [key, v] : j.items()) {
    if (key != "train_batch_size" && key != "train_micro_batch_size_per_gpu" && key != "zero_optimization" &&
        key != "gradient_accumulation_steps" && key != "bf16" && key != "fp16" && key != "data_types" &&
        key != "communication_data_type") {
      out.ignored.push_back(key);
    }
  }
  if (!j.contains("zero_optimization")) return out;
  const json& z = j["zero_optimization"];
  if (z.is_boolean()) {
    // DeepSpeed's deprecated form (runtime/zero/config.py read_zero_config_deprecated): true is stage 1.
    add("zero_stage", z.get<bool>() ? "1" : "0", "zero_optimization");
    if (!z.get<bool>()) bf16_without_zero("zero_optimization");
    return out;
  }
  if (!z.is_object()) throw core::ConfigError(where, "zero_optimization", "expected an object");
  bool optimizer_nvme = false;  // where sub_group_size matters (below)
  auto offload_to = [&](const json& v, const std::string& path, const char* plan_key) {
    if (!v.is_object()) throw core::ConfigError(where, path, "expected an object");
    const std::string device = v.contains("device") && v["device"].is_string() ? v["device"].get<std::string>() : "none";
    const bool optimizer = std::string(plan_key) == "offload_optimizer";
    if (device == "cpu" || device == "nvme") {
      YAML::Node node(YAML::NodeType::Map);
      node["device"] = device;
      if (v.contains("ratio") && optimizer) {
        if (!v["ratio"].is_number()) throw core::ConfigError(where, path + ".ratio", "expected a number");
        node["ratio"] = fmt::format("{}", v["ratio"].get<double>());
      }
      // The NVMe swappers' buffers and pipelining (offload_config.py DeepSpeedZeroOffloadOptimizerConfig and
      // DeepSpeedZeroOffloadParamConfig); with device cpu DeepSpeed does not use them.
      const std::vector<const char*> integers =
          optimizer ? std::vector<const char*>{"buffer_count"} : std::vector<const char*>{"buffer_count", "buffer_size"};
      const std::vector<const char*> switches =
          optimizer ? std::vector<const char*>{"pipeline_read", "pipeline_write"} : std::vector<const char*>{};
      if (device == "nvme" && optimizer) optimizer_nvme = true;
      for (const char* key : integers) {
        if (!v.contains(key)) continue;
        if (device != "nvme") {
          out.ignored.push_back(path + "." + key);
          continue;
        }
        node[key] = std::to_string(count(v[key], path + "." + key));
      }
      for (const char* key : switches) {
        if (!v.contains(key)) continue;
        if (device != "nvme") {
          out.ignored.push_back(path + "." + key);
          continue;
        }
        node[key] = flag(v[key], path + "." + key);
      }
      if (v.contains("max_in_cpu")) out.ignored.push_back(path + ".max_in_cpu");
      out.overrides.push_back(PlanOverride{plan_key, node, where, path});
    } else if (device != "none") {
      throw core::ConfigError(where, path + ".device", fmt::format("expected cpu, nvme or none, got '{}'", device));
    }
  };
  for (const auto& item : z.items()) {
    // (not a structured binding: lambdas below capture the value)
    const std::string key = item.key();
    const json& v = item.value();
    const std::string path = "zero_optimization." + key;
    const std::string field = field_of(key);
    if (std::find(zero_keys().begin(), zero_keys().end(), key) == zero_keys().end()) {
      throw core::ConfigError(where, path,
                              fmt::format("unknown key; expected a key of DeepSpeed's zero_optimization, which refuses others{}", suggest(key, zero_keys())));
    }
    // Buckets count elements of 2-byte gradients/parameters; "auto" is the Trainer's, from the hidden size.
    auto bucket = [&](const char* plan_key) { add(plan_key, fmt::format("{}B", count(v, path) * 2), path); };
    // A size where 0 means none, as DeepSpeed reads it (no prefetch, no reuse, nothing persists).
    auto bucket_or_none = [&](const char* plan_key) {
      if (v.is_number() && v.get<double>() == 0.0) {
        add(plan_key, "0B", path);
      } else {
        bucket(plan_key);
      }
    };
    auto hidden_auto = [&](const char* plan_key, double factor, int power) {
      if (!is_auto(v)) return false;
      out.hidden_size_auto.push_back({plan_key, factor, power, path});
      return true;
    };
    if (key == "stage") {
      const long long st = v.is_number_integer() ? v.get<long long>() : -1;
      if (st < 0 || st > 3) throw core::ConfigError(where, path, fmt::format("expected 0, 1, 2 or 3, got {}", v.dump()));
      add("zero_stage", std::to_string(st), path);
      if (st == 0) bf16_without_zero(path);
    } else if (key == "overlap_comm") {
      add("overlap_comm", flag(v, path), path);
    } else if (key == "use_multi_rank_bucket_allreduce") {
      add("use_multi_rank_bucket_allreduce", flag(v, path), path);
    } else if (key == "reduce_scatter") {
      (void)flag(v, path);  // taken below, with the stage and contiguous_gradients known
    } else if (key == "reduce_bucket_size") {
      if (!hidden_auto("reduce_bucket", 1.0, 2)) bucket("reduce_bucket");
    } else if (key == "allgather_bucket_size") {
      bucket("allgather_bucket");
    } else if (field == "prefetch_bucket_size") {
      if (!hidden_auto("prefetch_bucket", 0.9, 2)) bucket_or_none("prefetch_bucket");
    } else if (field == "max_live_parameters") {
      bucket("max_live_parameters");
    } else if (field == "max_reuse_distance") {
      bucket_or_none("max_reuse_distance");
    } else if (field == "param_persistence_threshold") {
      if (!hidden_auto("persistence_threshold", 10.0, 1)) bucket_or_none("persistence_threshold");
    } else if (field == "model_persistence_threshold") {
      bucket_or_none("model_persistence_threshold");
    } else if (key == "zero_quantized_weights") {
      add("zero_quantized_weights", flag(v, path), path);
    } else if (key == "zero_quantized_gradients") {
      add("zero_quantized_gradients", flag(v, path), path);
    } else if (key == "zero_hpz_partition_size") {
      if (count(v, path) > 1) add("zero_hpz_partition_size", std::to_string(count(v, path)), path);
    } else if (key == "mics_shard_size") {
      // DeepSpeed uses -1 for "off".
      if (!(v.is_number_integer() && v.get<long long>() <= 0)) add("mics_shard_size", std::to_string(count(v, path)), path);
    } else if (key == "offload_optimizer") {
      offload_to(v, path, "offload_optimizer");
    } else if (key == "offload_param") {
      offload_to(v, path, "offload_param");
    } else if (key == "cpu_offload" || key == "cpu_offload_param") {
      // The deprecated switches (config.py: new_param offload_optimizer / offload_param, device cpu).
      if (flag(v, path) == "true") {
        offload_to(json{{"device", "cpu"}}, path, key == "cpu_offload" ? "offload_optimizer" : "offload_param");
      }
    } else if (key == "sub_group_size") {
      // The sub-groups ZeRO-3 updates one at a time: they matter where they are swapped to NVMe, below.
      (void)count(v, path);
    } else {
      out.ignored.push_back(path);
    }
  }
  // Without reduce-scatter ZeRO-1/2 all-reduce their buckets (stage_1_and_2.py: allreduce_bucket) and ZeRO-3 its
  // contiguous bucket (stage3.py __avg_scatter_contiguous_grads), which needs contiguous_gradients (on by default):
  // without it ZeRO-3 reduce-scatters as before.
  if (z.contains("reduce_scatter") && !z["reduce_scatter"].get<bool>()) {
    const long long stage = z.contains("stage") && z["stage"].is_number_integer() ? z["stage"].get<long long>() : 0;
    const bool contiguous = !z.contains("contiguous_gradients") || !z["contiguous_gradients"].is_boolean() ||
                            z["contiguous_gradients"].get<bool>();
    // (Stage 0, DeepSpeed's default, has no ZeRO optimizer to read it.)
    if (stage == 0 || (stage == 3 && !contiguous)) {
      out.ignored.push_back("zero_optimization.reduce_scatter");
    } else {
      add("reduce_scatter", "false", "zero_optimization.reduce_scatter");
    }
  }
  if (z.contains("sub_group_size")) {
    if (optimizer_nvme) {
      add("sub_group_size", std::to_string(count(z["sub_group_size"], "zero_optimization.sub_group_size")),
          "zero_optimization.sub_group_size");
    } else {
      out.ignored.push_back("zero_optimization.sub_group_size");
    }
  }
  return out;
}

DeepSpeedExport deepspeed_config_of(const Scenario& s) {
  const core::PlanSpec& p = s.plan;
  DeepSpeedExport out;
  if (p.framework != core::Framework::kDeepSpeed) {
    out.refusal = fmt::format("the plan runs with framework {}, not DeepSpeed", core::framework_name(p.framework));
    return out;
  }
  if (p.hierarchy_levels > 0) {
    out.refusal = "the plan is the multi-level hierarchical partitioning, which DeepSpeed does not ship";
    return out;
  }
  if (p.compression.gradients.on() || p.compression.parameters.on() || p.compression.tensor.on() ||
      p.compression.pipeline.on()) {
    out.refusal = "the plan compresses collectives in the MPI library (compression:), which a DeepSpeed config does not set";
    return out;
  }
  // The ZeRO stage (or MiCS) whose shard factors the plan has, over its dp ranks.
  const core::PartitionSpec part = p.shards();
  const int dp = p.dp;
  int stage = -1, mics = 0;
  if (part.params == 1 && part.grads == 1 && part.optimizer == 1) {
    stage = 0;
  } else if (part.params == 1 && part.grads == 1 && part.optimizer == dp) {
    stage = 1;
  } else if (part.params == 1 && part.grads == dp && part.optimizer == dp) {
    stage = 2;
  } else if (part.params == dp && part.grads == dp && part.optimizer == dp) {
    stage = 3;
  } else if (part.params == part.grads && part.grads == part.optimizer && part.params > 1 && part.params < dp) {
    stage = 3;
    mics = part.params;
  }
  if (stage < 0) {
    out.refusal = fmt::format("its shard factors P{}/G{}/OS{} over {} data-parallel ranks are an AMSP layout; DeepSpeed "
                              "partitions by ZeRO stage (1/1/{}, 1/{}/{}, {}/{}/{}) or MiCS (m/m/m)",
                              part.params, part.grads, part.optimizer, dp, dp, dp, dp, dp, dp, dp);
    return out;
  }
  // Sizes in elements of 2 bytes, as parse_deepspeed_config reads them.
  auto elements = [](core::Bytes b) { return static_cast<long long>(std::llround(b.value() / 2.0)); };
  nlohmann::ordered_json z;
  z["stage"] = stage;
  if (p.overlap_comm) z["overlap_comm"] = *p.overlap_comm;
  z["reduce_bucket_size"] = elements(p.reduce_bucket);
  if (!p.reduce_scatter) z["reduce_scatter"] = false;
  if (stage <= 2) {
    z["allgather_bucket_size"] = elements(p.allgather_bucket);
    z["use_multi_rank_bucket_allreduce"] = p.bucket_all_reduce;
  } else {
    z["stage3_prefetch_bucket_size"] = elements(p.prefetch_bucket);
    z["stage3_max_live_parameters"] = elements(p.max_live_parameters);
    z["stage3_max_reuse_distance"] = elements(p.max_reuse_distance);
    z["stage3_param_persistence_threshold"] = elements(p.persistence_threshold);
    if (p.model_persistence_threshold) z["stage3_model_persistence_threshold"] = elements(*p.model_persistence_threshold);
  }
  if (mics > 0) z["mics_shard_size"] = mics;
  if (part.secondary > 0) z["zero_hpz_partition_size"] = part.secondary;
  if (p.quantization.weights) z["zero_quantized_weights"] = true;
  if (p.quantization.gradients) z["zero_quantized_gradients"] = true;
  if (p.offload.optimizer) {
    z["offload_optimizer"] = {{"device", p.offload.optimizer_nvme ? "nvme" : "cpu"}};
    if (p.offload.ratio != 1.0) z["offload_optimizer"]["ratio"] = p.offload.ratio;
    if (p.offload.optimizer_nvme) {
      // DeepSpeed needs the folder of the swap files; the user names theirs.
      z["offload_optimizer"]["nvme_path"] = "/local_nvme";
      z["offload_optimizer"]["buffer_count"] = p.offload.buffer_count;
      z["offload_optimizer"]["pipeline_read"] = p.offload.pipeline;
      z["offload_optimizer"]["pipeline_write"] = p.offload.pipeline;
      z["sub_group_size"] = static_cast<long long>(p.offload.sub_group);
    }
  }
  if (p.offload.params) {
    z["offload_param"] = {{"device", p.offload.params_nvme ? "nvme" : "cpu"}};
    if (p.offload.params_nvme) {
      z["offload_param"]["nvme_path"] = "/local_nvme";
      z["offload_param"]["buffer_count"] = p.offload.param_buffer_count;
      z["offload_param"]["buffer_size"] = static_cast<long long>(p.offload.param_buffer_size);
    }
  }
  nlohmann::ordered_json j;
  j["train_batch_size"] = p.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.micro_batch;
  j["gradient_accumulation_steps"] = p.grad_accumulation();
  j["bf16"] = {{"enabled", s.model.param_dtype == core::Dtype::kBf16}};
  j["fp16"] = {{"enabled", s.model.param_dtype == core::Dtype::kFp16}};
  // bf16 without ZeRO: DeepSpeed would pick its BF16_Optimizer (fp32 accumulation) unless told the plan's dtype.
  // (under ZeRO the plan's accumulation is DeepSpeed's default, the gradients' dtype: nothing to pin)
  if (p.zero_stage == 0 && s.model.param_dtype == core::Dtype::kBf16) {
    j["data_types"] = {{"grad_accum_dtype", p.grad_accum_dtype == core::Dtype::kFp32 ? "fp32" : "bf16"}};
  }
  j["zero_optimization"] = z;
  out.json = j.dump(2) + "\n";
  if (p.offload.optimizer_nvme || p.offload.params_nvme) {
    out.notes.push_back("nvme_path: /local_nvme stands for the folder on the node's NVMe where DeepSpeed keeps the "
                        "swap files: name yours");
  }
  if (p.offload.delayed_update) {
    out.notes.push_back("delayed_update: the one-step delayed parameter update of the ZeRO-Offload paper, which "
                        "DeepSpeed 0.14 does not ship (no config key): the config runs the plain update");
  }
  if (p.param_sync == core::ParamSync::kBroadcast) {
    out.notes.push_back("param_sync: broadcast: InternEvo's sync of the updated parameters, a broadcast per owner; "
                        "DeepSpeed all-gathers them (no config key)");
  }
  if (!p.overlap_sync_grad) {
    out.notes.push_back("overlap_sync_grad: false: InternEvo's gradient reductions after the backward pass, which "
                        "DeepSpeed does not ship (no config key): its hooks reduce each bucket during the pass");
  }
  if (p.overlap_sync_param) {
    out.notes.push_back("overlap_sync_param: InternEvo's overlap of the updated parameters' sync with the next "
                        "forward, which DeepSpeed does not ship (no config key): its step ends with the sync");
  }
  if (p.tp > 1 || p.pp > 1) {
    out.notes.push_back(fmt::format("tp {} x pp {}: set by the training script (Megatron-DeepSpeed: "
                                    "--tensor-model-parallel-size {} --pipeline-model-parallel-size {})",
                                    p.tp, p.pp, p.tp, p.pp));
  }
  if (p.recompute != core::Recompute::kNone) {
    out.notes.push_back(fmt::format("recompute {}: activation checkpointing is switched on in the model code "
                                    "(Hugging Face: gradient_checkpointing_enable())", core::recompute_name(p.recompute)));
  }
  if (p.float8.linear) {
    out.notes.push_back("float8: the linears' fp8 compute is the model's (torchao's convert_to_float8_training), not a "
                        "DeepSpeed config key");
  }
  return out;
}

DeepSpeedPlan load_deepspeed_config(const std::string& path) {
  return parse_deepspeed_config(read_text_file(path, "DeepSpeed config"), path);
}

std::vector<Scenario> load_scenarios_with_deepspeed(const std::string& path, const DeepSpeedPlan& ds) {
  auto scenarios = load_scenarios(path, ds.overrides);
  const core::SourceLocation where{ds.file, 0, 0};
  if (!ds.hidden_size_auto.empty()) {
    // The Trainer fills these from model.config.hidden_size: one model for every variant.
    const int h = scenarios.front().model.hidden;
    for (const auto& s : scenarios) {
      if (s.model.hidden != h) {
        throw core::ConfigError(where, ds.hidden_size_auto.front().source_key,
                                fmt::format("expected a number: \"auto\" follows the model's hidden size, which this sweep "
                                            "varies ({} and {})", h, s.model.hidden));
      }
    }
    std::vector<PlanOverride> overrides = ds.overrides;
    for (const auto& a : ds.hidden_size_auto) {
      const double elements = std::floor(a.factor * std::pow(static_cast<double>(h), a.power));
      overrides.push_back(PlanOverride{a.plan_key, YAML::Node(fmt::format("{}B", elements * 2.0)), where, a.source_key});
    }
    scenarios = load_scenarios(path, overrides);
  }
  for (const auto& s : scenarios) {
    const std::string variant = s.variant.empty() ? std::string() : fmt::format(" (variant {})", s.variant);
    if (ds.gradient_accumulation_steps && *ds.gradient_accumulation_steps != s.plan.grad_accumulation()) {
      throw core::ConfigError(
          where, "gradient_accumulation_steps",
          fmt::format("expected {}, as the scenario has it{}: global batch {} / (micro-batch {} x dp {}); got {} (or \"auto\")",
                      s.plan.grad_accumulation(), variant, s.plan.global_batch, s.plan.micro_batch, s.plan.dp,
                      *ds.gradient_accumulation_steps));
    }
    for (const auto& [enabled, dtype, key] : {std::tuple{ds.bf16, core::Dtype::kBf16, "bf16.enabled"},
                                              std::tuple{ds.fp16, core::Dtype::kFp16, "fp16.enabled"}}) {
      if (enabled && *enabled != (s.model.param_dtype == dtype)) {
        throw core::ConfigError(where, key,
                                fmt::format("expected {} (or \"auto\"): the scenario's model{} trains in {}", !*enabled,
                                            variant, core::dtype_name(s.model.param_dtype)));
      }
    }
  }
  return scenarios;
}

}  // namespace shardsim::scenario
