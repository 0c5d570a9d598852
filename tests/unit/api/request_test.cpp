// request_test.cpp - immediate operations: rocl_isend/irecv/test/wait/cancel.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

// A value no request handle has: lets tests see that *req was not touched.
rocl_request_t sentinel() {
  return reinterpret_cast<rocl_request_t>(std::uintptr_t{0x5e47});
}

class Requests : public ContextTest {
 protected:
  void SetUp() override {
    ContextTest::SetUp();
    if (HasFatalFailure()) return;
    a_ = must_register("req", "a");
    b_ = must_register("req", "b");
    c_ = must_register("req", "c");
    ASSERT_NE(a_, ROCL_NULL_GID);
    ASSERT_NE(b_, ROCL_NULL_GID);
    ASSERT_NE(c_, ROCL_NULL_GID);
    base_ = pool_stats();
  }
  int send_int(rocl_gid_t from, rocl_gid_t to, int tag, int v) {
    return rocl_send(from, to, tag, &v, sizeof v);
  }
  static int int_of(const rocl_status_t &st) {
    int v = -1;
    if (st.ptr != nullptr && st.len == sizeof v) std::memcpy(&v, st.ptr, sizeof v);
    return v;
  }
  void expect_pool_at_baseline() {
    rocl_pool_stats_t s = pool_stats();
    EXPECT_EQ(s.in_use_buffers, base_.in_use_buffers);
    EXPECT_EQ(s.in_use_bytes, base_.in_use_bytes);
  }
  rocl_gid_t a_ = 0, b_ = 0, c_ = 0;
  rocl_pool_stats_t base_{};
};

// ---- isend --------------------------------------------------------------------------------

