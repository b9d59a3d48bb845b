// The lazy graph's big-reader lock (see graph_lock.h).
#include "runtime/graph_lock.h"

#include <algorithm>
#include <thread>

namespace dualcast::detail {
namespace {

// One flag per thread, each on its own cache line so raising it moves no
// line between cores. A thread takes a free slot at its first read section
// and frees it when it exits; the writer scans the slots ever used.
constexpr int kReaderSlots = 256;
struct alignas(64) ReaderSlot {
  std::atomic<int> active{0};
  std::atomic<bool> taken{false};
};
ReaderSlot g_slots[kReaderSlots];
std::atomic<int> g_slots_used{0};  // one past the highest slot ever taken
std::atomic<bool> g_writer{false};

// Trivially destructible, so it stays readable while the thread's other
// thread_locals are destroyed (a slot freed at exit reads as none).
thread_local ReaderSlot* t_slot = nullptr;
thread_local bool t_slot_tried = false;
thread_local int t_depth = 0;  // read sections this thread is inside

struct SlotRelease {
  ~SlotRelease() {
    if (t_slot != nullptr) t_slot->taken.store(false, std::memory_order_release);
    t_slot = nullptr;
  }
};

ReaderSlot* ThisThreadSlot() {
  if (t_slot != nullptr || t_slot_tried) return t_slot;
  t_slot_tried = true;
  for (int i = 0; i < kReaderSlots; ++i) {
    bool expected = false;
    if (!g_slots[i].taken.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
    int used = g_slots_used.load(std::memory_order_relaxed);
    while (used < i + 1 && !g_slots_used.compare_exchange_weak(used, i + 1, std::memory_order_seq_cst)) {
    }
    t_slot = &g_slots[i];
    thread_local SlotRelease release;
    return t_slot;
  }
  return nullptr;  // this thread always takes the exclusive path
}

}  // namespace

void GraphMutex::lock() {
  mu_.lock();
  // Raise the flag, then wait out the sections that began before it was
  // seen. Both sides store, then load the other's flag, with seq_cst: at
  // least one of them sees the other (no section runs beside a writer).
  g_writer.store(true, std::memory_order_seq_cst);
  const int used = g_slots_used.load(std::memory_order_seq_cst);
  for (int i = 0; i < used; ++i) {
    for (int spins = 0; g_slots[i].active.load(std::memory_order_seq_cst) != 0; ++spins) {
      if (spins > 64) std::this_thread::yield();  // sections are a few hundred ns
    }
  }
}

void GraphMutex::unlock() {
  g_writer.store(false, std::memory_order_release);
  mu_.unlock();
}

GraphMutex& LazyGraphMutex() {
  static GraphMutex* mu = new GraphMutex();
  return *mu;
}

std::condition_variable_any& GraphCv() {
  static std::condition_variable_any* cv = new std::condition_variable_any();
  return *cv;
}

std::atomic<int>& GraphWaiters() {
  static std::atomic<int> waiters{0};
  return waiters;
}

void NotifyGraphWaiters() {
  // A waiter counted itself and saw the running flag under the exclusive
  // lock, which it released inside wait(); the flag was cleared after that,
  // so it is asleep on the condition variable or about to be, and
  // condition_variable_any hands the notification over under its own mutex.
  if (GraphWaiters().load(std::memory_order_seq_cst) > 0) GraphCv().notify_all();
}

GraphReadSection::GraphReadSection() {
  ReaderSlot* slot = ThisThreadSlot();
  if (slot == nullptr) return;
  if (t_depth > 0) {  // nested: the outer section already holds readers' side
    ++t_depth;
    slot_ = &slot->active;
    return;
  }
  slot->active.store(1, std::memory_order_seq_cst);
  if (g_writer.load(std::memory_order_seq_cst)) {
    slot->active.store(0, std::memory_order_release);
    return;
  }
  t_depth = 1;
  slot_ = &slot->active;
}

GraphReadSection::~GraphReadSection() {
  if (slot_ != nullptr && --t_depth == 0) slot_->store(0, std::memory_order_release);
}

}  // namespace dualcast::detail
