// attr_list_test.cpp - AttrList: adding, reading, answer slots, the byte
// encoding and its validating decoder (including a fuzz-like test).
#include "directory/attr_list.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte *>(s.data()), s.size()};
}

std::string value_of(const AttrList &l, std::string_view name) {
  std::size_t len = 0;
  const std::byte *v = l.get(name, &len);
  if (v == nullptr) {
    return "<null>";
  }
  return std::string(reinterpret_cast<const char *>(v), len);
}

std::vector<std::byte> copy_of(std::span<const std::byte> b) {
  return {b.begin(), b.end()};
}

std::uint32_t u32_at(std::span<const std::byte> b, std::size_t off) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + off, 4);
  return v;  // the tests run on little-endian hosts
}

void put_u32(std::vector<std::byte> &b, std::size_t off, std::uint32_t v) {
  std::memcpy(b.data() + off, &v, 4);
}

// A list exercising every kind of entry.
AttrList sample() {
  AttrList l(512);
  EXPECT_EQ(l.add("type", "worker"), ROCL_OK);
  EXPECT_EQ(l.add("empty", std::string_view("")), ROCL_OK);
  EXPECT_EQ(l.add_unspecified("answer", 12), ROCL_OK);
  EXPECT_EQ(l.add_unspecified("filled", 9), ROCL_OK);
  EXPECT_EQ(l.fill("filled", as_bytes("abc")), ROCL_OK);
  EXPECT_EQ(l.add("a-much-longer-attribute-name", "v"), ROCL_OK);
  return l;
}

TEST(AttrList, EmptyListEncodesAHeaderOnly) {
  AttrList l(100);
  EXPECT_EQ(l.count(), 0u);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.capacity(), 100u);
  const auto b = l.bytes();
  ASSERT_EQ(b.size(), AttrList::kHeaderBytes);
  EXPECT_EQ(u32_at(b, 0), AttrList::kMagic);
  EXPECT_EQ(std::memcmp(b.data(), "RAL1", 4), 0);
  EXPECT_EQ(u32_at(b, 4), 0u);
  EXPECT_EQ(u32_at(b, 8), 16u);
  EXPECT_EQ(u32_at(b, 12), 100u);
  EXPECT_EQ(l.begin(), l.end());
}

TEST(AttrList, DefaultAndClampedCapacity) {
  EXPECT_EQ(AttrList(0).capacity(), 4096u);
  EXPECT_EQ(AttrList(-5).capacity(), 4096u);
  EXPECT_EQ(AttrList().capacity(), 4096u);
  EXPECT_EQ(AttrList(1).capacity(), 1u);
  EXPECT_EQ(AttrList(0x7fffffff).capacity(), AttrList::kMaxMaxlen);
}

TEST(AttrList, ExactEncodingOfOneAttribute) {
  AttrList l(64);
  ASSERT_EQ(l.add("pid", "12345"), ROCL_OK);
  const auto b = l.bytes();
  // header 16 + entry header 16 + name "pid" padded to 8 + value padded to 8.
  ASSERT_EQ(b.size(), 48u);
  EXPECT_EQ(u32_at(b, 4), 1u);
  EXPECT_EQ(u32_at(b, 8), 48u);
  const std::byte *e = b.data() + 16;
  EXPECT_EQ(e[0], std::byte{3});                     // name_len
  EXPECT_EQ(e[1], std::byte{AttrList::kFlagValue});  // flags
  EXPECT_EQ(e[2], std::byte{0});
  EXPECT_EQ(e[3], std::byte{0});
  EXPECT_EQ(u32_at(b, 16 + 4), 5u);  // value_len
  EXPECT_EQ(u32_at(b, 16 + 8), 5u);  // space
  EXPECT_EQ(u32_at(b, 16 + 12), 0u);
  EXPECT_EQ(std::memcmp(e + 16, "pid\0\0\0\0\0", 8), 0);
  EXPECT_EQ(std::memcmp(e + 24, "12345\0\0\0", 8), 0);
  EXPECT_EQ(l.charged(), 8u + 3 + 5);
}

