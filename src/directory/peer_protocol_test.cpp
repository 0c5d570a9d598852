// peer_protocol_test.cpp - the packets between directory servers: round
// trips of every op, the wire layout, refusal of every corrupted header
// field (with a sentence naming it), foreign MACs, truncated and extended
// datagrams, bad bodies, the size limit, and the replay guard.
#include "directory/peer_protocol.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "directory/spawn_request.hpp"
#include "status/status.hpp"

namespace rocl::impl::peerproto {
namespace {

using Bytes = std::vector<std::byte>;

const JobSecret &secret() {
  static const JobSecret s = JobSecret::generate();
  return s;
}

AttrList sample_list() {
  AttrList l(256);
  EXPECT_EQ(l.add("type", std::string_view("worker")), ROCL_OK);
  EXPECT_EQ(l.add_unspecified("name", 32), ROCL_OK);
  return l;
}

Packet base(Op op) {
  Packet p;
  p.op = op;
  p.server = 0x1234;
  p.incarnation = 0x0102030405060708ull;
  p.seq = 17;
  p.sent_ms = 1'700'000'000'123ull;
  switch (op) {
    case Op::kAnnounce:
      p.aux = 1'700'000'000'000ull;
      p.tcp_port = 7001;
      p.udp_port = 7002;
      break;
    case Op::kBye:
      break;
    case Op::kQuery:
      p.query = 99;
      p.flags = kMulti;
      p.aux = 5;  // after
      p.list = sample_list();
      break;
    case Op::kNext:
      p.query = 99;
      p.gid = 0x0001000000000007ull;
      p.list = sample_list();
      break;
    case Op::kAnswer:
      p.query = 99;
      p.flags = kMore;
      p.gid = 0x0001000000000008ull;
      p.aux = (std::uint64_t{3} << 16) | 2;  // the last of a batch of 3
      p.list = sample_list();
      break;
    case Op::kSpawn: {
      p.query = 77;
      p.aux = 2500;  // the time limit
      SpawnRequest r;
      r.argv = {"/bin/worker", "-n", ""};
      r.env = {"ROCL_SPIN_US=0"};
      r.parent = 0x0001000000000003ull;
      EXPECT_EQ(encode_spawn_request(r, &p.list), ROCL_OK) << last_error();
      break;
    }
    case Op::kSpawned:
      p.query = 77;
      p.gid = 0x0002000000000009ull;  // done: the new context
      break;
  }
  return p;
}

Bytes sealed(const Packet &p) {
  Bytes d;
  EXPECT_EQ(seal(p, secret(), &d), ROCL_OK) << last_error();
  return d;
}

template <typename T>
void poke(Bytes &d, std::size_t off, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    d[off + i] = static_cast<std::byte>(static_cast<std::uint64_t>(v) >> (8 * i));
  }
}

template <typename T>
T peek(const Bytes &d, std::size_t off) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(d[off + i]) << (8 * i);
  }
  return static_cast<T>(v);
}

// Signs d again (all but its last 32 bytes), as a job member that sends a
// bad packet would.
void remac(Bytes &d, const JobSecret &s = secret()) {
  ASSERT_GE(d.size(), kMacBytes);
  const std::size_t n = d.size() - kMacBytes;
  const auto mac = s.prove(kMacLabel, {reinterpret_cast<const std::uint8_t *>(d.data()), n});
  std::memcpy(d.data() + n, mac.data(), kMacBytes);
}

// open() must refuse d with a sentence containing `word`, leaving *out alone.
void expect_refused(const Bytes &d, const std::string &word, const char *where = "") {
  Packet out;
  out.seq = 0xdeadbeef;
  std::string what;
  EXPECT_EQ(open(d, secret(), &out, &what), ROCL_EINVAL) << where << ": accepted";
  EXPECT_NE(what.find(word), std::string::npos)
      << where << ": sentence '" << what << "' does not name '" << word << "'";
  EXPECT_EQ(out.seq, 0xdeadbeefu) << where << ": *out changed on failure";
}

