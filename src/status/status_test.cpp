// status_test.cpp - fail() and last_error(): the sentence a failure leaves,
// including one that wraps the sentence before it.
#include "status/status.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rocl::impl {
namespace {

TEST(Status, FailRecordsTheSentenceAndReturnsTheCode) {
  clear_error();
  EXPECT_STREQ(last_error(), "");
  EXPECT_EQ(fail(ROCL_EINVAL, "bad %s %d", "thing", 7), ROCL_EINVAL);
  EXPECT_STREQ(last_error(), "bad thing 7");
  clear_error();
  EXPECT_STREQ(last_error(), "");
}

// A layer that adds its context passes the lower layer's sentence as an
// argument: the result must hold both, intact.
TEST(Status, ASentenceMayWrapTheOneBeforeIt) {
  fail(ROCL_ENOMEM, "buffer pool cap reached: %d bytes in use", 4096);
  fail(ROCL_ENOMEM, "shm: no pool block for a %d-byte message: %s", 1024, last_error());
  EXPECT_STREQ(last_error(),
               "shm: no pool block for a 1024-byte message: buffer pool cap reached: 4096 bytes "
               "in use");
}

TEST(Status, LongSentencesAreCutNotOverrun) {
  const std::string word(2000, 'x');
  fail(ROCL_EINVAL, "%s", word.c_str());
  const std::string got = last_error();
  EXPECT_GT(got.size(), 100u);
  EXPECT_LT(got.size(), word.size());
  EXPECT_EQ(got, word.substr(0, got.size()));
}

}  // namespace
}  // namespace rocl::impl
