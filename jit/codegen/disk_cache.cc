// The on-disk object store: checked, atomically written files, an LRU size cap, and per-key claims between processes (see disk_cache.h).
#include "jit/codegen/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/env.h"
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


// Byte 0 of the lock file serialises trims; key claims lock one byte at
// 1 + 48 bits of the key's hash (a collision only makes two keys wait for
// each other, never share data).
constexpr off_t kTrimLockOffset = 0;
off_t ClaimOffset(const std::string& key) {
  return static_cast<off_t>(1 + (Fnv1a64(key) >> 16));
}
// Above every claim's byte: serialises reads and writes of the size ledger.
constexpr off_t kLedgerLockOffset = off_t{1} << 49;

// An open file description with a write lock on one byte of the lock file.
// OFD locks (not classic POSIX ones) belong to the description, so threads of
// one process exclude each other too, and closing the fd releases the lock.
// `command`: F_OFD_SETLK (fail at once when held) or F_OFD_SETLKW (wait).
bool LockOneByte(int fd, off_t offset, int command) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = offset;
  fl.l_len = 1;
  while (true) {
    if (::fcntl(fd, command, &fl) == 0) return true;
    if (errno != EINTR) return false;
  }
}
bool TryLockByte(int fd, off_t offset) { return LockOneByte(fd, offset, F_OFD_SETLK); }
// Waits for the lock (the ledger's holders keep it for microseconds).
bool LockByte(int fd, off_t offset) { return LockOneByte(fd, offset, F_OFD_SETLKW); }

// The ledger file: "DCSIZE01" and the objects' total bytes (u64, little-endian).
constexpr std::string_view kLedgerMagic = "DCSIZE01";
// Bytes the ledger at `fd` holds; nullopt when it is missing, short or not a ledger.
std::optional<uint64_t> ReadLedger(int fd) {
  char buffer[16];
  if (::pread(fd, buffer, sizeof buffer, 0) != static_cast<ssize_t>(sizeof buffer)) {
    return std::nullopt;
  }
  Reader r(std::string_view(buffer, sizeof buffer));
  std::string_view magic;
  uint64_t total = 0;
  if (!r.Bytes(kLedgerMagic.size(), &magic) || magic != kLedgerMagic || !r.U64(&total) ||
      total > (uint64_t{1} << 62)) {
    return std::nullopt;
  }
  return total;
}
bool WriteLedger(int fd, uint64_t total) {
  std::string bytes(kLedgerMagic);
  PutU64(bytes, total);
  return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size());
}
// Opens the ledger at `path` with `flags` and runs `use(fd)` under the
// ledger's lock on `lock_fd` (released when the caller closes lock_fd); does
// nothing when the lock or the file cannot be had.
template <typename F>
void WithLedger(int lock_fd, const std::string& path, int flags, F use) {
  if (lock_fd < 0 || !LockByte(lock_fd, kLedgerLockOffset)) return;
  const int fd = ::open(path.c_str(), flags | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) return;
  use(fd);
  ::close(fd);
}

// Claims held in this process, by any thread (see disk_cache.h). A thread
// missing a key that another thread of this process has claimed does not
// wait: the in-memory kernel cache already gives one compile per process, and
// a claim left by a failed compile must never stall the process itself.
struct HeldClaim {
  const DiskCache* cache;
  std::string key;
  int fd;  // -1 while its thread is still waiting for the lock
  std::thread::id thread;
};
std::mutex& ClaimsMutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed: used by thread-exit hooks
  return *mu;
}
std::vector<HeldClaim>& HeldClaims() {  // guarded by ClaimsMutex()
  static std::vector<HeldClaim>* claims = new std::vector<HeldClaim>;
  return *claims;
}
// Releases (closes) the claims that match; ClaimsMutex() held.
template <typename Pred>
void ReleaseIfLocked(Pred matches) {
  std::vector<HeldClaim>& claims = HeldClaims();
  for (size_t i = 0; i < claims.size();) {
    if (matches(claims[i])) {
      if (claims[i].fd >= 0) ::close(claims[i].fd);
      claims.erase(claims.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}
// Releases the current thread's claims when it exits.
struct ThreadExitHook {
  ~ThreadExitHook() {
    const std::thread::id me = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(ClaimsMutex());
    ReleaseIfLocked([&](const HeldClaim& c) { return c.thread == me && c.fd >= 0; });
  }
};
void ArmThreadExitHook() { thread_local ThreadExitHook hook; }

void SleepMs(double ms) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(ms / 1000);
  ts.tv_nsec = static_cast<long>((ms - 1000.0 * static_cast<double>(ts.tv_sec)) * 1e6);
  ::nanosleep(&ts, nullptr);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
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
    // Any case: OFF used to create a directory named OFF.
    return absl::EqualsIgnoreCase(dir, "off") ? std::string() : std::string(dir);
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] != '\0') return std::string(xdg) + "/dualcast";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/dualcast";
  return "";
}

