// ObjectStore: where compiled kernel objects persist between processes (the on-disk cache's interface).
//
// The CPU backend asks the store before compiling and hands it every object it
// compiles; the implementation (disk_cache.h) decides where bytes live and
// must never return bytes that were not stored under exactly that key
// (checksums, atomic writes). Implementations are thread-safe.
//
// A Load that returns nothing may reserve the key for the calling thread
// until it Saves or Abandons that key or calls Load again (DiskCache does, so
// that processes sharing a directory compile each kernel once): compile and
// Save on the thread that asked, before asking for the next key, and Abandon
// the key when the compile fails so that nobody waits for it.
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
  // No Save of `key` will follow this thread's missed Load (its compile
  // failed): drop the reservation, if any. A no-op for stores without one.
  virtual void Abandon(const std::string& key) { (void)key; }
};

// The key a missed Load may have reserved, held by a compile: Saved on
// success, Abandoned on every other way out (an error return, an exception),
// so other processes never wait for a compile that failed here.
//
// Example:
//   if (auto bytes = store->Load(key)) return Link(*bytes);
//   StoreReservation reservation(store, key);
//   absl::StatusOr<std::string> object = Compile();
//   if (!object.ok()) return object.status();   // Abandons `key`
//   reservation.Save(*object);
class StoreReservation {
 public:
  // `store` may be null (no store: nothing to do); `key` must outlive this.
  StoreReservation(ObjectStore* store, const std::string& key) : store_(store), key_(key) {}
  StoreReservation(const StoreReservation&) = delete;
  StoreReservation& operator=(const StoreReservation&) = delete;
  ~StoreReservation() {
    if (store_ != nullptr) store_->Abandon(key_);
  }
  void Save(std::string_view bytes) {
    if (store_ != nullptr) store_->Save(key_, bytes);
    store_ = nullptr;
  }

 private:
  ObjectStore* store_;
  const std::string& key_;
};

}  // namespace dualcast::jit
