// tcp_hello_test.cpp - the TCP handshake's messages without sockets: a
// Hello made is accepted with its address, and each field a stranger can
// get wrong is refused with a sentence; an answer verifies only with the
// secret and the challenge it was made for.
#include "transport/tcp/tcp_hello.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace rocl::impl::tcp::detail {
namespace {

std::span<const std::byte> bytes_of(const Hello &h) {
  return std::as_bytes(std::span(&h, 1));
}

TEST(TcpHello, MadeHelloIsAcceptedWithItsAddress) {
  for (const char *address : {"", "tcp:127.0.0.1:7001", "tcp:127.0.0.1:7001@host-id"}) {
    const Hello h = make_hello(42, address);
    std::string got = "untouched";
    EXPECT_EQ(check_hello(bytes_of(h), &got), "") << address;
    EXPECT_EQ(got, address);
    EXPECT_TRUE(hello_magic_ok(bytes_of(h).first(4)));
  }
}

TEST(TcpHello, LongAddressIsCutToTheField) {
  const std::string longer(100, 'x');
  const Hello h = make_hello(1, longer);
  EXPECT_EQ(::strnlen(h.address, sizeof h.address), sizeof h.address - 1);
}

TEST(TcpHello, EachBadFieldIsRefusedWithASentence) {
  std::string got = "untouched";
  Hello h = make_hello(1, "tcp:10.0.0.1:80");
  h.magic ^= 1;
  EXPECT_NE(check_hello(bytes_of(h), &got).find("magic"), std::string::npos);
  EXPECT_FALSE(hello_magic_ok(bytes_of(h).first(4)));
  EXPECT_FALSE(hello_magic_ok(bytes_of(h).first(3)));

  h = make_hello(1, "tcp:10.0.0.1:80");
  h.version += 1;
  EXPECT_NE(check_hello(bytes_of(h), &got).find("version"), std::string::npos);

  for (const char *bad : {"tcp:10.0.0.1", "udp:10.0.0.1:80", "tcp:10.0.0.1:0", "tcp:x:80"}) {
    h = make_hello(1, bad);
    EXPECT_NE(check_hello(bytes_of(h), &got).find("address"), std::string::npos) << bad;
  }
  h = make_hello(1, "tcp:10.0.0.1:80");
  std::memset(h.address, 'x', sizeof h.address);  // no NUL
  EXPECT_NE(check_hello(bytes_of(h), &got).find("address"), std::string::npos);
  h = make_hello(1, "tcp:10.0.0.1:80");
  h.address[sizeof h.address - 1] = 'x';  // a byte after the NUL
  EXPECT_NE(check_hello(bytes_of(h), &got).find("NUL-padded"), std::string::npos);

  EXPECT_NE(check_hello(bytes_of(h).first(20), &got).find("short"), std::string::npos);
  EXPECT_EQ(got, "untouched");
}

TEST(TcpHello, AnswerVerifiesOnlyForItsSecretAndChallenge) {
  const JobSecret secret = JobSecret::generate();
  const JobSecret other = JobSecret::generate();
  const auto challenge = JobSecret::random_challenge();
  const auto mine = JobSecret::random_challenge();
  const auto answer = make_answer(secret, challenge, mine);
  const auto b = std::as_bytes(std::span(answer));

  JobSecret::Challenge theirs{};
  ASSERT_TRUE(check_answer(secret, challenge, b, &theirs));
  EXPECT_EQ(theirs, mine);

  JobSecret::Challenge untouched{};
  EXPECT_FALSE(check_answer(other, challenge, b, &untouched));
  auto wrong = challenge;
  wrong[0] ^= 1;
  EXPECT_FALSE(check_answer(secret, wrong, b, &untouched));
  EXPECT_FALSE(check_answer(secret, challenge, b.first(40), &untouched));
  EXPECT_EQ(untouched, JobSecret::Challenge{});
}

}  // namespace
}  // namespace rocl::impl::tcp::detail
