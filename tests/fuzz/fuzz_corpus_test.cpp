// The fuzz targets' seed corpora and every input a fuzzer found a failure with (tests/fuzz/regressions/<target>/,
// kept after the fix) replayed through the same entries in the ordinary build, and under the sanitizers in
// `make test`: each must end normally or with a ConfigError.
#include "tests/fuzz/fuzz_entries.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardsim::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs(const Target& t) {
  std::vector<fs::path> out;
  for (const auto& dir : t.seeds) {
    const fs::path d = fs::path(SHARDSIM_SOURCE_DIR) / dir;
    if (!fs::is_directory(d)) continue;
    for (const auto& e : fs::directory_iterator(d)) {
      // Seeds small enough to read whole (the measurement CSVs of validate/results are large and not inputs here).
      if (e.is_regular_file() && e.file_size() < 1 << 20 && e.path().filename().string()[0] != '.') out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzCorpus, EveryTargetReadsItsSeedsAndRegressionsWithoutCrashing) {
  std::size_t replayed = 0;
  for (const auto& t : targets()) {
    const auto files = inputs(t);
    EXPECT_FALSE(files.empty()) << t.name;
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      SCOPED_TRACE(t.name + ": " + f.string());
      EXPECT_NO_THROW(t.entry(s.str()));
      ++replayed;
    }
  }
  EXPECT_GT(replayed, 50u);
}

}  // namespace
}  // namespace shardsim::fuzz
