// The on-disk object store: checked, atomically written files under the cache directory (see disk_cache.h).
#include "jit/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/stats.h"

namespace dualcast::jit {

namespace {

constexpr char kMagic[8] = {'D', 'U', 'A', 'L', 'C', 'A', 'S', 'T'};
constexpr uint32_t kVersion = 1;

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Reads little-endian fields from a buffer, failing (not crashing) past its end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool Bytes(size_t n, std::string_view* out) {
    if (data_.size() - pos_ < n) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool U32(uint32_t* v) { return Int(4, v); }
  bool U64(uint64_t* v) { return Int(8, v); }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  template <typename T>
  bool Int(int n, T* v) {
    std::string_view b;
    if (!Bytes(n, &b)) return false;
    *v = 0;
    for (int i = n; i-- > 0;) *v = *v << 8 | static_cast<unsigned char>(b[i]);
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

// The payload when `file` is a whole, intact object stored under `key`;
// otherwise why not.
bool Parse(std::string_view file, const std::string& key, std::string* payload,
           std::string* why) {
  Reader r(file);
  std::string_view magic, stored_key, bytes;
  uint32_t version = 0, key_size = 0;
  uint64_t size = 0, checksum = 0;
  if (!r.Bytes(sizeof(kMagic), &magic) || magic != std::string_view(kMagic, sizeof(kMagic))) {
    *why = "bad magic";
    return false;
  }
  if (!r.U32(&version) || version != kVersion) {
    *why = "unknown version";
    return false;
  }
  if (!r.U32(&key_size) || !r.Bytes(key_size, &stored_key)) {
    *why = "truncated key";
    return false;
  }
  if (stored_key != key) {
    *why = "stored under another key";
    return false;
  }
  if (!r.U64(&size) || !r.U64(&checksum) || size != r.remaining() ||
      !r.Bytes(size, &bytes)) {
    *why = "truncated or oversized payload";
    return false;
  }
  if (Fnv1a64(bytes) != checksum) {
    *why = "checksum mismatch";
    return false;
  }
  payload->assign(bytes.data(), bytes.size());
  return true;
}

// Writes all of `data` to `fd`, retrying short writes.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "dualcast: warning: %s\n", message.c_str());
}

}  // namespace

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string DiskCache::DefaultDirectory() {
  const char* dir = std::getenv("DUALCAST_CACHE_DIR");
  if (dir != nullptr && dir[0] != '\0') {
    return std::string(dir) == "off" ? std::string() : std::string(dir);
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] != '\0') return std::string(xdg) + "/dualcast";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/dualcast";
  return "";
}

DiskCache& DiskCache::Default() {
  static DiskCache* cache = new DiskCache(DefaultDirectory());  // never destroyed
  return *cache;
}

DiskCache::DiskCache(std::string directory) : directory_(std::move(directory)) {
  if (directory_.empty()) return;
  const std::string advice =
      "; kernels will be compiled in every process (set DUALCAST_CACHE_DIR to a writable "
      "directory, or to 'off' to silence this)";
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec || !std::filesystem::is_directory(directory_, ec)) {
    Warn(absl::StrCat("kernel disk cache disabled: cannot create directory '", directory_,
                      "' (", ec ? ec.message() : std::string("not a directory"), ")", advice));
    return;
  }
  // Probe with a real write: permissions alone do not tell (root, read-only mounts).
  std::string probe = directory_ + "/.probe.XXXXXX";
  int fd = ::mkstemp(probe.data());
  bool writable = fd >= 0 && WriteAll(fd, "ok");
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  if (!writable) {
    Warn(absl::StrCat("kernel disk cache disabled: cannot write in '", directory_, "' (",
                      std::strerror(errno), ")", advice));
    return;
  }
  enabled_ = true;
}

std::string DiskCache::PathFor(const std::string& key) const {
  return absl::StrFormat("%s/%016x.dcobj", directory_, Fnv1a64(key));
}

std::optional<std::string> DiskCache::Load(const std::string& key) {
  if (!enabled_) return std::nullopt;
  const std::string path = PathFor(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;  // absent: the common case
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string payload, why;
  if (in.bad()) {
    why = "read error";
  } else if (Parse(file, key, &payload, &why)) {
    return payload;
  }
  // Drop the bad file so the next Save writes a good one in its place.
  ::unlink(path.c_str());
  if (!warned_corrupt_.exchange(true)) {
    LogLine(absl::StrCat("disk cache: ignored and removed ", path, " (", why, ")"));
  }
  return std::nullopt;
}

void DiskCache::Save(const std::string& key, std::string_view bytes) {
  if (!enabled_) return;
  if (key.size() > UINT32_MAX) return;
  std::string header(kMagic, sizeof(kMagic));
  PutU32(header, kVersion);
  PutU32(header, static_cast<uint32_t>(key.size()));
  header += key;
  PutU64(header, bytes.size());
  PutU64(header, Fnv1a64(bytes));

  const std::string path = PathFor(key);
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  // mkstemp makes 0600 files; a shared cache directory wants them readable.
  if (fd >= 0) ::fchmod(fd, 0644);
  bool ok = fd >= 0 && WriteAll(fd, header) && WriteAll(fd, bytes);
  if (fd >= 0) ok = (::close(fd) == 0) && ok;
  // rename() replaces the old file in one step: readers see old or new, never a mix.
  ok = ok && ::rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) {
    const int err = errno;
    if (fd >= 0) ::unlink(temp.c_str());
    if (!warned_save_.exchange(true)) {
      LogLine(absl::StrCat("disk cache: could not save ", path, " (", std::strerror(err), ")"));
    }
  }
}

}  // namespace dualcast::jit
