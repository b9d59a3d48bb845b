// LruMap: a bounded map that evicts the least recently used entry, counting hits, misses and evictions in stats.h.
//
// The process-wide IR caches (composed groups, jvp and backward functions)
// grow with every distinct kernel a program builds; a long session that
// builds kernels on the fly must not grow without bound. Not thread-safe:
// each owner guards its map with its own mutex. Values are usually
// shared_ptrs, so an entry evicted while a caller still uses it stays alive.
//
// Example:
//   LruMap<std::string, std::shared_ptr<const Function>> cache(Cache::kJvp, 1024);
//   if (auto* hit = cache.Find(key)) return *hit;    // counts a hit, or a miss
//   return cache.Insert(key, Build());                // may evict the oldest entry
#pragma once

#include <cstddef>
#include <list>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "jit/stats.h"

namespace dualcast::jit {

template <class Key, class Value>
class LruMap {
 public:
  LruMap(Cache id, size_t capacity) : id_(id), capacity_(capacity < 1 ? 1 : capacity) {}

  // The value under `key`, now the most recently used, or null. Counts a hit or a miss.
  Value* Find(const Key& key) {
    auto it = index_.find(key);
    RecordCacheLookup(id_, it != index_.end());
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // Stores `value` under `key` (replacing any), as the most recently used,
  // then evicts from the least recently used end down to the capacity.
  Value& Insert(const Key& key, Value value) {
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    Trim();
    return order_.front().second;
  }

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }
  void set_capacity(size_t capacity) {
    capacity_ = capacity < 1 ? 1 : capacity;
    Trim();
  }
  bool contains(const Key& key) const { return index_.contains(key); }

 private:
  void Trim() {
    int64_t evicted = 0;
    while (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evicted;
    }
    if (evicted > 0) RecordCacheEvictions(id_, evicted);
  }

  Cache id_;
  size_t capacity_;
  std::list<std::pair<Key, Value>> order_;  // most recently used first
  absl::flat_hash_map<Key, typename std::list<std::pair<Key, Value>>::iterator> index_;
};

}  // namespace dualcast::jit
