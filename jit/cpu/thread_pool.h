// A small fixed thread pool and ParallelFor, used to run CPU kernels on every core.
//
// A broadcast over a million elements should use all cores; one over a
// hundred must not pay for waking threads. ParallelFor splits [0, n) into
// chunks of at least `grain` indices (and about four per thread, so uneven
// chunks balance out) and runs them on the pool's workers and on the calling
// thread; when there would be only one chunk it runs `fn(0, n)` inline and
// touches no other thread. The caller chooses `grain` so that a chunk is
// worth a thread (LaunchCpu asks for about 32K elements per chunk).
//
// Several user threads may call ParallelFor at once: their jobs share the
// workers (a worker takes chunks from the oldest unfinished job first), and
// every caller also works on its own job, so nested or concurrent calls never
// deadlock and never wait behind another caller's whole job. `fn` must not
// throw.
//
// Waking a sleeping thread costs tens of microseconds on a VM (a futex wake
// and a reschedule), as much as a whole launch of 64K elements. So a worker
// that runs out of work spins for DUALCAST_SPIN_US microseconds (default 100;
// 0 turns spinning off; at most 1000000) before it sleeps, and a caller waiting for a worker
// to finish its last chunk spins for as long before it sleeps: back-to-back
// launches (a training loop, a benchmark) find their workers awake. An idle
// process stops spinning after that time (OpenMP's blocktime and Dr.Jit's
// nanothread make the same trade, with longer spins).
//
// Size: DUALCAST_NUM_THREADS if set (1 to 1024; 0 or a malformed value warns
// and uses the default, a larger one warns and uses 1024; see env.h), else the number of cores the
// process may run on (its CPU affinity: `taskset`, an MPI rank's binding, a
// container's cpuset), else the hardware concurrency; that count includes the
// calling thread, so N means N - 1 workers.
//
// Example:
//   ParallelFor(rows, /*grain=*/64, [&](int64_t begin, int64_t end) {
//     for (int64_t r = begin; r < end; ++r) ProcessRow(r);
//   });
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace dualcast::jit {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 runs everything inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool (workers start on first parallel use).
  static ThreadPool& Global();
  // DUALCAST_NUM_THREADS, else the cores in this thread's affinity mask
  // (sched_getaffinity), else std::thread::hardware_concurrency(); at least 1.
  static int DefaultNumThreads();

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n), each of at
  // least `grain` indices (the last may be shorter); returns when all are done.
  void ParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn);

 private:
  struct Job;

  void StartWorkersLocked();  // requires mu_
  void WorkerLoop();
  // Claims and runs chunks of `job` until none are left unclaimed.
  static void RunChunks(Job& job);
  void RemoveLocked(Job* job);  // requires mu_

  const int num_threads_;
  // std::mutex rather than absl::Mutex: ThreadSanitizer sees through pthreads,
  // but not through a prebuilt (uninstrumented) Abseil, and every launch's
  // data hand-off goes through this lock.
  std::mutex mu_;
  std::condition_variable work_cv_;  // a job was queued, or stop_
  std::condition_variable idle_cv_;  // a worker left a job
  std::deque<Job*> queue_;           // jobs with unclaimed chunks, oldest first (mu_)
  bool stop_ = false;                // (mu_)
  int sleeping_ = 0;                 // workers waiting on work_cv_ (mu_): notified only then
  std::atomic<uint64_t> queued_{0};  // jobs ever queued, and stop: what a spinning worker watches
  std::vector<std::thread> workers_; // (mu_)
};

// While alive, ParallelFor (the free function) on the constructing thread
// uses `pool` instead of the global one: lets a test run the same launch
// under 1, 2 and 8 threads in one process. Nests; not for concurrent use of
// one object from several threads.
class ScopedThreadPool {
 public:
  explicit ScopedThreadPool(ThreadPool& pool);
  ~ScopedThreadPool();
  ScopedThreadPool(const ScopedThreadPool&) = delete;
  ScopedThreadPool& operator=(const ScopedThreadPool&) = delete;

 private:
  ThreadPool* saved_;
};

// The scoped pool of this thread if any, else ThreadPool::Global(), .ParallelFor(n, grain, fn).
void ParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn);

}  // namespace dualcast::jit
