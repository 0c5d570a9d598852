// dir_protocol_test.cpp - the directory wire protocol: encoding round trips
// and rejection of everything malformed (random bytes, truncation, wrong
// magic / version / op, oversize bodies, bad attribute lists).
#include "directory/dir_protocol.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rocl::impl::dirproto {
namespace {

AttrList sample_list() {
  AttrList l(256);
  EXPECT_EQ(l.add("type", std::string_view("worker")), ROCL_OK);
  EXPECT_EQ(l.add_unspecified("name", 32), ROCL_OK);
  return l;
}

TEST(DirProtocol, HeaderRoundTripIsLittleEndian) {
  Header h;
  h.op = static_cast<std::uint16_t>(Op::kQueryNext);
  h.body_len = 77;
  h.status = ROCL_EEND;
  h.gid = 0x0001000000000005ull;
  h.aux = 42;
  std::byte raw[kHeaderBytes];
  encode_header(h, raw);
  EXPECT_EQ(std::memcmp(raw, "RDIR", 4), 0);
  EXPECT_EQ(raw[4], std::byte{kVersion});
  EXPECT_EQ(kVersion, 2) << "version 2: the removal epoch page comes with the handshake";
  Header back;
  std::string what;
  ASSERT_EQ(decode_header(raw, &back, &what), ROCL_OK) << what;
  EXPECT_EQ(back.op, h.op);
  EXPECT_EQ(back.body_len, 77u);
  EXPECT_EQ(back.status, ROCL_EEND);
  EXPECT_EQ(back.gid, h.gid);
  EXPECT_EQ(back.aux, 42u);
}

TEST(DirProtocol, MessageWithListParsesAndChecks) {
  const AttrList l = sample_list();
  const auto msg = encode_message(Op::kRegister, 0, 7, 0, l.bytes());
  Message m;
  std::size_t used = 0;
  std::string what;
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(used, msg.size());
  AttrList got(1);
  ASSERT_EQ(check_request(m, &got, &what), ROCL_OK) << what;
  EXPECT_EQ(got.count(), 2u);
  EXPECT_NE(got.get("type"), nullptr);
}

TEST(DirProtocol, TruncatedMessagesNeedMoreBytes) {
  const AttrList l = sample_list();
  const auto msg = encode_message(Op::kQuery, 0, 0, 0, l.bytes());
  for (std::size_t n = 0; n < msg.size(); ++n) {
    Message m;
    std::size_t used = 0;
    std::string what;
    EXPECT_EQ(parse_message(std::span(msg).first(n), &m, &used, &what), 0) << n;
  }
}

TEST(DirProtocol, BadHeadersAreRejectedBeforeTheBody) {
  auto msg = encode_message(Op::kRemove, 0, 1, 0, {});
  Message m;
  std::size_t used = 0;
  std::string what;

  auto bad = msg;
  bad[0] = std::byte{'X'};
  EXPECT_EQ(parse_message(bad, &m, &used, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("magic"), std::string::npos) << what;

  bad = msg;
  bad[4] = std::byte{1};  // version 1: no removal epoch page
  EXPECT_EQ(parse_message(bad, &m, &used, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("version 1, but this side speaks version 2"), std::string::npos) << what;
  bad[4] = std::byte{3};
  EXPECT_EQ(parse_message(bad, &m, &used, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("version 3"), std::string::npos) << what;

  for (std::uint16_t op : {0, 11, 0xffff}) {
    bad = msg;
    bad[6] = static_cast<std::byte>(op & 0xff);
    bad[7] = static_cast<std::byte>(op >> 8);
    EXPECT_EQ(parse_message(bad, &m, &used, &what), ROCL_EINVAL) << op;
    EXPECT_NE(what.find("unknown op"), std::string::npos) << what;
  }

  // Oversize: rejected from the header alone, no body bytes needed.
  Header h;
  h.op = static_cast<std::uint16_t>(Op::kQuery);
  h.body_len = static_cast<std::uint32_t>(kMaxBody + 1);
  std::byte raw[kHeaderBytes];
  encode_header(h, raw);
  EXPECT_EQ(parse_message(raw, &m, &used, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("limit"), std::string::npos) << what;
  h.body_len = 0xffffffffu;
  encode_header(h, raw);
  EXPECT_EQ(parse_message(raw, &m, &used, &what), ROCL_EINVAL);
}

TEST(DirProtocol, BodiesAreCheckedPerOp) {
  Message m;
  std::size_t used = 0;
  std::string what;
  AttrList attrs(1);

  // A list op whose body is not a list.
  const std::string junk = "definitely not an attribute list!";
  auto msg = encode_message(Op::kQuery, 0, 0, 0, std::as_bytes(std::span(junk)));
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("bad attribute list in QUERY"), std::string::npos) << what;

  // A list with a corrupted count.
  const AttrList l = sample_list();
  std::vector<std::byte> body(l.bytes().begin(), l.bytes().end());
  body[4] = std::byte{9};
  msg = encode_message(Op::kRegister, 0, 0, 0, body);
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_EINVAL);

  // Ops without a body must have none; PROVE exactly 64 bytes.
  msg = encode_message(Op::kRemove, 0, 0, 0, std::as_bytes(std::span(junk)));
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_EINVAL);
  msg = encode_message(Op::kProve, 0, 0, 0, std::as_bytes(std::span(junk)));
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_EINVAL);

  // Server ops are not requests.
  msg = encode_message(Op::kHello, 0, 0, 0, {});
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("only a server sends"), std::string::npos) << what;
}

