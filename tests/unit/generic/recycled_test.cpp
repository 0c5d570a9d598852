// recycled_test.cpp - Recycled<T>: freed objects come back to the thread
// that frees them, up to Keep of them; other sizes and full caches go to
// the heap; objects may cross threads.
#include "rocl/generic/recycled.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <set>
#include <thread>
#include <vector>

// The global new and delete (all of their forms the test uses, so that a
// sanitizer's own never frees what ours allocated), counting the frees of
// one watched address: whether a thread's cached objects go back to the
// heap.
namespace {
std::atomic<void *> g_watched{nullptr};
std::atomic<int> g_watched_frees{0};
void note_free(void *p) {
  if (p != nullptr && p == g_watched.load()) g_watched_frees.fetch_add(1);
}
}  // namespace

void *operator new(std::size_t n) {
  if (void *p = std::malloc(n != 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  return std::malloc(n != 0 ? n : 1);
}
void operator delete(void *p, const std::nothrow_t &) noexcept {
  note_free(p);
  std::free(p);
}
void operator delete(void *p) noexcept {
  note_free(p);
  std::free(p);
}
void operator delete(void *p, std::size_t) noexcept {
  note_free(p);
  std::free(p);
}

namespace {

struct Small : rocl::generic::Recycled<Small, 4> {
  int value = 7;
  char pad[40];
};

struct Bigger : Small {  // a derived type: not sizeof(Small), never cached
  char more[64];
};

TEST(Recycled, AFreedObjectIsReusedByTheSameThread) {
  Small *a = new Small;
  void *where = a;
  delete a;
  Small *b = new Small;
  EXPECT_EQ(static_cast<void *>(b), where);
  EXPECT_EQ(b->value, 7);  // constructed afresh
  delete b;
}

TEST(Recycled, NothrowNewUsesTheCacheToo) {
  Small *a = new (std::nothrow) Small;
  ASSERT_NE(a, nullptr);
  void *where = a;
  delete a;
  Small *b = new (std::nothrow) Small;
  EXPECT_EQ(static_cast<void *>(b), where);
  delete b;
}

TEST(Recycled, KeepsAtMostKeepObjects) {
  std::vector<Small *> made;
  for (int i = 0; i < 10; ++i) made.push_back(new Small);
  std::set<void *> freed;
  for (Small *s : made) {
    freed.insert(s);
    delete s;
  }
  // The first 4 freed were kept and come back, the last kept first; the
  // other 6 went to the heap.
  std::set<void *> again;
  std::vector<Small *> remade;
  for (int i = 0; i < 4; ++i) {
    remade.push_back(new Small);
    again.insert(remade.back());
  }
  for (void *p : again) EXPECT_TRUE(freed.count(p) == 1);
  EXPECT_EQ(static_cast<void *>(remade[0]), static_cast<void *>(made[3]));
  EXPECT_EQ(static_cast<void *>(remade[3]), static_cast<void *>(made[0]));
  for (Small *s : remade) delete s;
}

TEST(Recycled, DerivedTypesBypassTheCache) {
  Small *kept = new Small;
  void *where = kept;
  delete kept;  // now cached
  Bigger *big = new Bigger;
  EXPECT_NE(static_cast<void *>(big), where);  // not served from Small's cache
  delete big;
  Small *again = new Small;
  EXPECT_EQ(static_cast<void *>(again), where);
  delete again;
}

TEST(Recycled, ObjectsMadeByOneThreadMayBeFreedByAnother) {
  std::vector<Small *> made;
  std::thread maker([&] {
    for (int i = 0; i < 100; ++i) made.push_back(new Small);
  });
  maker.join();  // its (empty) cache is gone; the objects live on
  std::thread freer([&] {
    for (Small *s : made) delete s;  // 4 cached by this thread, freed at its exit
    Small *s = new Small;
    EXPECT_EQ(static_cast<void *>(s), static_cast<void *>(made[3]));
    delete s;
  });
  freer.join();
}

TEST(Recycled, AThreadsCachedObjectsGoBackToTheHeapWhenItExits) {
  g_watched_frees = 0;
  std::thread worker([] {
    Small *s = new Small;
    g_watched = s;
    delete s;  // cached: not freed yet
    EXPECT_EQ(g_watched_frees.load(), 0);
  });
  worker.join();
  EXPECT_EQ(g_watched_frees.load(), 1);  // freed by the thread's exit
  g_watched = nullptr;
}

// A thread_local destroyed after the thread's cache (made before it: its
// destructor runs later) frees its object to the heap, and one made
// afterwards is served by the heap too.
struct LateHolder {
  Small *held = nullptr;
  ~LateHolder() {
    delete held;
    g_watched = nullptr;  // the heap may hand the same address out again
    Small *again = new Small;
    EXPECT_NE(static_cast<void *>(again), nullptr);
    delete again;
  }
};

TEST(Recycled, DeletesAfterTheCacheIsGoneGoToTheHeap) {
  g_watched_frees = 0;
  std::thread worker([] {
    thread_local LateHolder late;  // constructed before the cache is armed
    Small *first = new Small;      // arms the cache
    delete first;
    late.held = new Small;  // the cached object again
    g_watched = late.held;
  });
  worker.join();
  EXPECT_EQ(g_watched_frees.load(), 1);
  g_watched = nullptr;
}

}  // namespace
