// Tests of the on-disk object store: round trips, other processes, corruption, unusable directories, the LRU cap, claims.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "jit/codegen/disk_cache.h"
#include "stderr_capture.h"

namespace dualcast::jit {
namespace {

namespace fs = std::filesystem;

// A fresh directory under /tmp, removed with everything in it at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "dualcast_disk_test.XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// An object-like payload with zero bytes and every byte value.
std::string Payload(int seed) {
  std::string p;
  for (int i = 0; i < 1000; ++i) p.push_back(static_cast<char>((i * 31 + seed) & 0xff));
  p[10] = '\0';
  return p;
}

const std::string kKey = "cpu|x86_64-pc-linux-gnu|znver3|llvm19|f32|rank2|fn=0123456789abcdef";

TEST_CASE("round trip, and a second instance on the same directory finds the object") {
  TempDir dir;
  DiskCache cache(dir.path);
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.Load(kKey).has_value());
  cache.Save(kKey, Payload(1));
  std::optional<std::string> got = cache.Load(kKey);
  REQUIRE(got.has_value());
  CHECK(*got == Payload(1));

  DiskCache other(dir.path);  // what a second process sees
  got = other.Load(kKey);
  REQUIRE(got.has_value());
  CHECK(*got == Payload(1));
  CHECK_FALSE(other.Load(kKey + "x").has_value());

  // Overwrite with new bytes; empty payloads are objects too.
  other.Save(kKey, Payload(2));
  CHECK(cache.Load(kKey) == Payload(2));
  cache.Save("empty", "");
  CHECK(cache.Load("empty") == std::string());

  // No temporary files are left behind (.lock is the claims' lock file,
  // .size the size ledger).
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    if (entry.path().filename() == ".lock" || entry.path().filename() == ".size") continue;
    CHECK(entry.path().extension() == ".dcobj");
    ++files;
  }
  CHECK(files == 2);
}

TEST_CASE("damaged files read as absent, are removed, and are rewritten by the next save") {
  TempDir dir;
  DiskCache cache(dir.path);
  REQUIRE(cache.enabled());
  cache.Save(kKey, Payload(3));
  const std::string path = cache.PathFor(kKey);
  const std::string good = ReadFile(path);
  REQUIRE(good.size() > 1000);

  auto check_damage = [&](const char* what, const std::string& bad) {
    CAPTURE(what);
    WriteFile(path, bad);
    CHECK_FALSE(cache.Load(kKey).has_value());
    CHECK_FALSE(fs::exists(path));
    cache.Save(kKey, Payload(3));
    CHECK(cache.Load(kKey) == Payload(3));
  };
  check_damage("truncated payload", good.substr(0, good.size() - 7));
  check_damage("truncated header", good.substr(0, 12));
  check_damage("empty file", "");
  check_damage("garbage", std::string(4096, 'z'));
  std::string flipped = good;
  flipped[flipped.size() - 100] ^= 0x04;
  check_damage("flipped payload byte", flipped);
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  check_damage("bad magic", bad_magic);
  std::string bad_version = good;
  bad_version[8] = 99;
  check_damage("bad version", bad_version);
  check_damage("trailing bytes", good + "extra");

  // A file stored under another key at this key's name (a name-hash
  // collision): the key check rejects it.
  DiskCache writer(dir.path);
  writer.Save("another key", Payload(4));
  check_damage("wrong key", ReadFile(writer.PathFor("another key")));
}

// A directory at an object's name stands in for a read error (EIO on NFS):
// the stream read used to throw std::ios_base::failure out of Load on every
// call, so the kernel could never be broadcast.
TEST_CASE("an unreadable object (a directory at its name) reads as absent, with one warning") {
  TempDir dir;
  DiskCache cache(dir.path);
  REQUIRE(cache.enabled());
  cache.Save(kKey, Payload(5));
  const std::string path = cache.PathFor(kKey);
  REQUIRE(fs::remove(path));
  REQUIRE(fs::create_directory(path));

  StderrCapture err;
  std::optional<std::string> got;
  CHECK_NOTHROW(got = cache.Load(kKey));
  CHECK_FALSE(got.has_value());
  CHECK_NOTHROW(cache.Save(kKey, Payload(5)));  // cannot replace a directory: skipped quietly
  CHECK_NOTHROW(got = cache.Load(kKey));
  CHECK_FALSE(got.has_value());
  const std::string text = err.Text();
  CHECK(text.find("cannot read " + path + " (Is a directory)") != std::string::npos);
  // Once per instance, not once per Load.
  CHECK(text.find("cannot read") == text.rfind("cannot read"));
  CHECK(cache.counters().corrupt >= 2);
  CHECK(fs::is_directory(path));  // not ours to delete

  // Once the directory is gone the cache works again.
  fs::remove(path);
  cache.Save(kKey, Payload(6));
  CHECK(cache.Load(kKey) == Payload(6));
}

