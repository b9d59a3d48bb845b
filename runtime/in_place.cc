// The in-place write stamps (see in_place.h).
#include "runtime/in_place.h"

#include <atomic>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/error.hpp"

namespace dualcast::detail {
namespace {

std::atomic<uint64_t> g_epoch{0};

struct Stamps {
  std::mutex mu;
  absl::flat_hash_map<const Storage*, uint64_t> last;  // guarded by mu
};
Stamps& GlobalStamps() {
  static auto* stamps = new Stamps();  // never destroyed: storage may be freed at exit
  return *stamps;
}

}  // namespace

uint64_t InPlaceWriteEpoch() { return g_epoch.load(std::memory_order_acquire); }

void NoteInPlaceWrite(ArrayImpl& a) {
  a.grad_fn.reset();
  a.grad_output = 0;
  if (a.storage == nullptr) return;
  Stamps& s = GlobalStamps();
  std::lock_guard<std::mutex> lock(s.mu);
  // Taken under the lock, so that a stamp never exceeds the epoch a reader
  // of the counter then sees in the map.
  const uint64_t epoch = g_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  s.last[a.storage.get()] = epoch;
}

uint64_t LastInPlaceWrite(const Storage* storage) {
  if (storage == nullptr || InPlaceWriteEpoch() == 0) return 0;
  Stamps& s = GlobalStamps();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.last.find(storage);
  return it == s.last.end() ? 0 : it->second;
}

void ForgetInPlaceWrites(const Storage* storage) {
  if (InPlaceWriteEpoch() == 0) return;
  Stamps& s = GlobalStamps();
  std::lock_guard<std::mutex> lock(s.mu);
  s.last.erase(storage);
}

void CheckNotWrittenSince(uint64_t epoch, const ArrayImpl& a, const std::string& what,
                          const std::string& node_name) {
  if (InPlaceWriteEpoch() <= epoch || LastInPlaceWrite(a.storage.get()) <= epoch) return;
  throw Error(ErrorKind::kInvalidArgument,
              absl::StrCat("Tape::gradient: ", what, " (an array of shape [", absl::StrJoin(a.shape, ", "),
                           "]) was written in place (Array::assign, mutable_data(), or as a "
                           "destination of partials() or accumulate_gradient(), perhaps through "
                           "a view of the same memory) after the tape recorded '", node_name,
                           "', so the gradient would use values the forward pass never saw. Write "
                           "into a copy() instead, or run the forward pass again (under the tape) "
                           "after writing"));
}

}  // namespace dualcast::detail