TEST_F(Requests, IsendCompletesWithStatus) {
  char data[] = "isend";
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_isend(a_, b_, 5, data, 5, &req), ROCL_OK) << rocl_last_error();
  rocl_status_t st{};
  st.error = 12345;
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(st.error, ROCL_OK);
  EXPECT_EQ(st.origin, b_) << "for sends, status.origin is the destination";
  EXPECT_EQ(st.tag, 5);
  EXPECT_EQ(st.len, 5u);

  void *p = nullptr;
  rocl_gid_t o = 0;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, &o, nullptr, &len, 2000), ROCL_OK);
  EXPECT_EQ(o, a_);
  EXPECT_EQ(std::string(static_cast<char *>(p), len), "isend");
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Requests, IsendCompletesByTest) {
  int v = 42;
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_isend(a_, b_, 1, &v, sizeof v, &req), ROCL_OK);
  v = 0;  // user memory: the copy was taken by isend (same buffer rules as rocl_send)
  int done = 0;
  rocl_status_t st{};
  for (int i = 0; i < 2000 && !done; ++i) {
    ASSERT_EQ(rocl_test(&req, &done, &st), ROCL_OK);
    if (!done) sleep_ms(1);
  }
  ASSERT_EQ(done, 1);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(st.error, ROCL_OK);
  EXPECT_EQ(st.origin, b_);
  EXPECT_EQ(st.tag, 1);
  EXPECT_EQ(st.len, sizeof v);

  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, a_, 1, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  int got = -1;
  std::memcpy(&got, p, sizeof got);
  EXPECT_EQ(got, 42);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Requests, IsendOfBftoretBufferIsZeroCopy) {
  void *p = rocl_bfget(64);
  ASSERT_NE(p, nullptr);
  std::strcpy(static_cast<char *>(p), "handoff");
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_isend(a_, b_, 2, p, 8, &req), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  void *q = nullptr;
  ASSERT_EQ(rocl_recv(b_, a_, 2, &q, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_EQ(q, p);
  EXPECT_STREQ(static_cast<char *>(q), "handoff");
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Requests, IsendOfPlainPoolBufferEndsSent) {
  void *p = rocl_bfget(64);
  ASSERT_NE(p, nullptr);
  std::strcpy(static_cast<char *>(p), "plain");
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_isend(a_, b_, 2, p, 6, &req), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  EXPECT_EQ(rocl_bfstat(p), ROCL_BF_SENT) << "after completion the library no longer needs it";
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  void *q = nullptr;
  ASSERT_EQ(rocl_recv(b_, a_, 2, &q, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_STREQ(static_cast<char *>(q), "plain");
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Requests, IsendErrorsLeaveRequestUntouched) {
  int v = 1;
  rocl_request_t req = sentinel();
  EXPECT_EQ(rocl_isend(a_, kUnknownGid, 0, &v, sizeof v, &req), ROCL_EBADGID);
  EXPECT_EQ(req, sentinel());
  EXPECT_EQ(rocl_isend(kUnknownGid, b_, 0, &v, sizeof v, &req), ROCL_EBADGID);
  EXPECT_EQ(req, sentinel());
  EXPECT_EQ(rocl_isend(a_, b_, -4, &v, sizeof v, &req), ROCL_EINVAL);
  EXPECT_EQ(req, sentinel());
  EXPECT_EQ(rocl_isend(a_, b_, 0, nullptr, 4, &req), ROCL_EINVAL);
  EXPECT_EQ(req, sentinel());
  EXPECT_EQ(rocl_isend(a_, b_, 0, &v, sizeof v, nullptr), ROCL_EINVAL);

  void *p = rocl_bfget(8);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  EXPECT_EQ(rocl_isend(a_, b_, 0, p, rocl_bfsize(p) + 1, &req), ROCL_ETOOBIG);
  EXPECT_EQ(req, sentinel());
  EXPECT_EQ(rocl_isend(a_, kUnknownGid, 0, p, 8, &req), ROCL_EBADGID);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK) << "a failed isend leaves the bftoret buffer owned";

  void *q = nullptr;
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &q, nullptr, nullptr, nullptr, 0), ROCL_ETIMEDOUT)
      << "no failed isend delivered anything";
  expect_pool_at_baseline();
}

// ---- irecv, test and wait -------------------------------------------------------------------

TEST_F(Requests, IrecvThenSend) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK) << rocl_last_error();
  ASSERT_NE(req, ROCL_REQUEST_NULL);
  int done = 1;
  rocl_status_t st{};
  ASSERT_EQ(rocl_test(&req, &done, &st), ROCL_OK);
  EXPECT_EQ(done, 0) << "nothing was sent yet";
  EXPECT_NE(req, ROCL_REQUEST_NULL) << "a pending request stays live";

  char data[] = "for irecv";
  ASSERT_EQ(rocl_send(a_, b_, 6, data, sizeof data), ROCL_OK);
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(st.error, ROCL_OK);
  EXPECT_EQ(st.origin, a_);
  EXPECT_EQ(st.tag, 6);
  EXPECT_EQ(st.len, sizeof data);
  ASSERT_NE(st.ptr, nullptr);
  EXPECT_STREQ(static_cast<char *>(st.ptr), "for irecv");
  EXPECT_GE(rocl_bfsize(st.ptr), sizeof data);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK) << "the received buffer is the caller's";
  expect_pool_at_baseline();
}

TEST_F(Requests, IrecvCompletesByTest) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, a_, 3, &req), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 3, 77), ROCL_OK);
  int done = 0;
  rocl_status_t st{};
  for (int i = 0; i < 2000 && !done; ++i) {
    ASSERT_EQ(rocl_test(&req, &done, &st), ROCL_OK);
    if (!done) sleep_ms(1);
  }
  ASSERT_EQ(done, 1);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(int_of(st), 77);
  EXPECT_EQ(st.origin, a_);
  EXPECT_EQ(st.tag, 3);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

TEST_F(Requests, IrecvOfAlreadyQueuedMessage) {
  ASSERT_EQ(send_int(a_, b_, 1, 5), ROCL_OK);
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 0), ROCL_OK) << "the message was already there";
  EXPECT_EQ(int_of(st), 5);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