TEST_CASE("an uncreatable directory disables the cache without errors") {
  TempDir dir;
  const std::string file = dir.path + "/file";
  WriteFile(file, "not a directory");
  DiskCache cache(file + "/sub");  // creation fails even as root
  CHECK_FALSE(cache.enabled());
  cache.Save(kKey, Payload(5));
  CHECK_FALSE(cache.Load(kKey).has_value());

  DiskCache off("");
  CHECK_FALSE(off.enabled());
  CHECK_FALSE(off.Load(kKey).has_value());
}

TEST_CASE("a read-only directory disables the cache (or works, for root)") {
  TempDir dir;
  const std::string ro = dir.path + "/ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  DiskCache cache(ro);
  // Root ignores the permission bits; either way nothing may crash, and an
  // enabled cache must round-trip.
  cache.Save(kKey, Payload(6));
  if (cache.enabled()) {
    CHECK(cache.Load(kKey) == Payload(6));
  } else {
    CHECK_FALSE(cache.Load(kKey).has_value());
  }
  fs::permissions(ro, fs::perms::owner_all);
}

TEST_CASE("the default directory follows DUALCAST_CACHE_DIR, XDG_CACHE_HOME, HOME") {
  auto save = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) {
      ::setenv(name, v->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  };
  auto dc = save("DUALCAST_CACHE_DIR"), xdg = save("XDG_CACHE_HOME"), home = save("HOME");
  ::setenv("DUALCAST_CACHE_DIR", "/a/b", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  CHECK(DiskCache::DefaultDirectory() == "/a/b");
  ::setenv("DUALCAST_CACHE_DIR", "off", 1);
  CHECK(DiskCache::DefaultDirectory() == "");
  // Any case (OFF used to name a directory "OFF").
  ::setenv("DUALCAST_CACHE_DIR", "OFF", 1);
  CHECK(DiskCache::DefaultDirectory() == "");
  ::setenv("DUALCAST_CACHE_DIR", "Off", 1);
  CHECK(DiskCache::DefaultDirectory() == "");
  ::setenv("DUALCAST_CACHE_DIR", "/a/off", 1);
  CHECK(DiskCache::DefaultDirectory() == "/a/off");
  ::unsetenv("DUALCAST_CACHE_DIR");
  CHECK(DiskCache::DefaultDirectory() == "/x/dualcast");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(DiskCache::DefaultDirectory() == "/h/.cache/dualcast");
  restore("DUALCAST_CACHE_DIR", dc);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST_CASE("two real processes share objects both ways") {
  TempDir dir;
  {
    DiskCache parent(dir.path);
    REQUIRE(parent.enabled());
    parent.Save("from parent", Payload(7));
  }
  fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: no doctest here; report through the exit code.
    DiskCache child(dir.path);
    std::optional<std::string> got = child.Load("from parent");
    int code = (got && *got == Payload(7)) ? 0 : 1;
    child.Save("from child", Payload(8));
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  DiskCache parent(dir.path);
  CHECK(parent.Load("from child") == Payload(8));
}

// Sets `path`'s mtime to `seconds` after the epoch (the cache's last-use stamp).
void SetMtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

time_t Mtime(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mtim.tv_sec;
}

TEST_CASE("the size cap evicts the least recently used objects; a corrupted entry is rebuilt") {
  TempDir dir;
  // Every object below is the same size: header (8 + 4 + 4 + 2-byte key + 8 + 8) + 1000.
  const uint64_t object = 34 + 1000;
  // Four objects fit; trimming goes down to 7/8 of the cap, three objects.
  DiskCache cache(dir.path, 4 * object + 100);
  REQUIRE(cache.enabled());
  const time_t t0 = ::time(nullptr) - 1000;
  for (int k = 0; k < 4; ++k) {
    const std::string key = "k" + std::to_string(k);
    cache.Save(key, Payload(k));
    REQUIRE(fs::file_size(cache.PathFor(key)) == object);
    SetMtime(cache.PathFor(key), t0 + 10 * k);  // k0 oldest ... k3 newest
  }
  CHECK(cache.counters().evicted == 0);
  // A hit is a use: k0 becomes the most recent, k1 the least.
  CHECK(cache.Load("k0") == Payload(0));
  CHECK(Mtime(cache.PathFor("k0")) > t0 + 30);

  cache.Save("k4", Payload(4));  // 5 objects > cap: k1 and k2 go
  CHECK(cache.counters().evicted == 2);
  CHECK_FALSE(fs::exists(cache.PathFor("k1")));
  CHECK_FALSE(fs::exists(cache.PathFor("k2")));
  for (int k : {0, 3, 4}) CHECK(cache.Load("k" + std::to_string(k)) == Payload(k));
  CHECK(cache.Trim() == 3 * object);

  // Another process's view: the same cap holds on a fresh instance, and it
  // finds exactly the survivors.
  DiskCache other(dir.path, 4 * object + 100);
  CHECK_FALSE(other.Load("k1").has_value());
  CHECK(other.Load("k3") == Payload(3));

  // A corrupted entry reads as absent, is removed, and the next save rebuilds it.
  std::string bytes = ReadFile(cache.PathFor("k3"));
  bytes[bytes.size() - 3] ^= 0x10;
  WriteFile(cache.PathFor("k3"), bytes);
  CHECK_FALSE(cache.Load("k3").has_value());
  CHECK(cache.counters().corrupt == 1);
  CHECK_FALSE(fs::exists(cache.PathFor("k3")));
  cache.Save("k3", Payload(3));
  CHECK(cache.Load("k3") == Payload(3));
  CHECK(cache.Trim() == 3 * object);

  // Stale temporary files (a writer that died before its rename) are cleaned by a scan.
  const std::string stale = dir.path + "/0123456789abcdef.dcobj.tmp.AbCdEf";
  WriteFile(stale, "half an object");
  SetMtime(stale, t0 - 7200);
  cache.Trim();
  CHECK_FALSE(fs::exists(stale));
}

TEST_CASE("the size ledger: a new instance saves without a scan; short-lived ones keep the cap") {
  TempDir dir;
  const uint64_t object = 34 + 1000;  // a 2-character key
  const uint64_t cap = 4 * object + 100;
  DiskCache first(dir.path, cap);
  first.Save("a0", Payload(0));  // no ledger yet: a scan counts and writes it
  CHECK(first.counters().scans == 1);
  first.Save("a1", Payload(1));
  CHECK(first.counters().scans == 1);
  // Another process's first save adds to the ledger instead of counting the
  // directory (0.4 s for a full cache of small objects).
  DiskCache second(dir.path, cap);
  second.Save("a2", Payload(2));
  CHECK(second.counters().scans == 0);
  CHECK(ReadFile(dir.path + "/.size").size() == 16);
  CHECK(second.Trim() == 3 * object);
  // Processes that each save one object never see the cap passed by their
  // own saves alone; the shared ledger does, and their saves evict.
  for (int k = 3; k < 15; ++k) {
    DiskCache brief(dir.path, cap);
    brief.Save("b" + std::to_string(k), Payload(k));
  }
  int objects = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    objects += entry.path().extension() == ".dcobj" ? 1 : 0;
  }
  CHECK(objects <= 4);
  DiskCache count(dir.path, 0);  // no cap: its scan only counts
  CHECK(count.Trim() <= cap);
  // A damaged ledger reads as none: the next save scans and rewrites it.
  WriteFile(dir.path + "/.size", "garbage");
  DiskCache third(dir.path, cap);
  third.Save("c0", Payload(20));
  CHECK(third.counters().scans == 1);
  CHECK(ReadFile(dir.path + "/.size").size() == 16);

  // A ledger that cannot be opened (here a directory at its name): each
  // process counts its own saves after one scan, not a scan per save.
  TempDir dir2;
  fs::create_directory(dir2.path + "/.size");
  DiskCache no_ledger(dir2.path, cap);
  for (int k = 0; k < 3; ++k) no_ledger.Save("n" + std::to_string(k), Payload(k));
  CHECK(no_ledger.counters().scans == 1);
  CHECK(no_ledger.Load("n2") == Payload(2));
}

TEST_CASE("an object larger than the cap is kept until the next save; 0 means no cap") {
  TempDir dir;
  DiskCache tiny(dir.path, 500);
  tiny.Save("a", Payload(1));
  CHECK(tiny.Load("a") == Payload(1));  // the object just saved is never the one evicted
  tiny.Save("b", Payload(2));
  CHECK_FALSE(tiny.Load("a").has_value());
  CHECK(tiny.Load("b") == Payload(2));

  TempDir dir2;
  DiskCache unbounded(dir2.path, 0);
  for (int k = 0; k < 20; ++k) unbounded.Save("u" + std::to_string(k), Payload(k));
  CHECK(unbounded.counters().evicted == 0);
  CHECK(unbounded.Trim() == 10 * (32 + 2 + 1000) + 10 * (32 + 3 + 1000));  // keys u0..u9, u10..u19
}

TEST_CASE("DUALCAST_CACHE_MAX: sizes with K/M/G suffixes, the default when unset or malformed") {
  CHECK(DiskCache::ParseSize("0") == uint64_t{0});
  CHECK(DiskCache::ParseSize("4096") == uint64_t{4096});
  CHECK(DiskCache::ParseSize("64k") == uint64_t{64} << 10);
  CHECK(DiskCache::ParseSize("512M") == uint64_t{512} << 20);
  CHECK(DiskCache::ParseSize("2GiB") == uint64_t{2} << 30);
  CHECK(DiskCache::ParseSize("3gb") == uint64_t{3} << 30);
  CHECK_FALSE(DiskCache::ParseSize("").has_value());
  CHECK_FALSE(DiskCache::ParseSize("-1").has_value());
  CHECK_FALSE(DiskCache::ParseSize("1.5G").has_value());
  CHECK_FALSE(DiskCache::ParseSize("12T").has_value());
  CHECK_FALSE(DiskCache::ParseSize("99999999999999999999").has_value());
  CHECK_FALSE(DiskCache::ParseSize("17179869184G").has_value());  // 2^34 G overflows

  const char* saved = std::getenv("DUALCAST_CACHE_MAX");
  const std::optional<std::string> old = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::unsetenv("DUALCAST_CACHE_MAX");
  CHECK(DiskCache::DefaultMaxBytes() == DiskCache::kDefaultMaxBytes);
  ::setenv("DUALCAST_CACHE_MAX", "256M", 1);
  CHECK(DiskCache::DefaultMaxBytes() == uint64_t{256} << 20);
  {
    StderrCapture err;
    ::setenv("DUALCAST_CACHE_MAX", "lots", 1);
    CHECK(DiskCache::DefaultMaxBytes() == DiskCache::kDefaultMaxBytes);
    CHECK(DiskCache::DefaultMaxBytes() == DiskCache::kDefaultMaxBytes);
    // One line (the shared env.h warning), however often it is read.
    CHECK(err.Text() ==
          "dualcast: warning: DUALCAST_CACHE_MAX='lots' is not a size (bytes with an optional K, "
          "M or G suffix; 0 for no cap); using the default of 1G\n");
  }
  if (old) {
    ::setenv("DUALCAST_CACHE_MAX", old->c_str(), 1);
  } else {
    ::unsetenv("DUALCAST_CACHE_MAX");
  }
}

// Children of the claim tests report through their exit code (no doctest there).
int WaitChild(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST_CASE("processes missing the same key at once: one compiles, the others load its object") {
  TempDir dir;
  const std::string compiles = dir.path + "/compiles.log";
  constexpr int kProcesses = 4;
  int start[2];
  REQUIRE(::pipe(start) == 0);
  fflush(nullptr);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(start[1]);
      char go;
      if (::read(start[0], &go, 1) != 0) ::_exit(3);  // all start when the parent closes the pipe
      DiskCache cache(dir.path);
      std::optional<std::string> got = cache.Load(kKey);
      if (!got) {
        // "Compile": slow enough that the others are surely waiting meanwhile.
        const int fd = ::open(compiles.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0 || ::write(fd, "c", 1) != 1) ::_exit(4);
        ::close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        cache.Save(kKey, Payload(9));
        got = cache.Load(kKey);
      }
      ::_exit(got == Payload(9) ? 0 : 1);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) CHECK(WaitChild(pid) == 0);
  CHECK(ReadFile(compiles) == "c");  // exactly one compile
  DiskCache cache(dir.path);
  CHECK(cache.Load(kKey) == Payload(9));
}

TEST_CASE("a claim whose holder never saves delays others at most the timeout; threads never wait") {
  TempDir dir;
  int ready[2], done[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(done) == 0);
  fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // A process whose compile failed: it holds the claim and never saves.
    DiskCache cache(dir.path);
    const bool missed = !cache.Load(kKey).has_value();
    if (::write(ready[1], "r", 1) != 1) ::_exit(2);
    char c;
    (void)::read(done[0], &c, 1);  // until the parent has timed out
    ::_exit(missed ? 0 : 1);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  DiskCache cache(dir.path);
  cache.set_claim_timeout(std::chrono::milliseconds(200));
  CHECK_FALSE(cache.Load(kKey).has_value());  // waited, gave up, compiles itself
  CHECK(cache.counters().waited == 1);
  REQUIRE(::write(done[1], "d", 1) == 1);
  CHECK(WaitChild(pid) == 0);  // its exit released its claim
  CHECK_FALSE(cache.Load(kKey).has_value());
  CHECK(cache.counters().waited == 1);  // nothing to wait for now: the claim is ours

  // In one process, a claim left by a failed compile on one thread never
  // makes another thread wait (the in-memory cache deduplicates there).
  std::thread other([&] { CHECK_FALSE(cache.Load(kKey).has_value()); });
  other.join();
  CHECK(cache.counters().waited == 1);
  // Saving releases the claim; everyone now hits.
  cache.Save(kKey, Payload(1));
  DiskCache second(dir.path);
  CHECK(second.Load(kKey) == Payload(1));
  CHECK(second.counters().waited == 0);
}

// What another process sees when it asks for kKey now: 0 a miss without
// waiting (it compiles), 1 a wait for a claim, 2 a hit.
int OtherProcessAsks(const std::string& dir, std::chrono::milliseconds timeout) {
  fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    DiskCache other(dir);
    other.set_claim_timeout(timeout);
    if (other.Load(kKey)) ::_exit(2);
    ::_exit(other.counters().waited == 0 ? 0 : 1);
  }
  return WaitChild(pid);
}

