// Runs the peer script on the benchmark's own inputs and parses its CSV rows (see peers.h).
#include "bench/hmlstm/peers.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

namespace {
void WriteProblem(const Problem& p, const std::filesystem::path& dir) {
  std::ofstream out(dir / absl::StrCat("n", p.n, "_", LayoutName(p.layout), ".bin"), std::ios::binary);
  for (const std::vector<float>* v : {&p.z, &p.zb, &p.c_prev, &p.f, &p.i, &p.g, &p.cbar}) {
    out.write(reinterpret_cast<const char*>(v->data()), static_cast<std::streamsize>(v->size() * 4));
  }
}
}  // namespace

std::vector<Row> RunPeers(const std::vector<long>& sizes, int reps, int warmup) {
  std::vector<Row> rows;
  const std::filesystem::path script =
      std::filesystem::path(DUALCAST_SOURCE_DIR) / "bench/peers/hmlstm_peers.py";
  auto not_run = [&](const std::string& why) {
    for (const char* impl : {"torch-eager-where", "torch-compile", "jax-jit-grad-where"}) {
      Row r;
      r.impl = impl;
      r.variant = "full";
      r.layout = "rows";
      r.status = why;
      rows.push_back(r);
    }
    return rows;
  };
  if (!std::filesystem::exists(script)) return not_run("not installed (peer script missing)");
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "dualcast-hmlstm-peers";
  std::filesystem::create_directories(dir, ec);
  for (long n : sizes) {
    for (Layout layout : {Layout::kRows, Layout::kColumns}) WriteProblem(MakeProblem(n, layout), dir);
  }
  std::string cmd = absl::StrCat("python3 '", script.string(), "' --dir '", dir.string(),
                                 "' --sizes ", absl::StrJoin(sizes, ","), " --reps ", reps,
                                 " --warmup ", warmup, " 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return not_run("not installed (no python3)");
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::vector<std::string> f = absl::StrSplit(absl::StripTrailingAsciiWhitespace(line), ',');
    if (f.size() != 8 || f[0] == "impl") continue;
    Row r;
    r.impl = f[0];
    r.variant = f[1];
    r.layout = f[2];
    if (!absl::SimpleAtoi(f[3], &r.n)) continue;
    (void)absl::SimpleAtod(f[4], &r.median_ms);
    (void)absl::SimpleAtod(f[5], &r.min_ms);
    (void)absl::SimpleAtod(f[6], &r.max_error);
    r.status = f[7];
    r.device = "cpu (python peer)";
    if (r.status == "ok" && r.median_ms > 0) {
      r.gbps = FloorBytes(r.n, r.variant == "paper" ? Variant::kPaper : Variant::kFull) /
               (r.median_ms * 1e-3) / 1e9;
    }
    rows.push_back(r);
  }
  int rc = pclose(pipe);
  if (rows.empty()) return not_run(rc == 0 ? "not installed" : "not installed (python3 failed)");
  std::filesystem::remove_all(dir, ec);
  return rows;
}

}  // namespace dualcast::bench