TEST(AttrList, AddGetAndIterate) {
  AttrList l = sample();
  EXPECT_EQ(l.count(), 5u);
  EXPECT_EQ(value_of(l, "type"), "worker");
  EXPECT_EQ(value_of(l, "empty"), "");
  EXPECT_NE(l.get("empty"), nullptr);  // present with 0 bytes: not NULL
  EXPECT_EQ(value_of(l, "answer"), "<null>");
  EXPECT_EQ(value_of(l, "filled"), "abc");
  EXPECT_EQ(value_of(l, "absent"), "<null>");
  EXPECT_EQ(value_of(l, "typ"), "<null>");

  std::vector<std::string> names;
  for (const AttrList::Attr &a : l) {
    names.emplace_back(a.name);
    if (a.specified()) {
      // Values are 8-aligned both in the encoding and in memory.
      EXPECT_EQ((a.value - l.bytes().data()) % 8, 0) << a.name;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.value) % 8, 0u) << a.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"type", "empty", "answer", "filled",
                                             "a-much-longer-attribute-name"}));
  auto answer = l.find("answer");
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->slot);
  EXPECT_FALSE(answer->specified());
  EXPECT_EQ(answer->space, 12u);
  auto filled = l.find("filled");
  ASSERT_TRUE(filled);
  EXPECT_TRUE(filled->slot);
  EXPECT_TRUE(filled->specified());
  EXPECT_EQ(filled->len, 3u);
  EXPECT_EQ(filled->space, 9u);
  // charge: 8 per attribute + names + values/reservations.
  EXPECT_EQ(l.charged(), 5 * 8u + (4 + 5 + 6 + 6 + 28) + (6 + 0 + 12 + 9 + 1));
}

TEST(AttrList, AddRejectsBadNamesAndNamesThem) {
  AttrList l;
  ASSERT_EQ(l.add("x", "1"), ROCL_OK);
  const auto before = copy_of(l.bytes());

  EXPECT_EQ(l.add("", "1"), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("empty"), std::string::npos) << last_error();

  EXPECT_EQ(l.add("x", "2"), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("'x' is already in the list"), std::string::npos)
      << last_error();
  EXPECT_EQ(l.add_unspecified("x", 4), ROCL_EINVAL);

  EXPECT_EQ(l.add(std::string(256, 'n'), "1"), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("256 bytes"), std::string::npos) << last_error();

  EXPECT_EQ(l.add(std::string_view("a\0b", 3), "1"), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("NUL"), std::string::npos) << last_error();

  EXPECT_EQ(copy_of(l.bytes()), before);
  EXPECT_EQ(l.add(std::string(255, 'n'), "1"), ROCL_OK);
  EXPECT_EQ(value_of(l, std::string(255, 'n')), "1");
}

TEST(AttrList, CapacityIsExactlyTheCharge) {
  AttrList l(40);
  // 8 + 4 + 8 = 20, then 8 + 2 + 10 = 20: exactly 40.
  ASSERT_EQ(l.add("abcd", "12345678"), ROCL_OK);
  const auto before = copy_of(l.bytes());
  EXPECT_EQ(l.add_unspecified("ef", 11), ROCL_ENOSPC);
  EXPECT_NE(std::string(last_error()).find("'ef'"), std::string::npos) << last_error();
  EXPECT_EQ(copy_of(l.bytes()), before);
  EXPECT_EQ(l.count(), 1u);
  ASSERT_EQ(l.add_unspecified("ef", 10), ROCL_OK);
  EXPECT_EQ(l.charged(), 40u);
  EXPECT_EQ(l.add("g", std::string_view("")), ROCL_ENOSPC);
  // Huge lengths do not overflow the check.
  EXPECT_EQ(l.add_unspecified("h", SIZE_MAX), ROCL_ENOSPC);
}

TEST(AttrList, ManyAttributesGrowTheBlock) {
  AttrList l(1 << 20);
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "attr" + std::to_string(i);
    ASSERT_EQ(l.add(name, std::string(static_cast<std::size_t>(i % 37), 'v')), ROCL_OK) << i;
  }
  EXPECT_EQ(l.count(), 2000u);
  for (int i = 0; i < 2000; i += 97) {
    EXPECT_EQ(value_of(l, "attr" + std::to_string(i)),
              std::string(static_cast<std::size_t>(i % 37), 'v'));
  }
  AttrList back;
  ASSERT_EQ(AttrList::decode(l.bytes(), back), ROCL_OK) << last_error();
  EXPECT_EQ(copy_of(back.bytes()), copy_of(l.bytes()));
}

