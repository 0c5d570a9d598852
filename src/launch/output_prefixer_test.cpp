// output_prefixer_test.cpp - line splitting and prefixing of rank output.
#include "launch/output_prefixer.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rocl::impl {
namespace {

TEST(OutputPrefixer, WholeLines) {
  OutputPrefixer p("[0] ");
  std::string out;
  p.feed("hello\nworld\n", &out);
  EXPECT_EQ(out, "[0] hello\n[0] world\n");
  EXPECT_EQ(p.pending(), 0u);
}

TEST(OutputPrefixer, EmptyLinesKeepTheirPrefix) {
  OutputPrefixer p("[1] ");
  std::string out;
  p.feed("\n\nx\n", &out);
  EXPECT_EQ(out, "[1] \n[1] \n[1] x\n");
}

TEST(OutputPrefixer, PartialLinesWaitForTheirNewline) {
  OutputPrefixer p("[2] ");
  std::string out;
  p.feed("hel", &out);
  EXPECT_EQ(out, "");
  EXPECT_EQ(p.pending(), 3u);
  p.feed("lo wo", &out);
  EXPECT_EQ(out, "");
  p.feed("rld\nnext", &out);
  EXPECT_EQ(out, "[2] hello world\n");
  EXPECT_EQ(p.pending(), 4u);
}

TEST(OutputPrefixer, ByteByByte) {
  OutputPrefixer p("[3] ");
  std::string out;
  for (char c : std::string("ab\ncd\n")) p.feed(std::string_view(&c, 1), &out);
  EXPECT_EQ(out, "[3] ab\n[3] cd\n");
}

TEST(OutputPrefixer, FlushEndsThePartialLine) {
  OutputPrefixer p("[0] ");
  std::string out;
  p.feed("no newline", &out);
  p.flush(&out);
  EXPECT_EQ(out, "[0] no newline\n");
  EXPECT_EQ(p.pending(), 0u);
  p.flush(&out);  // nothing more
  EXPECT_EQ(out, "[0] no newline\n");
}

TEST(OutputPrefixer, FlushWithNothingPendingAddsNothing) {
  OutputPrefixer p("[0] ");
  std::string out;
  p.feed("done\n", &out);
  p.flush(&out);
  EXPECT_EQ(out, "[0] done\n");
}

TEST(OutputPrefixer, LongLinesAreSplit) {
  OutputPrefixer p("[0] ", 4);
  std::string out;
  p.feed("abcdefghij\n", &out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n[0] ij\n");
}

TEST(OutputPrefixer, LineOfExactlyMaxIsOneLine) {
  OutputPrefixer p("[0] ", 4);
  std::string out;
  p.feed("abcd", &out);
  EXPECT_EQ(out, "");
  p.feed("\nef\n", &out);
  EXPECT_EQ(out, "[0] abcd\n[0] ef\n");
}

TEST(OutputPrefixer, LongLineAcrossFeeds) {
  OutputPrefixer p("[5] ", 4);
  std::string out;
  p.feed("abc", &out);
  p.feed("defg", &out);
  EXPECT_EQ(out, "[5] abcd\n");
  EXPECT_EQ(p.pending(), 3u);
  p.feed("h", &out);
  EXPECT_EQ(out, "[5] abcd\n");  // efgh is max long: waits for what follows
  p.feed("i", &out);
  EXPECT_EQ(out, "[5] abcd\n[5] efgh\n");
  p.flush(&out);
  EXPECT_EQ(out, "[5] abcd\n[5] efgh\n[5] i\n");
}

TEST(OutputPrefixer, DefaultLimitIs64KiB) {
  OutputPrefixer p("[0] ");
  std::string out;
  const std::string big(OutputPrefixer::kMaxLine + 10, 'x');
  p.feed(big, &out);
  EXPECT_EQ(out, "[0] " + std::string(OutputPrefixer::kMaxLine, 'x') + "\n");
  EXPECT_EQ(p.pending(), 10u);
  EXPECT_LE(p.pending(), OutputPrefixer::kMaxLine);
}

}  // namespace
}  // namespace rocl::impl
