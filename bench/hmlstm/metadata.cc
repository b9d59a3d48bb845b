// Collecting the run's metadata (see metadata.h) from the build, the checkout and /proc.
#include "bench/hmlstm/metadata.h"

#include <cstdio>
#include <ctime>
#include <fstream>

#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "bench/hmlstm/handwritten.h"
#include "jit/cpu/thread_pool.h"

namespace dualcast::bench {

namespace {

std::string RunCommand(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  pclose(pipe);
  return std::string(absl::StripAsciiWhitespace(out));
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown";
}

}  // namespace

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return absl::StrCat(a, " ", b, " ", c);
}

Metadata CollectMetadata(const std::string& command_line) {
  Metadata m;
  const std::string src = DUALCAST_SOURCE_DIR;
  m.git_revision = RunCommand("git -C '" + src + "' rev-parse --short=12 HEAD 2>/dev/null");
  if (m.git_revision.empty()) {
    m.git_revision = "unknown";
  } else if (!RunCommand("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null").empty()) {
    m.git_revision += "-dirty";
  }
  m.dualcast_version = DUALCAST_VERSION_STRING;
#if defined(__clang__)
  m.compiler = absl::StrCat("clang ", __clang_version__);
#elif defined(__GNUC__)
  m.compiler = absl::StrCat("gcc ", __VERSION__);
#else
  m.compiler = "unknown";
#endif
  m.llvm_version = DUALCAST_LLVM_VERSION;
  m.cpu_model = CpuModel();
  m.handwritten_isa = HandwrittenIsa();
  m.threads = jit::ThreadPool::Global().num_threads();
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.date_utc = date;
  m.command_line = command_line;
  m.load_start = LoadAverage();
  return m;
}

}  // namespace dualcast::bench