void expect_same(const Packet &a, const Packet &b) {
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.server, b.server);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.incarnation, b.incarnation);
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.sent_ms, b.sent_ms);
  EXPECT_EQ(a.query, b.query);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.aux, b.aux);
  EXPECT_EQ(a.tcp_port, b.tcp_port);
  EXPECT_EQ(a.udp_port, b.udp_port);
  EXPECT_EQ(a.removals, b.removals);
  EXPECT_EQ(a.list.count(), b.list.count());
  if (!a.list.empty()) {
    const auto x = a.list.bytes(), y = b.list.bytes();
    ASSERT_EQ(x.size(), y.size());
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size()), 0);
  }
}

std::vector<Packet> every_kind() {
  std::vector<Packet> all;
  all.push_back(base(Op::kAnnounce));
  Packet no_tcp = base(Op::kAnnounce);
  no_tcp.tcp_port = 0;
  all.push_back(no_tcp);
  all.push_back(base(Op::kBye));
  all.push_back(base(Op::kQuery));
  Packet by_gid = base(Op::kQuery);
  by_gid.flags = 0;
  by_gid.aux = 0;
  by_gid.gid = 0x0002000000000001ull;
  by_gid.list = AttrList(64);
  EXPECT_EQ(by_gid.list.add_unspecified("type", 16), ROCL_OK);
  all.push_back(by_gid);
  Packet empty_pattern = base(Op::kQuery);
  empty_pattern.flags = 0;
  empty_pattern.aux = 0;
  empty_pattern.list = AttrList(1);
  all.push_back(empty_pattern);
  all.push_back(base(Op::kNext));
  all.push_back(base(Op::kAnswer));
  Packet last = base(Op::kAnswer);
  last.flags = 0;
  all.push_back(last);
  Packet none = base(Op::kAnswer);
  none.flags = kNone;
  none.gid = 0;
  none.aux = 0;
  none.list = AttrList(1);
  all.push_back(none);
  all.push_back(base(Op::kSpawn));
  all.push_back(base(Op::kSpawned));
  Packet starting = base(Op::kSpawned);
  starting.flags = kMore;
  starting.gid = 0;
  all.push_back(starting);
  Packet failed = starting;
  failed.flags = kNone;
  failed.aux = 9;  // ROCL_ENOTFOUND
  failed.list = AttrList(64);
  EXPECT_EQ(failed.list.add("why", std::string_view("no such program")), ROCL_OK);
  all.push_back(failed);
  return all;
}

TEST(PeerProtocol, EveryOpRoundTrips) {
  for (const Packet &p : every_kind()) {
    SCOPED_TRACE(op_name(static_cast<std::uint16_t>(p.op)));
    const Bytes d = sealed(p);
    Packet back;
    std::string what;
    ASSERT_EQ(open(d, secret(), &back, &what), ROCL_OK) << what;
    expect_same(p, back);
    EXPECT_EQ(sealed(back), d) << "an opened packet seals to other bytes";
  }
}

TEST(PeerProtocol, WireLayoutIsLittleEndianWithTheMacLast) {
  const Packet p = base(Op::kAnnounce);
  const Bytes d = sealed(p);
  ASSERT_EQ(d.size(), kHeaderBytes + kAnnounceBodyBytes + kMacBytes);
  EXPECT_EQ(std::memcmp(d.data(), "RPER", 4), 0);
  EXPECT_EQ(peek<std::uint16_t>(d, 4), 1);
  EXPECT_EQ(peek<std::uint16_t>(d, 6), 1);  // ANNOUNCE
  EXPECT_EQ(peek<std::uint16_t>(d, 8), 0x1234);
  EXPECT_EQ(d[8], std::byte{0x34});
  EXPECT_EQ(peek<std::uint16_t>(d, 10), 0);
  EXPECT_EQ(peek<std::uint32_t>(d, 12), kAnnounceBodyBytes);
  EXPECT_EQ(peek<std::uint64_t>(d, 16), p.incarnation);
  EXPECT_EQ(d[16], std::byte{0x08});
  EXPECT_EQ(peek<std::uint64_t>(d, 24), p.seq);
  EXPECT_EQ(peek<std::uint64_t>(d, 32), p.sent_ms);
  EXPECT_EQ(peek<std::uint64_t>(d, 40), 0u);
  EXPECT_EQ(peek<std::uint64_t>(d, 48), 0u);
  EXPECT_EQ(peek<std::uint64_t>(d, 56), p.aux);
  EXPECT_EQ(peek<std::uint16_t>(d, 64), 7001);
  EXPECT_EQ(peek<std::uint16_t>(d, 66), 7002);
  EXPECT_EQ(peek<std::uint32_t>(d, 68), 0u);
  const auto mac = secret().prove(
      "rocl-dir-peer", {reinterpret_cast<const std::uint8_t *>(d.data()), kHeaderBytes + 8});
  EXPECT_EQ(std::memcmp(d.data() + kHeaderBytes + 8, mac.data(), 32), 0);

  const Packet q = base(Op::kQuery);
  const Bytes dq = sealed(q);
  const auto list = q.list.bytes();
  ASSERT_EQ(dq.size(), kHeaderBytes + list.size() + kMacBytes);
  EXPECT_EQ(peek<std::uint32_t>(dq, 12), list.size());
  EXPECT_EQ(std::memcmp(dq.data() + kHeaderBytes, list.data(), list.size()), 0);
  EXPECT_EQ(kMaxBody, 65411u);
}

