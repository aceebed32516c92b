#include "sim/report/output_files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shardsim::report {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("shardsim-out-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int files_in(const fs::path& d) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

// Several outputs: all written, or none (the old files left as they were) when one cannot be.
TEST(OutputFiles, AllOrNothing) {
  const fs::path d = scratch("all");
  std::ofstream(d / "a.json") << "old";
  {
    OutputFiles out;
    out.add((d / "a.json").string(), "new a");
    out.add((d / "missing" / "b.csv").string(), "new b");
    EXPECT_THROW(out.commit(), OutputError);
  }
  EXPECT_EQ(read(d / "a.json"), "old");
  EXPECT_EQ(files_in(d), 1);  // no temporary left beside it
  OutputFiles out;
  out.add((d / "a.json").string(), "new a");
  out.add((d / "b.csv").string(), "new b");
  out.commit();
  EXPECT_EQ(read(d / "a.json"), "new a");
  EXPECT_EQ(read(d / "b.csv"), "new b");
  EXPECT_EQ(files_in(d), 2);
  // One file named for two outputs is refused, not half-written.
  OutputFiles twice;
  twice.add((d / "a.json").string(), "x");
  EXPECT_THROW(twice.add((d / "a.json").string(), "y"), OutputError);
  EXPECT_THROW(twice.add((d / "." / "a.json").string(), "y"), OutputError);
  fs::remove_all(d);
}

// A temporary written when SIGTERM (or SIGINT) arrives is removed before the process dies of it.
TEST(OutputFiles, TemporariesGoOnSigterm) {
  const fs::path d = scratch("signal");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    OutputFiles out;
    out.add((d / "r.json").string(), std::string(1 << 20, 'x'));
    out.prepare();
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(files_in(d), 0);
  fs::remove_all(d);
}

// What a kill -9 left beside a target (".NAME.PID.tmp" of a process no longer alive) goes with the next write.
TEST(OutputFiles, TheNextWriteRemovesWhatAKilledRunLeft) {
  const fs::path d = scratch("stale");
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const fs::path stale = d / (".r.json." + std::to_string(dead) + ".tmp");
  const fs::path other = d / ".other.json.1.tmp";  // another target's: left alone
  std::ofstream(stale) << "half";
  std::ofstream(other) << "half";
  write_file_atomic((d / "r.json").string(), "whole");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(read(d / "r.json"), "whole");
  fs::remove_all(d);
}

}  // namespace
}  // namespace shardsim::report