// A wait that finds its receive done already (rocl_wait's quick path, as
// the later waits of a loop over a window of receives do) completes it with
// the whole status, even with no time to wait at all.
TEST_F(Requests, WaitOnAReceiveDoneAlreadyCompletesItWithoutWaiting) {
  char into[16];
  std::memset(into, 0, sizeof into);
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecvx(b_, a_, 4, 0, into, sizeof into, &req), ROCL_OK) << rocl_last_error();
  char data[] = "done already";
  ASSERT_EQ(rocl_send(a_, b_, 4, data, sizeof data), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 0), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(st.error, ROCL_OK);
  EXPECT_EQ(st.origin, a_);
  EXPECT_EQ(st.tag, 4);
  EXPECT_EQ(st.len, sizeof data);
  EXPECT_EQ(st.ptr, into) << "received into the caller's memory";
  EXPECT_STREQ(into, "done already");
  expect_pool_at_baseline();
}

TEST_F(Requests, IrecvHonoursOriginAndTag) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, a_, 3, &req), ROCL_OK);
  ASSERT_EQ(send_int(c_, b_, 3, 1), ROCL_OK);  // wrong origin
  ASSERT_EQ(send_int(a_, b_, 4, 2), ROCL_OK);  // wrong tag
  rocl_status_t st{};
  EXPECT_EQ(rocl_wait(&req, &st, 50), ROCL_ETIMEDOUT);
  ASSERT_EQ(send_int(a_, b_, 3, 3), ROCL_OK);
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  EXPECT_EQ(int_of(st), 3);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  // The two others are still queued.
  for (int expect : {1, 2}) {
    void *p = nullptr;
    ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_OK);
    int v = -1;
    std::memcpy(&v, p, sizeof v);
    EXPECT_EQ(v, expect);
    EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  }
}

TEST_F(Requests, WaitTimeouts) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  rocl_request_t live = req;
  rocl_status_t st{};

  auto t0 = Clock::now();
  EXPECT_EQ(rocl_wait(&req, &st, 0), ROCL_ETIMEDOUT);
  EXPECT_LT(ms_since(t0), 100) << "timeout 0 only polls";
  EXPECT_EQ(req, live) << "on ROCL_ETIMEDOUT the request stays live";

  t0 = Clock::now();
  EXPECT_EQ(rocl_wait(&req, &st, 50), ROCL_ETIMEDOUT);
  EXPECT_GE(ms_since(t0), 50);
  EXPECT_EQ(req, live);

  t0 = Clock::now();  // before the sender starts its 100 ms sleep
  std::thread sender([&] {
    sleep_ms(100);
    send_int(a_, b_, 0, 9);
  });
  ASSERT_EQ(rocl_wait(&req, &st, -1), ROCL_OK);
  EXPECT_GE(ms_since(t0), 95);
  sender.join();
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(int_of(st), 9);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

TEST_F(Requests, NullRequestCompletesAtOnce) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  int done = 0;
  rocl_status_t st;
  std::memset(&st, 0xab, sizeof st);
  EXPECT_EQ(rocl_test(&req, &done, &st), ROCL_OK);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(st.ptr, nullptr) << "an empty status";
  EXPECT_EQ(st.len, 0u);
  EXPECT_EQ(st.error, ROCL_OK);
  EXPECT_EQ(st.origin, ROCL_NULL_GID);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);

  std::memset(&st, 0xab, sizeof st);
  auto t0 = Clock::now();
  EXPECT_EQ(rocl_wait(&req, &st, -1), ROCL_OK);
  EXPECT_LT(ms_since(t0), 1000);
  EXPECT_EQ(st.ptr, nullptr);
  EXPECT_EQ(st.len, 0u);
  EXPECT_EQ(st.error, ROCL_OK);
  EXPECT_EQ(rocl_test(&req, &done, nullptr), ROCL_OK) << "status may be NULL";
}

