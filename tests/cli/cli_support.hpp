#pragma once
// What the end-to-end tests of the `shardsim` binary share: running it from the source tree, reading files back,
// a scratch folder per test process.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shardsim::test {

namespace fs = std::filesystem;
inline const fs::path kSource = SHARDSIM_SOURCE_DIR;
inline const std::string kBinary = SHARDSIM_BINARY;

struct Outcome {
  int code = -1;
  std::string out;  ///< stdout, and stderr when asked for
};

/** @brief Runs the shell command line `cmd`: its stdout (and whatever it redirects there) and exit code. */
inline Outcome run_shell(const std::string& cmd) {
  Outcome r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/** @brief Runs `shardsim ARGS` in the source tree. */
inline Outcome run_shardsim(const std::string& args, bool with_stderr) {
  return run_shell("cd '" + kSource.string() + "' && '" + kBinary + "' " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

inline std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/** @brief A scratch folder named after `tag` and this process. */
inline fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("shardsim-" + tag + "-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace shardsim::test
