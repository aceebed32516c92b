#include "sim/core/units.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <utility>

namespace shardsim::core {
namespace {

struct Split {
  double number;
  std::string_view unit;
};

// "<number><unit>" with optional spaces between; the number must be finite and positive-or-zero.
Split split_number(std::string_view text, std::string_view what, std::string_view example) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  std::string_view s = trim(text);
  double number = 0.0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec != std::errc() || ptr == s.data()) {
    throw UnitError(fmt::format("expected {} with a unit such as \"{}\", got \"{}\"", what, example, text));
  }
  std::string_view unit = trim(s.substr(static_cast<std::size_t>(ptr - s.data())));
  if (unit.empty()) {
    throw UnitError(fmt::format("expected {} with a unit such as \"{}\", got the bare number \"{}\"", what,
                                example, text));
  }
  if (!std::isfinite(number) || number < 0.0) {
    const std::string_view noun = what.starts_with("a ") ? what.substr(2) : what;  // "a size" -> "size"
    throw UnitError(fmt::format("expected a finite, non-negative {}, got \"{}\"", noun, text));
  }
  return {number, unit};
}

// Splits an SI or IEC prefix off the front of `unit`; returns the multiplier.
std::pair<double, std::string_view> take_prefix(std::string_view unit) {
  struct P {
    std::string_view p;
    double m;
  };
  static constexpr P kPrefixes[] = {
      {"Ki", 1024.0}, {"Mi", 1024.0 * 1024}, {"Gi", 1024.0 * 1024 * 1024}, {"Ti", 1024.0 * 1024 * 1024 * 1024},
      {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15},
      {"E", 1e18}};
  for (const auto& [p, m] : kPrefixes) {
    if (unit.size() > p.size() && unit.substr(0, p.size()) == p) return {m, unit.substr(p.size())};
  }
  return {1.0, unit};
}

// Size units: bytes ("B") or bits ("b") with an optional prefix. Returns bytes per unit, or 0 if not a size.
double size_unit(std::string_view unit) {
  auto [mult, rest] = take_prefix(unit);
  if (rest == "B") return mult;
  if (rest == "b") return mult / 8.0;
  return 0.0;
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  auto [n, unit] = split_number(text, "a size", "64GiB");
  double per = size_unit(unit);
  if (per == 0.0) {
    throw UnitError(fmt::format("unknown size unit \"{}\" in \"{}\" (use B or b with k/M/G/T or Ki/Mi/Gi/Ti)",
                                unit, text));
  }
  return Bytes(n * per);
}

BytesPerSec parse_bandwidth(std::string_view text) {
  auto [n, unit] = split_number(text, "a bandwidth", "25GB/s");
  if (unit.size() < 3 || unit.substr(unit.size() - 2) != "/s") {
    throw UnitError(fmt::format("unknown bandwidth unit \"{}\" in \"{}\" (use a size per second: GB/s, Gb/s, GiB/s)",
                                unit, text));
  }
  double per = size_unit(unit.substr(0, unit.size() - 2));
  if (per == 0.0) {
    throw UnitError(fmt::format("unknown bandwidth unit \"{}\" in \"{}\" (use a size per second: GB/s, Gb/s, GiB/s)",
                                unit, text));
  }
  return BytesPerSec(n * per);
}

Seconds parse_duration(std::string_view text) {
  auto [n, unit] = split_number(text, "a duration", "2us");
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}};
  for (const auto& [u, m] : kUnits) {
    if (unit == u) return Seconds(n * m);
  }
  throw UnitError(fmt::format("unknown duration unit \"{}\" in \"{}\" (use ns, us, ms, s or min)", unit, text));
}

Flops parse_flops(std::string_view text) {
  auto [n, unit] = split_number(text, "a FLOP count", "12.5GFLOP");
  auto [mult, rest] = take_prefix(unit);
  if (rest == "FLOP" && unit.find('i') == std::string_view::npos) return Flops(n * mult);
  throw UnitError(fmt::format("unknown FLOP unit \"{}\" in \"{}\" (use e.g. GFLOP)", unit, text));
}

FlopPerSec parse_flop_rate(std::string_view text) {
  auto [n, unit] = split_number(text, "a FLOP rate", "191.5TFLOP/s");
  auto [mult, rest] = take_prefix(unit);
  if (mult != 1.0 && (unit.substr(0, 2) == "Ki" || unit.substr(0, 2) == "Mi" || unit.substr(0, 2) == "Gi" ||
                      unit.substr(0, 2) == "Ti" || unit.substr(0, 2) == "Pi")) {
    throw UnitError(fmt::format("binary prefixes make no sense for FLOP rates: \"{}\"", text));
  }
  if (rest == "FLOP/s" || rest == "FLOPS") return FlopPerSec(n * mult);
  throw UnitError(fmt::format("unknown FLOP rate unit \"{}\" in \"{}\" (use e.g. TFLOP/s or TFLOPS)", unit, text));
}

std::string format_bytes(Bytes b) {
  double v = b.value();
  double a = std::fabs(v);
  if (a >= kGiB) return fmt::format("{:.2f} GiB", v / kGiB);
  if (a >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", v / (1024.0 * 1024.0));
  if (a >= 1024.0) return fmt::format("{:.2f} KiB", v / 1024.0);
  return fmt::format("{:.0f} B", v);
}

std::string format_seconds(Seconds s) {
  double v = s.value();
  double a = std::fabs(v);
  if (a >= 1.0) return fmt::format("{:.3f} s", v);
  if (a >= 1e-3) return fmt::format("{:.3f} ms", v * 1e3);
  return fmt::format("{:.3f} us", v * 1e6);
}

std::string format_bandwidth(BytesPerSec r) { return fmt::format("{:.1f} GB/s", r.value() / 1e9); }

}  // namespace shardsim::core