std::optional<uint64_t> DiskCache::ParseSize(std::string_view text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string suffix;
  for (; i < text.size(); ++i) suffix.push_back(static_cast<char>(std::toupper(text[i])));
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    shift = 30;
  } else {
    return std::nullopt;
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

uint64_t DiskCache::DefaultMaxBytes() {
  const char* text = std::getenv("DUALCAST_CACHE_MAX");
  if (text == nullptr || text[0] == '\0') return kDefaultMaxBytes;
  if (std::optional<uint64_t> bytes = ParseSize(text)) return *bytes;
  WarnEnvOnce(EnvWarningText(
      "DUALCAST_CACHE_MAX", text,
      "is not a size (bytes with an optional K, M or G suffix; 0 for no cap)",
      "the default of 1G"));
  return kDefaultMaxBytes;
}

DiskCache& DiskCache::Default() {
  static DiskCache* cache = new DiskCache(DefaultDirectory(), DefaultMaxBytes());  // never destroyed
  return *cache;
}

DiskCache::DiskCache(std::string directory, uint64_t max_bytes)
    : directory_(std::move(directory)), max_bytes_(max_bytes) {
  if (directory_.empty()) return;
  lock_path_ = directory_ + "/.lock";
  ledger_path_ = directory_ + "/.size";
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

DiskCache::~DiskCache() {
  std::lock_guard<std::mutex> lock(ClaimsMutex());
  ReleaseIfLocked([&](const HeldClaim& c) { return c.cache == this && c.fd >= 0; });
}

std::string DiskCache::PathFor(const std::string& key) const {
  return absl::StrFormat("%s/%016x.dcobj", directory_, Fnv1a64(key));
}

DiskCache::Counters DiskCache::counters() const {
  Counters c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.waited = waited_.load(std::memory_order_relaxed);
  c.corrupt = corrupt_.load(std::memory_order_relaxed);
  c.evicted = evicted_.load(std::memory_order_relaxed);
  c.scans = scans_.load(std::memory_order_relaxed);
  return c;
}

std::optional<std::string> DiskCache::ReadObject(const std::string& key) {
  const std::string path = PathFor(key);
  // POSIX reads, not an ifstream: libstdc++'s filebuf throws
  // std::ios_base::failure from underflow on a read error (EIO on NFS, or a
  // directory at this name) whatever the stream's exception mask, and that
  // escaped every broadcast of the kernel. O_NONBLOCK: a FIFO at this name
  // must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) return std::nullopt;  // absent: the common case
  std::string file, read_error;
  struct stat st {};
  bool regular = false;
  if (fd < 0) {
    read_error = std::strerror(errno);
  } else if (::fstat(fd, &st) != 0) {
    read_error = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    read_error = S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file";
  } else {
    regular = true;
    file.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) read_error = std::strerror(errno);
      if (n <= 0) break;
      file.append(buf, static_cast<size_t>(n));
    }
  }
  if (fd >= 0) ::close(fd);
  if (!read_error.empty()) {
    // Not damage that a rewrite fixes by itself (a directory cannot be
    // unlinked, EIO may persist), so say so on stderr even without
    // DUALCAST_LOG: every process compiles this kernel until it is cleared.
    corrupt_.fetch_add(1, std::memory_order_relaxed);
    if (!warned_read_.exchange(true)) {
      Warn(absl::StrCat("kernel disk cache: cannot read ", path, " (", read_error,
                        "); ignoring it and compiling instead"));
    }
    // A regular file that failed to read is dropped like a damaged one; a
    // directory or other non-file is left alone (not ours to delete).
    if (regular) ::unlink(path.c_str());
    return std::nullopt;
  }
  std::string payload, why;
  if (Parse(file, key, &payload, &why)) {
    // A hit is a use: the mtime orders eviction (failure, e.g. another
    // user's file, only makes it look older).
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
    return payload;
  }
  // Drop the bad file so the next Save writes a good one in its place.
  ::unlink(path.c_str());
  corrupt_.fetch_add(1, std::memory_order_relaxed);
  if (!warned_corrupt_.exchange(true)) {
    LogLine(absl::StrCat("disk cache: ignored and removed ", path, " (", why, ")"));
  }
  return std::nullopt;
}