TEST(PeerProtocol, OpNames) {
  EXPECT_STREQ(op_name(1), "ANNOUNCE");
  EXPECT_STREQ(op_name(2), "BYE");
  EXPECT_STREQ(op_name(3), "QUERY");
  EXPECT_STREQ(op_name(4), "ANSWER");
  EXPECT_STREQ(op_name(5), "NEXT");
  EXPECT_STREQ(op_name(6), "SPAWN");
  EXPECT_STREQ(op_name(7), "SPAWNED");
  EXPECT_STREQ(op_name(0), "an unknown op");
  EXPECT_STREQ(op_name(8), "an unknown op");
}

struct Corruption {
  const char *name;
  Op op;      // the packet corrupted (base(op), adjusted by setup)
  int setup;  // 0: base; 1: QUERY by gid; 2: ANSWER kNone
  std::size_t off;
  int width;  // bytes
  std::uint64_t value;
  const char *word;  // the sentence must contain it
};

Packet setup_packet(const Corruption &c) {
  Packet p = base(c.op);
  if (c.setup == 1) {
    p.flags = 0;
    p.aux = 0;
    p.gid = 0x0002000000000001ull;
  } else if (c.setup == 2) {
    p.flags = kNone;
    p.gid = 0;
    p.aux = 0;
    p.list = AttrList(1);
  }
  return p;
}

void apply(Bytes &d, const Corruption &c) {
  switch (c.width) {
    case 2:
      poke<std::uint16_t>(d, c.off, static_cast<std::uint16_t>(c.value));
      break;
    case 4:
      poke<std::uint32_t>(d, c.off, static_cast<std::uint32_t>(c.value));
      break;
    default:
      poke<std::uint64_t>(d, c.off, c.value);
  }
}

constexpr std::uint64_t kBig = std::uint64_t{1} << 63;