TEST_F(Requests, InvalidArguments) {
  int done = 0;
  rocl_status_t st{};
  EXPECT_EQ(rocl_test(nullptr, &done, &st), ROCL_EINVAL);
  EXPECT_EQ(rocl_wait(nullptr, &st, 0), ROCL_EINVAL);
  EXPECT_EQ(rocl_cancel(nullptr), ROCL_EINVAL);

  rocl_request_t req = sentinel();
  EXPECT_EQ(rocl_irecv(kUnknownGid, ROCL_ANY, ROCL_ANY, &req), ROCL_EBADGID);
  EXPECT_EQ(req, sentinel());
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid)) << rocl_last_error();
  EXPECT_EQ(rocl_irecv(b_, ROCL_ANY, -7, &req), ROCL_EINVAL);
  EXPECT_EQ(req, sentinel());
  EXPECT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, nullptr), ROCL_EINVAL);

  req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  EXPECT_EQ(rocl_test(&req, nullptr, &st), ROCL_EINVAL) << "done is where the answer goes";
  EXPECT_EQ(rocl_cancel(&req), ROCL_OK);
}

// ---- cancel
// --------------------------------------------------------------------------------------

TEST_F(Requests, CancelPendingIrecv) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  ASSERT_EQ(rocl_cancel(&req), ROCL_OK);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);

  // A later message is not consumed by the cancelled request.
  ASSERT_EQ(send_int(a_, b_, 0, 31), ROCL_OK);
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  int v = -1;
  std::memcpy(&v, p, sizeof v);
  EXPECT_EQ(v, 31);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Requests, CancelAfterTimeoutedWait) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 10), ROCL_ETIMEDOUT);
  ASSERT_EQ(rocl_cancel(&req), ROCL_OK);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  ASSERT_EQ(send_int(a_, b_, 0, 1), ROCL_OK);
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_OK);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Requests, CancelAfterCompletionIsEALREADY) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 2, 64), ROCL_OK);
  sleep_ms(50);  // the message went to the posted receive when it arrived
  EXPECT_EQ(rocl_cancel(&req), ROCL_EALREADY);
  ASSERT_NE(req, ROCL_REQUEST_NULL) << "still to be completed by test/wait";
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 0), ROCL_OK);
  EXPECT_EQ(int_of(st), 64);
  EXPECT_EQ(st.tag, 2);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Requests, CancelOfAMessageAlreadyQueuedIsEALREADY) {
  ASSERT_EQ(send_int(a_, b_, 2, 65), ROCL_OK);
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  EXPECT_EQ(rocl_cancel(&req), ROCL_EALREADY);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&req, &st, 0), ROCL_OK);
  EXPECT_EQ(int_of(st), 65);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

TEST_F(Requests, CancelOneOfSeveral) {
  rocl_request_t r1 = ROCL_REQUEST_NULL, r2 = ROCL_REQUEST_NULL, r3 = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r1), ROCL_OK);
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r2), ROCL_OK);
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r3), ROCL_OK);
  ASSERT_EQ(rocl_cancel(&r2), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 0, 1), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 0, 2), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&r1, &st, 2000), ROCL_OK);
  EXPECT_EQ(int_of(st), 1);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  ASSERT_EQ(rocl_wait(&r3, &st, 2000), ROCL_OK);
  EXPECT_EQ(int_of(st), 2);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

// ---- matching order -----------------------------------------------------------------------------

TEST_F(Requests, IrecvAndBlockingRecvMatchInPostingOrder) {
  rocl_request_t r1 = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r1), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 0, 1), ROCL_OK);
  // The message went to the earlier posted irecv, so a poll finds nothing.
  void *p = nullptr;
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_ETIMEDOUT);
  ASSERT_EQ(send_int(a_, b_, 0, 2), ROCL_OK);
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  int v = -1;
  std::memcpy(&v, p, sizeof v);
  EXPECT_EQ(v, 2);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&r1, &st, 0), ROCL_OK);
  EXPECT_EQ(int_of(st), 1);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

