#include "sim/scenario/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <utility>

#include "sim/engine/simgrid_engine.hpp"
#include "sim/scenario/cluster_config.hpp"
#include "sim/scenario/config_node.hpp"
#include "sim/scenario/hf_config.hpp"
#include "sim/scenario/plan_config.hpp"
#include "sim/scenario/text_file.hpp"

namespace shardsim::scenario {
namespace {

using core::ConfigError;

core::Dtype parse_dtype_node(const ConfigNode& n) {
  const std::string s = n.as_choice({"fp32", "fp16", "bf16"});
  return *core::parse_dtype(s);
}

// ---------------------------------------------------------------- model
void apply_model_fields(const ConfigNode& n, core::ModelSpec& m) {
  if (auto v = n.find("name")) m.name = v->as_string();
  if (auto v = n.find("layers")) {
    m.layers = v->as_positive_int();
    // Budget: each layer is lowered as tasks; the largest published models have a few hundred.
    if (m.layers > core::kMaxLayers) {
      v->fail(fmt::format("at most {} layers (the largest published models have a few hundred), got {}", core::kMaxLayers,
                          m.layers));
    }
  }
  if (auto v = n.find("hidden")) m.hidden = v->as_positive_int();
  if (auto v = n.find("heads")) {
    m.heads = v->as_positive_int();
    if (!n.has("kv_heads") && !n.has("preset") && !n.has("hf_config")) m.kv_heads = m.heads;
  }
  if (auto v = n.find("kv_heads")) m.kv_heads = v->as_positive_int();
  if (auto v = n.find("ffn_hidden")) m.ffn_hidden = v->as_positive_int();
  if (auto v = n.find("vocab")) m.vocab = v->as_positive_int();
  if (auto v = n.find("seq_len")) m.seq_len = v->as_positive_int();
  if (auto v = n.find("mlp")) m.mlp = v->as_choice({"gelu", "swiglu"}) == "gelu" ? core::MlpKind::kGelu : core::MlpKind::kSwiglu;
  if (auto v = n.find("norm")) {
    m.norm = v->as_choice({"layernorm", "rmsnorm"}) == "layernorm" ? core::NormKind::kLayerNorm : core::NormKind::kRmsNorm;
  }
  if (auto v = n.find("position")) m.position = named<core::PositionKind>(*v, core::kPositionNames);
  if (auto v = n.find("linear_bias")) m.linear_bias = v->as_bool();
  if (auto v = n.find("tied_embeddings")) m.tied_embeddings = v->as_bool();
  if (auto v = n.find("dropout")) m.dropout = v->as_bool();
  if (auto v = n.find("fused_qkv")) m.fused_qkv = v->as_bool();
  if (auto v = n.find("fused_gate_up")) m.fused_gate_up = v->as_bool();
  if (auto v = n.find("qkv_bias")) m.qkv_bias = v->as_bool();
  if (auto v = n.find("fused_gate_up"); v && m.fused_gate_up && m.mlp != core::MlpKind::kSwiglu) {
    v->fail("true only with mlp: swiglu (a GeLU MLP has one up projection)");
  }
  if (auto d = n.find("dtypes")) {
    d->expect_map({"params", "grads", "optimizer"});
    if (auto v = d->find("params")) m.param_dtype = parse_dtype_node(*v);
    if (auto v = d->find("grads")) m.grad_dtype = parse_dtype_node(*v);
    if (auto v = d->find("optimizer")) m.optimizer_dtype = parse_dtype_node(*v);
  }
}

core::ModelSpec parse_model(const ConfigNode& n, const std::filesystem::path& base_dir) {
  if (n.is_scalar()) {
    const std::string name = n.as_string();
    if (const core::ModelSpec* p = core::find_model_preset(name)) return *p;
    n.fail(fmt::format("unknown model preset '{}'{}; expected one of: {}", name,
                       suggest(name, core::model_preset_names()), join(core::model_preset_names())));
  }
  n.expect_map({"preset", "hf_config", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                "seq_len", "mlp", "norm", "position", "linear_bias", "tied_embeddings", "fused_qkv", "fused_gate_up", "qkv_bias", "dropout",
                "dtypes"});
  core::ModelSpec m;
  if (n.has("preset") && n.has("hf_config")) n.get("hf_config").fail("give either preset or hf_config, not both");
  if (auto p = n.find("preset")) {
    const std::string name = p->as_string();
    const core::ModelSpec* preset = core::find_model_preset(name);
    if (!preset) {
      p->fail(fmt::format("unknown model preset '{}'{}; expected one of: {}", name,
                          suggest(name, core::model_preset_names()), join(core::model_preset_names())));
    }
    m = *preset;
  } else if (auto h = n.find("hf_config")) {
    std::filesystem::path path = h->as_string();
    if (path.is_relative()) path = base_dir / path;
    if (!std::filesystem::exists(path)) h->fail(fmt::format("file '{}' does not exist", path.string()));
    m = load_hf_config(path.string());
    if (!n.has("seq_len") && m.seq_len == 0) {
      h->fail(fmt::format("'{}' gives no sequence length (its positions are ALiBi's): set model.seq_len",
                          path.filename().string()));
    }
    if (!n.has("seq_len")) {
      m.note = fmt::format("seq_len {} is the config's {}; model.seq_len sets the length you train on", m.seq_len,
                           m.position == core::PositionKind::kAlibi ? "seq_length" : "max_position_embeddings");
    }
  } else {
    for (const char* key : {"layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len"}) (void)n.get(key);
    m.name = "custom";
    m.source = n.file();
  }
  apply_model_fields(n, m);
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (m.hidden % m.heads != 0) {
    (n.has("hidden") ? n.get("hidden") : n)
        .fail(fmt::format("hidden = {} is not divisible by heads = {}", m.hidden, m.heads));
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    (n.has("kv_heads") ? n.get("kv_heads") : n)
        .fail(fmt::format("kv_heads = {} must divide heads = {}", m.kv_heads, m.heads));
  }
  return m;
}

SearchSettings parse_search(const ConfigNode& n, const core::ClusterSpec& c) {
  n.expect_map(
      {"tp", "pp", "micro_batch", "recompute", "shard_factors", "zero_plus_plus", "offload", "top", "memory_margin",
       "group_within"});
  SearchSettings st;
  if (auto v = n.find("tp")) {
    for (const auto& it : v->items()) st.tp.push_back(it.as_positive_int());
  }
  if (auto v = n.find("pp")) {
    for (const auto& it : v->items()) st.pp.push_back(it.as_positive_int());
  }
  if (auto v = n.find("micro_batch")) {
    for (const auto& it : v->items()) st.micro_batch.push_back(it.as_positive_int());
  }
  if (auto v = n.find("recompute")) {
    for (const auto& it : v->items()) {
      st.recompute.push_back(named<core::Recompute>(it, core::kRecomputeNames));
    }
  }
  if (auto v = n.find("shard_factors")) {
    for (const auto& it : v->items()) {
      const std::string f = it.as_string();
      if (f != "all" && !(std::isdigit(static_cast<unsigned char>(f[0])) && it.as_positive_int() > 0)) {
        (void)find_level(it, c, f);
      }
      st.shard_factors.push_back(f);
    }
  }
  if (auto v = n.find("zero_plus_plus")) st.zero_plus_plus = v->as_bool();
  if (auto v = n.find("offload")) st.offload = v->as_bool();
  if (auto v = n.find("top")) st.top = v->as_positive_int();
  if (auto v = n.find("memory_margin")) st.memory_margin = v->as_bytes(true);
  if (auto v = n.find("group_within")) {
    st.group_within = v->as_double();
    if (!(st.group_within >= 0.0 && st.group_within <= 0.5)) {
      v->fail(fmt::format("expected a fraction from 0 (no grouping) to 0.5, got {}", st.group_within));
    }
  }
  return st;
}

Scenario parse_one(const ConfigNode& root, const std::filesystem::path& base_dir) {
  Scenario s;
  s.file = root.file();
  s.name = std::filesystem::path(root.file()).stem().string();
  if (auto v = root.find("name")) s.name = v->as_string();
  if (auto v = root.find("description")) s.description = v->as_string();
  if (auto v = root.find("engine")) s.engine = *engine::parse_engine_kind(v->as_choice({"analytical", "simgrid"}));
  s.model = parse_model(root.get("model"), base_dir);
  s.cluster = parse_cluster(root.get("cluster"));
  PlanDeferred later;
  s.plan = parse_plan(root.get("plan"), later);
  resolve_plan(s, root, later);
  if (s.engine == engine::EngineKind::kSimGrid) {
    if (const auto why = engine::simgrid_refusal(s.cluster)) root.get("engine").fail(*why);
  }
  if (auto v = root.find("search")) {
    s.search = parse_search(*v, s.cluster);
    s.has_search = true;
  }
  return s;
}

// Sets `path` (dotted keys) in `root` to `value`, turning a preset name into {preset: name} on the way.
void set_path(YAML::Node root, const std::vector<std::string>& keys, const YAML::Node& value) {
  // yaml-cpp nodes are references and operator= writes through them: navigate with reset() only.
  YAML::Node cur;
  cur.reset(root);
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next;
    next.reset(cur[keys[i]]);
    if (next.IsScalar()) {
      YAML::Node m(YAML::NodeType::Map);
      m["preset"] = next.Scalar();
      cur[keys[i]] = m;
    } else if (!next.IsDefined() || next.IsNull()) {
      cur[keys[i]] = YAML::Node(YAML::NodeType::Map);
    }
    next.reset(cur[keys[i]]);
    cur.reset(next);
  }
  cur[keys.back()] = value;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out;
  std::string part;
  std::stringstream ss(s);
  while (std::getline(ss, part, '.')) out.push_back(part);
  return out;
}

// Applies one change to a scenario's YAML: a dotted key path takes the value; a whole section (model, cluster,
// plan) merges the value's keys, with "label" naming the change. Returns the change's label.
std::string apply_change(YAML::Node root, const std::string& key, const ConfigNode& value) {
  const std::vector<std::string> path = split_dots(key);
  if (path.size() > 1) {
    set_path(root, path, value.yaml());
    return fmt::format("{}={}", key, YAML::Dump(value.yaml()));
  }
  std::string label;
  for (const auto& [k, val] : value.entries()) {
    if (k == "label") {
      label = val.as_string();
      continue;
    }
    set_path(root, {key, k}, val.yaml());
  }
  if (label.empty()) {
    for (const auto& [k, val] : value.entries()) {
      label += fmt::format("{}{}={}", label.empty() ? "" : " ", k, YAML::Dump(val.yaml()));
    }
  }
  return label;
}

// A change's key names a section or a path under one (`what` says whose keys, for the message).
void check_change_key(const ConfigNode& at, const std::string& key, const char* what) {
  static const std::vector<std::string> kSections = {"model", "cluster", "plan"};
  const std::vector<std::string> path = split_dots(key);
  if (path.empty() || std::find(kSections.begin(), kSections.end(), path[0]) == kSections.end()) {
    at.fail(fmt::format("{} are model, cluster, plan or dotted paths under them, e.g. plan.zero_stage", what));
  }
}

// A whole-section change merges a map into that section; "label" names the change.
void check_change_value(const ConfigNode& value, const std::string& key) {
  if (split_dots(key).size() == 1 && !value.is_map()) {
    value.fail(fmt::format("expected a map of {} keys (and an optional label)", key));
  }
}

// A scenario's YAML as a file that runs from anywhere: the files it names relative to `path`, the file it came from
// (a Hugging Face config, a machine file), made absolute.
std::string emit_runnable(YAML::Node out, const std::string& path) {
  for (const auto& [section, key] : {std::pair{"model", "hf_config"}, std::pair{"cluster", "machine"}}) {
    if (!out[section] || !out[section].IsMap() || !out[section][key]) continue;
    const std::filesystem::path f = out[section][key].as<std::string>();
    if (f.is_relative()) {
      out[section][key] =
          std::filesystem::absolute(std::filesystem::path(path).parent_path() / f).lexically_normal().string();
    }
  }
  YAML::Emitter e;
  e << out;
  return std::string(e.c_str()) + "\n";
}

// The base with the changes applied, checked as parse_variant checks them; `label` receives them as a variant's label.
YAML::Node apply_changes(const ConfigNode& base, const std::vector<std::pair<std::string, ConfigNode>>& changes,
                         std::string* label) {
  if (!base.yaml().IsMap()) base.fail("expected a scenario: a map with model, cluster and plan");
  base.expect_map({"name", "description", "engine", "model", "cluster", "plan"});
  YAML::Node copy = YAML::Clone(base.yaml());
  std::string variant;
  for (const auto& [key, value] : changes) {
    check_change_key(value, key, "keys");
    check_change_value(value, key);
    variant += fmt::format("{}{}", variant.empty() ? "" : ", ", apply_change(copy, key, value));
  }
  if (label) *label = variant;
  return copy;
}

}  // namespace

