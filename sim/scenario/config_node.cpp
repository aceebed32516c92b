#include "sim/scenario/config_node.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace shardsim::scenario {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
  std::size_t best = std::string::npos;
  std::string best_word;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best) {
      best = d;
      best_word = c;
    }
  }
  if (best_word.empty() || best > std::max<std::size_t>(2, word.size() / 3)) return "";
  return fmt::format(" (did you mean '{}'?)", best_word);
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) out += ", ";
    out += words[i];
  }
  return out;
}

ConfigNode::ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path,
                       core::SourceLocation fallback)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), fallback_(std::move(fallback)) {}

ConfigNode& ConfigNode::operator=(const ConfigNode& other) {
  if (this == &other) return *this;
  node_.reset(other.node_);
  file_ = other.file_;
  path_ = other.path_;
  fallback_ = other.fallback_;
  return *this;
}

ConfigNode ConfigNode::parse(const std::string& text, const std::string& file) {
  auto name = std::make_shared<const std::string>(file);
  try {
    YAML::Node root = YAML::Load(text);
    return ConfigNode(root, name, "", core::SourceLocation{file, 1, 1});
  } catch (const YAML::Exception& e) {
    throw core::ConfigError(core::SourceLocation{file, e.mark.line + 1, e.mark.column + 1}, "",
                            fmt::format("invalid YAML: {}", e.msg));
  }
}

core::SourceLocation ConfigNode::location() const {
  if (node_.IsDefined()) {
    const YAML::Mark m = node_.Mark();
    if (m.line >= 0) return core::SourceLocation{*file_, m.line + 1, m.column + 1};
  }
  return fallback_;
}

void ConfigNode::fail(const std::string& expected) const {
  throw core::ConfigError(location(), path_.empty() ? std::string("<top level>") : path_, expected);
}

std::string ConfigNode::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

void ConfigNode::expect_map(std::initializer_list<std::string_view> allowed) const {
  if (!node_.IsMap()) fail("expected a map of keys");
  std::vector<std::string> names(allowed.begin(), allowed.end());
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    const YAML::Mark m = kv.first.Mark();
    const core::SourceLocation at{*file_, m.line + 1, m.column + 1};
    if (!seen.insert(key).second) {
      throw core::ConfigError(at, child_path(key), "duplicate key");
    }
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      throw core::ConfigError(at, child_path(key),
                              fmt::format("unknown key{}; expected one of: {}", suggest(key, names), join(names)));
    }
  }
}

bool ConfigNode::has(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

std::optional<ConfigNode> ConfigNode::find(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return ConfigNode(node_[std::string(key)], file_, child_path(key), location());
}

ConfigNode ConfigNode::get(std::string_view key) const {
  if (!node_.IsMap()) fail("expected a map of keys");
  if (!has(key)) {
    throw core::ConfigError(location(), child_path(key), "missing required key");
  }
  return ConfigNode(node_[std::string(key)], file_, child_path(key), location());
}

std::vector<ConfigNode> ConfigNode::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<ConfigNode> out;
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.emplace_back(node_[i], file_, fmt::format("{}[{}]", path_, i), location());
  }
  return out;
}

std::vector<std::pair<std::string, ConfigNode>> ConfigNode::entries() const {
  if (!node_.IsMap()) fail("expected a map of keys");
  std::vector<std::pair<std::string, ConfigNode>> out;
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    out.emplace_back(key, ConfigNode(kv.second, file_, child_path(key), location()));
  }
  return out;
}

std::string ConfigNode::scalar(const char* what) const {
  if (!node_.IsScalar()) fail(fmt::format("expected {}", what));
  return node_.Scalar();
}

std::string ConfigNode::as_string() const { return scalar("a string"); }

long long ConfigNode::as_int(long long min_value, long long max_value) const {
  const std::string s = scalar("an integer");
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail(fmt::format("expected an integer, got '{}'", s));
  if (v < min_value || v > max_value) {
    if (max_value >= std::numeric_limits<int>::max()) {
      if (v > max_value) fail(fmt::format("expected an integer <= {}, got {}", max_value, v));
      fail(fmt::format("expected an integer >= {}, got {}", min_value, v));
    }
    fail(fmt::format("expected an integer in [{}, {}], got {}", min_value, max_value, v));
  }
  return v;
}

int ConfigNode::as_positive_int() const {
  return static_cast<int>(as_int(1, std::numeric_limits<int>::max()));
}

double ConfigNode::as_double() const {
  const std::string s = scalar("a number");
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    fail(fmt::format("expected a number, got '{}'", s));
  }
  return v;
}

double ConfigNode::as_fraction() const {
  const double v = as_double();
  if (!(v > 0.0 && v <= 1.0)) fail(fmt::format("expected a fraction in (0, 1], got {}", v));
  return v;
}

bool ConfigNode::as_bool() const {
  const std::string s = scalar("true or false");
  if (s == "true") return true;
  if (s == "false") return false;
  fail(fmt::format("expected true or false, got '{}'", s));
}

std::string ConfigNode::as_choice(std::initializer_list<std::string_view> choices) const {
  return as_choice(std::span<const std::string_view>(choices.begin(), choices.size()));
}

std::string ConfigNode::as_choice(std::span<const std::string_view> choices) const {
  const std::string s = scalar("a name");
  std::vector<std::string> names(choices.begin(), choices.end());
  if (std::find(names.begin(), names.end(), s) == names.end()) {
    fail(fmt::format("expected one of: {}; got '{}'{}", join(names), s, suggest(s, names)));
  }
  return s;
}

core::Bytes ConfigNode::as_bytes(bool allow_zero) const {
  const std::string s = scalar("a size with a unit, e.g. 64GiB");
  try {
    const core::Bytes b = core::parse_bytes(s);
    if (!allow_zero && b.value() <= 0.0) fail(fmt::format("expected a positive size, got '{}'", s));
    return b;
  } catch (const core::UnitError& e) {
    fail(e.what());
  }
}

core::BytesPerSec ConfigNode::as_bandwidth() const {
  const std::string s = scalar("a bandwidth with a unit, e.g. 25GB/s");
  try {
    const core::BytesPerSec b = core::parse_bandwidth(s);
    if (b.value() <= 0.0) fail(fmt::format("expected a positive bandwidth, got '{}'", s));
    // A degenerate rate would only print an absurd time: no link, memory or codec of a training machine is this slow.
    if (b.value() < kMinBandwidth) {
      fail(fmt::format("a bandwidth of at least 1MB/s (did you mean GB/s?), got '{}'", s));
    }
    return b;
  } catch (const core::UnitError& e) {
    fail(e.what());
  }
}

core::Seconds ConfigNode::as_duration() const {
  const std::string s = scalar("a duration with a unit, e.g. 2us");
  try {
    return core::parse_duration(s);
  } catch (const core::UnitError& e) {
    fail(e.what());
  }
}

core::FlopPerSec ConfigNode::as_flop_rate() const {
  const std::string s = scalar("a FLOP rate with a unit, e.g. 191.5TFLOP/s");
  try {
    const core::FlopPerSec f = core::parse_flop_rate(s);
    if (f.value() <= 0.0) fail(fmt::format("expected a positive FLOP rate, got '{}'", s));
    return f;
  } catch (const core::UnitError& e) {
    fail(e.what());
  }
}

}  // namespace shardsim::scenario