TEST(AttrList, FillUsesTheReservation) {
  AttrList l;
  ASSERT_EQ(l.add("plain", "p"), ROCL_OK);
  ASSERT_EQ(l.add_unspecified("slot", 4), ROCL_OK);
  const auto before = copy_of(l.bytes());

  EXPECT_EQ(l.fill("slot", as_bytes("12345")), ROCL_ENOSPC);
  EXPECT_NE(std::string(last_error()).find("'slot' is 5 bytes but only 4"), std::string::npos)
      << last_error();
  EXPECT_EQ(copy_of(l.bytes()), before);

  EXPECT_EQ(l.fill("plain", as_bytes("x")), ROCL_EINVAL);
  EXPECT_EQ(l.fill("none", as_bytes("x")), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("'none'"), std::string::npos) << last_error();

  ASSERT_EQ(l.fill("slot", as_bytes("1234")), ROCL_OK);
  EXPECT_EQ(value_of(l, "slot"), "1234");
  ASSERT_EQ(l.fill("slot", as_bytes("9")), ROCL_OK);
  EXPECT_EQ(value_of(l, "slot"), "9");
  // The encoding size never changes: the reply has the request's size.
  EXPECT_EQ(l.bytes().size(), before.size());
  // No stale bytes of the longer answer remain.
  const std::byte *v = l.get("slot");
  EXPECT_EQ(v[1], std::byte{0});
  EXPECT_EQ(v[3], std::byte{0});
  l.clear_answers();
  EXPECT_EQ(l.get("slot"), nullptr);
  EXPECT_EQ(copy_of(l.bytes()), before);
}

TEST(AttrList, FillFromIsAllOrNothing) {
  AttrList resource;
  ASSERT_EQ(resource.add("type", "worker"), ROCL_OK);
  ASSERT_EQ(resource.add("short", "ab"), ROCL_OK);
  ASSERT_EQ(resource.add("long", "0123456789"), ROCL_OK);

  AttrList q;
  ASSERT_EQ(q.add("type", "worker"), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("short", 8), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("long", 4), ROCL_OK);  // too small
  ASSERT_EQ(q.add_unspecified("missing", 8), ROCL_OK);
  const auto before = copy_of(q.bytes());
  EXPECT_EQ(q.fill_from(resource), ROCL_ENOSPC);
  EXPECT_NE(std::string(last_error()).find("'long' is 10 bytes but only 4"), std::string::npos)
      << last_error();
  EXPECT_EQ(copy_of(q.bytes()), before);
  EXPECT_EQ(q.get("short"), nullptr);

  AttrList q2;
  ASSERT_EQ(q2.add_unspecified("short", 8), ROCL_OK);
  ASSERT_EQ(q2.add_unspecified("long", 10), ROCL_OK);
  ASSERT_EQ(q2.add_unspecified("missing", 8), ROCL_OK);
  ASSERT_EQ(q2.fill("missing", as_bytes("stale")), ROCL_OK);
  ASSERT_EQ(q2.fill_from(resource), ROCL_OK);
  EXPECT_EQ(value_of(q2, "short"), "ab");
  EXPECT_EQ(value_of(q2, "long"), "0123456789");
  EXPECT_EQ(value_of(q2, "missing"), "<null>");  // a previous answer is cleared

  // A second answer from another resource replaces the first.
  AttrList other;
  ASSERT_EQ(other.add("short", "z"), ROCL_OK);
  ASSERT_EQ(q2.fill_from(other), ROCL_OK);
  EXPECT_EQ(value_of(q2, "short"), "z");
  EXPECT_EQ(value_of(q2, "long"), "<null>");
}

TEST(AttrList, CopyAndMove) {
  AttrList a = sample();
  AttrList b(a);
  EXPECT_EQ(copy_of(a.bytes()), copy_of(b.bytes()));
  ASSERT_EQ(b.add("more", "x"), ROCL_OK);
  EXPECT_EQ(a.get("more"), nullptr);

  AttrList c(std::move(b));
  EXPECT_EQ(value_of(c, "more"), "x");
  EXPECT_EQ(b.count(), 0u);  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(b.get("more"), nullptr);
  ASSERT_EQ(b.add("again", "y"), ROCL_OK);  // a moved-from list can be reused
  EXPECT_EQ(value_of(b, "again"), "y");
  AttrList d(b);
  EXPECT_EQ(value_of(d, "again"), "y");

  AttrList e(16);
  e = a;
  EXPECT_EQ(copy_of(e.bytes()), copy_of(a.bytes()));
  EXPECT_EQ(e.capacity(), a.capacity());
  e = std::move(c);
  EXPECT_EQ(value_of(e, "more"), "x");
}