const Corruption kCorruptions[] = {
    {"magic", Op::kBye, 0, 0, 4, 0x52455053, "magic 0x52455053"},
    {"version", Op::kBye, 0, 4, 2, 2, "version 2"},
    {"op 0", Op::kBye, 0, 6, 2, 0, "op 0"},
    {"op 9", Op::kBye, 0, 6, 2, 9, "op 9"},
    {"op BYE->ANNOUNCE", Op::kBye, 0, 6, 2, 1, "aux 0"},
    {"server 0", Op::kBye, 0, 8, 2, 0, "server 0"},
    {"server 0x8000", Op::kBye, 0, 8, 2, 0x8000, "server 32768"},
    {"flags on ANNOUNCE", Op::kAnnounce, 0, 10, 2, kMore, "flags 0x1"},
    {"flags on BYE", Op::kBye, 0, 10, 2, kMulti, "flags 0x4"},
    {"flags on NEXT", Op::kNext, 0, 10, 2, kMulti, "flags 0x4"},
    {"kMore on QUERY", Op::kQuery, 0, 10, 2, kMore, "flags 0x1"},
    {"unknown flag on ANSWER", Op::kAnswer, 0, 10, 2, 8, "flags 0x8"},
    {"kMore with kNone", Op::kAnswer, 2, 10, 2, kMore | kNone, "flags 0x3"},
    {"kMulti on QUERY by gid", Op::kQuery, 1, 10, 2, kMulti, "kMulti"},
    {"body_len too large", Op::kQuery, 0, 12, 4, 200, "body_len 200 but"},
    {"body_len too small", Op::kAnswer, 0, 12, 4, 16, "body_len 16 but"},
    {"body_len 0x10000", Op::kQuery, 0, 12, 4, 0x10000, "body_len 65536"},
    {"body_len of ANNOUNCE", Op::kAnnounce, 0, 12, 4, 12, "body_len 12"},
    {"body_len of BYE", Op::kBye, 0, 12, 4, 8, "body_len 0x8"},
    {"incarnation", Op::kAnswer, 0, 16, 8, 0, "incarnation 0"},
    {"seq", Op::kNext, 0, 24, 8, 0, "seq 0"},
    {"query on ANNOUNCE", Op::kAnnounce, 0, 40, 8, 5, "query 0x5"},
    {"query on BYE", Op::kBye, 0, 40, 8, 6, "query 0x6"},
    {"query 0 on QUERY", Op::kQuery, 0, 40, 8, 0, "query 0"},
    {"query 0 on NEXT", Op::kNext, 0, 40, 8, 0, "query 0"},
    {"query 0 on ANSWER", Op::kAnswer, 0, 40, 8, 0, "query 0"},
    {"gid on ANNOUNCE", Op::kAnnounce, 0, 48, 8, 1, "gid 0x1"},
    {"gid on BYE", Op::kBye, 0, 48, 8, 2, "gid 0x2"},
    {"gid of QUERY past INT64_MAX", Op::kQuery, 1, 48, 8, kBig, "gid 0x8000000000000000"},
    {"NEXT after 0", Op::kNext, 0, 48, 8, 0, "gid (after) 0x0"},
    {"NEXT after past INT64_MAX", Op::kNext, 0, 48, 8, kBig, "gid (after) 0x8000000000000000"},
    {"ANSWER gid 0", Op::kAnswer, 0, 48, 8, 0, "gid 0x0"},
    {"ANSWER gid past INT64_MAX", Op::kAnswer, 0, 48, 8, kBig, "gid 0x8000000000000000"},
    {"ANSWER kNone with a gid", Op::kAnswer, 2, 48, 8, 5, "gid 0x5"},
    {"ANNOUNCE start 0", Op::kAnnounce, 0, 56, 8, 0, "aux 0"},
    {"aux on BYE", Op::kBye, 0, 56, 8, 1, "aux 0x1"},
    {"aux on QUERY by gid", Op::kQuery, 1, 56, 8, 3, "aux 0x3"},
    {"QUERY after past INT64_MAX", Op::kQuery, 0, 56, 8, kBig, "aux (after) 0x8000000000000000"},
    {"aux on NEXT", Op::kNext, 0, 56, 8, 4, "aux 0x4"},
    {"ANSWER index past its batch", Op::kAnswer, 0, 56, 8, (std::uint64_t{2} << 16) | 2,
     "aux 0x20002"},
    {"ANSWER batch of 0", Op::kAnswer, 0, 56, 8, 7, "aux 0x7"},
    {"ANSWER batch past the most", Op::kAnswer, 0, 56, 8, std::uint64_t{65} << 16, "aux 0x410000"},
    {"aux on kNone", Op::kAnswer, 2, 56, 8, 1, "aux 0x1"},
    {"gid on SPAWN", Op::kSpawn, 0, 48, 8, 5, "gid 0x5"},
    {"SPAWN limit too long", Op::kSpawn, 0, 56, 8, 0x80000000u, "time limit"},
    {"SPAWN without a request id", Op::kSpawn, 0, 40, 8, 0, "SPAWN with query 0"},
    {"SPAWNED done with aux", Op::kSpawned, 0, 56, 8, 2, "aux 0x2"},
    {"SPAWNED done without a gid", Op::kSpawned, 0, 48, 8, 0, "gid 0x0"},
    {"SPAWNED both starting and failed", Op::kSpawned, 0, 10, 2, 3, "both kMore"},
};

