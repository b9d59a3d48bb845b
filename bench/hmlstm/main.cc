// dualcast-hmlstm: the HM-LSTM cell-update benchmark of Revels et al. 2018, all implementations in one run.
//
// Usage: dualcast-hmlstm [--sizes 512,1024,2048] [--reps 20] [--warmup 2]
//          [--layouts rows,columns] [--variants paper,full] [--impls a,b]
//          [--json FILE] [--csv FILE] [--plot FILE.svg] [--roofline] [--no-peers]
// Exit status: 0 when every row that ran matched the float64 reference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/hmlstm/implementations.h"
#include "bench/hmlstm/peers.h"
#include "bench/hmlstm/problem.h"
#include "bench/hmlstm/report.h"
#include "bench/hmlstm/roofline.h"
#include "jit/cpu/thread_pool.h"

namespace dualcast::bench {
namespace {

constexpr char kVersion[] = "0.1.0";
// float32 results against the float64 reference: a few ulp of O(1) values.
constexpr double kTolerance = 1e-5;

struct Options {
  std::vector<long> sizes = {512, 1024, 2048};
  int reps = 20, warmup = 2;
  std::vector<Layout> layouts = {Layout::kRows, Layout::kColumns};
  std::vector<Variant> variants = {Variant::kPaper, Variant::kFull};
  std::vector<std::string> impls;  // empty: all
  std::string json, csv, plot;
  bool roofline = false, peers = true;
};

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << "dualcast-hmlstm: " << why
            << "\nusage: dualcast-hmlstm [--sizes 512,1024,2048] [--reps N>=1] [--warmup N]\n"
               "         [--layouts rows,columns] [--variants paper,full] [--impls a,b]\n"
               "         [--json FILE] [--csv FILE] [--plot FILE.svg] [--roofline] [--no-peers]\n";
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k];
    auto value = [&]() -> std::string {
      if (k + 1 >= argc) Usage(arg + " needs a value");
      return argv[++k];
    };
    if (arg == "--sizes") {
      o.sizes.clear();
      for (auto s : absl::StrSplit(value(), ',')) {
        long n;
        if (!absl::SimpleAtoi(std::string(s), &n) || n < 3) Usage("bad size '" + std::string(s) + "' (need n >= 3)");
        o.sizes.push_back(n);
      }
    } else if (arg == "--reps") {
      if (!absl::SimpleAtoi(value(), &o.reps) || o.reps < 1) Usage("--reps needs a number >= 1");
    } else if (arg == "--warmup") {
      if (!absl::SimpleAtoi(value(), &o.warmup) || o.warmup < 0) Usage("--warmup needs a number >= 0");
    } else if (arg == "--layouts") {
      o.layouts.clear();
      for (auto s : absl::StrSplit(value(), ',')) {
        if (s == "rows") o.layouts.push_back(Layout::kRows);
        else if (s == "columns") o.layouts.push_back(Layout::kColumns);
        else Usage("unknown layout '" + std::string(s) + "' (rows, columns)");
      }
    } else if (arg == "--variants") {
      o.variants.clear();
      for (auto s : absl::StrSplit(value(), ',')) {
        if (s == "paper") o.variants.push_back(Variant::kPaper);
        else if (s == "full") o.variants.push_back(Variant::kFull);
        else Usage("unknown variant '" + std::string(s) + "' (paper, full)");
      }
    } else if (arg == "--impls") {
      o.impls = absl::StrSplit(value(), ',');
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--csv") {
      o.csv = value();
    } else if (arg == "--plot") {
      o.plot = value();
    } else if (arg == "--roofline") {
      o.roofline = true;
    } else if (arg == "--no-peers") {
      o.peers = false;
    } else if (arg == "--help" || arg == "-h") {
      Usage("help");
    } else {
      Usage("unknown argument '" + arg + "'");
    }
  }
  return o;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) {
    std::cerr << "dualcast-hmlstm: could not write " << path << "\n";
    std::exit(2);
  }
  std::cerr << "wrote " << path << "\n";
}

int Main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  const std::string device =
      "cpu (" + std::to_string(jit::ThreadPool::Global().num_threads()) + " threads)";
  std::cout << "HM-LSTM cell update (Revels et al. 2018), float32, " << o.reps
            << " timed repetitions after " << o.warmup << " warm-up, device " << device << "\n";
  if (o.roofline) std::cout << FormatBandwidth(MeasureBandwidth()) << "\n";

  std::vector<Row> rows;
  bool failed = false;
  for (Variant variant : o.variants) {
    auto impls = MakeImplementations(variant);
    for (Layout layout : o.layouts) {
      for (long n : o.sizes) {
        Problem p = MakeProblem(n, layout);
        Reference ref = ComputeReference(p, variant);
        for (auto& impl : impls) {
          if (!o.impls.empty() &&
              std::find(o.impls.begin(), o.impls.end(), impl->name()) == o.impls.end()) {
            continue;
          }
          Row row;
          row.impl = impl->name();
          row.variant = VariantName(variant);
          row.layout = LayoutName(layout);
          row.n = n;
          row.device = device;
          if (std::string why = impl->unavailable(); !why.empty()) {
            row.status = why;
            rows.push_back(row);
            continue;
          }
          impl->Prepare(p);
          for (int w = 0; w < o.warmup; ++w) impl->Run();
          std::vector<double> times;
          for (int rep = 0; rep < o.reps; ++rep) {
            auto t0 = std::chrono::steady_clock::now();
            impl->Run();
            times.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
            if (n >= 1024 && (rep + 1) % 5 == 0) {
              std::cerr << "n=" << n << " " << row.layout << " " << row.variant << " "
                        << row.impl << " " << rep + 1 << "/" << o.reps << "\r" << std::flush;
            }
          }
          row.median_ms = Median(times);
          row.min_ms = *std::min_element(times.begin(), times.end());
          row.gbps = FloorBytes(n, variant) / (row.median_ms * 1e-3) / 1e9;
          row.max_error = MaxError(impl->Collect(), ref, variant);
          if (!(row.max_error <= kTolerance)) {
            row.status = "FAILED";
            failed = true;
          }
          rows.push_back(row);
        }
      }
    }
  }
  if (o.peers) {
    std::vector<long> sizes(o.sizes.begin(), o.sizes.end());
    for (Row& r : RunPeers(sizes, o.reps, o.warmup)) rows.push_back(r);
  }
  std::cerr << std::string(60, ' ') << "\r";
  FillRatios(rows);
  std::cout << FormatTable(rows);
  if (!o.json.empty()) WriteFile(o.json, FormatJson(rows, kVersion));
  if (!o.csv.empty()) WriteFile(o.csv, FormatCsv(rows));
  if (!o.plot.empty()) WriteFile(o.plot, FormatSvg(rows, "HM-LSTM cell update, median time per call, " + device));
  if (failed) std::cout << "FAILED: some implementation disagrees with the float64 reference\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace dualcast::bench

int main(int argc, char** argv) { return dualcast::bench::Main(argc, argv); }