TEST_CASE("a compile that fails gives its claim back at once (StoreReservation, as OrcJit uses it)") {
  TempDir dir;
  DiskCache cache(dir.path);
  // A compile of kKey after a missed Load: fails by returning, or by throwing.
  auto failing_compile = [&](bool throws) {
    REQUIRE_FALSE(cache.Load(kKey).has_value());
    StoreReservation reservation(&cache, kKey);
    if (throws) throw std::runtime_error("compile failed (test)");
  };
  failing_compile(false);
  CHECK(OtherProcessAsks(dir.path, std::chrono::seconds(5)) == 0);
  CHECK_THROWS_AS(failing_compile(true), std::runtime_error);
  CHECK(OtherProcessAsks(dir.path, std::chrono::seconds(5)) == 0);
  // The check can fail: a claim still held makes the other process wait.
  REQUIRE_FALSE(cache.Load(kKey).has_value());
  CHECK(OtherProcessAsks(dir.path, std::chrono::milliseconds(100)) == 1);
  {
    StoreReservation reservation(&cache, kKey);  // the compile that now succeeds
    reservation.Save(Payload(3));
  }
  CHECK(OtherProcessAsks(dir.path, std::chrono::seconds(5)) == 2);
  CHECK(cache.Load(kKey) == Payload(3));
  // Abandon touches only this thread's claim: another thread's stays held.
  std::remove(cache.PathFor(kKey).c_str());  // the object is gone again
  REQUIRE_FALSE(cache.Load(kKey).has_value());
  std::thread([&] { cache.Abandon(kKey); }).join();
  CHECK(OtherProcessAsks(dir.path, std::chrono::milliseconds(100)) == 1);
  cache.Abandon(kKey);
  CHECK(OtherProcessAsks(dir.path, std::chrono::seconds(5)) == 0);
}

TEST_CASE("Fnv1a64 matches the published test vectors") {
  CHECK(Fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(Fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(Fnv1a64("foobar") == 0x85944171f73967e8ULL);
}

}  // namespace
}  // namespace dualcast::jit