TEST(PeerProtocol, EveryCorruptedHeaderFieldIsRefusedByName) {
  for (const Corruption &c : kCorruptions) {
    SCOPED_TRACE(c.name);
    const Packet p = setup_packet(c);
    Bytes d = sealed(p);
    apply(d, c);
    // Signed by a job member: the field's own check must refuse it.
    Bytes signed_bad = d;
    remac(signed_bad);
    expect_refused(signed_bad, c.word, "signed");
    // Seal refuses to build it too (fields that exist in a Packet).
    if (c.off >= 6 && c.off != 12) {
      const Bytes good = sealed(p);
      // The corrupted fields, straight from the bytes, in a Packet.
      Packet q = p;
      q.op = static_cast<Op>(peek<std::uint16_t>(d, 6));
      q.server = peek<std::uint16_t>(d, 8);
      q.flags = peek<std::uint16_t>(d, 10);
      q.incarnation = peek<std::uint64_t>(d, 16);
      q.seq = peek<std::uint64_t>(d, 24);
      q.query = peek<std::uint64_t>(d, 40);
      q.gid = peek<std::uint64_t>(d, 48);
      q.aux = peek<std::uint64_t>(d, 56);
      if (q.op != Op::kAnnounce) q.tcp_port = q.udp_port = 0, q.removals = 0;
      Bytes out = good;
      clear_error();
      EXPECT_EQ(seal(q, secret(), &out), ROCL_EINVAL);
      EXPECT_NE(std::string(last_error()).find(c.word), std::string::npos) << last_error();
      EXPECT_EQ(out, good) << "*out changed on failure";
    }
  }
}

TEST(PeerProtocol, SentMsHasNoRuleInOpenButIsSigned) {
  Bytes d = sealed(base(Op::kBye));
  poke<std::uint64_t>(d, 32, 0);
  expect_refused(d, "bad MAC (not signed with this job's secret)");
  remac(d);
  Packet out;
  std::string what;
  EXPECT_EQ(open(d, secret(), &out, &what), ROCL_OK) << what;  // the replay guard's business
  EXPECT_EQ(out.sent_ms, 0u);
}

TEST(PeerProtocol, AnyFlippedBitIsRefused) {
  for (const Packet &p : every_kind()) {
    SCOPED_TRACE(op_name(static_cast<std::uint16_t>(p.op)));
    const Bytes d = sealed(p);
    for (std::size_t i = 0; i < d.size(); ++i) {
      for (int bit = 0; bit < 8; bit += 3) {
        Bytes bad = d;
        bad[i] ^= static_cast<std::byte>(1 << bit);
        Packet out;
        std::string what;
        ASSERT_EQ(open(bad, secret(), &out, &what), ROCL_EINVAL) << "byte " << i << " bit " << bit;
        ASSERT_FALSE(what.empty());
      }
    }
  }
}

TEST(PeerProtocol, AnotherJobsSecretIsABadMac) {
  const JobSecret other = JobSecret::generate();
  for (const Packet &p : every_kind()) {
    Bytes d;
    ASSERT_EQ(seal(p, other, &d), ROCL_OK) << last_error();
    expect_refused(d, "a bad MAC (not signed with this job's secret)",
                   op_name(static_cast<std::uint16_t>(p.op)));
  }
  // A MAC for another purpose (another label) with the right secret.
  Bytes d = sealed(base(Op::kQuery));
  const std::size_t n = d.size() - kMacBytes;
  const auto mac =
      secret().prove("rocl-dir", {reinterpret_cast<const std::uint8_t *>(d.data()), n});
  std::memcpy(d.data() + n, mac.data(), kMacBytes);
  expect_refused(d, "bad MAC");
}

TEST(PeerProtocol, TruncatedAndExtendedDatagramsAreRefused) {
  const Bytes d = sealed(base(Op::kAnswer));
  for (std::size_t n = 0; n < d.size(); ++n) {
    Bytes cut(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n));
    SCOPED_TRACE(n);
    if (n < kHeaderBytes + kMacBytes) {
      expect_refused(cut, "a datagram of " + std::to_string(n) + " bytes");
    } else {
      expect_refused(cut, "body_len");
      remac(cut);  // signed as cut: the length still disagrees
      expect_refused(cut, "body_len");
    }
  }
  for (std::size_t extra = 1; extra <= 16; ++extra) {
    SCOPED_TRACE(extra);
    Bytes longer = d;
    longer.resize(d.size() + extra);
    expect_refused(longer, "body_len " + std::to_string(d.size() - 96) + " but " +
                               std::to_string(d.size() - 96 + extra) + " bytes lie between");
  }
  // Larger than any UDP datagram.
  Bytes huge = d;
  huge.resize(kMaxDatagram + 1);
  expect_refused(huge, "a datagram of 65508 bytes");
}

