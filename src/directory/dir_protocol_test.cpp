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
  EXPECT_EQ(kVersion, 3) << "version 3: multi-answer queries answer in batches";
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
  EXPECT_NE(what.find("version 1, but this side speaks version 3"), std::string::npos) << what;
  bad[4] = std::byte{2};  // version 2: one answer per QUERY_NEXT
  EXPECT_EQ(parse_message(bad, &m, &used, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("version 2, but this side speaks version 3"), std::string::npos) << what;
  EXPECT_NE(what.find("same rocl release"), std::string::npos) << what;
  bad[4] = std::byte{4};
  EXPECT_EQ(parse_message(bad, &m, &used, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("version 4"), std::string::npos) << what;

  for (std::uint16_t op : {0, 12, 0xffff}) {
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

  // SPAWN: a list, and a time limit of at most kMaxSpawnLimitMs.
  msg = encode_message(Op::kSpawn, 0, 0, kMaxSpawnLimitMs, l.bytes());
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_OK) << what;
  EXPECT_STREQ(op_name(static_cast<std::uint16_t>(Op::kSpawn)), "SPAWN");
  msg = encode_message(Op::kSpawn, 0, 0, kMaxSpawnLimitMs + 1, l.bytes());
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("time limit"), std::string::npos) << what;

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
  ASSERT_EQ(check_reply(Op::kQuery, m, &attrs, &sentence, &what), ROCL_OK) << what;
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
  // A failed REPLY may say that the server closes the connection, and
  // nothing else.
  msg = encode_error(ROCL_EPEER, "dropped", /*closing=*/true);
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  ASSERT_EQ(check_reply(Op::kQuery, m, &attrs, &sentence, &what), ROCL_OK) << what;
  EXPECT_EQ(m.header.aux, kClosing);
  EXPECT_EQ(encode_error(ROCL_EPEER, "x")[24], std::byte{0});  // aux's low byte: not closing
  msg = encode_message(Op::kReply, ROCL_EPEER, 0, 2, {});
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_reply(Op::kQuery, m, &attrs, &sentence, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("unknown flags 0x2"), std::string::npos) << what;
  // Every code rocl.h defines is a failure a REPLY may carry, down to the
  // lowest; one below is no code.
  msg = encode_error(ROCL_EEXIST, "taken");
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  ASSERT_EQ(check_reply(Op::kQuery, m, &attrs, &sentence, &what), ROCL_OK) << what;
  EXPECT_EQ(m.header.status, ROCL_EEXIST);
  msg = encode_message(Op::kReply, ROCL_EEXIST - 1, 0, 0, {});
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_reply(Op::kQuery, m, &attrs, &sentence, &what), ROCL_EINVAL);
  EXPECT_NE(what.find("not a rocl code"), std::string::npos) << what;
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

// ---- batches (version 3) ----------------------------------------------------------

AttrList numbered(int i, std::size_t extra = 0) {
  AttrList l(static_cast<int>(256 + extra));
  EXPECT_EQ(l.add("type", std::string_view("w")), ROCL_OK);
  EXPECT_EQ(l.add("i", std::string_view(std::to_string(i))), ROCL_OK);
  if (extra > 0) {
    EXPECT_EQ(l.add("blob", std::string(extra, 'x')), ROCL_OK);
  }
  return l;
}

std::vector<std::byte> sample_batch(int n, bool more) {
  BatchWriter w(kMaxBatchAnswers);
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(w.add(static_cast<std::uint64_t>(10 + 3 * i), numbered(i).bytes()));
  }
  return w.finish(more);
}

TEST(DirProtocol, BatchRoundTrip) {
  const auto body = sample_batch(5, true);
  Batch b;
  std::string what;
  ASSERT_EQ(decode_batch(body, kMaxBatchAnswers, 0, &b, &what), ROCL_OK) << what;
  ASSERT_EQ(b.answers.size(), 5u);
  EXPECT_TRUE(b.more);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b.answers[i].gid, static_cast<std::uint64_t>(10 + 3 * i));
    std::size_t len = 0;
    const std::byte *v = b.answers[i].attrs.get("i", &len);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(v), len), std::to_string(i));
  }
  // An empty batch ends the query; "more" is dropped when nothing came.
  const auto empty = BatchWriter(1).finish(true);
  ASSERT_EQ(decode_batch(empty, 1, 0, &b, &what), ROCL_OK) << what;
  EXPECT_TRUE(b.answers.empty());
  EXPECT_FALSE(b.more);
}