std::string variant_yaml(const ConfigNode& base, const std::vector<std::pair<std::string, ConfigNode>>& changes,
                         const std::string& name) {
  YAML::Node copy = apply_changes(base, changes, nullptr);
  copy["name"] = name;
  return emit_runnable(copy, base.file());
}

Scenario parse_variant(const ConfigNode& base, const std::vector<std::pair<std::string, ConfigNode>>& changes,
                       std::string* label) {
  YAML::Node copy = apply_changes(base, changes, label);
  ConfigNode vroot(copy, std::make_shared<const std::string>(base.file()), base.path(), base.location());
  return parse_one(vroot, std::filesystem::path(base.file()).parent_path());
}

SweepPlan::SweepPlan(const ConfigNode& root, const std::string& file, std::optional<std::string> text)
    : root_(root), file_(file), text_(std::move(text)) {
  if (!root.yaml().IsMap()) root.fail("expected a scenario: a map with model, cluster and plan");
  root.expect_map({"name", "description", "engine", "model", "cluster", "plan", "sweep", "search"});
  auto sweep = root.find("sweep");
  if (!sweep) return;
  // Cartesian product of the sweep's axes, first key outermost; a `zip:` map is one axis whose lists advance
  // together; `exclude:` / `include:` filter the points.
  double points = 1.0;
  std::optional<ConfigNode> exclude, include;
  auto add_key = [](Axis& a, const std::string& key, const ConfigNode& vals) {
    check_change_key(vals, key, "sweep keys");
    std::vector<ConfigNode> values = vals.items();
    for (const ConfigNode& v : values) check_change_value(v, key);
    if (values.empty()) vals.fail("expected a non-empty list of values");
    a.keys.push_back(key);
    a.values.push_back(std::move(values));
  };
  for (auto& [key, vals] : sweep->entries()) {
    if (key == "exclude" || key == "include") {
      (key == "exclude" ? exclude : include) = vals;
      continue;
    }
    Axis a;
    if (key == "zip") {
      if (!vals.is_map()) vals.fail("expected a map of keys whose value lists advance together");
      for (auto& [k, v] : vals.entries()) add_key(a, k, v);
      if (a.keys.empty()) vals.fail("expected at least one key");
      for (std::size_t i = 1; i < a.keys.size(); ++i) {
        if (a.values[i].size() != a.values[0].size()) {
          vals.get(a.keys[i]).fail(fmt::format("a zipped list as long as {}'s ({} values), got {}", a.keys[0],
                                               a.values[0].size(), a.values[i].size()));
        }
      }
    } else {
      add_key(a, key, vals);
    }
    points *= static_cast<double>(a.values[0].size());
    // Budget: points are made one at a time, but each is a whole evaluation.
    if (points > kMaxSweepPoints) {
      vals.fail(fmt::format("the sweep's axes multiply to more than {:.0f} points", kMaxSweepPoints));
    }
    axes_.push_back(std::move(a));
  }
  if (!exclude && !include) return;
  // A filter is a list of maps from axis keys to one of their values; a point matches a map when it takes all of
  // them. Excluded: matching any exclude map; with include maps, kept only when matching one.
  struct Pattern {
    std::vector<std::pair<std::size_t, std::size_t>> at;  // (axis, key within it) -> the value index wanted
    std::vector<std::size_t> value;
  };
  auto patterns = [&](const ConfigNode& list) {
    std::vector<Pattern> out;
    for (const ConfigNode& m : list.items()) {
      if (!m.is_map()) m.fail("expected a map of sweep keys to one of their values");
      Pattern pat;
      for (auto& [k, v] : m.entries()) {
        bool found = false;
        for (std::size_t ax = 0; ax < axes_.size() && !found; ++ax) {
          for (std::size_t ki = 0; ki < axes_[ax].keys.size() && !found; ++ki) {
            if (axes_[ax].keys[ki] != k) continue;
            const std::string want = YAML::Dump(v.yaml());
            for (std::size_t vi = 0; vi < axes_[ax].values[ki].size(); ++vi) {
              if (YAML::Dump(axes_[ax].values[ki][vi].yaml()) == want) {
                pat.at.emplace_back(ax, ki);
                pat.value.push_back(vi);
                found = true;
                break;
              }
            }
            if (!found) v.fail(fmt::format("one of the values of sweep key {}", k));
          }
        }
        if (!found) m.fail(fmt::format("keys of this sweep's axes; '{}' is none", k));
      }
      out.push_back(std::move(pat));
    }
    return out;
  };
  const std::vector<Pattern> ex = exclude ? patterns(*exclude) : std::vector<Pattern>{};
  const std::vector<Pattern> in = include ? patterns(*include) : std::vector<Pattern>{};
  auto matches = [&](const Pattern& pat, const std::vector<std::size_t>& digit) {
    for (std::size_t i = 0; i < pat.at.size(); ++i) {
      if (digit[pat.at[i].first] != pat.value[i]) return false;
    }
    return true;
  };
  kept_.emplace();
  for (std::size_t i = 0; i < full_size(); ++i) {
    const std::vector<std::size_t> digit = digits(i);
    bool keep = in.empty();
    for (const auto& pat : in) keep = keep || matches(pat, digit);
    for (const auto& pat : ex) keep = keep && !matches(pat, digit);
    if (keep) kept_->push_back(i);
  }
}

