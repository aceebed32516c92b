#pragma once
// A sweep across the ranks of an MPI job (`mpirun -np K shardsim sweep ...`): rank 0 keeps the journal and hands
// points out one at a time to whichever rank asks next; ranks 1..K-1 evaluate them and send their rows back. Built
// when CMake finds MPI (Debian's Open MPI); without it, `launched_by_mpi` is false and the sweep runs on threads.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace shardsim::cli {

/** @brief True where this shardsim has MPI and was started by an MPI launcher with more than one rank (Open MPI's
 *  OMPI_COMM_WORLD_SIZE, PMI_SIZE of MPICH and Slurm's PMI) or `force` is set. */
bool launched_by_mpi(bool force);

/** @brief This process's place in the MPI job. MPI_Init on construction, MPI_Finalize on destruction. */
class MpiJob {
 public:
  MpiJob();
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

  /** @brief Rank 0: hands `todo` out point by point to the other ranks and calls `on_row(point, row)` for each row
   *  sent back, in the order they arrive. An exception from `on_row` stops handing out points; the ranks still
   *  working are let go and the exception is rethrown. */
  void coordinate(const std::vector<std::size_t>& todo,
                  const std::function<void(std::size_t, const std::string&)>& on_row) const;
  /** @brief Ranks 1..K-1: asks rank 0 for points and sends back `evaluate(point)` until told to stop. */
  void work(const std::function<std::string(std::size_t)>& evaluate) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace shardsim::cli
