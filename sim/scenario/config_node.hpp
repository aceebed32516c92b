#pragma once
// ConfigNode: a strict, location-aware view of a YAML node. Every accessor either returns a value of the
// requested kind or throws core::ConfigError naming file:line:col, the key path ("cluster.network[1].bandwidth")
// and what was expected. yaml-cpp's marks are 0-based and meaningless on missing nodes, so the view carries
// its own key path and falls back to the enclosing map's position for missing keys.
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/core/errors.hpp"
#include "sim/core/units.hpp"

namespace shardsim::scenario {

class ConfigNode {
 public:
  /** @brief Wraps `node` read from `file` at key path `path`; `fallback` locates it when it has no mark. */
  ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path,
             core::SourceLocation fallback);

  // yaml-cpp's Node::operator= writes through to the referenced node (it would overwrite the document);
  // a view is re-pointed instead.
  ConfigNode(const ConfigNode&) = default;
  ConfigNode(ConfigNode&&) = default;
  ConfigNode& operator=(const ConfigNode& other);
  ConfigNode& operator=(ConfigNode&& other) { return *this = static_cast<const ConfigNode&>(other); }
  ~ConfigNode() = default;

  /** @brief Parses `text` (named `file` in messages); YAML syntax errors become ConfigError. */
  static ConfigNode parse(const std::string& text, const std::string& file);

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& file() const { return *file_; }
  [[nodiscard]] core::SourceLocation location() const;
  [[nodiscard]] const YAML::Node& yaml() const { return node_; }
  /** @brief Throws ConfigError at this node: "<path>: <expected>". */
  [[noreturn]] void fail(const std::string& expected) const;

  [[nodiscard]] bool is_map() const { return node_.IsMap(); }
  [[nodiscard]] bool is_scalar() const { return node_.IsScalar(); }
  [[nodiscard]] bool is_sequence() const { return node_.IsSequence(); }

  /** @brief Requires a map whose keys are all in `allowed` and none repeated. */
  void expect_map(std::initializer_list<std::string_view> allowed) const;
  [[nodiscard]] bool has(std::string_view key) const;
  /** @brief The value at `key`; a missing key is an error that names `why` (e.g. "required"). */
  [[nodiscard]] ConfigNode get(std::string_view key) const;
  [[nodiscard]] std::optional<ConfigNode> find(std::string_view key) const;
  /** @brief Elements of a sequence (error if not a sequence). */
  [[nodiscard]] std::vector<ConfigNode> items() const;
  /** @brief Key/value pairs of a map in file order (error if not a map). */
  [[nodiscard]] std::vector<std::pair<std::string, ConfigNode>> entries() const;

  [[nodiscard]] std::string as_string() const;
  [[nodiscard]] long long as_int(long long min_value, long long max_value) const;
  [[nodiscard]] int as_positive_int() const;
  [[nodiscard]] double as_double() const;
  /** @brief A fraction in (0, 1]. */
  [[nodiscard]] double as_fraction() const;
  [[nodiscard]] bool as_bool() const;
  /** @brief One of `choices` (exact match). */
  [[nodiscard]] std::string as_choice(std::initializer_list<std::string_view> choices) const;
  [[nodiscard]] std::string as_choice(std::span<const std::string_view> choices) const;
  [[nodiscard]] core::Bytes as_bytes(bool allow_zero = false) const;
  /// The slowest bandwidth a scenario may give (1 MB/s): anything slower is a unit slip.
  static constexpr double kMinBandwidth = 1e6;
  /** @brief A positive bandwidth of at least kMinBandwidth. */
  [[nodiscard]] core::BytesPerSec as_bandwidth() const;
  [[nodiscard]] core::Seconds as_duration() const;
  [[nodiscard]] core::FlopPerSec as_flop_rate() const;

 private:
  [[nodiscard]] std::string scalar(const char* what) const;
  [[nodiscard]] std::string child_path(std::string_view key) const;

  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  core::SourceLocation fallback_;
};

/** @brief "did you mean 'x'?" for a misspelt key or name, or "" when nothing is close. */
std::string suggest(std::string_view word, const std::vector<std::string>& candidates);
/** @brief "a, b, c" */
std::string join(const std::vector<std::string>& words);

}  // namespace shardsim::scenario
