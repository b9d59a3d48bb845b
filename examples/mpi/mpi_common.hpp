// Helpers the MPI examples share: rank/size, an even block partition, a counter-based generator, strict option parsing, clean failure.
//
// The examples must print the same result whatever the number of ranks, so
// nothing here may depend on it except the partition: the input data is a
// pure function of (seed, global index), not of a stream each rank would
// consume differently.
#pragma once

#include <mpi.h>

#include <time.h>

#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

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

// Collective: ends the job cleanly when any rank has an error (a non-empty
// `error`). The lowest such rank prints it once, every rank calls
// MPI_Finalize and exits with `status`: no rank is left waiting in a
// collective, and mpirun exits with `status`. Every rank must call it at the
// same point; with no error anywhere it returns.
inline void ExitIfAnyError(const std::string& error, int status = 2) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int mine = error.empty() ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return;
  if (rank == first) std::fprintf(stderr, "error: %s\n", error.c_str());
  MPI_Finalize();
  std::exit(status);
}

// The examples' command line, parsed strictly: an integer is the whole word
// in decimal, a real the whole word as strtod reads it (finite), each within
// its declared range; an unknown word, an option given twice or an option
// without its value is an error that names it. Declare the options, then
// call Parse (collective) on every rank.
//
//   mpi_example::Options options("dualcast-mpi-bar", "[--elements N] [--check]");
//   int64_t elements = 2000;
//   bool check = false;
//   options.Int("--elements", &elements, 2, kMaxElements, "nodes must fit in an int");
//   options.Flag("--check", &check);
//   options.Parse(argc, argv);  // exits with status 2 on every rank on an error
class Options {
 public:
  Options(std::string program, std::string usage) : program_(std::move(program)), usage_(std::move(usage)) {}

  // `--name N`, min <= N <= max; `why_max` (if any) says where the maximum comes from.
  void Int(const char* name, int64_t* value, int64_t min, int64_t max, const char* why_max = nullptr) {
    options_.push_back({name, Kind::kInt, value, nullptr, nullptr, min, max, 0, 0, why_max});
  }
  // `--name X`, finite, min <= X <= max.
  void Real(const char* name, double* value, double min, double max) {
    options_.push_back({name, Kind::kReal, nullptr, value, nullptr, 0, 0, min, max, nullptr});
  }
  // `--name` alone sets *value to true.
  void Flag(const char* name, bool* value) {
    options_.push_back({name, Kind::kFlag, nullptr, nullptr, value, 0, 0, 0, 0, nullptr});
  }

  // Collective. `--help` prints the usage (rank 0) and exits 0 everywhere.
  void Parse(int argc, char** argv) const {
    bool help = false;
    const std::string error = ParseArgs(argc, argv, help);
    ExitIfAnyError(error.empty() ? error : error + "\nusage: " + program_ + " " + usage_);
    if (help) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) std::printf("usage: %s %s\n", program_.c_str(), usage_.c_str());
      MPI_Finalize();
      std::exit(0);
    }
  }

  // The error for argv (empty when it parses), setting the declared values; no MPI.
  std::string ParseArgs(int argc, char** argv, bool& help) const {
    std::vector<bool> seen(options_.size(), false);
    for (int a = 1; a < argc; ++a) {
      const std::string word = argv[a];
      if (word == "--help" || word == "-h") {
        help = true;
        continue;
      }
      size_t k = 0;
      while (k < options_.size() && word != options_[k].name) ++k;
      if (k == options_.size()) return "unknown option '" + word + "'";
      const Option& o = options_[k];
      if (seen[k]) return o.name + " given twice";
      seen[k] = true;
      if (o.kind == Kind::kFlag) {
        *o.flag = true;
        continue;
      }
      const bool is_option = a + 1 < argc && argv[a + 1][0] == '-' && argv[a + 1][1] == '-';
      if (a + 1 >= argc || is_option) return o.name + " needs a value";
      const std::string text = argv[++a];
      std::string error = o.kind == Kind::kInt ? ParseInt(o, text) : ParseReal(o, text);
      if (!error.empty()) return error;
    }
    return "";
  }

 private:
  enum class Kind { kInt, kReal, kFlag };
  struct Option {
    std::string name;
    Kind kind;
    int64_t* integer;
    double* real;
    bool* flag;
    int64_t int_min, int_max;
    double real_min, real_max;
    const char* why_max;
  };

  static std::string ParseInt(const Option& o, const std::string& text) {
    int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      return o.name + " '" + text + "': not a whole number";
    }
    const bool huge = ec == std::errc::result_out_of_range;  // beyond int64 either way
    if ((huge && text[0] == '-') || (!huge && v < o.int_min)) {
      return o.name + " " + text + ": must be at least " + std::to_string(o.int_min);
    }
    if (huge || v > o.int_max) {
      std::string m = o.name + " " + text + ": must be at most " + std::to_string(o.int_max);
      if (o.why_max != nullptr) m += std::string(" (") + o.why_max + ")";
      return m;
    }
    *o.integer = v;
    return "";
  }

  static std::string ParseReal(const Option& o, const std::string& text) {
    // strtod would skip leading blanks; the whole word must be the number.
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) {
      return o.name + " '" + text + "': not a number";
    }
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (*end != '\0') return o.name + " '" + text + "': not a number";
    if (errno == ERANGE) return o.name + " " + text + ": beyond the range of a double";
    if (!std::isfinite(v) || !(v >= o.real_min && v <= o.real_max)) {
      char range[96];
      if (o.real_max == DBL_MAX) {
        std::snprintf(range, sizeof range, ">= %g", o.real_min);
      } else {
        std::snprintf(range, sizeof range, "in %g .. %g", o.real_min, o.real_max);
      }
      return o.name + " " + text + ": must be a finite number " + range;
    }
    *o.real = v;
    return "";
  }

  std::string program_, usage_;
  std::vector<Option> options_;
};

// The larger of a and b, NaN when either is: for a self-check's worst
// difference, where std::max(worst, NaN) would return worst and pass.
inline double MaxKeepNan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  return a < b ? b : a;
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
