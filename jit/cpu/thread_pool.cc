// The fixed thread pool behind ParallelFor (see thread_pool.h).
#include "jit/cpu/thread_pool.h"

#ifdef __linux__
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "jit/env.h"

namespace dualcast::jit {

// One ParallelFor call. Lives on the caller's stack; the caller returns only
// when it has left the queue and no worker holds it (`active == 0`).
struct ThreadPool::Job {
  absl::FunctionRef<void(int64_t, int64_t)> fn;
  int64_t n;
  int64_t chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next{0};  // the next unclaimed chunk
  std::atomic<int> active{0};    // workers inside RunChunks (changed under the pool's mu_)
};

namespace {

// DUALCAST_NUM_THREADS above this is clamped (with a warning): far more
// threads than any machine's cores only add contention.
constexpr uint64_t kMaxThreads = 1024;

// The cores this process may run on: an MPI rank pinned to 2 cores of a
// 64-core node gets 2 threads, not 64 threads fighting over 2 cores.
int AvailableCores() {
#ifdef __linux__
  // The mask must cover the kernel's CPU ids; grow it until it does (EINVAL).
  for (int cpus = 1024; cpus <= (1 << 16); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) break;
    const size_t bytes = CPU_ALLOC_SIZE(cpus);
    const bool ok = ::sched_getaffinity(0, bytes, set) == 0;
    const int count = ok ? CPU_COUNT_S(bytes, set) : 0;
    const int err = errno;
    CPU_FREE(set);
    if (ok && count > 0) return count;
    if (ok || err != EINVAL) break;
  }
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// How long a thread spins for work (or for a worker's last chunk) before it sleeps.
std::chrono::nanoseconds SpinTime() {
  static const std::chrono::nanoseconds spin = [] {
    // 0 turns spinning off; a second is already far past any use.
    const uint64_t us = EnvInteger(
        "DUALCAST_SPIN_US",
        {.max = 1000000, .fallback = 100,
         .accepted = "a whole number of microseconds (0 for no spinning)",
         .fallback_text = "the default of 100"});
    return std::chrono::nanoseconds(static_cast<int64_t>(us) * 1000);
  }();
  return spin;
}

// Spins until done() or the spin time is over; true when done() held.
template <class Done>
bool SpinUntil(Done&& done) {
  const std::chrono::nanoseconds spin = SpinTime();
  if (spin.count() == 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (int i = 0;; ++i) {
    if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {}

ThreadPool::~ThreadPool() {
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queued_.fetch_add(1, std::memory_order_release);
    workers.swap(workers_);
  }
  work_cv_.notify_all();
  for (std::thread& t : workers) t.join();
}

int ThreadPool::DefaultNumThreads() {
  const int cores = AvailableCores();
  // 0 is refused rather than read as "all cores": unset means that already.
  const std::string fallback_text = absl::StrCat("the default of ", cores, " (the available cores)");
  return static_cast<int>(EnvInteger(
      "DUALCAST_NUM_THREADS",
      {.min = 1, .max = kMaxThreads, .fallback = static_cast<uint64_t>(cores),
       .accepted = "a whole number of threads from 1 to 1024",
       .fallback_text = fallback_text}));
}

ThreadPool& ThreadPool::Global() {
  // Never destroyed: joining workers during exit could race with late launches.
  static ThreadPool* pool = new ThreadPool(DefaultNumThreads());
  return *pool;
}

void ThreadPool::StartWorkersLocked() {
  if (!workers_.empty() || num_threads_ <= 1) return;
  workers_.reserve(num_threads_ - 1);
  for (int i = 0; i + 1 < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void ThreadPool::RunChunks(Job& job) {
  for (int64_t c = job.next.fetch_add(1, std::memory_order_relaxed); c < job.num_chunks;
       c = job.next.fetch_add(1, std::memory_order_relaxed)) {
    const int64_t begin = c * job.chunk;
    job.fn(begin, std::min(job.n, begin + job.chunk));
  }
}

void ThreadPool::RemoveLocked(Job* job) {
  if (auto it = std::find(queue_.begin(), queue_.end(), job); it != queue_.end()) {
    queue_.erase(it);
  }
}

void ThreadPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!stop_ && queue_.empty()) {
      // Spin (without the lock) for the next job before sleeping; a job
      // queued meanwhile is found under the lock below either way.
      const uint64_t seen = queued_.load(std::memory_order_acquire);
      lock.unlock();
      SpinUntil([&] { return queued_.load(std::memory_order_acquire) != seen; });
      lock.lock();
      ++sleeping_;
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      --sleeping_;
    }
    if (stop_) return;
    Job* job = queue_.front();
    job->active.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    RunChunks(*job);
    lock.lock();
    RemoveLocked(job);  // every chunk is claimed: nobody else should pick it up
    if (job->active.fetch_sub(1, std::memory_order_release) == 1) idle_cv_.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // About four chunks per thread, but never below the grain.
  const int64_t target_chunks = int64_t{4} * num_threads_;
  const int64_t chunk = std::max(grain, (n + target_chunks - 1) / target_chunks);
  const int64_t num_chunks = (n + chunk - 1) / chunk;
  if (num_chunks <= 1 || num_threads_ <= 1) {
    fn(0, n);
    return;
  }

  Job job{fn, n, chunk, num_chunks};
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    StartWorkersLocked();
    queue_.push_back(&job);
    queued_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;  // spinning workers see queued_ change: no system call for them
  }
  if (wake) work_cv_.notify_all();
  RunChunks(job);
  {
    std::lock_guard<std::mutex> lock(mu_);
    RemoveLocked(&job);  // no worker joins it from now on
  }
  // Chunks claimed by workers finish before they drop `active`: spin for
  // them briefly, then sleep (the lock orders the last worker's decrement
  // and its notify before this wait's check).
  if (SpinUntil([&job] { return job.active.load(std::memory_order_acquire) == 0; })) return;
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&job] { return job.active.load(std::memory_order_acquire) == 0; });
}

namespace {
thread_local ThreadPool* scoped_pool = nullptr;
}  // namespace

ScopedThreadPool::ScopedThreadPool(ThreadPool& pool) : saved_(scoped_pool) { scoped_pool = &pool; }
ScopedThreadPool::~ScopedThreadPool() { scoped_pool = saved_; }

void ParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
  (scoped_pool != nullptr ? *scoped_pool : ThreadPool::Global()).ParallelFor(n, grain, fn);
}

}  // namespace dualcast::jit