TEST(PeerProtocol, BadBodiesAreRefusedAfterTheMac) {
  // Not an attribute list, but signed.
  Bytes d = sealed(base(Op::kQuery));
  d[kHeaderBytes] ^= std::byte{0xff};  // the list's magic
  expect_refused(d, "bad MAC");
  remac(d);
  expect_refused(d, "QUERY with a bad attribute list in its body: attribute list: bad magic");

  // An ANSWER whose list claims more bytes than it has.
  Bytes a = sealed(base(Op::kAnswer));
  poke<std::uint32_t>(a, kHeaderBytes + 8, 4096);
  remac(a);
  expect_refused(a, "ANSWER with a bad attribute list");

  // A QUERY with no body at all: not even the empty list.
  Bytes q = sealed(base(Op::kQuery));
  q.erase(q.begin() + kHeaderBytes, q.end() - kMacBytes);
  poke<std::uint32_t>(q, 12, 0);
  remac(q);
  expect_refused(q, "attribute list: truncated header");

  // ANNOUNCE bodies.
  Bytes n = sealed(base(Op::kAnnounce));
  poke<std::uint16_t>(n, kHeaderBytes + 2, 0);
  remac(n);
  expect_refused(n, "udp port 0");
  Packet counted = base(Op::kAnnounce);
  counted.removals = 0x10;
  Packet back;
  std::string what;
  ASSERT_EQ(open(sealed(counted), secret(), &back, &what), ROCL_OK) << what;
  EXPECT_EQ(back.removals, 0x10u);
}

// A list of exactly `bytes` encoded bytes (a multiple of 8, >= 48).
AttrList list_of(std::size_t bytes) {
  AttrList l(1 << 20);
  const std::size_t value = bytes - AttrList::kHeaderBytes - AttrList::kEntryHeaderBytes - 8;
  const std::vector<std::byte> v(value, std::byte{'v'});
  EXPECT_EQ(l.add("x", std::span<const std::byte>(v)), ROCL_OK);
  EXPECT_EQ(l.bytes().size(), bytes);
  return l;
}

TEST(PeerProtocol, AListJustFitsAndOneMoreIsTooBig) {
  const std::size_t fits = kMaxBody / 8 * 8;  // list encodings are multiples of 8
  Packet p = base(Op::kAnswer);
  p.list = list_of(fits);
  const Bytes d = sealed(p);
  EXPECT_EQ(d.size(), kHeaderBytes + fits + kMacBytes);
  EXPECT_LE(d.size(), kMaxDatagram);
  Packet back;
  std::string what;
  ASSERT_EQ(open(d, secret(), &back, &what), ROCL_OK) << what;
  expect_same(p, back);

  p.list = list_of(fits + 8);
  Bytes out = {std::byte{1}};
  clear_error();
  EXPECT_EQ(seal(p, secret(), &out), ROCL_ENOSPC);
  const std::string sentence = last_error();
  EXPECT_NE(sentence.find(std::to_string(fits + 8) + " bytes"), std::string::npos) << sentence;
  EXPECT_NE(sentence.find("65411"), std::string::npos) << sentence;
  EXPECT_EQ(out, Bytes{std::byte{1}});
}

TEST(PeerProtocol, SealRefusesWhatOpenWould) {
  Bytes out;
  auto refused = [&](const Packet &p, const char *word) {
    clear_error();
    EXPECT_EQ(seal(p, secret(), &out), ROCL_EINVAL) << word;
    EXPECT_NE(std::string(last_error()).find(word), std::string::npos) << last_error();
  };
  Packet p = base(Op::kQuery);
  p.op = static_cast<Op>(9);
  refused(p, "op 9");
  p = base(Op::kBye);
  p.list = sample_list();
  refused(p, "BYE with a list of 2 attributes");
  p = base(Op::kAnswer);
  p.flags = kNone;
  p.gid = 0;
  p.aux = 0;
  refused(p, "ANSWER with kNone with a list of 2 attributes");
  p = base(Op::kAnswer);
  p.aux = 0;
  refused(p, "a batch of 0");
  p = base(Op::kQuery);
  p.udp_port = 1;
  refused(p, "udp port 1");
  p = base(Op::kAnnounce);
  p.udp_port = 0;
  refused(p, "udp port 0");
  p = base(Op::kQuery);
  AttrList moved = std::move(p.list);
  refused(p, "moved-from");
  EXPECT_TRUE(out.empty());
}

