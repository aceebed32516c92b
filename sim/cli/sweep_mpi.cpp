#include "sim/cli/sweep_mpi.hpp"

#include <cstdlib>
#include <exception>
#include <map>

#include "sim/cli/command_support.hpp"
#include "sim/core/errors.hpp"

#ifdef SHARDSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace shardsim::cli {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

}  // namespace

#ifdef SHARDSIM_HAVE_MPI

namespace {

// Messages: a worker sends kRow (its last row; empty on its first request) to ask for a point; rank 0 answers
// kPoint with the point's index, or kStop.
constexpr int kRow = 1;
constexpr int kPoint = 2;
constexpr int kStop = 3;

}  // namespace

bool launched_by_mpi(bool force) {
  return force || env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1;
}

MpiJob::MpiJob() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiJob::~MpiJob() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

void MpiJob::coordinate(const std::vector<std::size_t>& todo,
                        const std::function<void(std::size_t, const std::string&)>& on_row) const {
  std::size_t next = 0;
  int working = size_ - 1;
  std::map<int, std::size_t> point_of;  // the point each rank is evaluating
  std::exception_ptr failure;
  std::string row;
  while (working > 0) {
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, kRow, MPI_COMM_WORLD, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    row.assign(static_cast<std::size_t>(count), '\0');
    MPI_Recv(row.data(), count, MPI_CHAR, st.MPI_SOURCE, kRow, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const int src = st.MPI_SOURCE;
    if (auto it = point_of.find(src); it != point_of.end()) {
      if (!failure) {
        try {
          on_row(it->second, row);
        } catch (...) {
          failure = std::current_exception();
        }
      }
      point_of.erase(it);
    }
    if (!failure && next < todo.size()) {
      const unsigned long long point = todo[next++];
      point_of[src] = static_cast<std::size_t>(point);
      MPI_Send(&point, 1, MPI_UNSIGNED_LONG_LONG, src, kPoint, MPI_COMM_WORLD);
    } else {
      const unsigned long long none = 0;
      MPI_Send(&none, 1, MPI_UNSIGNED_LONG_LONG, src, kStop, MPI_COMM_WORLD);
      --working;
    }
  }
  if (failure) std::rethrow_exception(failure);
}

void MpiJob::work(const std::function<std::string(std::size_t)>& evaluate) const {
  std::string row;  // nothing done yet: the first request carries no row
  for (;;) {
    MPI_Send(row.data(), static_cast<int>(row.size()), MPI_CHAR, 0, kRow, MPI_COMM_WORLD);
    unsigned long long point = 0;
    MPI_Status st;
    MPI_Recv(&point, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    if (st.MPI_TAG == kStop) return;
    row = evaluate(static_cast<std::size_t>(point));
    SHARDSIM_ASSERT(!row.empty(), "a sweep row is never empty");
  }
}

#else

bool launched_by_mpi(bool force) {
  if (force) throw UsageError("--mpi: this shardsim was built without MPI (Debian: libopenmpi-dev, then rebuild)");
  if (env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1) {
    throw UsageError("started by an MPI launcher, but this shardsim was built without MPI (Debian: libopenmpi-dev, "
                     "then rebuild); run it without mpirun, or with --shard i/N per process");
  }
  return false;
}

MpiJob::MpiJob() = default;
MpiJob::~MpiJob() = default;
void MpiJob::coordinate(const std::vector<std::size_t>&, const std::function<void(std::size_t, const std::string&)>&) const {}
void MpiJob::work(const std::function<std::string(std::size_t)>&) const {}

#endif

}  // namespace shardsim::cli
