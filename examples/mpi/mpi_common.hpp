// Helpers the MPI examples share: rank/size, an even block partition, a counter-based generator, rank-0 printing.
//
// The examples must print the same result whatever the number of ranks, so
// nothing here may depend on it except the partition: the input data is a
// pure function of (seed, global index), not of a stream each rank would
// consume differently.
#pragma once

#include <mpi.h>

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpi_example {

struct World {
  int rank = 0;
  int size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  bool root() const { return rank == 0; }
};

// Rank r's share [begin, end) of n items in contiguous blocks, the first
// n % size ranks one longer.
struct Block {
  int64_t begin = 0, end = 0;
  int64_t count() const { return end - begin; }
};
inline Block Partition(int64_t n, int rank, int size) {
  const int64_t base = n / size, extra = n % size;
  Block b;
  b.begin = rank * base + (rank < extra ? rank : extra);
  b.end = b.begin + base + (rank < extra ? 1 : 0);
  return b;
}

// Uniform on [0, 1) from (seed, index) alone: splitmix64's finaliser.
inline double Uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ULL + index + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-53;
}

// Integer value of "--name v" in argv, else `fallback`.
inline long IntFlag(int argc, char** argv, const std::string& name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (name == argv[i]) return std::strtol(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

// CPU time of this process (all its threads) in ms: with more ranks than
// free cores the wall time stops falling, the work per rank still does.
inline double CpuMs() {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Aborts every rank with a message: a failed example must not hang the others.
[[noreturn]] inline void Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace mpi_example
