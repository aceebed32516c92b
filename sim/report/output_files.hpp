#pragma once
// The files a command writes, all or nothing: each regular target is written to a temporary beside it, and only
// when every one is complete are they renamed over their targets; on any failure, none is left behind. A device,
// a pipe or a link (/dev/null, /dev/stdout, a FIFO) is written in place, never replaced by a regular file.
// Temporaries are removed on SIGINT, SIGTERM and SIGHUP too, and those a killed run (kill -9) left beside a target
// are removed by the next write to it.
#include <stdexcept>
#include <string>
#include <vector>

namespace shardsim::report {

/** @brief An output file that cannot be written (bad path, no permission, disk full): the user's to fix, exit 2. */
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputFiles {
 public:
  OutputFiles() = default;
  ~OutputFiles();  ///< removes the temporaries of an output set that was not committed
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  /** @brief Adds `text` for `path` (nothing is written yet). Throws OutputError when `path` is already one of the
   *  outputs. */
  void add(const std::string& path, std::string text);
  /** @brief Writes every regular target's temporary. Throws OutputError (and removes them) when one fails. */
  void prepare();
  /** @brief prepare() if not done, then writes the in-place targets and renames the temporaries over their
   *  targets. Throws OutputError, leaving every regular target as it was, when something fails before the
   *  renames. */
  void commit();

 private:
  struct File {
    std::string path;
    std::string text;
    bool in_place = false;  ///< a device, pipe or link
    std::string tmp;        ///< the temporary, once written
    int slot = -1;          ///< its place in the signal handler's list
  };
  void discard();
  std::vector<File> files_;
  bool prepared_ = false;
};

/** @brief Writes `text` to `path` alone, all or nothing (an OutputFiles of one). Throws OutputError. */
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace shardsim::report