TEST(DirProtocol, BatchWriterStopsAtCountAndBytes) {
  BatchWriter by_count(3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(by_count.add(static_cast<std::uint64_t>(i + 1), numbered(i).bytes()));
  }
  EXPECT_FALSE(by_count.add(4, numbered(4).bytes()));
  EXPECT_EQ(by_count.count(), 3u);
  // 20 KiB answers: three fit 64 KiB; a fourth does not.
  BatchWriter by_bytes(kMaxBatchAnswers);
  int taken = 0;
  while (by_bytes.add(static_cast<std::uint64_t>(taken) + 1, numbered(taken, 20000).bytes())) {
    ++taken;
  }
  EXPECT_EQ(taken, 3);
  EXPECT_LE(by_bytes.finish(true).size(), kBatchBytes);
  // One answer larger than the bound still goes, alone.
  BatchWriter big(kMaxBatchAnswers);
  EXPECT_TRUE(big.add(1, numbered(0, 100000).bytes()));
  EXPECT_FALSE(big.add(2, numbered(1).bytes()));
}

TEST(DirProtocol, BadBatchesNameTheirField) {
  const auto good = sample_batch(3, false);
  auto expect_bad = [](std::vector<std::byte> body, std::uint32_t most, std::uint64_t after,
                       const char *needle) {
    Batch b;
    b.more = true;
    std::string what;
    EXPECT_EQ(decode_batch(body, most, after, &b, &what), ROCL_EINVAL) << needle;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_TRUE(b.more) << "*out changed";
  };
  auto set32 = [](std::vector<std::byte> &v, std::size_t at, std::uint32_t x) {
    for (int i = 0; i < 4; ++i) {
      v[at + i] = static_cast<std::byte>(x >> (8 * i));
    }
  };
  expect_bad(std::vector<std::byte>(good.begin(), good.begin() + 5), 64, 0, "its header alone");
  expect_bad(good, 2, 0, "'count' of 3 answers (2 were asked");
  auto v = good;
  set32(v, 4, 2);
  expect_bad(v, 64, 0, "unknown 'flags' 0x2");
  v = BatchWriter(4).finish(false);
  set32(v, 4, kBatchMore);
  expect_bad(v, 64, 0, "0 answers whose 'flags' say more");
  expect_bad(good, 64, 10, "'gid' 0xa not above 0xa");  // not after `after`
  v = good;
  set32(v, kBatchHeaderBytes, 0);  // first gid 0
  set32(v, kBatchHeaderBytes + 4, 0);
  expect_bad(v, 64, 0, "'gid' 0x0 not above");
  v = good;
  set32(v, kBatchHeaderBytes + 12, 7);
  expect_bad(v, 64, 0, "reserved field is 0x7");
  v = good;
  set32(v, kBatchHeaderBytes + 8, 0x7ffffff8);
  expect_bad(v, 64, 0, "list 'len' of 2147483640 bytes");
  v = good;
  set32(v, kBatchHeaderBytes + 8, 12);
  expect_bad(v, 64, 0, "a multiple of 8");
  v = good;
  v[kBatchHeaderBytes + kBatchEntryBytes] = std::byte{0};  // the list's magic
  expect_bad(v, 64, 0, "bad attribute list: attribute list: bad magic");
  v = good;
  set32(v, 0, 4);
  expect_bad(v, 64, 0, "answer 4 of 4 has no room");
  v = good;
  v.resize(v.size() + 8);
  expect_bad(v, 64, 0, "8 bytes after its 3 answers");
}

TEST(DirProtocol, MangledBatchesNeverCrash) {
  const auto good = sample_batch(4, true);
  std::string what;
  // Every truncation is rejected.
  for (std::size_t n = 0; n < good.size(); ++n) {
    Batch b;
    EXPECT_EQ(decode_batch(std::span(good).first(n), 64, 0, &b, &what), ROCL_EINVAL) << n;
  }
  // Random byte changes: never a crash, never a read outside the body (ASan
  // builds), and whatever passes is still an ordered batch within bounds.
  std::mt19937 rng(99);
  for (int round = 0; round < 20000; ++round) {
    auto v = good;
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      v[rng() % v.size()] = static_cast<std::byte>(rng());
    }
    if (round % 3 == 0) {
      v.resize(rng() % (v.size() + 16));
    }
    Batch b;
    if (decode_batch(v, 64, 0, &b, &what) == ROCL_OK) {
      std::uint64_t prev = 0;
      for (const auto &a : b.answers) {
        EXPECT_GT(a.gid, prev);
        prev = a.gid;
      }
    }
  }
}