void DiskCache::ReleaseClaims(const std::string* key) {
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(ClaimsMutex());
  ReleaseIfLocked([&](const HeldClaim& c) {
    // By key: whoever claimed it (the object now exists). Otherwise this
    // thread's finished claims (not one another thread is still waiting for).
    return c.cache == this && (key != nullptr ? c.key == *key : c.thread == me && c.fd >= 0);
  });
}

void DiskCache::Abandon(const std::string& key) {
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(ClaimsMutex());
  // Only this thread's: another thread of ours may still be compiling the key.
  ReleaseIfLocked([&](const HeldClaim& c) {
    return c.cache == this && c.key == key && c.thread == me && c.fd >= 0;
  });
}

bool DiskCache::Claim(const std::string& key) {
  const std::thread::id me = std::this_thread::get_id();
  {
    std::lock_guard<std::mutex> lock(ClaimsMutex());
    for (const HeldClaim& c : HeldClaims()) {
      if (c.cache == this && c.key == key) return false;  // another thread of ours has it
    }
    HeldClaims().push_back({this, key, -1, me});  // placeholder: others in-process skip
  }
  auto drop_placeholder = [&] {
    std::lock_guard<std::mutex> lock(ClaimsMutex());
    ReleaseIfLocked([&](const HeldClaim& c) { return c.cache == this && c.key == key && c.fd < 0; });
  };
  const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (!warned_lock_.exchange(true)) {
      LogLine(absl::StrCat("disk cache: cannot open ", lock_path_, " (", std::strerror(errno),
                           "); processes may compile the same kernel"));
    }
    drop_placeholder();
    return false;
  }
  const off_t offset = ClaimOffset(key);
  bool locked = TryLockByte(fd, offset);
  if (!locked && errno != EAGAIN && errno != EACCES) {
    // No OFD locks here (an old kernel, some network filesystems): go on unlocked.
    if (!warned_lock_.exchange(true)) {
      LogLine(absl::StrCat("disk cache: cannot lock ", lock_path_, " (", std::strerror(errno),
                           "); processes may compile the same kernel"));
    }
    ::close(fd);
    drop_placeholder();
    return false;
  }
  if (!locked) {
    waited_.fetch_add(1, std::memory_order_relaxed);
    // Another process is compiling this key: poll (fcntl has no timed wait)
    // with a backoff from 0.5 to 20 ms.
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(claim_timeout_ms_.load());
    double sleep_ms = 0.5;
    while (!(locked = TryLockByte(fd, offset))) {
      if (std::chrono::steady_clock::now() >= deadline) {
        LogLine(absl::StrCat("disk cache: gave up waiting for another process compiling ",
                             PathFor(key), "; compiling it here"));
        ::close(fd);
        drop_placeholder();
        return false;
      }
      SleepMs(sleep_ms);
      sleep_ms = std::min(sleep_ms * 2, 20.0);
    }
  }
  ArmThreadExitHook();
  std::lock_guard<std::mutex> lock(ClaimsMutex());
  for (HeldClaim& c : HeldClaims()) {
    if (c.cache == this && c.key == key && c.fd < 0 && c.thread == me) {
      c.fd = fd;
      return true;
    }
  }
  ::close(fd);  // our placeholder was released (a Save of this key by another thread)
  return false;
}

