// The lazy graph's lock: exclusive for gathering groups, a per-thread read section for the lean path.
//
// Every thread's broadcasts live in the one lazy graph, so gathering a group
// and filling its results need mutual exclusion (lazy.cc). But nearly every
// eval is a ready node read by the thread that made it, touching nothing
// another thread can reach; a plain mutex there cost two trips of its cache
// line between cores per eval, and two threads launching independent
// 1-element broadcasts ran at 0.86-1.43x the throughput of one (at most 1.6x
// on a quiet VM; with a lock per thread instead, 1.6-2.0x).
//
// So the lock is a big-reader lock. GraphMutex::lock() takes a mutex, raises
// a writer flag and waits until no thread is inside a GraphReadSection;
// a read section raises only this thread's own flag (a cache line no other
// thread writes) and fails at once while a writer holds the graph, and the
// caller then takes the exclusive path. Readers must not block inside a
// section, and two readers exclude each other on what they share through the
// arrays' own flags (ArrayImpl::claimed, ArrayImpl::computed).
//
// Example:
//   { GraphReadSection read; if (read.ok()) { /* lean path */ } }
//   std::unique_lock<GraphMutex> lock(LazyGraphMutex());  // everything else
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace dualcast::detail {

class GraphMutex {
 public:
  void lock();
  void unlock();

 private:
  std::mutex mu_;
};

// The lazy graph's one GraphMutex, and the condition variable that a thread
// waiting for a running group sleeps on (notified when a group ends while
// GraphWaiters() > 0).
GraphMutex& LazyGraphMutex();
std::condition_variable_any& GraphCv();
std::atomic<int>& GraphWaiters();

class GraphReadSection {
 public:
  GraphReadSection();
  ~GraphReadSection();
  GraphReadSection(const GraphReadSection&) = delete;
  GraphReadSection& operator=(const GraphReadSection&) = delete;
  // False while a writer holds the graph (or this thread has no reader slot
  // left: more than kReaderSlots threads at once); the caller then locks.
  bool ok() const { return slot_ != nullptr; }

 private:
  std::atomic<int>* slot_ = nullptr;
};

// Runs `fn` inside a read section, or under the exclusive lock when a writer
// holds the graph.
template <class Fn>
void WithGraph(Fn&& fn) {
  {
    GraphReadSection read;
    if (read.ok()) {
      fn();
      return;
    }
  }
  std::lock_guard<GraphMutex> lock(LazyGraphMutex());
  fn();
}

// Wakes threads waiting on GraphCv(), if any; callable without the lock
// after a running node's flag was cleared under it or in a read section.
void NotifyGraphWaiters();

}  // namespace dualcast::detail
