// Starting and driving the peer script (see peers.h): posix_spawn with two pipes, one line per request.
#include "bench/hmlstm/peers.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace dualcast::bench {

namespace fs = std::filesystem;

namespace {

void WriteInputs(const Problem& p, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const std::vector<float>* v : {&p.z, &p.zb, &p.c_prev, &p.f, &p.i, &p.g, &p.cbar}) {
    out.write(reinterpret_cast<const char*>(v->data()), static_cast<std::streamsize>(v->size() * 4));
  }
}

// The child's results file, in the script's order, into Results (sizes
// checked by MaxError, which treats a missing or short array as +inf error).
Results ReadResults(const std::string& path, int64_t n, Variant variant) {
  std::ifstream in(path, std::ios::binary);
  Results r;
  const size_t nn = static_cast<size_t>(n * n);
  auto take = [&](std::vector<float>& v, size_t count) {
    v.resize(count);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * 4));
    if (!in) v.clear();
  };
  if (variant == Variant::kFull) take(r.c, nn);
  take(r.d_cprev, nn);
  take(r.d_f, nn);
  take(r.d_i, nn);
  take(r.d_g, nn);
  if (variant == Variant::kFull) {
    take(r.d_z, static_cast<size_t>(n));
    take(r.d_zb, static_cast<size_t>(n));
  }
  return r;
}

}  // namespace

std::string PeersPython(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("DUALCAST_PEERS_PYTHON"); env != nullptr && *env) return env;
  if (const char* env = std::getenv("DUALCAST_PEERS_VENV"); env != nullptr && *env) {
    return std::string(env) + "/bin/python";
  }
  // scripts/peers installs into build/peers-venv; a second build tree (build-gpu from
  // scripts/gpu-check, a Release tree) uses those peers unless it has its own.
  const std::string own = std::string(DUALCAST_BINARY_DIR) + "/peers-venv/bin/python";
  const std::string shared = std::string(DUALCAST_SOURCE_DIR) + "/build/peers-venv/bin/python";
  return !fs::exists(own) && fs::exists(shared) ? shared : own;
}

std::unique_ptr<PeerProcess> PeerProcess::Start(const std::string& python, int threads, std::string* why) {
  const std::string script = std::string(DUALCAST_SOURCE_DIR) + "/bench/peers/hmlstm_peers.py";
  if (!fs::exists(python)) {
    *why = absl::StrCat("not installed: ", python, " missing; install with: scripts/peers");
    return nullptr;
  }
  std::unique_ptr<PeerProcess> p(new PeerProcess());
  char tmpl[] = "/tmp/dualcast-hmlstm-peers-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    *why = "error: could not create a temporary directory";
    return nullptr;
  }
  p->dir_ = tmpl;
  p->log_ = p->dir_ + "/peers.log";
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
    *why = "error: pipe failed";
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, p->log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  setenv("DUALCAST_PEER_THREADS", std::to_string(threads).c_str(), 1);
  setenv("PYTHONUNBUFFERED", "1", 1);
  std::vector<char*> argv = {const_cast<char*>(python.c_str()), const_cast<char*>(script.c_str()), nullptr};
  const int rc = posix_spawn(&p->pid_, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    p->pid_ = -1;
    *why = absl::StrCat("error: could not start ", python, "; reinstall with: scripts/peers");
    return nullptr;
  }
  p->to_ = fdopen(to_child[1], "w");
  p->from_ = fdopen(from_child[0], "r");
  std::string line;
  if (!p->ReadLine(&line) || !absl::StartsWith(line, "versions ")) {
    *why = absl::StrCat("error: the peer script did not start (see ", p->log_, "); reinstall with: scripts/peers");
    return nullptr;
  }
  for (absl::string_view kv : absl::StrSplit(line.substr(9), ' ', absl::SkipEmpty())) {
    std::pair<std::string, std::string> pair = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    p->versions_.push_back(pair);
  }
  return p;
}

PeerProcess::~PeerProcess() {
  if (to_ != nullptr) {
    Send("quit");
    std::fclose(to_);
  }
  if (from_ != nullptr) std::fclose(from_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  std::error_code ec;
  // Keep the directory (its log) only when something went wrong in the child.
  std::ifstream log(log_);
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  if (text.find("Traceback") == std::string::npos) fs::remove_all(dir_, ec);
}

bool PeerProcess::Send(const std::string& line) {
  if (std::fputs((line + "\n").c_str(), to_) < 0) return false;
  return std::fflush(to_) == 0;
}

bool PeerProcess::ReadLine(std::string* line) {
  line->clear();
  char buf[4096];
  while (std::fgets(buf, sizeof buf, from_) != nullptr) {
    *line += buf;
    if (!line->empty() && line->back() == '\n') {
      line->pop_back();
      return true;
    }
  }
  return !line->empty();
}

std::vector<PeerCase> PeerProcess::SetUp(const Problem& p, Variant variant) {
  std::vector<PeerCase> out;
  const std::string input = dir_ + "/inputs.bin";
  WriteInputs(p, input);
  std::string line;
  if (!Send(absl::StrCat("case ", VariantName(variant), " ", LayoutName(p.layout), " ", p.n, " ", input, " ",
                         dir_))) {
    return out;
  }
  while (ReadLine(&line) && line != "end") {
    // "peer NAME STATUS REST"
    std::vector<std::string> w = absl::StrSplit(line, absl::MaxSplits(' ', 3));
    if (w.size() < 3 || w[0] != "peer") continue;
    const std::string rest = w.size() > 3 ? w[3] : "";
    PeerCase c;
    c.impl = w[1];
    std::vector<std::string> ok = absl::StrSplit(rest, absl::MaxSplits(' ', 1));
    if (w[2] == "ok" && ok.size() == 2 && absl::SimpleAtod(ok[0], &c.first_call_ms)) {
      c.results = ReadResults(ok[1], p.n, variant);
    } else if (w[2] == "unavailable") {
      c.status = absl::StrCat("not installed: ", rest, "; install with: scripts/peers");
    } else {
      c.status = absl::StrCat("error: ", rest, " (log: ", log_, ")");
    }
    out.push_back(std::move(c));
  }
  return out;
}

bool PeerProcess::Warmup(const std::string& impl, int k) {
  if (k <= 0) return true;
  std::string line;
  return Send(absl::StrCat("warmup ", impl, " ", k)) && ReadLine(&line) && line == "ok";
}

std::vector<double> PeerProcess::Time(const std::string& impl, int k) {
  std::vector<double> times;
  std::string line;
  if (!Send(absl::StrCat("time ", impl, " ", k)) || !ReadLine(&line) || !absl::StartsWith(line, "times ")) {
    return times;
  }
  for (absl::string_view t : absl::StrSplit(line.substr(6), ' ', absl::SkipEmpty())) {
    double ms;
    if (absl::SimpleAtod(t, &ms)) times.push_back(ms);
  }
  return times;
}

}  // namespace dualcast::bench