YAML::Node SweepPlan::fresh_copy() const {
  YAML::Node copy = text_ ? YAML::Load(*text_) : YAML::Clone(root_.yaml());
  copy.remove("sweep");
  return copy;
}

std::size_t SweepPlan::full_size() const {
  std::size_t n = 1;
  for (const auto& a : axes_) n *= a.values[0].size();
  return n;
}

std::size_t SweepPlan::size() const { return kept_ ? kept_->size() : full_size(); }

std::vector<std::size_t> SweepPlan::digits(std::size_t full_index) const {
  // Mixed-radix digits of the index, the last axis fastest.
  std::vector<std::size_t> digit(axes_.size());
  std::size_t rest = full_index;
  for (std::size_t k = axes_.size(); k-- > 0;) {
    digit[k] = rest % axes_[k].values[0].size();
    rest /= axes_[k].values[0].size();
  }
  return digit;
}

std::string SweepPlan::apply_point(YAML::Node& copy, std::size_t index) const {
  const std::vector<std::size_t> digit = digits(kept_ ? (*kept_)[index] : index);
  std::string variant;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    for (std::size_t k = 0; k < axes_[i].keys.size(); ++k) {
      variant += fmt::format("{}{}", variant.empty() ? "" : ", ",
                             apply_change(copy, axes_[i].keys[k], axes_[i].values[k][digit[i]]));
    }
  }
  return variant;
}