TEST(AttrList, DecodeRoundTrip) {
  AttrList l = sample();
  AttrList back(8);
  ASSERT_EQ(AttrList::decode(l.bytes(), back), ROCL_OK) << last_error();
  EXPECT_EQ(copy_of(back.bytes()), copy_of(l.bytes()));
  EXPECT_EQ(back.count(), l.count());
  EXPECT_EQ(back.charged(), l.charged());
  EXPECT_EQ(back.capacity(), l.capacity());
  EXPECT_EQ(value_of(back, "filled"), "abc");
  EXPECT_EQ(back.get("answer"), nullptr);
  // The decoded list keeps working: its slots take answers, it grows.
  EXPECT_EQ(back.fill("answer", as_bytes("xyz")), ROCL_OK);
  EXPECT_EQ(back.add("new", "n"), ROCL_OK);
  EXPECT_EQ(value_of(back, "new"), "n");
}

// Decoding `bytes` fails with a message containing `what`; out is unchanged.
void expect_rejected(const std::vector<std::byte> &bytes, const std::string &what) {
  AttrList out;
  ASSERT_EQ(out.add("keep", "me"), ROCL_OK);
  // An exactly sized heap copy (capacity == size), so that ASan sees any read past the end.
  const std::vector<std::byte> exact(bytes);  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(AttrList::decode(exact, out), ROCL_EINVAL) << what;
  EXPECT_NE(std::string(last_error()).find(what), std::string::npos)
      << "expected '" << what << "' in: " << last_error();
  EXPECT_EQ(value_of(out, "keep"), "me");
}

TEST(AttrList, DecodeRejectsEachBadField) {
  AttrList l(64);
  ASSERT_EQ(l.add("ab", "xyz"), ROCL_OK);          // entry at 16: 16 + 8 + 8 = 32 bytes
  ASSERT_EQ(l.add_unspecified("cd", 4), ROCL_OK);  // entry at 48
  const auto good = copy_of(l.bytes());
  ASSERT_EQ(good.size(), 80u);

  expect_rejected({}, "truncated header");
  expect_rejected(std::vector<std::byte>(good.begin(), good.begin() + 15), "truncated header");
  auto b = good;
  b[0] = std::byte{'X'};
  expect_rejected(b, "bad magic");
  expect_rejected(std::vector<std::byte>(good.begin(), good.end() - 8), "truncated");
  b = good;
  b.resize(88);
  expect_rejected(b, "overlong");
  b = good;
  put_u32(b, 8, 81);
  b.resize(81);
  expect_rejected(b, "not a multiple of 8");
  b = good;
  put_u32(b, 12, 0);
  expect_rejected(b, "'capacity'");
  b = good;
  put_u32(b, 12, (1u << 30) + 1);
  expect_rejected(b, "'capacity'");
  b = good;
  put_u32(b, 12, 20);  // the charge is 8+2+3 + 8+2+4 = 27
  expect_rejected(b, "over the 'capacity' field");
  b = good;
  put_u32(b, 4, 1);
  expect_rejected(b, "after the 1 attributes of 'count'");
  b = good;
  put_u32(b, 4, 3);
  expect_rejected(b, "'count' field says 3");
  b = good;
  b[16] = std::byte{0};
  expect_rejected(b, "name length is 0");
  b = good;
  b[17] = std::byte{0x5};
  expect_rejected(b, "unknown flag bits");
  b = good;
  b[17] = std::byte{0};
  expect_rejected(b, "neither a value nor a slot");
  b = good;
  b[18] = std::byte{1};
  expect_rejected(b, "reserved header fields");
  b = good;
  b[28] = std::byte{1};
  expect_rejected(b, "reserved header fields");
  b = good;
  put_u32(b, 16 + 4, 2);
  expect_rejected(b, "value length 2 != space 3");
  b = good;
  put_u32(b, 48 + 4, 1);
  expect_rejected(b, "unfilled slot with value length 1");
  b = good;
  b[49] = std::byte{3};
  put_u32(b, 48 + 4, 5);
  expect_rejected(b, "value length 5 exceeds its space 4");
  b = good;
  put_u32(b, 48 + 8, 0xffffffffu);
  expect_rejected(b, "runs past the end");
  b = good;
  b[48] = std::byte{200};
  expect_rejected(b, "runs past the end");
  b = good;
  b[33] = std::byte{0};
  expect_rejected(b, "NUL byte");
  b = good;
  b[34] = std::byte{'!'};
  expect_rejected(b, "name padding");
  b = good;
  b[44] = std::byte{'!'};
  expect_rejected(b, "value padding");
  b = good;
  b[64] = std::byte{'a'};
  b[65] = std::byte{'b'};
  expect_rejected(b, "'ab' appears twice");
  // 8 bytes left over: too short for an entry header.
  AttrList small(64);
  ASSERT_EQ(small.add("ab", "xyz"), ROCL_OK);
  b = copy_of(small.bytes());
  b.resize(56);
  put_u32(b, 8, 56);
  put_u32(b, 4, 2);
  expect_rejected(b, "truncated entry header");
}

