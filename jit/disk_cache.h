// DiskCache: the on-disk ObjectStore that lets a second process skip compiling kernels.
//
// Compiling a kernel costs milliseconds to tens of milliseconds; a program
// started again finds its objects here instead. One file per key under the
// cache directory: $DUALCAST_CACHE_DIR, else $XDG_CACHE_HOME/dualcast, else
// ~/.cache/dualcast (DUALCAST_CACHE_DIR=off turns it off). The file name is a
// hash of the key; the file holds
//   magic "DUALCAST" | u32 version | u32 key size | key | u64 payload size |
//   u64 FNV-1a checksum of the payload | payload            (little-endian)
// and is written to a temporary file in the same directory, then renamed
// over the final name, so readers see a whole file or none. A file whose
// magic, version, key, size or checksum does not match (a torn write from an
// older version, a hash collision, disk corruption) is treated as absent and
// removed; the next Save rewrites it.
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
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "jit/object_store.h"

namespace dualcast::jit {

class DiskCache : public ObjectStore {
 public:
  // Uses (and creates) `directory`; an empty directory disables the cache.
  explicit DiskCache(std::string directory);

  // The process-wide cache at the default directory (see above).
  static DiskCache& Default();
  // The default directory, "" when none can be determined or it is "off".
  static std::string DefaultDirectory();

  std::optional<std::string> Load(const std::string& key) override;
  void Save(const std::string& key, std::string_view bytes) override;

  bool enabled() const { return enabled_; }
  const std::string& directory() const { return directory_; }
  // Where `key`'s object lives (whether or not it exists).
  std::string PathFor(const std::string& key) const;

 private:
  std::string directory_;
  bool enabled_ = false;
  std::atomic<bool> warned_corrupt_{false};
  std::atomic<bool> warned_save_{false};
};

// 64-bit FNV-1a: the payload checksum and the file-name hash (stable, unseeded).
uint64_t Fnv1a64(std::string_view bytes);

}  // namespace dualcast::jit