SweepPoint SweepPlan::point(std::size_t index) const {
  SHARDSIM_ASSERT(index < size(), "sweep point out of range");
  SweepPoint p;
  p.index = index;
  const std::filesystem::path base_dir = std::filesystem::path(file_).parent_path();
  if (axes_.empty()) {
    p.scenario = parse_one(root_, base_dir);
    return p;
  }
  YAML::Node copy = fresh_copy();
  p.variant = apply_point(copy, index);
  ConfigNode vroot(copy, std::make_shared<const std::string>(file_), "", root_.location());
  p.scenario = parse_one(vroot, base_dir);
  p.scenario->variant = p.variant;
  return p;
}

SweepPoint SweepPlan::try_point(std::size_t index) const {
  try {
    return point(index);
  } catch (const ConfigError& e) {
    SweepPoint p;
    p.index = index;
    if (!axes_.empty()) {
      YAML::Node copy = fresh_copy();
      p.variant = apply_point(copy, index);  // the label of the point that failed
    }
    p.error = e.what();
    return p;
  }
}

std::vector<Scenario> parse_root(const ConfigNode& root, const std::string& file,
                                 std::optional<std::string> text = std::nullopt) {
  const SweepPlan plan(root, file, std::move(text));
  std::vector<Scenario> out;
  out.reserve(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) out.push_back(std::move(*plan.point(i).scenario));
  return out;
}

