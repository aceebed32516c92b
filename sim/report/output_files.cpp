#include "sim/report/output_files.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace shardsim::report {

namespace {

namespace fs = std::filesystem;

// The temporaries being written, for the signal handler: fixed storage it can read without allocating.
constexpr std::size_t kSlots = 64;
constexpr std::size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_paths{};
std::array<std::atomic<bool>, kSlots> g_used{};
std::mutex g_claim;

extern "C" void remove_temporaries_and_die(int sig) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (g_used[i].load()) ::unlink(g_paths[i].data());
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // ignored by whoever started us (nohup): leave it so
      struct sigaction sa {};
      sa.sa_handler = remove_temporaries_and_die;
      ::sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// Registers `path` for removal on a signal; -1 when it cannot be (too long, all slots taken): it is then only
// removed by the normal paths.
int claim(const std::string& path) {
  if (path.size() + 1 > kPathMax) return -1;
  install_handlers();
  std::lock_guard<std::mutex> g(g_claim);
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (!g_used[i].load()) {
      std::memcpy(g_paths[i].data(), path.c_str(), path.size() + 1);
      g_used[i].store(true);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void release(int slot) {
  if (slot >= 0) g_used[static_cast<std::size_t>(slot)].store(false);
}

// Temporaries of `target` that a process no longer alive left behind (kill -9, power loss): ".NAME.PID.tmp".
void remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = fmt::format(".{}.", target.filename().string());
  std::error_code ec;
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + 4 || name.rfind(prefix, 0) != 0 || name.substr(name.size() - 4) != ".tmp") continue;
    const std::string pid_text = name.substr(prefix.size(), name.size() - prefix.size() - 4);
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

}  // namespace

OutputFiles::~OutputFiles() { discard(); }

void OutputFiles::add(const std::string& path, std::string text) {
  std::error_code ec;
  for (const auto& other : files_) {
    // Two outputs to one file (--json x --trace x): one would silently replace the other.
    if (other.path == path || fs::equivalent(other.path, path, ec)) {
      throw OutputError(fmt::format("'{}' is named for two outputs; give each its own file", path));
    }
  }
  File f;
  f.path = path;
  f.text = std::move(text);
  const fs::path target(path);
  const fs::file_status link = fs::symlink_status(target, ec);
  const fs::file_status file = fs::status(target, ec);
  f.in_place = fs::is_symlink(link) || (fs::exists(file) && !fs::is_regular_file(file));
  files_.push_back(std::move(f));
}

void OutputFiles::discard() {
  for (auto& f : files_) {
    if (f.tmp.empty()) continue;
    std::error_code ignored;
    fs::remove(f.tmp, ignored);
    release(f.slot);
    f.tmp.clear();
    f.slot = -1;
  }
}

void OutputFiles::prepare() {
  if (prepared_) return;
  for (auto& f : files_) {
    if (f.in_place) continue;
    const fs::path target(f.path);
    remove_stale_temporaries(target);
    const std::string tmp = (target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid())).string();
    f.slot = claim(tmp);
    f.tmp = tmp;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      discard();
      throw OutputError(fmt::format("cannot write '{}'{}", f.path, files_.size() > 1 ? "; no output was written" : ""));
    }
    out << f.text;
    out.flush();
    if (!out) {
      out.close();
      discard();
      throw OutputError(fmt::format("cannot write '{}' (disk full?); {}", f.path,
                                    files_.size() > 1 ? "no output was written" : "it is left as it was"));
    }
  }
  prepared_ = true;
}

void OutputFiles::commit() {
  prepare();
  // Devices and pipes first: a failure there still leaves every regular target as it was.
  for (auto& f : files_) {
    if (!f.in_place) continue;
    std::ofstream out(f.path, std::ios::binary);
    if (out) {
      out << f.text;
      out.flush();
    }
    if (!out) {
      discard();
      throw OutputError(fmt::format("cannot write '{}' (device full or closed?)", f.path));
    }
  }
  for (auto& f : files_) {
    if (f.tmp.empty()) continue;
    std::error_code ec;
    fs::rename(f.tmp, f.path, ec);
    if (ec) {
      discard();
      throw OutputError(fmt::format("cannot write '{}': {}", f.path, ec.message()));
    }
    release(f.slot);
    f.tmp.clear();
    f.slot = -1;
  }
  files_.clear();
  prepared_ = false;
}

void write_file_atomic(const std::string& path, const std::string& text) {
  OutputFiles out;
  out.add(path, text);
  out.commit();
}

}  // namespace shardsim::report
