// Tests of the on-disk object store: round trips, other processes, corruption, unusable directories.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "jit/disk_cache.h"

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

  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
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

TEST_CASE("Fnv1a64 matches the published test vectors") {
  CHECK(Fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(Fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(Fnv1a64("foobar") == 0x85944171f73967e8ULL);
}

}  // namespace
}  // namespace dualcast::jit