SweepPlan load_sweep(const std::string& path) {
  std::string text = read_text_file(path, "scenario file");
  const ConfigNode root = ConfigNode::parse(text, path);
  return SweepPlan(root, path, std::move(text));
}

namespace {

std::string yaml_bytes(double b) {
  // The shortest exact spelling: GiB or GB when the number stays short, bytes otherwise.
  for (const auto& [scale, unit] : {std::pair{core::kGiB, "GiB"}, std::pair{core::kGB, "GB"}}) {
    const std::string v = fmt::format("{}", b / scale);
    if (v.size() <= 8 && std::stod(v) * scale == b) return v + unit;
  }
  return fmt::format("{}B", b);
}

}  // namespace

std::string model_to_yaml(const core::ModelSpec& m) {
  std::string o;
  o += fmt::format("name: {}\n", m.name);
  o += fmt::format("layers: {}\nhidden: {}\nheads: {}\nkv_heads: {}\nffn_hidden: {}\nvocab: {}\nseq_len: {}\n", m.layers,
                   m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab, m.seq_len);
  o += fmt::format("mlp: {}\nnorm: {}\nposition: {}\n", m.mlp == core::MlpKind::kGelu ? "gelu" : "swiglu",
                   m.norm == core::NormKind::kLayerNorm ? "layernorm" : "rmsnorm",
                   core::position_name(m.position));
  o += fmt::format("linear_bias: {}\ntied_embeddings: {}\nfused_qkv: {}\n", m.linear_bias, m.tied_embeddings, m.fused_qkv);
  if (m.mlp == core::MlpKind::kSwiglu) o += fmt::format("fused_gate_up: {}\n", m.fused_gate_up);
  o += fmt::format("qkv_bias: {}\ndropout: {}\n", m.qkv_bias, m.dropout);
  o += fmt::format("dtypes: {{params: {}, grads: {}, optimizer: {}}}\n", core::dtype_name(m.param_dtype),
                   core::dtype_name(m.grad_dtype), core::dtype_name(m.optimizer_dtype));
  return o;
}