TEST(DirProtocol, RepliesAreChecked) {
  Message m;
  std::size_t used = 0;
  std::string what;
  std::string sentence;
  AttrList attrs(1);

  auto msg = encode_error(ROCL_ENOTFOUND, "rocl_query: nothing\n here");
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  ASSERT_EQ(check_reply(Op::kQuery, m, &attrs, &sentence, &what), ROCL_OK) << what;
  EXPECT_EQ(m.header.status, ROCL_ENOTFOUND);
  EXPECT_EQ(sentence, "rocl_query: nothing? here");

  const AttrList l = sample_list();
  msg = encode_message(Op::kReply, 0, 5, 0, l.bytes());
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  ASSERT_EQ(check_reply(Op::kQueryNext, m, &attrs, &sentence, &what), ROCL_OK) << what;
  EXPECT_EQ(attrs.count(), 2u);
  // The same body is wrong for a REMOVE reply; a positive status is no code.
  EXPECT_EQ(check_reply(Op::kRemove, m, &attrs, &sentence, &what), ROCL_EINVAL);
  msg = encode_message(Op::kReply, 5, 0, 0, {});
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_reply(Op::kRemove, m, &attrs, &sentence, &what), ROCL_EINVAL);
  // Not a reply at all.
  msg = encode_message(Op::kHello, 0, 0, 0, {});
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_reply(Op::kRemove, m, &attrs, &sentence, &what), ROCL_EINVAL);
  // The reply to PROVE: a 32-byte proof; aux may flag the removal epoch page
  // and nothing else.
  const std::vector<std::byte> proof(kProofBytes);
  for (std::uint64_t aux : {std::uint64_t{0}, kEpochPageAttached}) {
    msg = encode_message(Op::kReply, 0, 0, aux, proof);
    ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
    EXPECT_EQ(check_reply(Op::kProve, m, &attrs, &sentence, &what), ROCL_OK) << aux << what;
  }
  msg = encode_message(Op::kReply, 0, 0, 2, proof);
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_reply(Op::kProve, m, &attrs, &sentence, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("unknown flags 0x2"), std::string::npos) << what;
}

TEST(DirProtocol, RandomBytesNeverCrashAndAreMostlyRejected) {
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<std::byte> buf(rng() % 200);
    for (auto &b : buf) {
      b = static_cast<std::byte>(rng());
    }
    if (round % 2 == 0 && buf.size() >= kHeaderBytes) {  // valid header, random body
      Header h;
      h.op = static_cast<std::uint16_t>(1 + rng() % kMaxOp);
      h.body_len = static_cast<std::uint32_t>(buf.size() - kHeaderBytes);
      encode_header(h, buf.data());
    }
    Message m;
    std::size_t used = 0;
    std::string what;
    const int r = parse_message(buf, &m, &used, &what);
    if (r == 1) {
      ASSERT_LE(used, buf.size());
      AttrList attrs(1);
      std::string sentence;
      if (check_request(m, &attrs, &what) == ROCL_OK) {
        ++accepted;
      }
      check_reply(Op::kQuery, m, &attrs, &sentence, &what);
    }
  }
  // Only empty-bodied ops (REMOVE, QUERY_STOP, ...) with an empty random body pass.
  EXPECT_LT(accepted, 2000);
}

}  // namespace
}  // namespace rocl::impl::dirproto
