// attr_list_api_test.cpp - the attribute-list functions of rocl.h, through C.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "rocl/rocl.h"

namespace {

bool last_error_has(const char *part) {
  return std::strstr(rocl_last_error(), part) != nullptr;
}

TEST(AttrListApi, AddGetKill) {
  rocl_attrl_t *l = rocl_new_attrl(0);
  ASSERT_NE(l, nullptr);
  const int64_t pid = 4242;
  ASSERT_EQ(rocl_add_attr(l, "type", "task", 4), ROCL_OK);
  ASSERT_EQ(rocl_add_attr(l, "pid", &pid, sizeof pid), ROCL_OK);
  ASSERT_EQ(rocl_add_attr(l, "empty", "", 0), ROCL_OK);
  ASSERT_EQ(rocl_add_attr(l, "ptid", nullptr, 8), ROCL_OK);  // unspecified, 8 bytes reserved

  int len = -1;
  const void *v = rocl_get_attr(l, "type", &len);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(len, 4);
  EXPECT_EQ(std::memcmp(v, "task", 4), 0);
  // Values are 8-aligned: an integer can be read in place.
  const auto *p = static_cast<const int64_t *>(rocl_get_attr(l, "pid", &len));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(len, 8);
  EXPECT_EQ(*p, pid);
  EXPECT_NE(rocl_get_attr(l, "empty", &len), nullptr);
  EXPECT_EQ(len, 0);
  EXPECT_NE(rocl_get_attr(l, "type", nullptr), nullptr);  // len may be NULL

  len = 77;
  EXPECT_EQ(rocl_get_attr(l, "ptid", &len), nullptr);
  EXPECT_TRUE(last_error_has("'ptid' is unspecified")) << rocl_last_error();
  EXPECT_EQ(len, 77);
  EXPECT_EQ(rocl_get_attr(l, "nope", &len), nullptr);
  EXPECT_TRUE(last_error_has("'nope' is not in the list")) << rocl_last_error();
  rocl_kill_attrl(l);
  rocl_kill_attrl(nullptr);  // ignored
}

TEST(AttrListApi, ValueIsCopied) {
  rocl_attrl_t *l = rocl_new_attrl(64);
  char buf[4] = {'a', 'b', 'c', 'd'};
  ASSERT_EQ(rocl_add_attr(l, "k", buf, 4), ROCL_OK);
  buf[0] = 'X';
  EXPECT_EQ(std::memcmp(rocl_get_attr(l, "k", nullptr), "abcd", 4), 0);
  rocl_kill_attrl(l);
}

TEST(AttrListApi, InvalidArguments) {
  rocl_attrl_t *l = rocl_new_attrl(64);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(rocl_add_attr(nullptr, "a", "1", 1), ROCL_EINVAL);
  EXPECT_TRUE(last_error_has("list is NULL")) << rocl_last_error();
  EXPECT_EQ(rocl_add_attr(l, nullptr, "1", 1), ROCL_EINVAL);
  EXPECT_TRUE(last_error_has("name is NULL")) << rocl_last_error();
  EXPECT_EQ(rocl_add_attr(l, "", "1", 1), ROCL_EINVAL);
  EXPECT_TRUE(last_error_has("empty")) << rocl_last_error();
  EXPECT_EQ(rocl_add_attr(l, "neg", "1", -1), ROCL_EINVAL);
  EXPECT_TRUE(last_error_has("'neg': length -1 is negative")) << rocl_last_error();
  EXPECT_EQ(rocl_add_attr(l, "neg", nullptr, -1), ROCL_EINVAL);
  const std::string longname(256, 'n');
  EXPECT_EQ(rocl_add_attr(l, longname.c_str(), "1", 1), ROCL_EINVAL);
  EXPECT_TRUE(last_error_has("the limit is 255")) << rocl_last_error();
  const std::string maxname(255, 'n');
  rocl_attrl_t *big = rocl_new_attrl(1000);
  EXPECT_EQ(rocl_add_attr(big, maxname.c_str(), "1", 1), ROCL_OK);
  EXPECT_NE(rocl_get_attr(big, maxname.c_str(), nullptr), nullptr);
  EXPECT_EQ(rocl_get_attr(big, longname.c_str(), nullptr), nullptr);
  rocl_kill_attrl(big);

  ASSERT_EQ(rocl_add_attr(l, "dup", "1", 1), ROCL_OK);
  EXPECT_EQ(rocl_add_attr(l, "dup", "2", 1), ROCL_EINVAL);
  EXPECT_TRUE(last_error_has("'dup' is already in the list")) << rocl_last_error();
  EXPECT_EQ(rocl_add_attr(l, "dup", nullptr, 1), ROCL_EINVAL);

  EXPECT_EQ(rocl_get_attr(nullptr, "dup", nullptr), nullptr);
  EXPECT_TRUE(last_error_has("list is NULL")) << rocl_last_error();
  EXPECT_EQ(rocl_get_attr(l, nullptr, nullptr), nullptr);
  EXPECT_TRUE(last_error_has("name is NULL")) << rocl_last_error();

  // A successful call clears the previous failure.
  EXPECT_NE(rocl_get_attr(l, "dup", nullptr), nullptr);
  EXPECT_STREQ(rocl_last_error(), "");
  rocl_kill_attrl(l);
}

TEST(AttrListApi, MaxlenBoundsTheList) {
  // 8 + 1 + 10 = 19 bytes per attribute: 5 fit in 100, the 6th does not.
  rocl_attrl_t *l = rocl_new_attrl(100);
  ASSERT_NE(l, nullptr);
  for (int i = 0; i < 5; ++i) {
    const char n[2] = {static_cast<char>('a' + i), '\0'};
    ASSERT_EQ(rocl_add_attr(l, n, "0123456789", 10), ROCL_OK) << i;
  }
  EXPECT_EQ(rocl_add_attr(l, "f", "0123456789", 10), ROCL_ENOSPC);
  EXPECT_TRUE(last_error_has("'f'")) << rocl_last_error();
  EXPECT_EQ(rocl_add_attr(l, "f", nullptr, 10), ROCL_ENOSPC);  // reservations count too
  EXPECT_EQ(rocl_add_attr(l, "f", nullptr, 0), ROCL_ENOSPC);   // 95 + 9 > 100
  rocl_kill_attrl(l);

  rocl_attrl_t *exact = rocl_new_attrl(19);
  EXPECT_EQ(rocl_add_attr(exact, "a", nullptr, 10), ROCL_OK);  // exactly 19
  EXPECT_EQ(rocl_add_attr(exact, "b", "", 0), ROCL_ENOSPC);
  rocl_kill_attrl(exact);

  rocl_attrl_t *d = rocl_new_attrl(-1);  // default 4096
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(rocl_add_attr(d, "x", nullptr, 4096 - 9), ROCL_OK);
  EXPECT_EQ(rocl_add_attr(d, "y", nullptr, 0), ROCL_ENOSPC);
  rocl_kill_attrl(d);

  EXPECT_EQ(rocl_new_attrl(0x7fffffff), nullptr);
  EXPECT_TRUE(last_error_has("maxlen 2147483647 exceeds")) << rocl_last_error();
  rocl_attrl_t *huge = rocl_new_attrl(1 << 30);  // allowed; memory grows on demand
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(rocl_add_attr(huge, "x", "y", 1), ROCL_OK);
  rocl_kill_attrl(huge);
}

}  // namespace
