// DiskCache: the on-disk ObjectStore that lets a second process (or MPI rank) skip compiling kernels.
//
// Compiling a kernel costs milliseconds to tens of milliseconds; a program
// started again finds its objects here instead. One file per key under the
// cache directory: $DUALCAST_CACHE_DIR, else $XDG_CACHE_HOME/dualcast, else
// ~/.cache/dualcast (DUALCAST_CACHE_DIR=off, in any case, turns it off). The file name is a
// hash of the key; the file holds
//   magic "DUALCAST" | u32 version | u32 key size | key | u64 payload size |
//   u64 FNV-1a checksum of the payload | payload            (little-endian)
// and is written to a temporary file in the same directory, then renamed
// over the final name, so readers see a whole file or none. A file whose
// magic, version, key, size or checksum does not match (a torn write from an
// older version, a hash collision, disk corruption) is treated as absent and
// removed; the next Save rewrites it. A file that cannot be read (an I/O
// error, a directory at its name) is also treated as absent, with one warning
// on stderr per instance naming it: the kernel is compiled instead.
//
// Size cap: the objects' total size is kept under `max_bytes` (default 1 GiB,
// $DUALCAST_CACHE_MAX: bytes with an optional K/M/G suffix, 0 for no cap) by
// deleting the least recently used objects down to 7/8 of the cap. A file's
// mtime is its last use: Save writes it and a hit touches it, so the order
// holds across processes without any shared index. The total lives in a
// ledger, `<dir>/.size`: a scan writes what it counted, and every save adds
// its object's size under a lock; a save that takes the total past the cap
// rescans and evicts. Only a directory without a ledger is scanned at a
// process's first save: a full cache holds ~170,000 small objects, and
// counting them cost each process 0.4 s on its first new kernel. The ledger
// is approximate: it runs ahead of the truth when an object is replaced or
// damaged or a file deleted by hand (bringing the next scan earlier), and
// behind when another process saves while a scan writes its count, or an
// older dualcast saves without it; every scan resets it, so the cap stays
// soft as before. The object just saved is never the one evicted.
//
// Several processes, one directory (MPI ranks on a node): a Load that misses
// claims the key with an OFD byte-range lock on `<dir>/.lock` (one byte per
// key hash) until this thread's Save or Abandon of that key, its next Load, or
// its exit.
// Another process missing the same key waits for the claim (up to
// claim_timeout, default 30 s, then compiles itself) and re-reads the file,
// so one process compiles and the others load its object. The lock dies with
// its holder: a crashed compile never blocks anyone beyond that, and a compile
// that fails with an error Abandons its claim (OrcJit does on every failure
// path), so the waiters stop waiting and compile themselves. Threads of one
// process never wait for each other's claims (the in-memory kernel cache
// already compiles once per process).
//
// A cache that cannot create or write its directory disables itself with one
// warning on stderr: never an error for the caller, kernels are compiled
// instead. Safe for concurrent use by threads and by processes.
//
// Example:
//   DiskCache& store = DiskCache::Default();
//   if (std::optional<std::string> obj = store.Load(key)) { ... link *obj ... }
//   else { std::string obj = Compile(); store.Save(key, obj); }
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "jit/codegen/object_store.h"

namespace dualcast::jit {

class DiskCache : public ObjectStore {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;

  // What this instance did since construction (relaxed counters).
  struct Counters {
    int64_t hits = 0;        // Loads that returned an object
    int64_t misses = 0;      // Loads that returned nothing
    int64_t waited = 0;      // Loads that waited for another claim on their key
    int64_t corrupt = 0;     // damaged or unreadable files skipped (damaged ones removed)
    int64_t evicted = 0;     // objects deleted to respect the cap
    int64_t scans = 0;       // directory scans for the cap
  };

  // Uses (and creates) `directory`; an empty directory disables the cache.
  // `max_bytes` caps the objects' total size (0: no cap).
  explicit DiskCache(std::string directory, uint64_t max_bytes = kDefaultMaxBytes);
  ~DiskCache() override;

  // The process-wide cache at the default directory and cap (see above).
  static DiskCache& Default();
  // The default directory, "" when none can be determined or it is "off" (any case).
  static std::string DefaultDirectory();
  // $DUALCAST_CACHE_MAX parsed; kDefaultMaxBytes (with a warning) when malformed.
  static uint64_t DefaultMaxBytes();
  // "1073741824", "512M", "2G", "64k", "0" -> bytes; nullopt when malformed.
  static std::optional<uint64_t> ParseSize(std::string_view text);

  std::optional<std::string> Load(const std::string& key) override;
  void Save(const std::string& key, std::string_view bytes) override;
  // Releases this thread's claim on `key` (taken by its Load that missed).
  void Abandon(const std::string& key) override;

  // Scans the directory, deletes least recently used objects while the total
  // exceeds the cap (never `keep`, a path), removes temporary files older than
  // an hour, and returns the bytes of objects left.
  uint64_t Trim(const std::string& keep = "");

  bool enabled() const { return enabled_; }
  const std::string& directory() const { return directory_; }
  uint64_t max_bytes() const { return max_bytes_; }
  // Where `key`'s object lives (whether or not it exists).
  std::string PathFor(const std::string& key) const;
  Counters counters() const;
  // How long a Load waits for another process's claim before compiling itself.
  void set_claim_timeout(std::chrono::milliseconds t) { claim_timeout_ms_ = t.count(); }

 private:
  // Reads and checks `key`'s file; removes it when damaged.
  std::optional<std::string> ReadObject(const std::string& key);
  // Takes this thread's claim on `key` (waiting for another holder); false
  // when the wait timed out or no lock could be taken.
  bool Claim(const std::string& key);
  // Drops this thread's claims on this cache (all, or only `key`'s).
  void ReleaseClaims(const std::string* key);
  // Adds `bytes` to the size ledger and returns the new total; nullopt when
  // there is no ledger yet (or it cannot be read), and then a scan must count.
  std::optional<uint64_t> AddToLedger(uint64_t bytes);

  std::string directory_;
  std::string lock_path_;
  std::string ledger_path_;  // <dir>/.size
  uint64_t max_bytes_;
  bool enabled_ = false;
  std::atomic<int64_t> claim_timeout_ms_{30000};
  std::atomic<int64_t> estimate_{-1};  // the last total seen (ledger or scan), -1 before any
  std::mutex trim_mu_;                 // one trimming thread per process
  std::atomic<bool> warned_corrupt_{false};
  std::atomic<bool> warned_read_{false};
  std::atomic<bool> warned_save_{false};
  std::atomic<bool> warned_lock_{false};
  std::atomic<int64_t> hits_{0}, misses_{0}, waited_{0}, corrupt_{0}, evicted_{0}, scans_{0};
};

// 64-bit FNV-1a: the payload checksum and the file-name hash (stable, unseeded).
uint64_t Fnv1a64(std::string_view bytes);

}  // namespace dualcast::jit