TEST(DirProtocol, QueryRequestsCarryTheirMost) {
  Message m;
  std::size_t used = 0;
  std::string what;
  AttrList attrs(1);
  std::uint32_t most = 0;
  const AttrList l = sample_list();
  for (std::uint64_t aux : {std::uint64_t{0}, std::uint64_t{kMaxBatchAnswers + 1}}) {
    auto msg = encode_message(Op::kQueryStart, 0, 0, aux, l.bytes());
    ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
    EXPECT_EQ(check_request(m, &attrs, &what, &most), ROCL_EINVAL);
    EXPECT_NE(what.find("QUERY_START asking for"), std::string::npos) << what;
  }
  auto msg = encode_message(Op::kQueryStart, 0, 7, 5, l.bytes());
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  ASSERT_EQ(check_request(m, &attrs, &what, &most), ROCL_OK) << what;
  EXPECT_EQ(most, 5u);
  EXPECT_EQ(attrs.count(), 2u);
  msg = encode_message(Op::kQueryNext, 0, 7, 1, encode_most(64));
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  ASSERT_EQ(check_request(m, &attrs, &what, &most), ROCL_OK) << what;
  EXPECT_EQ(most, 64u);
  for (std::uint32_t bad : {0u, 65u}) {
    msg = encode_message(Op::kQueryNext, 0, 7, 1, encode_most(bad));
    ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
    EXPECT_EQ(check_request(m, &attrs, &what, &most), ROCL_EINVAL);
    EXPECT_NE(what.find("QUERY_NEXT asking for"), std::string::npos) << what;
  }
  msg = encode_message(Op::kQueryNext, 0, 7, 1, l.bytes());  // a version 2 body
  ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
  EXPECT_EQ(check_request(m, &attrs, &what, &most), ROCL_EINVAL);
  // A REPLY may be a little longer than a request (one whole resource).
  Header h;
  h.op = static_cast<std::uint16_t>(Op::kReply);
  h.body_len = static_cast<std::uint32_t>(kMaxBody + 64);
  std::byte raw[kHeaderBytes];
  encode_header(h, raw);
  EXPECT_EQ(decode_header(raw, &h, &what), ROCL_OK) << what;
  h.op = static_cast<std::uint16_t>(Op::kRegister);
  encode_header(h, raw);
  EXPECT_EQ(decode_header(raw, &h, &what), ROCL_EINVAL);
}

// Found by tests/fuzz/dir_protocol_fuzz.cpp: a QUERY_START whose list was
// refused had set *most already.
TEST(DirProtocol, RefusedRequestLeavesItsOutputsAlone) {
  AttrList l = sample_list();
  std::vector<std::byte> bad_list(l.bytes().begin(), l.bytes().end());
  bad_list[12] = std::byte{0xff};  // capacity far beyond kMaxMaxlen
  bad_list[13] = std::byte{0xff};
  bad_list[14] = std::byte{0xff};
  bad_list[15] = std::byte{0xff};
  for (Op op : {Op::kQueryStart, Op::kRegister, Op::kQuery, Op::kSpawn}) {
    const auto msg = encode_message(op, 0, 0, 5, bad_list);
    Message m;
    std::size_t used = 0;
    std::string what;
    ASSERT_EQ(parse_message(msg, &m, &used, &what), 1);
    AttrList attrs(64);
    ASSERT_EQ(attrs.add("kept", std::string_view("yes")), ROCL_OK);
    std::uint32_t most = 99;
    EXPECT_EQ(check_request(m, &attrs, &what, &most), ROCL_EINVAL) << op_name(m.header.op);
    EXPECT_NE(what.find("capacity"), std::string::npos) << what;
    EXPECT_EQ(most, 99u) << op_name(m.header.op);
    EXPECT_EQ(attrs.count(), 1u);
    EXPECT_NE(attrs.get("kept"), nullptr);
  }
}

}  // namespace
}  // namespace rocl::impl::dirproto
