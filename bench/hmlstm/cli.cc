// Parsing dualcast-hmlstm's options (see cli.h): every bad value is an error naming the valid ones.
#include "bench/hmlstm/cli.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dualcast::bench {

namespace {

constexpr char kUsage[] =
    "usage: dualcast-hmlstm [options]\n"
    "  HM-LSTM cell update (Revels et al. 2018): dualcast against a hand-written loop,\n"
    "  reverse-mode `where`, and (with --peers) PyTorch, JAX and Dr.Jit on the same inputs.\n"
    "options:\n"
    "  --sizes N,N,...      matrix sizes, each 3..32768 (default 512,1024,2048)\n"
    "  --reps N             timed repetitions per row, >= 1 (default 20), in min(N, 5) interleaved rounds\n"
    "  --warmup N           untimed calls before timing, >= 0 (default 2)\n"
    "  --layouts L,L        rows, columns (default both)\n"
    "  --variants V,V       paper, full (default both)\n"
    "  --impls A,B          only these rows (default all); valid: ";
constexpr char kUsageTail[] =
    "\n"
    "  --peers              also run the framework peers (install them once with scripts/peers)\n"
    "  --python PATH        the peers' Python (default $DUALCAST_PEERS_PYTHON, else the venv of scripts/peers:\n"
    "                       $DUALCAST_PEERS_VENV, <this build>/peers-venv or <source>/build/peers-venv)\n"
    "  --device cpu|cuda    cuda: paper and full variants (and --peers) on GPU 0 (exits 1 with the reason when there is none)\n"
    "  --json FILE          results and machine metadata as JSON\n"
    "  --csv FILE           the same rows as CSV (metadata as leading '# key: value' lines)\n"
    "  --plot FILE.svg      log-scale grouped bars, one panel per variant and layout\n"
    "  --roofline           print the STREAM-like bandwidth figures before the table\n"
    "  --help               this text\n"
    "exit status: 0 all rows agree with the float64 reference, 1 some row failed, 2 bad options\n";

std::string AllImplNames() {
  std::vector<std::string> all = CppImplNames();
  all.insert(all.end(), PeerImplNames().begin(), PeerImplNames().end());
  return absl::StrJoin(all, ", ");
}

void PrintUsage(std::ostream& out) { out << kUsage << AllImplNames() << kUsageTail; }

[[noreturn]] void Bad(const std::string& why) {
  std::cerr << "dualcast-hmlstm: " << why << "\n(run dualcast-hmlstm --help for all options)\n";
  std::exit(2);
}

}  // namespace

const std::vector<std::string>& CppImplNames() {
  static const std::vector<std::string> names = {"handwritten", "handwritten-dcmath", "dualcast",
                                                 "dualcast-fastmath", "dualcast-fused",
                                                 "dualcast-recompute", "reverse-where"};
  return names;
}

const std::vector<std::string>& PeerImplNames() {
  static const std::vector<std::string> names = {"torch-eager-where", "torch-compile",
                                                 "jax-jit-where", "jax-vmap-cond",
                                                 "drjit-llvm-select"};
  return names;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int k = 0; k < argc; ++k) o.command_line += (k ? " " : "") + std::string(argv[k]);
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    auto value = [&]() -> std::string {
      if (k + 1 >= argc) Bad(arg + " needs a value");
      return argv[++k];
    };
    if (arg == "--help" || arg == "-h") {
      PrintUsage(std::cout);
      std::exit(0);
    } else if (arg == "--sizes") {
      o.sizes.clear();
      for (auto s : absl::StrSplit(value(), ',')) {
        long n;
        if (!absl::SimpleAtoi(s, &n) || n < 3 || n > 32768) {
          Bad("bad size '" + std::string(s) + "' in --sizes (valid: integers 3..32768, e.g. 512,1024,2048)");
        }
        o.sizes.push_back(n);
      }
    } else if (arg == "--reps") {
      if (!absl::SimpleAtoi(value(), &o.reps) || o.reps < 1) Bad("--reps needs an integer >= 1");
    } else if (arg == "--warmup") {
      if (!absl::SimpleAtoi(value(), &o.warmup) || o.warmup < 0) Bad("--warmup needs an integer >= 0");
    } else if (arg == "--layouts") {
      o.layouts.clear();
      for (auto s : absl::StrSplit(value(), ',')) {
        if (s == "rows") o.layouts.push_back(Layout::kRows);
        else if (s == "columns") o.layouts.push_back(Layout::kColumns);
        else Bad("unknown layout '" + std::string(s) + "' (valid: rows, columns)");
      }
    } else if (arg == "--variants") {
      o.variants.clear();
      for (auto s : absl::StrSplit(value(), ',')) {
        if (s == "paper") o.variants.push_back(Variant::kPaper);
        else if (s == "full") o.variants.push_back(Variant::kFull);
        else Bad("unknown variant '" + std::string(s) + "' (valid: paper, full)");
      }
    } else if (arg == "--impls") {
      o.impls = absl::StrSplit(value(), ',');
      for (const std::string& name : o.impls) {
        const auto& cpp = CppImplNames();
        const auto& peers = PeerImplNames();
        if (std::find(cpp.begin(), cpp.end(), name) == cpp.end() &&
            std::find(peers.begin(), peers.end(), name) == peers.end()) {
          Bad("unknown implementation '" + name + "' in --impls (valid: " + AllImplNames() + ")");
        }
      }
    } else if (arg == "--device") {
      o.device = value();
      if (o.device != "cpu" && o.device != "cuda") {
        Bad("unknown device '" + o.device + "' (valid: cpu, cuda)");
      }
    } else if (arg == "--python") {
      o.python = value();
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--csv") {
      o.csv = value();
    } else if (arg == "--plot") {
      o.plot = value();
    } else if (arg == "--roofline") {
      o.roofline = true;
    } else if (arg == "--peers") {
      o.peers = true;
    } else if (arg == "--no-peers") {
      o.peers = false;
    } else {
      Bad("unknown option '" + arg +
          "' (valid: --sizes --reps --warmup --layouts --variants --impls --peers --python "
          "--device --json --csv --plot --roofline --help)");
    }
  }
  return o;
}

}  // namespace dualcast::bench
