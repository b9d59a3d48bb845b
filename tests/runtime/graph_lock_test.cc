// The lazy graph's big-reader lock: read sections fail beside a writer, writers wait out read sections, they never overlap.
#include "runtime/graph_lock.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using dualcast::detail::GraphMutex;
using dualcast::detail::GraphReadSection;
using dualcast::detail::LazyGraphMutex;

TEST_CASE("a read section opens when no writer holds the graph, and nests") {
  std::atomic<bool> locked{false};
  std::thread writer;
  {
    GraphReadSection outer;
    REQUIRE(outer.ok());
    {
      GraphReadSection inner;
      CHECK(inner.ok());
    }
    // The inner section's end must not end the outer one: a writer on
    // another thread still waits for it.
    writer = std::thread([&] {
      std::lock_guard<GraphMutex> lock(LazyGraphMutex());
      locked = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(locked.load());
  }
  writer.join();
  CHECK(locked.load());
}

TEST_CASE("a read section fails while a writer holds the graph, and opens after") {
  {
    std::lock_guard<GraphMutex> lock(LazyGraphMutex());
    GraphReadSection read;  // this thread is the writer: no section beside it
    CHECK_FALSE(read.ok());
  }
  GraphReadSection read;
  CHECK(read.ok());
}

TEST_CASE("a writer waits until an open read section ends") {
  std::atomic<bool> section_ended{false};
  std::latch opened(1);
  std::thread reader([&] {
    GraphReadSection read;
    REQUIRE(read.ok());
    opened.count_down();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    section_ended = true;  // still inside the section
  });
  opened.wait();
  bool seen_ended = false;
  {
    std::lock_guard<GraphMutex> lock(LazyGraphMutex());
    seen_ended = section_ended.load();
  }
  reader.join();
  CHECK(seen_ended);
}

TEST_CASE("4 readers and 2 writers: a reader never sees a writer's half-done update") {
  // Writers move `value` through an odd state and back to even under the
  // exclusive lock; readers read it twice inside a section. Not atomic, so
  // any overlap is also a data race for ThreadSanitizer (the CI's TSan
  // step); volatile, so neither side's two accesses are merged into one.
  volatile int value = 0;
  std::atomic<int> torn{0}, sections{0}, writes{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        GraphReadSection read;
        if (!read.ok()) continue;
        const int a = value;
        const int b = value;
        if (a != b || a % 2 != 0) torn.fetch_add(1);
        sections.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        std::lock_guard<GraphMutex> lock(LazyGraphMutex());
        value = value + 1;
        value = value + 1;
        writes.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  threads[4].join();
  threads[5].join();
  stop = true;
  for (int r = 0; r < 4; ++r) threads[static_cast<size_t>(r)].join();
  CHECK(torn.load() == 0);
  CHECK(value == 8000);
  CHECK(writes.load() == 4000);
  CHECK(sections.load() > 0);
}

}  // namespace
