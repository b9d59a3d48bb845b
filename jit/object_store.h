// ObjectStore: where compiled kernel objects persist between processes (the on-disk cache's interface).
//
// The CPU backend asks the store before compiling and hands it every object it
// compiles; the implementation (disk_cache.h) decides where bytes live and
// must never return bytes that were not stored under exactly that key
// (checksums, atomic writes). Implementations are thread-safe.
//
// A Load that returns nothing may reserve the key for the calling thread
// until it Saves that key or calls Load again (DiskCache does, so that
// processes sharing a directory compile each kernel once): compile and Save on
// the thread that asked, before asking for the next key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dualcast::jit {

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // The bytes saved under `key`, or nullopt when absent, unreadable or corrupt.
  virtual std::optional<std::string> Load(const std::string& key) = 0;
  // Best effort: a failure to save is logged, never an error for the caller.
  virtual void Save(const std::string& key, std::string_view bytes) = 0;
};

}  // namespace dualcast::jit