// ---- ReplayGuard -----------------------------------------------------------------

constexpr std::uint64_t kNow = 1'700'000'000'000ull;

Packet from(std::uint16_t server, std::uint64_t incarnation, std::uint64_t seq,
            std::uint64_t sent_ms = kNow) {
  Packet p = base(Op::kBye);
  p.server = server;
  p.incarnation = incarnation;
  p.seq = seq;
  p.sent_ms = sent_ms;
  return p;
}

TEST(ReplayGuard, ADuplicateIsRefused) {
  ReplayGuard g;
  std::string why;
  EXPECT_TRUE(g.accept(from(3, 77, 1), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(3, 77, 2), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(3, 77, 2), kNow, &why));
  EXPECT_NE(why.find("seq 2, accepted before"), std::string::npos) << why;
  EXPECT_FALSE(g.accept(from(3, 77, 1), kNow + 5, &why));
  EXPECT_EQ(g.refused(), 2u);
  // The same seq of another incarnation, or of another server, is new.
  EXPECT_TRUE(g.accept(from(3, 78, 2), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(4, 77, 2), kNow, &why)) << why;
  EXPECT_EQ(g.tracked(), 3u);
}

TEST(ReplayGuard, OutOfOrderWithinTheWindowIsAcceptedOnce) {
  ReplayGuard g;
  std::string why;
  ASSERT_TRUE(g.accept(from(1, 5, 10), kNow, &why)) << why;
  for (std::uint64_t s : {5, 7, 9, 8}) {
    EXPECT_TRUE(g.accept(from(1, 5, s), kNow, &why)) << s << ": " << why;
  }
  for (std::uint64_t s : {5, 7, 9, 8, 10}) {
    EXPECT_FALSE(g.accept(from(1, 5, s), kNow, &why)) << s;
  }
  EXPECT_TRUE(g.accept(from(1, 5, 11), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(1, 5, 6), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 6), kNow, &why));
  EXPECT_EQ(g.refused(), 6u);
}

TEST(ReplayGuard, ASeqOlderThanTheWindowIsRefused) {
  ReplayGuard g;
  std::string why;
  ASSERT_TRUE(g.accept(from(1, 5, 100), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 100 - 64), kNow, &why));
  EXPECT_NE(why.find("seq 36, older than the last 64 seqs"), std::string::npos) << why;
  EXPECT_TRUE(g.accept(from(1, 5, 100 - 63), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 100 - 63), kNow, &why));
  // A jump past the window forgets the old mask but not the order.
  EXPECT_TRUE(g.accept(from(1, 5, 1000), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 101), kNow, &why));
  EXPECT_TRUE(g.accept(from(1, 5, 999), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(1, 5, 1000 - 63), kNow, &why)) << why;
  // A jump of exactly the window keeps nothing below either.
  EXPECT_TRUE(g.accept(from(1, 5, 1064), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 1000), kNow, &why));
  EXPECT_TRUE(g.accept(from(1, 5, 1001), kNow, &why)) << why;
}

TEST(ReplayGuard, StaleAndFutureSentMsAreRefused) {
  ReplayGuard g;
  std::string why;
  const std::uint64_t skew = ReplayGuard::kMaxSkewMs;
  EXPECT_FALSE(g.accept(from(1, 5, 1, kNow - skew - 1), kNow, &why));
  EXPECT_NE(why.find("30001 ms behind"), std::string::npos) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 2, kNow + skew + 1), kNow, &why));
  EXPECT_NE(why.find("30001 ms ahead"), std::string::npos) << why;
  EXPECT_FALSE(g.accept(from(1, 5, 3, 0), kNow, &why));
  EXPECT_FALSE(g.accept(from(1, 5, 4, ~std::uint64_t{0}), kNow, &why));
  EXPECT_FALSE(g.accept(from(1, 5, 5, ~std::uint64_t{0}), 0, &why));
  EXPECT_EQ(g.refused(), 5u);
  EXPECT_EQ(g.tracked(), 0u) << "a refused packet leaves no state";
  // A refused stale packet did not burn its seq.
  EXPECT_TRUE(g.accept(from(1, 5, 1, kNow - skew), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(1, 5, 2, kNow + skew), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(1, 5, 3, 10), 10 + skew, &why)) << why;
}

