// libFuzzer target: arbitrary bytes as on-disk cache files must Load as nothing or the exact payload, never crash.
//
// The first byte picks a mode:
//   0  the rest of the input IS the cache file for the key;
//   1  Save(key, payload) of the rest, then one byte of the file XOR-ed;
//   2  Save(key, payload) of the rest, then the file truncated.
// Load must never crash, and what it returns is checked against an
// independent parser of the documented format (disk_cache.h): magic
// "DUALCAST" | u32 version | u32 key size | key | u64 payload size |
// u64 FNV-1a of the payload | payload, little-endian. A file Load accepts must
// parse as a whole frame for this key with a matching checksum, and Load must
// return exactly its payload; in modes 1 and 2 only the saved payload itself
// may come back.
//
// Example (built and run by tests/fuzz/run_fuzzers.sh):
//   ./fuzz_disk_cache -max_total_time=20 tests/fuzz/corpus/disk_cache
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "jit/codegen/disk_cache.h"

namespace {

using dualcast::jit::DiskCache;

const std::string& Key() {
  static const std::string key = "cpu|fuzz|llvm19|f64|rank1|fn=00c0ffee";
  return key;
}

DiskCache& Cache() {
  static DiskCache* cache = [] {
    std::string templ = (std::filesystem::temp_directory_path() / "dualcast_fuzz_cache.XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    return new DiskCache(templ);
  }();
  return *cache;
}

uint64_t Le(std::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = v << 8 | static_cast<unsigned char>(b[at + i]);
  return v;
}

// The documented format, parsed independently of disk_cache.cc.
std::optional<std::string> Parse(std::string_view file, const std::string& key) {
  size_t at = 0;
  auto need = [&](size_t n) { return file.size() - at >= n; };
  if (!need(8) || file.substr(0, 8) != "DUALCAST") return std::nullopt;
  at = 8;
  if (!need(8) || Le(file, at, 4) != 1) return std::nullopt;
  const uint64_t key_size = Le(file, at + 4, 4);
  at += 8;
  if (!need(key_size) || file.substr(at, key_size) != key) return std::nullopt;
  at += key_size;
  if (!need(16)) return std::nullopt;
  const uint64_t size = Le(file, at, 8), checksum = Le(file, at + 8, 8);
  at += 16;
  if (file.size() - at != size) return std::nullopt;
  std::string_view payload = file.substr(at);
  if (dualcast::jit::Fnv1a64(payload) != checksum) return std::nullopt;
  return std::string(payload);
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "fuzz_disk_cache: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  DiskCache& cache = Cache();
  if (!cache.enabled()) Fail("the cache directory is not usable");
  const std::string path = cache.PathFor(Key());
  const int mode = data[0] % 3;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<std::string> saved;
  std::string file;
  if (mode == 0) {
    file = std::string(rest);
    WriteFile(path, file);
  } else {
    // The last 2 bytes choose where to damage the file; the rest is the payload.
    const size_t split = rest.size() >= 2 ? rest.size() - 2 : 0;
    saved = std::string(rest.substr(0, split));
    const uint32_t where = rest.size() >= 2 ? Le(rest, split, 2) : 0;
    cache.Save(Key(), *saved);
    file = ReadFile(path);
    if (file.empty()) Fail("Save wrote nothing");
    if (mode == 1) {
      file[where % file.size()] ^= static_cast<char>(1 + (where >> 8) % 255);
    } else {
      file.resize(where % file.size());
    }
    WriteFile(path, file);
  }
  std::optional<std::string> got = cache.Load(Key());
  std::optional<std::string> want = Parse(file, Key());
  if (got.has_value() != want.has_value()) {
    Fail(got ? "Load accepted a file the documented format rejects"
             : "Load rejected a well-formed file");
  }
  if (got && *got != *want) Fail("Load returned bytes other than the file's payload");
  if (got && saved && *got != *saved) Fail("a damaged file loaded as something other than what was saved");
  return 0;
}