std::string cluster_to_yaml(const core::ClusterSpec& c) {
  std::string o;
  o += fmt::format("name: {}\nnodes: {}\ndevices_per_node: {}\n", c.name, c.nodes, c.devices_per_node);
  o += "device:\n";
  o += fmt::format("  name: \"{}\"\n", c.device.name);
  std::string peaks;
  for (core::Dtype d : {core::Dtype::kFp32, core::Dtype::kFp16, core::Dtype::kBf16, core::Dtype::kFp8, core::Dtype::kInt8}) {
    if (auto p = c.device.peak_for(d)) {
      peaks += fmt::format("{}{}: {}TFLOP/s", peaks.empty() ? "" : ", ", core::dtype_name(d), p->value() / 1e12);
    }
  }
  o += fmt::format("  peak: {{{}}}\n", peaks);
  o += fmt::format("  hbm: {}\n  hbm_bandwidth: {}GB/s\n", yaml_bytes(c.device.hbm.value()),
                   c.device.hbm_bandwidth.value() / 1e9);
  o += fmt::format("  gemm_efficiency: {}\n  memory_efficiency: {}\n  runtime_reserved: {}\n",
                   c.device.gemm_efficiency, c.device.memory_efficiency, yaml_bytes(c.device.runtime_reserved.value()));
  if (c.device.stream_efficiency) o += fmt::format("  stream_efficiency: {}\n", *c.device.stream_efficiency);
  if (c.device.gemm_efficiency_narrow > 0.0) o += fmt::format("  gemm_efficiency_narrow: {}\n", c.device.gemm_efficiency_narrow);
  if (c.device.gemm_efficiency_odd > 0.0) o += fmt::format("  gemm_efficiency_odd: {}\n", c.device.gemm_efficiency_odd);
  if (c.device.attention_efficiency > 0.0) o += fmt::format("  attention_efficiency: {}\n", c.device.attention_efficiency);
  if (c.device.attention_backward_efficiency > 0.0) {
    o += fmt::format("  attention_backward_efficiency: {}\n", c.device.attention_backward_efficiency);
  }
  if (c.device.triton_attention_efficiency > 0.0) {
    o += fmt::format("  triton_attention_efficiency: {}\n", c.device.triton_attention_efficiency);
  }
  if (c.device.triton_attention_backward_efficiency > 0.0) {
    o += fmt::format("  triton_attention_backward_efficiency: {}\n", c.device.triton_attention_backward_efficiency);
  }
  if (c.device.attention_slots > 0) {
    o += fmt::format("  attention_slots: {}\n  attention_block_cost: {}\n  attention_backward_block_cost: {}\n",
                     c.device.attention_slots, c.device.attention_block_cost, c.device.attention_backward_block_cost);
  }
  if (c.device.comm_compute_slowdown != 1.0) {
    o += fmt::format("  comm_compute_slowdown: {}\n", c.device.comm_compute_slowdown);
  }
  o += fmt::format("  compute_units: {}\n  kernel_overhead: {}us\n", c.device.compute_units,
                   c.device.kernel_overhead.value() * 1e6);
  o += fmt::format("host: {{memory: {}, memory_bandwidth: {}GB/s, link_bandwidth: {}GB/s, fetch_hook: {}us, "
                   "tensor_hook: {}us, module_hook: {}us, zero_step: {}us, block_forward: {}us, block_backward: {}us, megatron_block_forward: {}us, "
                   "megatron_block_backward: {}us, rank_slice: {}us, gather_split: {}us, pageable_d2h: {}GB/s, "
                   "pageable_h2d: {}GB/s, "
                   "page_fault: {}us, memory_efficiency: {}, cores: {}, fault_threads: {}, staging_processes: {}{}}}\n",
                   yaml_bytes(c.host.memory.value()), c.host.memory_bandwidth.value() / 1e9,
                   c.host.link_bandwidth.value() / 1e9, c.host.fetch_hook.value() * 1e6, c.host.tensor_hook.value() * 1e6,
                   c.host.module_hook.value() * 1e6, c.host.zero_step.value() * 1e6, c.host.block_forward.value() * 1e6, c.host.block_backward.value() * 1e6,
                   c.host.megatron_block_forward.value() * 1e6, c.host.megatron_block_backward.value() * 1e6,
                   c.host.rank_slice.value() * 1e6, c.host.gather_split.value() * 1e6, c.host.pageable_d2h.value() / 1e9,
                   c.host.pageable_h2d.value() / 1e9,
                   c.host.page_fault.value() * 1e6, c.host.memory_efficiency, c.host.cores, c.host.fault_threads,
                   c.host.staging_processes,
                   c.host.has_nvme() ? fmt::format(", nvme_read: {}GB/s, nvme_write: {}GB/s, nvme_capacity: {}",
                                                   c.host.nvme_read.value() / 1e9, c.host.nvme_write.value() / 1e9,
                                                   yaml_bytes(c.host.nvme_capacity.value()))
                                     : std::string());
  o += "network:\n";
  for (std::size_t i = 0; i < c.levels.size(); ++i) {
    const auto& l = c.levels[i];
    const bool last = i + 1 == c.levels.size();
    o += fmt::format("  - {{name: {}, ranks: {}, bandwidth: {}GB/s, shared_by: {}, latency: {}us{}}}   # {}\n",
                     l.name, last ? std::string("all") : std::to_string(l.domain_ranks), l.link_bandwidth.value() / 1e9,
                     l.shared_by, l.latency.value() * 1e6,
                     l.group_nodes > 0 ? fmt::format(", group_nodes: {}", l.group_nodes) : std::string(), l.source);
  }
  // The collective library as the engines price it: a copy of a preset runs its library, not a described machine's
  // default.
  const auto& lib = c.library;
  o += fmt::format("collective_library:   # {}\n  library: {}\n", lib.source, core::library_name(lib.family));
  if (lib.family == core::CollectiveLibrarySpec::Family::kNccl) o += fmt::format("  version: \"2.{}\"\n", lib.nccl_minor);
  if (lib.family == core::CollectiveLibrarySpec::Family::kRccl) {
    o += fmt::format("  tuning_model: {}\n", lib.rccl_tuning_model);
  }
  if (lib.family != core::CollectiveLibrarySpec::Family::kAlphaBeta) {
    o += fmt::format("  latency_scale: {}\n  net_latency_scale: {}\n", lib.latency_scale, lib.net_latency_scale);
    auto steps = [](const std::array<double, 3>& a) {
      std::string out;
      for (std::size_t p = 0; p < 3; ++p) {
        if (a[p] >= 0.0) out += fmt::format("{}{}: {:.12g}us", out.empty() ? "" : ", ", core::protocol_name(p), a[p] * 1e6);
      }
      return out;
    };
    if (const std::string ring = steps(lib.net_step_s); !ring.empty()) o += fmt::format("  net_step_latency: {{{}}}\n", ring);
    if (const std::string tree = steps(lib.tree_step_s); !tree.empty()) {
      o += fmt::format("  tree_step_latency: {{{}}}\n", tree);
    }
    std::string protocols;
    for (std::size_t p = 0; p < 3; ++p) {
      if (lib.protocols[p]) protocols += fmt::format("{}{}", protocols.empty() ? "" : ", ", core::protocol_name(p));
    }
    using L = core::CollectiveLibrarySpec;
    o += fmt::format("  host_cpu: {}\n  intra_link: {}\n  generation: {}\n  protocols: [{}]\n",
                     lib.amd_host ? "amd" : "intel", lib.intra == L::IntraLink::kNvlink ? "nvlink" : "pci",
                     lib.generation == L::Generation::kVolta    ? "volta"
                     : lib.generation == L::Generation::kAmpere ? "ampere"
                                                                 : "hopper",
                     protocols);
    if (lib.paced_rings) o += "  paced_rings: true\n";
    o += fmt::format("  tree_cross_group_share: {:.12g}\n", lib.tree_cross_group_share);
    if (lib.nvls) o += "  nvls: true\n";
  }
  return o;
}