std::optional<std::string> DiskCache::Load(const std::string& key) {
  if (!enabled_) return std::nullopt;
  // The caller has moved on from whatever this thread claimed before.
  ReleaseClaims(nullptr);
  std::optional<std::string> object = ReadObject(key);
  if (!object) {
    // Look again after claiming: the holder we may have waited for has saved
    // it by now (or failed: then the claim is ours and the caller compiles).
    const bool claimed = Claim(key);
    object = ReadObject(key);
    if (object && claimed) ReleaseClaims(&key);
  }
  (object ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  return object;
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
  const int err = errno;
  // Waiters re-read the file once the claim is gone: release only after the rename.
  ReleaseClaims(&key);
  if (!ok) {
    if (fd >= 0) ::unlink(temp.c_str());
    if (!warned_save_.exchange(true)) {
      LogLine(absl::StrCat("disk cache: could not save ", path, " (", std::strerror(err), ")"));
    }
    return;
  }
  if (max_bytes_ == 0) return;
  const uint64_t size = header.size() + bytes.size();
  std::optional<uint64_t> total = AddToLedger(size);
  if (!total && estimate_.load(std::memory_order_relaxed) >= 0) {
    // No ledger to use (not writable here, say): this process's running
    // total since its own last scan, so that not every save scans.
    total = static_cast<uint64_t>(estimate_.fetch_add(static_cast<int64_t>(size)) +
                                  static_cast<int64_t>(size));
  }
  if (!total || *total > max_bytes_) Trim(path);
}

std::optional<uint64_t> DiskCache::AddToLedger(uint64_t bytes) {
  const int lock_fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  std::optional<uint64_t> total;
  WithLedger(lock_fd, ledger_path_, 0, [&](int fd) {
    total = ReadLedger(fd);
    if (total && !WriteLedger(fd, *total += bytes)) total.reset();
  });
  if (lock_fd >= 0) ::close(lock_fd);  // and with it the lock
  if (total) estimate_.store(static_cast<int64_t>(*total), std::memory_order_relaxed);
  return total;
}

uint64_t DiskCache::Trim(const std::string& keep) {
  if (!enabled_) return 0;
  std::unique_lock<std::mutex> in_process(trim_mu_, std::try_to_lock);
  if (!in_process.owns_lock()) return static_cast<uint64_t>(std::max<int64_t>(estimate_, 0));
  // One trimming process at a time; the others skip (the cap is soft).
  const int lock_fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd >= 0 && !TryLockByte(lock_fd, kTrimLockOffset)) {
    ::close(lock_fd);
    return static_cast<uint64_t>(std::max<int64_t>(estimate_, 0));
  }
  scans_.fetch_add(1, std::memory_order_relaxed);
  struct Entry {
    int64_t mtime_ns;
    std::string name;
    uint64_t size;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const int64_t now_ns = static_cast<int64_t>(::time(nullptr)) * 1000000000;
  if (DIR* dir = ::opendir(directory_.c_str())) {
    while (struct dirent* d = ::readdir(dir)) {
      const std::string_view name = d->d_name;
      const bool object = EndsWith(name, ".dcobj");
      const bool temp = name.find(".tmp.") != std::string_view::npos ||
                        name.substr(0, 7) == ".probe.";
      if (!object && !temp) continue;
      const std::string path = absl::StrCat(directory_, "/", std::string(name));
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (temp) {
        // A writer that died between mkstemp and rename leaves these.
        if (now_ns - MtimeNs(st) > int64_t{3600} * 1000000000) ::unlink(path.c_str());
        continue;
      }
      total += static_cast<uint64_t>(st.st_size);
      entries.push_back({MtimeNs(st), std::string(name), static_cast<uint64_t>(st.st_size)});
    }
    ::closedir(dir);
  }
  if (max_bytes_ > 0 && total > max_bytes_) {
    // Oldest use first; the name breaks ties so every process picks the same order.
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.mtime_ns, a.name) < std::tie(b.mtime_ns, b.name);
    });
    const uint64_t target = max_bytes_ - max_bytes_ / 8;
    for (const Entry& e : entries) {
      if (total <= target) break;
      const std::string path = absl::StrCat(directory_, "/", e.name);
      if (path == keep) continue;
      // ENOENT: another process evicted or replaced it; either way it is gone from our count.
      if (::unlink(path.c_str()) == 0) evicted_.fetch_add(1, std::memory_order_relaxed);
      total -= e.size;
    }
  }
  // The scanned total becomes the ledger every process's saves add to.
  WithLedger(lock_fd, ledger_path_, O_CREAT, [&](int fd) { WriteLedger(fd, total); });
  if (lock_fd >= 0) ::close(lock_fd);
  estimate_.store(static_cast<int64_t>(total), std::memory_order_relaxed);
  return total;
}

}  // namespace dualcast::jit
