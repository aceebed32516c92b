#include "sim/scenario/npy_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "sim/core/errors.hpp"
#include "sim/scenario/text_file.hpp"

namespace shardsim::scenario {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& expected) {
  throw core::ConfigError(core::SourceLocation{path, 0, 0}, "", expected);
}

// The value of `key` in the header's Python dict literal, up to the next ',' at depth 0 or the closing '}'.
std::string dict_value(const std::string& header, const std::string& key) {
  const std::size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return {};
  std::size_t i = header.find(':', k);
  if (i == std::string::npos) return {};
  ++i;
  int depth = 0;
  std::size_t j = i;
  for (; j < header.size(); ++j) {
    const char c = header[j];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = header.substr(i, j - i);
  const auto a = v.find_first_not_of(' ');
  const auto b = v.find_last_not_of(' ');
  return a == std::string::npos ? std::string() : v.substr(a, b - a + 1);
}

float half_to_float(std::uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int man = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(man, -24);
  } else if (exp == 31) {
    v = man == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(man + 1024, exp - 25);
  }
  return static_cast<float>(sign ? -v : v);
}

}  // namespace

std::vector<float> read_npy_values(const std::string& path) {
  return parse_npy_values(read_text_file(path, "the tensor sample (.npy)"), path);
}

std::vector<float> parse_npy_values(const std::string& bytes, const std::string& path) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) fail(path, "a NumPy .npy file (it starts with \\x93NUMPY)");
  const auto u8 = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
  const int major = u8(6);
  std::size_t header_len = 0;
  std::size_t start = 0;
  if (major == 1) {
    header_len = u8(8) | (std::size_t{u8(9)} << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "a complete .npy header");
    header_len = u8(8) | (std::size_t{u8(9)} << 8) | (std::size_t{u8(10)} << 16) | (std::size_t{u8(11)} << 24);
    start = 12;
  } else {
    fail(path, fmt::format(".npy format version 1, 2 or 3, not {}", major));
  }
  if (bytes.size() < start + header_len) fail(path, "a complete .npy header");
  const std::string header = bytes.substr(start, header_len);
  const std::string descr = dict_value(header, "descr");
  std::size_t width = 0;
  if (descr == "'<f2'") width = 2;
  if (descr == "'<f4'") width = 4;
  if (descr == "'<f8'") width = 8;
  if (width == 0) fail(path, fmt::format("little-endian float16, float32 or float64 values ('<f2', '<f4', '<f8'), not {}", descr.empty() ? "no dtype" : descr));
  const std::string shape = dict_value(header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') fail(path, "a shape tuple in the .npy header");
  std::size_t count = 1;
  std::size_t i = 1;
  while (i + 1 < shape.size()) {
    while (i + 1 < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i + 1 >= shape.size()) break;
    std::size_t dim = 0;
    std::size_t digits = 0;
    while (i + 1 < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
      dim = dim * 10 + static_cast<std::size_t>(shape[i] - '0');
      if (dim > bytes.size()) fail(path, "a shape whose values fit in the file");
      ++i;
      ++digits;
    }
    if (digits == 0) fail(path, fmt::format("a shape of whole numbers, not {}", shape));
    count *= dim;
    if (count > bytes.size()) fail(path, "a shape whose values fit in the file");
  }
  const std::size_t data = start + header_len;
  if (count == 0) fail(path, "at least one value");
  if (bytes.size() - data < count * width) {
    fail(path, fmt::format("{} values of {} bytes after the header (shape {}), but the file holds {} bytes", count, width,
                           shape, bytes.size() - data));
  }
  std::vector<float> out(count);
  for (std::size_t k = 0; k < count; ++k) {
    const char* p = bytes.data() + data + k * width;
    double v = 0.0;
    if (width == 2) {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      v = half_to_float(h);
    } else if (width == 4) {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    } else {
      std::memcpy(&v, p, 8);
    }
    if (!std::isfinite(v) || std::abs(v) > 3.4e38) {
      fail(path, fmt::format("finite float values (the codecs cannot carry NaN or infinity): value {} is {}", k, v));
    }
    out[k] = static_cast<float>(v);
  }
  return out;
}

}  // namespace shardsim::scenario