namespace {

std::string codec_yaml(const core::CompressionSpec& c) {
  if (!c.on()) return "{codec: none}";
  const std::string speeds = fmt::format("compress_throughput: {}B/s, decompress_throughput: {}B/s", c.compress.value(),
                                         c.decompress.value());
  if (c.codec == core::Codec::kZfp) return fmt::format("{{codec: zfp, rate: {}, {}}}", c.zfp_rate, speeds);
  return fmt::format("{{codec: mpc, ratio: {}, {}}}", c.ratio, speeds);
}

std::string level_list(const std::vector<int>& levels, const core::ClusterSpec& cluster) {
  std::string o;
  for (int l : levels) o += (o.empty() ? "" : ", ") + cluster.levels[static_cast<std::size_t>(l)].name;
  return o;
}

}  // namespace

std::string plan_to_yaml(const core::PlanSpec& p, const core::ClusterSpec& cluster) {
  std::string o;
  o += fmt::format("framework: {}\ndp: {}\ntp: {}\npp: {}\n", core::framework_name(p.framework), p.dp, p.tp, p.pp);
  if (p.virtual_stages > 1) o += fmt::format("virtual_stages: {}\n", p.virtual_stages);
  if (p.sequence_parallel) o += "sequence_parallel: true\n";
  o += fmt::format("micro_batch: {}\nglobal_batch: {}\nrecompute: {}\nflash_attention: {}\n", p.micro_batch,
                   p.global_batch, core::recompute_name(p.recompute), p.flash_attention);
  if (p.flash_attention && p.attention_kernel != core::AttentionKernel::kFlash2) {
    o += fmt::format("attention_kernel: {}\n", core::attention_kernel_name(p.attention_kernel));
  }
  if (p.recompute_every > 1) o += fmt::format("recompute_every: {}\n", p.recompute_every);
  o += fmt::format("zero_stage: {}\n", p.zero_stage);
  const auto& q = p.quantization;
  const auto& part = p.partition;
  if (p.hierarchy_levels > 0) {
    o += fmt::format("hierarchy: {{levels: [{}], secondary_params: {}}}\n", level_list(q.gradient_hops, cluster),
                     part.secondary > 0 ? part.secondary : part.params);
  } else {
    o += fmt::format("partition: {{params: {}, grads: {}, optimizer: {}}}\n", part.params, part.grads, part.optimizer);
    if (part.secondary > 0) o += fmt::format("zero_hpz_partition_size: {}\n", part.secondary);
    o += fmt::format("zero_quantized_weights: {}\nzero_quantized_gradients: {}\n", q.weights, q.gradients);
    if (q.gradients) o += fmt::format("qgz_hops: [{}]\n", level_list(q.gradient_hops, cluster));
  }
  o += fmt::format("quantization_block: {}\n", q.block);
  o += fmt::format("reduce_bucket: {}\nallgather_bucket: {}\nprefetch_bucket: {}\nmax_live_parameters: {}\n"
                   "max_reuse_distance: {}\n",
                   yaml_bytes(p.reduce_bucket.value()), yaml_bytes(p.allgather_bucket.value()),
                   yaml_bytes(p.prefetch_bucket.value()), yaml_bytes(p.max_live_parameters.value()),
                   yaml_bytes(p.max_reuse_distance.value()));
  o += fmt::format("persistence_threshold: {}\nddp_bucket: {}\nworkspace: {}\n", yaml_bytes(p.persistence_threshold.value()),
                   yaml_bytes(p.ddp_bucket.value()), yaml_bytes(p.workspace.value()));
  if (p.model_persistence_threshold) {
    o += fmt::format("model_persistence_threshold: {}\n", yaml_bytes(p.model_persistence_threshold->value()));
  }
  if (p.overlap_comm) o += fmt::format("overlap_comm: {}\n", *p.overlap_comm);
  if (p.launch_blocking) o += "launch_blocking: true\n";
  if (p.overlap_sync_param) o += "overlap_sync_param: true\n";
  if (!p.overlap_sync_grad) o += "overlap_sync_grad: false\n";
  if (p.param_sync == core::ParamSync::kBroadcast) o += "param_sync: broadcast\n";
  if (!p.p2p_sync) o += "p2p_sync: false\n";
  if (p.tp_comm_overlap) o += "tp_comm_overlap: true\n";
  if (p.model_code) {
    o += fmt::format("model_code: {}\n", core::model_code_name(*p.model_code));
  }
  if (p.float8.linear) {
    o += fmt::format("float8: {{recipe: {}, fsdp_all_gather: {}}}\n",
                     core::float8_recipe_name(p.float8.recipe), p.float8.all_gather);
  }
  if (p.cross_entropy) {
    o += fmt::format("cross_entropy: {}\n", core::cross_entropy_name(*p.cross_entropy));
  }
  if (p.shared_dp_group) o += fmt::format("shared_dp_group: {}\n", *p.shared_dp_group);
  // (another accumulation dtype is the gradients' own: what an unset key means)
  if (p.grad_accum_dtype == core::Dtype::kFp32) o += "grad_accum_dtype: fp32\n";
  if (p.grad_comm_dtype) o += fmt::format("grad_comm_dtype: {}\n", core::dtype_name(*p.grad_comm_dtype));
  o += fmt::format("use_multi_rank_bucket_allreduce: {}\ncollective_algorithm: {}\n", p.bucket_all_reduce,
                   core::algorithm_name(p.algorithm));
  if (!p.reduce_scatter) o += "reduce_scatter: false\n";
  if (p.offload.optimizer) {
    o += fmt::format("offload_optimizer: {{device: {}, ratio: {}", p.offload.optimizer_nvme ? "nvme" : "cpu",
                     p.offload.ratio);
    if (p.offload.optimizer_nvme) {
      o += fmt::format(", buffer_count: {}, pipeline_read: {}", p.offload.buffer_count, p.offload.pipeline);
    }
    o += "}\n";
    if (p.offload.optimizer_nvme) o += fmt::format("sub_group_size: {:.0f}\n", p.offload.sub_group);
    if (p.offload.delayed_update) o += "delayed_update: true\n";
  }
  if (p.offload.params_nvme) {
    o += fmt::format("offload_param: {{device: nvme, buffer_count: {}, buffer_size: {:.0f}}}\n",
                     p.offload.param_buffer_count, p.offload.param_buffer_size);
  } else if (p.offload.params) {
    o += "offload_param: {device: cpu}\n";
  }
  const auto& c = p.compression;
  if (c.gradients.on() || c.parameters.on() || c.tensor.on() || c.pipeline.on()) {
    o += fmt::format("compression:\n  gradients: {}\n  parameters: {}\n  tensor: {}\n  pipeline: {}\n",
                     codec_yaml(c.gradients), codec_yaml(c.parameters), codec_yaml(c.tensor), codec_yaml(c.pipeline));
  }
  return o;
}

