// dualcast-hmlstm: the HM-LSTM cell-update benchmark of Revels et al. 2018, every implementation in one interleaved run.
//
// Per case (variant, layout, n): every row is prepared and run once cold
// (first-call and compile time), its results are checked against the float64
// reference (a row that disagrees is FAILED and not timed), then warmed up;
// then the timed repetitions run in rounds, each round giving every row
// (dualcast's and the framework peers') its share in turn, so machine noise
// hits all rows alike; each share starts after 2 ms of untimed calls (100 ms
// when framework peers run: kSettleMs, kSettleWithPeersMs). Options: see
// cli.h or --help.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/hmlstm/cli.h"
#include "bench/hmlstm/cuda_bench.h"
#include "bench/hmlstm/handwritten.h"
#include "bench/hmlstm/implementations.h"
#include "bench/hmlstm/metadata.h"
#include "bench/hmlstm/peers.h"
#include "bench/hmlstm/problem.h"
#include "bench/hmlstm/report.h"
#include "bench/hmlstm/roofline.h"
#include "jit/stats.h"

namespace dualcast::bench {
namespace {

// float32 results against the float64 reference: a few ulp of O(1) values.
constexpr double kTolerance = 1e-5;
constexpr int kMaxRounds = 5;

bool Selected(const Options& o, const std::string& impl) {
  return o.impls.empty() || std::find(o.impls.begin(), o.impls.end(), impl) != o.impls.end();
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

double Ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Untimed calls open each row's share of a round, for at least this long:
// the switch from the row before (evicted caches, a pool worker that slept)
// slowed the first calls after it 1.5-20x for about 2 ms (2026-11-28,
// 2-core Xeon VM, n = 512: the first 1-7 calls of a share), enough to move
// the median of a row's calls in that round.
constexpr double kSettleMs = 2.0;
// With framework peers in the run, much longer, and for every row alike (a
// longer warm-up for the rows after a peer only gave the first row of each
// round an edge): this process sits idle while a peer runs, and an idle VM
// needs tens of ms of work to come back to speed (the host's clocks or its
// scheduling of our vCPUs). Reproduced without peers by 150 ms of sleep
// before each share: n = 512 medians 0.28-0.46 ms against 0.21, still
// 0.30-0.43 after 10-30 ms of untimed calls, 0.22 after 60. It also covers
// Dr.Jit's pool, whose worker polls for work about 20 ms after each Dr.Jit
// call (nanothread: 500,000 attempts) before it sleeps, holding one of this
// machine's two cores.
constexpr double kSettleWithPeersMs = 100.0;
constexpr int kMaxSettleCalls = 100000;  // only a bound: n = 3 calls of ~1 us fill 100 ms

// A row being measured, and how to give it k more timed calls.
struct Contender {
  Row row;
  std::function<void(int)> time;  // k timed calls, appended to row.times_ms
  std::function<double()> once;   // one call, its milliseconds (not recorded)
};

void Settle(const Contender& c, double settle_ms) {
  double spent = 0;
  for (int calls = 0; calls < kMaxSettleCalls && (calls == 0 || spent < settle_ms); ++calls) {
    const double ms = c.once();
    if (ms < 0) return;  // the peer process stopped: time() reports it
    spent += ms;
  }
}

class Progress {
 public:
  // Progress lines only for a person watching a terminal, never into a log.
  Progress() : enabled_(isatty(STDERR_FILENO) == 1) {}
  void Show(const std::string& text) {
    if (enabled_) std::cerr << "\r" << text << std::string(width_ > text.size() ? width_ - text.size() : 0, ' ') << std::flush;
    width_ = std::max(width_, text.size());
  }
  void Clear() {
    if (enabled_ && width_ > 0) std::cerr << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  }

 private:
  bool enabled_;
  size_t width_ = 0;
};

int Main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a dead peer child must be an error row, not our death
  Options o = ParseOptions(argc, argv);
  if (o.device == "cuda") return RunCuda(o);

  Metadata meta = CollectMetadata(o.command_line);
  meta.stream = MeasureBandwidth(64);
  meta.reps = o.reps;
  meta.warmup = o.warmup;
  meta.settle_ms = kSettleMs;
  meta.rounds = std::min(o.reps, kMaxRounds);
  meta.device = absl::StrCat("cpu (", meta.threads, " threads)");
  meta.notes =
      "Machine shared with other work: absolute times are noisy; compare ratios within one run. "
      "compile_ms: dualcast rows = JIT compile time in the cold first call (0 when an earlier row "
      "compiled the kernel); peers = first call minus median (trace + compile); handwritten = 0. "
      "On-disk caches of earlier runs (dualcast's DUALCAST_CACHE_DIR, TorchInductor's, XLA's when "
      "enabled) shorten first calls: these are warm-cache figures unless the caches were cleared.";

  // The peers' child process, started once for the whole run.
  std::unique_ptr<PeerProcess> peers;
  std::vector<Row> rows;
  bool any_peer = false;
  for (const std::string& name : PeerImplNames()) any_peer |= Selected(o, name);
  if (o.peers && any_peer) {
    std::string why;
    peers = PeerProcess::Start(PeersPython(o.python), meta.threads, &why);
    if (peers) {
      meta.peer_versions = peers->versions();
      meta.settle_ms = kSettleWithPeersMs;
    } else {
      for (const std::string& name : PeerImplNames()) {
        if (!Selected(o, name)) continue;
        Row r;
        r.impl = name;
        r.variant = r.layout = "-";
        r.status = why;
        rows.push_back(r);
      }
    }
  }

  // After the peers start: their presence sets the warm-up per share.
  std::cout << "HM-LSTM cell update (Revels et al. 2018), " << meta.dtype << ", " << o.reps
            << " timed repetitions in " << meta.rounds << " interleaved rounds after " << o.warmup
            << " warm-up (each row's share of a round after " << meta.settle_ms
            << " ms of untimed calls), " << meta.device << ", handwritten loop: " << meta.handwritten_isa
            << "\n";
  if (o.roofline) std::cout << FormatBandwidth(meta.stream) << "\n";

  Progress progress;
  bool failed = false;
  const int cases = static_cast<int>(o.variants.size() * o.layouts.size() * o.sizes.size());
  int case_index = 0;
  for (Variant variant : o.variants) {
    auto impls = MakeImplementations(variant);
    for (Layout layout : o.layouts) {
      for (long n : o.sizes) {
        ++case_index;
        const std::string label = absl::StrFormat("[%d/%d] %s %s n=%d", case_index, cases,
                                                  VariantName(variant), LayoutName(layout), n);
        Problem p = MakeProblem(n, layout);
        Reference ref = ComputeReference(p, variant);
        Row base;
        base.variant = VariantName(variant);
        base.layout = LayoutName(layout);
        base.n = n;
        base.device = meta.device;
        std::vector<Contender> contenders;
        auto judge = [&](Row& row, const Results& got) {
          row.max_error = MaxError(got, ref, variant);
          if (!(row.max_error <= kTolerance)) {
            row.status = absl::StrFormat("FAILED: max rel error %.2g > %.0e", row.max_error, kTolerance);
            failed = true;
          }
        };
        for (auto& impl : impls) {
          if (!Selected(o, impl->name())) continue;
          progress.Show(label + " first call " + impl->name());
          Contender c{base, nullptr, nullptr};
          c.row.impl = impl->name();
          impl->Prepare(p);
          const double compile_before = jit::GetStats().compile_ms;
          auto t0 = std::chrono::steady_clock::now();
          impl->Run();
          c.row.first_call_ms = Ms(t0);
          c.row.compile_ms = jit::GetStats().compile_ms - compile_before;
          judge(c.row, impl->Collect());
          for (int w = 0; w < o.warmup; ++w) impl->Run();
          Implementation* raw = impl.get();
          contenders.push_back(std::move(c));
          contenders.back().once = [raw] {
            auto t = std::chrono::steady_clock::now();
            raw->Run();
            return Ms(t);
          };
          contenders.back().time = [&contenders, index = contenders.size() - 1](int k) {
            Contender& self = contenders[index];
            for (int rep = 0; rep < k; ++rep) self.row.times_ms.push_back(self.once());
          };
        }
        if (peers) {
          progress.Show(label + " peers: first calls (trace + compile)");
          std::vector<PeerCase> set_up = peers->SetUp(p, variant);
          if (set_up.empty()) {  // the child died: say so in every later case, never drop the rows
            for (const std::string& name : PeerImplNames()) {
              set_up.push_back({name, "error: peer process stopped (log: " + peers->log_path() + ")", 0, {}});
            }
          }
          for (PeerCase& pc : set_up) {
            if (!Selected(o, pc.impl)) continue;
            Contender c{base, nullptr, nullptr};
            c.row.impl = pc.impl;
            c.row.device = meta.device + ", python peer";
            c.row.status = pc.status;
            c.row.first_call_ms = pc.first_call_ms;
            if (pc.status == "ok") {
              judge(c.row, pc.results);
              if (c.row.status == "ok" && !peers->Warmup(pc.impl, o.warmup)) {
                c.row.status = "error: peer process stopped (log: " + peers->log_path() + ")";
              }
            }
            contenders.push_back(std::move(c));
            PeerProcess* child = peers.get();
            contenders.back().time = [child, &contenders, index = contenders.size() - 1](int k) {
              Row& r = contenders[index].row;
              std::vector<double> t = child->Time(r.impl, k);
              if (static_cast<int>(t.size()) != k) {
                r.status = "error: peer process stopped (log: " + child->log_path() + ")";
                return;
              }
              r.times_ms.insert(r.times_ms.end(), t.begin(), t.end());
            };
            contenders.back().once = [child, impl = pc.impl] {
              std::vector<double> t = child->Time(impl, 1);
              return t.size() == 1 ? t[0] : -1.0;
            };
          }
        }
        // Timed rounds: reps split as evenly as possible over the rounds.
        const int rounds = meta.rounds;
        for (int round = 0; round < rounds; ++round) {
          const int k = o.reps / rounds + (round < o.reps % rounds ? 1 : 0);
          for (Contender& c : contenders) {
            if (c.row.status != "ok") continue;
            progress.Show(absl::StrFormat("%s round %d/%d %s", label, round + 1, rounds, c.row.impl));
            Settle(c, meta.settle_ms);
            c.time(k);
          }
        }
        for (Contender& c : contenders) {
          if (c.row.status == "ok") {
            FillStats(c.row);
            c.row.gbps = FloorBytes(n, variant) / (c.row.median_ms * 1e-3) / 1e9;
            if (c.row.device.find("peer") != std::string::npos) {
              c.row.compile_ms = std::max(0.0, c.row.first_call_ms - c.row.median_ms);
            }
          }
          rows.push_back(c.row);
        }
      }
    }
  }
  progress.Clear();
  meta.load_end = LoadAverage();
  const jit::Stats jit_stats = jit::GetStats();
  meta.dualcast_kernels = absl::StrCat(jit_stats.compiles, " compiled, ", jit_stats.disk_hits,
                                       " loaded from the disk cache");
  // The probe again, best of both: on a shared machine one probe can land in
  // someone else's burst, and the figure is meant as this machine's ceiling.
  const Bandwidth again = MeasureBandwidth(64);
  meta.stream.copy_gbps = std::max(meta.stream.copy_gbps, again.copy_gbps);
  meta.stream.triad_gbps = std::max(meta.stream.triad_gbps, again.triad_gbps);
  meta.stream.read_gbps = std::max(meta.stream.read_gbps, again.read_gbps);
  FillRatios(rows);
  std::cout << FormatTable(rows, meta);
  if (!o.peers) std::cout << "framework peers (PyTorch, JAX, Dr.Jit) not run: scripts/peers && scripts/demo --peers\n";
  if (!o.json.empty()) WriteFile(o.json, FormatJson(rows, meta));
  if (!o.csv.empty()) WriteFile(o.csv, FormatCsv(rows, meta));
  if (!o.plot.empty()) WriteFile(o.plot, FormatSvg(rows, meta));
  if (failed) std::cout << "FAILED: some implementation disagrees with the float64 reference\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace dualcast::bench

int main(int argc, char** argv) {
  try {
    return dualcast::bench::Main(argc, argv);
  } catch (const std::exception& e) {  // dualcast::Error included: its message says what to do
    std::fprintf(stderr, "dualcast-hmlstm: %s\n", e.what());
    return 1;
  }
}