TEST_F(Requests, IrecvBlockingRecvIrecvInterleaved) {
  rocl_request_t r1 = ROCL_REQUEST_NULL, r3 = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r1), ROCL_OK);
  std::atomic<int> blocking_got{-1};
  std::thread t([&] {
    void *p = nullptr;
    if (rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 5000) == ROCL_OK) {
      int v = -1;
      std::memcpy(&v, p, sizeof v);
      blocking_got = v;
      rocl_bfret(p);
    }
  });
  sleep_ms(100);  // the blocking receive is posted second
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r3), ROCL_OK);
  for (int i = 1; i <= 3; ++i) ASSERT_EQ(send_int(a_, b_, 0, i), ROCL_OK);
  t.join();
  EXPECT_EQ(blocking_got.load(), 2);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&r1, &st, 2000), ROCL_OK);
  EXPECT_EQ(int_of(st), 1);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  ASSERT_EQ(rocl_wait(&r3, &st, 2000), ROCL_OK);
  EXPECT_EQ(int_of(st), 3);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

TEST_F(Requests, TagSpecificIrecvLetsOthersPass) {
  rocl_request_t r1 = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, 1, &r1), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 2, 20), ROCL_OK);
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK)
      << "tag 2 does not match the posted irecv for tag 1";
  int v = -1;
  std::memcpy(&v, p, sizeof v);
  EXPECT_EQ(v, 20);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  ASSERT_EQ(send_int(a_, b_, 1, 10), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_wait(&r1, &st, 2000), ROCL_OK);
  EXPECT_EQ(int_of(st), 10);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
}

TEST_F(Requests, ManyOutstandingIrecvsCompleteInOrder) {
  const int n = scaled(1000);
  std::vector<rocl_request_t> reqs(static_cast<std::size_t>(n), ROCL_REQUEST_NULL);
  for (auto &r : reqs) ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &r), ROCL_OK);
  std::thread sender([&] {
    for (int i = 0; i < n; ++i) send_int(a_, b_, i % 7, i);
  });
  for (int i = 0; i < n; ++i) {
    rocl_status_t st{};
    ASSERT_EQ(rocl_wait(&reqs[static_cast<std::size_t>(i)], &st, 5000), ROCL_OK) << i;
    ASSERT_EQ(int_of(st), i);
    EXPECT_EQ(st.tag, i % 7);
    ASSERT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  }
  sender.join();
  expect_pool_at_baseline();
}

TEST_F(Requests, WaitInAnotherThreadThanThePost) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  std::atomic<int> rc{1};
  std::atomic<int> value{-1};
  std::thread waiter([&] {
    rocl_status_t st{};
    rc = rocl_wait(&req, &st, 5000);
    if (rc == ROCL_OK) {
      value = int_of(st);
      rocl_bfret(st.ptr);
    }
  });
  sleep_ms(50);
  ASSERT_EQ(send_int(a_, b_, 0, 8), ROCL_OK);
  waiter.join();
  EXPECT_EQ(rc.load(), ROCL_OK);
  EXPECT_EQ(value.load(), 8);
}

// ---- deletion
// ---------------------------------------------------------------------------------------

TEST_F(Requests, DeleteFailsPendingIrecv) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  rocl_status_t st{};
  EXPECT_EQ(rocl_wait(&req, &st, 2000), ROCL_EDELETED);
  EXPECT_EQ(req, ROCL_REQUEST_NULL) << "a failed request completes too";
  EXPECT_EQ(st.error, ROCL_EDELETED);
  EXPECT_EQ(st.ptr, nullptr);
}

TEST_F(Requests, DeleteWhileWaiting) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  std::atomic<int> rc{1};
  std::thread waiter([&] {
    rocl_status_t st{};
    rc = rocl_wait(&req, &st, -1);
  });
  sleep_ms(100);
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  waiter.join();
  EXPECT_EQ(rc.load(), ROCL_EDELETED);
}