std::string scenario_with_plan(const std::string& path, const core::PlanSpec& plan, const core::ClusterSpec& cluster,
                               const std::string& name) {
  const ConfigNode root = ConfigNode::parse(read_text_file(path, "scenario file"), path);
  YAML::Node out = YAML::Clone(root.yaml());
  out.remove("sweep");
  out["name"] = name;
  out["plan"] = YAML::Load(plan_to_yaml(plan, cluster));
  return emit_runnable(out, path);
}

std::vector<Scenario> parse_scenarios(const std::string& text, const std::string& file,
                                      const std::vector<PlanOverride>& plan_overrides) {
  const ConfigNode parsed = ConfigNode::parse(text, file);
  if (plan_overrides.empty()) return parse_root(parsed, file, text);
  if (!parsed.yaml().IsMap()) parsed.fail("expected a scenario: a map with model, cluster and plan");
  YAML::Node copy = YAML::Clone(parsed.yaml());
  for (const auto& o : plan_overrides) set_path(copy, {"plan", o.plan_key}, o.value);
  try {
    return parse_root(ConfigNode(copy, std::make_shared<const std::string>(file), "", parsed.location()), file);
  } catch (const ConfigError& e) {
    // An error in an overridden value is the override's source's error.
    for (const auto& o : plan_overrides) {
      const std::string key = "plan." + o.plan_key;
      if (e.key_path() == key) throw ConfigError(o.where, o.source_key, e.expected());
      if (e.key_path().rfind(key + ".", 0) == 0) {
        throw ConfigError(o.where, o.source_key + e.key_path().substr(key.size()), e.expected());
      }
    }
    throw;
  }
}

std::vector<Scenario> load_scenarios(const std::string& path, const std::vector<PlanOverride>& plan_overrides) {
  return parse_scenarios(read_text_file(path, "scenario file"), path, plan_overrides);
}

}  // namespace shardsim::scenario