TEST(ReplayGuard, ANewIncarnationStartsItsOwnWindow) {
  ReplayGuard g;
  std::string why;
  ASSERT_TRUE(g.accept(from(9, 0xaaaa, 500), kNow, &why)) << why;
  // The server restarted: a new incarnation begins at seq 1 again.
  EXPECT_TRUE(g.accept(from(9, 0xbbbb, 1), kNow, &why)) << why;
  EXPECT_TRUE(g.accept(from(9, 0xbbbb, 2), kNow, &why)) << why;
  EXPECT_FALSE(g.accept(from(9, 0xbbbb, 1), kNow, &why));
  EXPECT_FALSE(g.accept(from(9, 0xaaaa, 500), kNow, &why));
  EXPECT_TRUE(g.accept(from(9, 0xaaaa, 501), kNow, &why)) << why;
  EXPECT_EQ(g.tracked(), 2u);
}

TEST(ReplayGuard, AFifthIncarnationEvictsTheLeastRecentlyUsed) {
  ReplayGuard g;
  std::string why;
  for (std::uint64_t inc = 1; inc <= 4; ++inc) {
    ASSERT_TRUE(g.accept(from(2, inc, 1), kNow, &why)) << why;
  }
  ASSERT_TRUE(g.accept(from(2, 1, 2), kNow, &why)) << why;  // 1 used again: 2 is the oldest
  ASSERT_FALSE(g.accept(from(2, 2, 1), kNow, &why));        // a refusal is no use
  EXPECT_EQ(g.tracked(), 4u);
  ASSERT_TRUE(g.accept(from(2, 5, 1), kNow, &why)) << why;  // evicts 2
  EXPECT_EQ(g.tracked(), 4u);
  EXPECT_FALSE(g.accept(from(2, 1, 1), kNow, &why)) << "1 is still remembered";
  EXPECT_FALSE(g.accept(from(2, 3, 1), kNow, &why)) << "3 is still remembered";
  EXPECT_FALSE(g.accept(from(2, 4, 1), kNow, &why)) << "4 is still remembered";
  EXPECT_FALSE(g.accept(from(2, 5, 1), kNow, &why)) << "5 is still remembered";
  // 2 is forgotten: its replay passes (the limit of the guard, see the header).
  EXPECT_TRUE(g.accept(from(2, 2, 1), kNow, &why)) << why;  // and evicts 3
  EXPECT_TRUE(g.accept(from(2, 3, 1), kNow, &why)) << why;  // and evicts 4
  EXPECT_FALSE(g.accept(from(2, 1, 2), kNow, &why)) << "1 is still remembered";
  EXPECT_EQ(g.tracked(), 4u);
  // Other servers keep their own four.
  for (std::uint64_t inc = 1; inc <= 4; ++inc) {
    ASSERT_TRUE(g.accept(from(3, inc, 1), kNow, &why)) << why;
  }
  EXPECT_FALSE(g.accept(from(2, 5, 1), kNow, &why)) << "server 3 evicted server 2's";
  EXPECT_EQ(g.tracked(), 8u);
}

TEST(ReplayGuard, StateIsBounded) {
  ReplayGuard g;
  std::string why;
  for (std::uint16_t s = 1; s <= 200; ++s) {
    for (std::uint64_t inc = 1; inc <= 6; ++inc) {
      ASSERT_TRUE(g.accept(from(s, inc, 1), kNow, &why)) << why;
    }
  }
  EXPECT_EQ(g.tracked(), 800u);
  EXPECT_FALSE(g.accept(from(0, 1, 1), kNow, &why));
  EXPECT_NE(why.find("server 0"), std::string::npos) << why;
  EXPECT_FALSE(g.accept(from(0x8000, 1, 1), kNow, &why));
  EXPECT_TRUE(g.accept(from(kMaxServerId, 1, 1), kNow, &why)) << why;
}

}  // namespace
}  // namespace rocl::impl::peerproto
