// recycled_test.cpp - Recycled<T>: freed objects come back to the thread
// that frees them, up to Keep of them; other sizes and full caches go to
// the heap; objects may cross threads.
#include "rocl/generic/recycled.hpp"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

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

}  // namespace
