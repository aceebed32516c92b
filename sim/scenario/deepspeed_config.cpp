#include "sim/scenario/deepspeed_config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/scenario/text_file.hpp"

namespace shardsim::scenario {

using nlohmann::json;

DeepSpeedPlan parse_deepspeed_config(const std::string& text, const std::string& file) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw core::ConfigError(location_of_byte(file, text, e.byte), "", fmt::format("invalid JSON: {}", e.what()));
  }
  const core::SourceLocation where{file, 0, 0};
  if (!j.is_object()) throw core::ConfigError(core::SourceLocation{file, 1, 1}, "", "expected a JSON object");
  DeepSpeedPlan out;
  auto add = [&](const char* plan_key, const std::string& value, const std::string& source_key) {
    out.overrides.push_back(PlanOverride{plan_key, YAML::Node(value), where, source_key});
  };
  auto count = [&](const json& v, const std::string& key) {
    if (!v.is_number() || v.get<double>() < 1 || std::floor(v.get<double>()) != v.get<double>()) {
      throw core::ConfigError(where, key, fmt::format("expected a positive whole number, got {}", v.dump()));
    }
    return static_cast<long long>(v.get<double>());
  };
  auto flag = [&](const json& v, const std::string& key) {
    if (!v.is_boolean()) throw core::ConfigError(where, key, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>() ? std::string("true") : std::string("false");
  };
  if (j.contains("train_batch_size")) {
    add("global_batch", std::to_string(count(j["train_batch_size"], "train_batch_size")), "train_batch_size");
  }
  if (j.contains("train_micro_batch_size_per_gpu")) {
    add("micro_batch", std::to_string(count(j["train_micro_batch_size_per_gpu"], "train_micro_batch_size_per_gpu")),
        "train_micro_batch_size_per_gpu");
  }
  // Everything else at the top level (precision, optimizer, scheduler, clipping, logging) is not modelled: say so.
  for (const auto& [key, v] : j.items()) {
    if (key != "train_batch_size" && key != "train_micro_batch_size_per_gpu" && key != "zero_optimization") {
      out.ignored.push_back(key);
    }
  }
  if (!j.contains("zero_optimization")) return out;
  const json& z = j["zero_optimization"];
  if (!z.is_object()) throw core::ConfigError(where, "zero_optimization", "expected an object");
  for (const auto& [key, v] : z.items()) {
    const std::string path = "zero_optimization." + key;
    // Buckets count elements of 2-byte gradients/parameters.
    auto bucket = [&](const char* plan_key) { add(plan_key, fmt::format("{}B", count(v, path) * 2), path); };
    if (key == "stage") {
      const long long st = v.is_number_integer() ? v.get<long long>() : -1;
      if (st < 0 || st > 3) throw core::ConfigError(where, path, fmt::format("expected 0, 1, 2 or 3, got {}", v.dump()));
      add("zero_stage", std::to_string(st), path);
    } else if (key == "overlap_comm") {
      add("overlap_comm", flag(v, path), path);
    } else if (key == "use_multi_rank_bucket_allreduce") {
      add("use_multi_rank_bucket_allreduce", flag(v, path), path);
    } else if (key == "reduce_scatter") {
      // ZeRO-1/2 without reduce-scatter all-reduce their buckets (stage_1_and_2.py: allreduce_bucket).
      if (flag(v, path) == "false") add("use_multi_rank_bucket_allreduce", "true", path);
    } else if (key == "reduce_bucket_size") {
      bucket("reduce_bucket");
    } else if (key == "allgather_bucket_size") {
      bucket("allgather_bucket");
    } else if (key == "stage3_prefetch_bucket_size") {
      bucket("prefetch_bucket");
    } else if (key == "stage3_max_live_parameters") {
      bucket("max_live_parameters");
    } else if (key == "stage3_param_persistence_threshold") {
      // 0 (nothing persists) is DeepSpeed's too
      if (v.is_number() && v.get<double>() == 0.0) {
        add("persistence_threshold", "0B", path);
      } else {
        bucket("persistence_threshold");
      }
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
      if (!v.is_object()) throw core::ConfigError(where, path, "expected an object");
      const std::string device = v.contains("device") && v["device"].is_string() ? v["device"].get<std::string>() : "none";
      if (device == "cpu") {
        YAML::Node node(YAML::NodeType::Map);
        node["device"] = "cpu";
        if (v.contains("ratio")) {
          if (!v["ratio"].is_number()) throw core::ConfigError(where, path + ".ratio", "expected a number");
          node["ratio"] = fmt::format("{}", v["ratio"].get<double>());
        }
        out.overrides.push_back(PlanOverride{"offload_optimizer", node, where, path});
      } else if (device != "none") {
        throw core::ConfigError(where, path + ".device", fmt::format("{} offload is not modelled; use cpu", device));
      }
    } else if (key == "offload_param") {
      if (!v.is_object()) throw core::ConfigError(where, path, "expected an object");
      const std::string device = v.contains("device") && v["device"].is_string() ? v["device"].get<std::string>() : "none";
      if (device == "cpu") {
        YAML::Node node(YAML::NodeType::Map);
        node["device"] = "cpu";
        out.overrides.push_back(PlanOverride{"offload_param", node, where, path});
      } else if (device != "none") {
        throw core::ConfigError(where, path + ".device", fmt::format("{} offload is not modelled; use cpu", device));
      }
    } else {
      out.ignored.push_back(path);
    }
  }
  return out;
}

DeepSpeedPlan load_deepspeed_config(const std::string& path) {
  return parse_deepspeed_config(read_text_file(path, "DeepSpeed config"), path);
}

}  // namespace shardsim::scenario