// An immediate receive holds no reference to its resource: once the
// resource is deleted and its object reused for a new one, the old request
// stays failed and touches nothing of the new resource's (its cancel finds
// nothing to withdraw there), and the new resource's messages are its own.
TEST_F(Requests, ARequestOfADeletedResourceLeavesTheResourceThatReusesItAlone) {
  rocl_request_t old_req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &old_req), ROCL_OK);
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  const rocl_gid_t fresh = must_register("req", "fresh");  // most likely b_'s object again
  ASSERT_NE(fresh, ROCL_NULL_GID);
  rocl_request_t new_req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(fresh, a_, 7, &new_req), ROCL_OK);
  EXPECT_EQ(rocl_cancel(&old_req), ROCL_EALREADY) << "the delete completed it";
  ASSERT_EQ(send_int(a_, fresh, 7, 41), ROCL_OK);
  rocl_status_t st{};
  EXPECT_EQ(rocl_wait(&old_req, &st, 2000), ROCL_EDELETED);
  EXPECT_EQ(st.ptr, nullptr);
  ASSERT_EQ(rocl_wait(&new_req, &st, 2000), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(int_of(st), 41);
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  EXPECT_EQ(rocl_delete(fresh), ROCL_OK);
}

// Receives posted, for any message, on a resource while it is deleted and
// its object reused for the next one, over and over: each post either fails
// (ROCL_EBADGID: gone before the post) or is completed by the delete
// (ROCL_EDELETED), and never takes a message sent to the resource that
// reuses the object (which a post into the reused object's mailbox would).
TEST_F(Requests, ReceivesPostedWhileTheirResourceIsDeletedNeverTakeItsSuccessorsMessages) {
  constexpr int kRounds = 3000;
  std::atomic<rocl_gid_t> target{ROCL_NULL_GID};
  std::atomic<bool> stop{false};
  std::atomic<int> stolen{0}, other{0}, posted{0};
  std::atomic<rocl_gid_t> posted_on{ROCL_NULL_GID};  // the poster's last post
  std::thread poster([&] {
    while (!stop.load()) {
      const rocl_gid_t g = target.load();
      if (g == ROCL_NULL_GID) continue;
      rocl_request_t req = ROCL_REQUEST_NULL;
      const int rc = rocl_irecv(g, ROCL_ANY, ROCL_ANY, &req);
      if (rc == ROCL_EBADGID) continue;
      if (rc != ROCL_OK) {
        ++other;
        continue;
      }
      ++posted;
      posted_on.store(g);
      rocl_status_t st{};
      const int w = rocl_wait(&req, &st, 5000);
      if (w == ROCL_OK) {
        rocl_bfret(st.ptr);
        ++stolen;
      } else if (w != ROCL_EDELETED) {
        ++other;
      }
    }
  });
  rocl_gid_t previous = must_register("req", "churn");
  for (int i = 0; i < kRounds; ++i) {
    target.store(previous);  // the poster hammers it from now on
    std::this_thread::yield();
    if (i % 16 == 0) {
      // Now and then the delete waits (up to 1 s) for a post on the
      // resource it deletes: on a loaded machine the poster may otherwise
      // not run before the rounds end, and the test would prove nothing.
      // (Its post can only be on this resource: every earlier one is
      // deleted, and the delete completed any post on it.)
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (posted_on.load() != previous && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    }
    ASSERT_EQ(rocl_delete(previous), ROCL_OK);
    const rocl_gid_t g = must_register("req", "churn");  // most likely the same object
    ASSERT_NE(g, ROCL_NULL_GID);
    ASSERT_EQ(send_int(a_, g, 5, i), ROCL_OK);
    rocl_status_t st{};
    int got = -1;
    ASSERT_EQ(rocl_recvx(g, a_, 5, 0, &got, sizeof got, &st, 2000), ROCL_OK)
        << "round " << i << ": " << rocl_last_error();
    EXPECT_EQ(got, i) << "its own message";
    previous = g;
  }
  stop.store(true);
  poster.join();
  EXPECT_EQ(rocl_delete(previous), ROCL_OK);
  EXPECT_EQ(stolen.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(posted.load(), 0) << "the poster never posted: the test proved nothing";
}

TEST_F(Requests, DeleteFailsPendingIrecvSeenByTest) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecv(b_, ROCL_ANY, ROCL_ANY, &req), ROCL_OK);
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  int done = 0;
  rocl_status_t st{};
  EXPECT_EQ(rocl_test(&req, &done, &st), ROCL_EDELETED);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
}

}  // namespace