// Decoding arbitrary bytes never reads out of bounds (run under ASan), and
// whatever it accepts is a consistent list that re-encodes to the same bytes.
void check_decode(const std::vector<std::byte> &input) {
  const std::vector<std::byte> exact(input);  // NOLINT(performance-unnecessary-copy-initialization)
  AttrList out;
  const int rc = AttrList::decode(exact, out);
  if (rc != ROCL_OK) {
    ASSERT_EQ(rc, ROCL_EINVAL);
    ASSERT_NE(last_error()[0], '\0');
    return;
  }
  ASSERT_EQ(copy_of(out.bytes()), input);
  std::size_t n = 0;
  std::size_t charged = 0;
  for (const AttrList::Attr &a : out) {
    ++n;
    charged += 8 + a.name.size() + a.space;
    ASSERT_TRUE(out.find(a.name));
    ASSERT_LE(a.len, a.space);
  }
  ASSERT_EQ(n, out.count());
  ASSERT_EQ(charged, out.charged());
  ASSERT_LE(charged, out.capacity());
  AttrList copy(out);
  ASSERT_EQ(copy.fill_from(out), ROCL_OK);  // answers from itself always fit
}

TEST(AttrList, DecodeFuzz) {
  std::mt19937_64 rng(20240601);
  auto byte = [&] { return static_cast<std::byte>(rng() & 0xff); };

  // Pure garbage, with and without a valid magic and 'used'.
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::byte> b(rng() % 200);
    for (auto &x : b) {
      x = byte();
    }
    if (b.size() >= 16 && i % 2 == 0) {
      put_u32(b, 0, AttrList::kMagic);
      put_u32(b, 8, static_cast<std::uint32_t>(b.size()));
      if (i % 4 == 0) {
        put_u32(b, 4, static_cast<std::uint32_t>(rng() % 4));
        put_u32(b, 12, static_cast<std::uint32_t>(rng() % 512));
      }
    }
    check_decode(b);
    if (HasFatalFailure()) {
      return;
    }
  }

  // Mutations of valid encodings.
  std::vector<std::vector<std::byte>> seeds;
  seeds.push_back(copy_of(sample().bytes()));
  {
    AttrList l(300);
    ASSERT_EQ(l.add("k", std::string_view("")), ROCL_OK);
    ASSERT_EQ(l.add_unspecified("s", 0), ROCL_OK);
    ASSERT_EQ(l.add("context", std::string(8, '\x01')), ROCL_OK);
    seeds.push_back(copy_of(l.bytes()));
  }
  int accepted = 0;
  for (int i = 0; i < 40000; ++i) {
    std::vector<std::byte> b = seeds[rng() % seeds.size()];
    const int mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations; ++m) {
      switch (rng() % 6) {
        case 0:  // flip a bit
          b[rng() % b.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
          break;
        case 1:  // set a byte
          b[rng() % b.size()] = byte();
          break;
        case 2:  // truncate
          b.resize(rng() % (b.size() + 1));
          break;
        case 3:  // extend
          b.resize(b.size() + 1 + rng() % 24, byte());
          break;
        case 4:  // set a 32-bit field to an interesting value
          if (b.size() >= 4) {
            static constexpr std::uint32_t kInteresting[] = {
                0, 1, 7, 8, 255, 256, 0x7fffffff, 0x80000000, 0xffffffff};
            put_u32(b, (rng() % (b.size() / 4)) * 4, kInteresting[rng() % 9]);
          }
          break;
        default:  // keep 'used' consistent so that deeper checks are reached
          if (b.size() >= 16) {
            put_u32(b, 8, static_cast<std::uint32_t>(b.size()));
          }
          break;
      }
      if (b.empty()) {
        break;
      }
    }
    if (rng() % 2 == 0 && b.size() >= 16) {  // reach the entry checks more often
      put_u32(b, 8, static_cast<std::uint32_t>(b.size()));
    }
    check_decode(b);
    if (HasFatalFailure()) {
      return;
    }
    AttrList tmp;
    accepted += AttrList::decode(b, tmp) == ROCL_OK ? 1 : 0;
  }
  // Some mutations (e.g. of value bytes) are valid lists: the accepting path was exercised.
  EXPECT_GT(accepted, 100);
}

}  // namespace
}  // namespace rocl::impl
