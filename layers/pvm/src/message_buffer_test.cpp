// message_buffer_test.cpp - a PVM message's items and strings, unpacked
// from bytes as another task sent them: what was packed comes back, and a
// string that is not one is refused without reading or writing anything.
#include "message_buffer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace rpvm {
namespace {

// A received message of these bytes (copied in one piece, as a message
// box's; in pieces borrowed under PvmDataInPlace).
std::unique_ptr<MessageBuffer> one_piece(const std::vector<char> &bytes) {
  auto b = std::make_unique<MessageBuffer>(PvmDataDefault);
  b->append(bytes.data(), bytes.size());
  return b;
}

std::vector<char> string_bytes(int len, const std::string &text) {
  std::vector<char> out(sizeof len);
  std::memcpy(out.data(), &len, sizeof len);
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

TEST(PvmMessageBuffer, ItemsAndStringsComeBackAsPacked) {
  for (int encoding : {PvmDataDefault, PvmDataInPlace}) {
    MessageBuffer b(encoding);
    const int ints[6] = {1, -1, 2, -2, 3, -3};
    b.put_items(ints, 3, 2, sizeof(int));  // 1, 2, 3
    if (encoding == PvmDataDefault) ASSERT_EQ(b.put_string("hello"), PvmOk);
    const double d[2] = {0.5, -4.0};
    b.put_items(d, 2, 1, sizeof(double));
    int got[3] = {};
    ASSERT_EQ(b.take_items(got, 3, 1, sizeof(int)), PvmOk);
    EXPECT_EQ(got[0], 1);
    EXPECT_EQ(got[2], 3);
    if (encoding == PvmDataDefault) {
      char s[6];
      ASSERT_EQ(b.take_string(s), PvmOk);
      EXPECT_STREQ(s, "hello");
    } else {
      EXPECT_EQ(b.put_string("x"), PvmNotImpl);
    }
    double e[4] = {};
    EXPECT_EQ(b.take_items(e, 3, 1, sizeof(double)), PvmNoData);  // 2 are left
    ASSERT_EQ(b.take_items(e, 2, 2, sizeof(double)), PvmOk);
    EXPECT_EQ(e[0], 0.5);
    EXPECT_EQ(e[1], 0.0);  // the stride's gap, untouched
    EXPECT_EQ(e[2], -4.0);
    EXPECT_EQ(b.left(), 0u);
  }
}

// Found by tests/fuzz/pvm_unpack_fuzz.cpp: pvm_upkstr took a length and
// that many bytes whatever they were, so that a task could send a "string"
// without a NUL (the receiver's strlen() then read past it) or of length 0
// (the receiver's string left unwritten), and a refused string had its
// length read all the same.
TEST(PvmMessageBuffer, StringWithoutItsNulIsRefusedAndNothingRead) {
  const std::vector<std::vector<char>> bad = {
      string_bytes(6, "no nul"),                    // no NUL at all
      string_bytes(7, std::string("a\0bcdef", 7)),  // a NUL, but not the last byte
      string_bytes(0, ""),                          // no room for a NUL
      string_bytes(-1, "x"),                        // a negative length
      string_bytes(9, std::string("short\0", 6)),   // more than is there
      {'\1', '\0'},                                 // not even a length
  };
  for (const auto &bytes : bad) {
    const auto b = one_piece(bytes);
    std::vector<char> s(16, '#');
    EXPECT_EQ(b->take_string(s.data()), PvmNoData);
    EXPECT_EQ(b->left(), bytes.size()) << "a refused string was read";
    EXPECT_EQ(s, std::vector<char>(16, '#')) << "a refused string was written";
  }
  const auto ok = one_piece(string_bytes(3, std::string("ab\0", 3)));
  char s[3];
  ASSERT_EQ(ok->take_string(s), PvmOk);
  EXPECT_STREQ(s, "ab");
  EXPECT_EQ(ok->left(), 0u);
}

TEST(PvmMessageBuffer, StringAcrossBorrowedPieces) {
  const std::vector<char> bytes = string_bytes(12, std::string("across 3 p.\0", 12));
  MessageBuffer b(PvmDataInPlace);
  for (std::size_t at = 0; at < bytes.size(); at += 5) {
    b.append(bytes.data() + at, std::min<std::size_t>(5, bytes.size() - at), true);
  }
  ASSERT_EQ(b.contiguous(), nullptr);
  char s[12];
  ASSERT_EQ(b.take_string(s), PvmOk);
  EXPECT_STREQ(s, "across 3 p.");
}

// A send buffer read back (pvm_setrbuf) holds the caller's pieces: items
// and strings are taken across their edges, in turn, each from where the
// last ended, with owned bytes (a string's) between borrowed ones.
TEST(PvmMessageBuffer, ItemsTakenInTurnAcrossManyPieces) {
  std::vector<int> ints(64);
  for (int i = 0; i < 64; ++i) ints[std::size_t(i)] = i * 7 - 100;
  MessageBuffer b(PvmDataInPlace);
  const auto *bytes = reinterpret_cast<const char *>(ints.data());
  for (std::size_t at = 0; at < 32 * sizeof(int); at += 3) {
    b.append(bytes + at, std::min<std::size_t>(3, 32 * sizeof(int) - at), true);
  }
  const char text[] = "between";
  const int len = sizeof text;
  b.append(&len, sizeof len);
  b.append(text, sizeof text);
  b.put_items(ints.data() + 32, 32, 1, sizeof(int));
  ASSERT_EQ(b.contiguous(), nullptr);

  std::vector<int> got(64, 0);
  for (int i = 0; i < 32; i += 4) {  // four at a time, one slot apart
    ASSERT_EQ(b.take_items(got.data() + 2 * i, 4, 2, sizeof(int)), PvmOk);
  }
  for (int i = 0; i < 32; ++i) EXPECT_EQ(got[std::size_t(2 * i)], ints[std::size_t(i)]) << i;
  char s[sizeof text];
  ASSERT_EQ(b.take_string(s), PvmOk);
  EXPECT_STREQ(s, text);
  std::vector<int> rest(32, 0);
  ASSERT_EQ(b.take_items(rest.data(), 32, 1, sizeof(int)), PvmOk);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), ints.begin() + 32));
  EXPECT_EQ(b.left(), 0u);
  EXPECT_EQ(b.take_items(rest.data(), 1, 1, sizeof(int)), PvmNoData);
}

}  // namespace
}  // namespace rpvm
