// test_util.hpp - helpers shared by the API tests (written from rocl.h's
// contracts, not from the implementation).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rocl/rocl.h"

// ---- sanitizer builds: scale loops down ------------------------------------

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROCL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define ROCL_TEST_SANITIZED 1
#endif
#endif
#ifndef ROCL_TEST_SANITIZED
#define ROCL_TEST_SANITIZED 0
#endif

#if defined(__SANITIZE_THREAD__)
#define ROCL_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ROCL_TEST_TSAN 1
#endif
#endif
#ifndef ROCL_TEST_TSAN
#define ROCL_TEST_TSAN 0
#endif

namespace apitest {

inline constexpr bool kSanitized = ROCL_TEST_SANITIZED != 0;
// ThreadSanitizer makes every instrumented byte touched expensive (and
// shadows memory 4x): the tests that stream tens of MiB shrink under it.
inline constexpr bool kTsan = ROCL_TEST_TSAN != 0;

// n normally, n / div under a sanitizer (at least 1).
inline int scaled(int n, int div = 5) {
  return kSanitized ? std::max(1, n / div) : n;
}

// ---- time ---------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

inline long long ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

inline void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// ---- data: deterministic fill and a 64-bit hash ------------------------------

// Fills len bytes with a pseudo-random sequence derived from seed.
inline void fill_pattern(void *dst, std::size_t len, std::uint64_t seed) {
  auto *p = static_cast<unsigned char *>(dst);
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  if (x == 0) x = 1;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < len; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<unsigned char>(x >> 24);
  }
}

// FNV-1a, taken 8 bytes at a time (then byte by byte for the tail).
inline std::uint64_t hash64(const void *data, std::size_t len) {
  const auto *p = static_cast<const unsigned char *>(data);
  std::uint64_t h = 0xcbf29ce484222325ull ^ len;
  const std::uint64_t prime = 0x100000001b3ull;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h ^= w;
    h *= prime;
    h ^= h >> 29;
  }
  for (; i < len; ++i) {
    h ^= p[i];
    h *= prime;
  }
  return h;
}

// Big buffers: a full pseudo-random pattern normally; under TSan a byte
// derived from seed written with memset (intercepted, so cheap) and checked
// with memcmp.
inline void stamp(void *dst, std::size_t len, std::uint64_t seed) {
  if (!kTsan) {
    fill_pattern(dst, len, seed);
  } else if (len != 0) {
    std::memset(dst, static_cast<int>((seed * 37 + 1) & 0xff), len);
  }
}
inline bool stamp_ok(const void *src, std::size_t len, std::uint64_t seed) {
  std::vector<unsigned char> want(len);
  if (len == 0) return true;
  stamp(want.data(), len, seed);
  return std::memcmp(want.data(), src, len) == 0;
}

inline std::uint64_t pattern_hash(std::size_t len, std::uint64_t seed) {
  std::vector<unsigned char> v(len);
  fill_pattern(v.data(), len, seed);
  return hash64(v.data(), len);
}

// ---- text -----------------------------------------------------------------------

inline std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline bool icontains(const char *text, const std::string &word) {
  if (text == nullptr) return false;
  return lower(text).find(lower(word)) != std::string::npos;
}

inline std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// True if text names gid in hexadecimal (any case, with or without 0x).
inline bool names_gid(const char *text, rocl_gid_t gid) {
  return icontains(text, hex(gid));
}

// A gid that is never issued in these tests (server 0x7e7e, serial 0xdeadbeef).
inline constexpr rocl_gid_t kUnknownGid = 0x7e7e0000deadbeefull;

// ---- attribute lists and resources ---------------------------------------------

struct AttrlHolder {
  rocl_attrl_t *list;
  explicit AttrlHolder(int maxlen = 0) : list(rocl_new_attrl(maxlen)) {}
  ~AttrlHolder() { rocl_kill_attrl(list); }
  AttrlHolder(const AttrlHolder &) = delete;
  AttrlHolder &operator=(const AttrlHolder &) = delete;
  rocl_attrl_t *get() const { return list; }
  int add(const char *name, const std::string &value) {
    return rocl_add_attr(list, name, value.data(), static_cast<int>(value.size()));
  }
  int ask(const char *name, int reserve) { return rocl_add_attr(list, name, nullptr, reserve); }
  // The value of name, or "<absent>" if absent or unspecified.
  std::string value(const char *name) const {
    int len = -1;
    void *v = rocl_get_attr(list, name, &len);
    if (v == nullptr) return "<absent>";
    return std::string(static_cast<const char *>(v), static_cast<std::size_t>(len));
  }
};

// Registers a resource with the given (name, value) attributes; returns
// rocl_register's result.
inline std::int64_t register_resource(
    std::initializer_list<std::pair<const char *, std::string>> attrs) {
  AttrlHolder l;
  for (const auto &[n, v] : attrs) {
    if (l.add(n, v) != ROCL_OK) return -1000;
  }
  return rocl_register(l.get());
}

inline rocl_gid_t must_register(const std::string &type, const std::string &name = "") {
  std::int64_t g = name.empty() ? register_resource({{"type", type}})
                                : register_resource({{"type", type}, {"name", name}});
  EXPECT_GT(g, 0) << "rocl_register failed: " << rocl_last_error();
  return g > 0 ? static_cast<rocl_gid_t>(g) : ROCL_NULL_GID;
}

inline rocl_pool_stats_t pool_stats() {
  rocl_pool_stats_t s{};
  EXPECT_EQ(rocl_pool_stats(&s), ROCL_OK);
  return s;
}

// Fixture: a context for the test, torn down after it.
class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::int64_t g = rocl_init();
    ASSERT_GT(g, 0) << rocl_last_error();
    ctx_ = static_cast<rocl_gid_t>(g);
  }
  void TearDown() override { EXPECT_EQ(rocl_exit(), ROCL_OK); }
  rocl_gid_t ctx_ = ROCL_NULL_GID;
};

// Polls rocl_bfstat until the buffer is no longer PENDING (at most ~2 s).
inline int settled_bfstat(void *ptr) {
  int st = rocl_bfstat(ptr);
  for (int i = 0; i < 2000 && st == ROCL_BF_PENDING; ++i) {
    sleep_ms(1);
    st = rocl_bfstat(ptr);
  }
  return st;
}

}  // namespace apitest
