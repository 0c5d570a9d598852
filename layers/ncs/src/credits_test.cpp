// credits_test.cpp - the credit window's bookkeeping: credits taken and
// given back, whatever count another process says it gives back.
#include "credits.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace ncs {
namespace {

const Route kRoute{1, 0, 2, 1};

TEST(NcsCredits, TakenCreditsComeBack) {
  SendCredits c(4);
  EXPECT_EQ(c.left(kRoute), 4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(c.take(kRoute));
  EXPECT_FALSE(c.take(kRoute));
  c.give_back(kRoute, 2);
  EXPECT_EQ(c.left(kRoute), 2);
  c.give_back(kRoute, 9);
  EXPECT_EQ(c.left(kRoute), 4) << "never more than the window";
}

// Found by tests/fuzz/ncs_wire_fuzz.cpp: the count of a credit message
// (a u32 from another process) was added as an int, which overflowed
// (2^31 - 1) or went negative (2^31 and up), leaving the route below 0
// credits: never 0 again, so its sender was no longer held back.
TEST(NcsCredits, AnyCountFromTheWireEndsAtTheWindow) {
  for (const std::uint32_t n : {0x7fffffffu, 0x80000000u, 0xec5b7f1bu, 0xffffffffu}) {
    SendCredits c(1544);
    for (int i = 0; i < 101; ++i) ASSERT_TRUE(c.take(kRoute));
    c.give_back(kRoute, n);
    EXPECT_EQ(c.left(kRoute), 1544) << n;
  }
  SendCredits none(0);  // no flow control
  none.give_back(kRoute, 0xffffffffu);
  EXPECT_EQ(none.left(kRoute), 0);
  EXPECT_TRUE(none.take(kRoute));
}

TEST(NcsCredits, DebtsTravelInHalfWindows) {
  CreditDebts d;
  EXPECT_EQ(d.took(kRoute, 8), 0u);
  EXPECT_EQ(d.took(kRoute, 8), 0u);
  EXPECT_EQ(d.took(kRoute, 8), 0u);
  EXPECT_EQ(d.took(kRoute, 8), 4u);
  EXPECT_EQ(d.took(kRoute, 1), 1u);
}

}  // namespace
}  // namespace ncs
