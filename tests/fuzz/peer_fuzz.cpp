// peer_fuzz.cpp - libFuzzer target for the packets between directory servers
// (src/directory/peer_protocol.hpp): open() is the gate every datagram from
// the host network passes. Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The secret is fixed (all zero bytes), so that a sealed seed stays valid.
// The first input byte picks the mode:
//   even: the rest of the input is a datagram, given to open(). Accepted: it
//         obeys the header rules and seals again to the same bytes, and the
//         replay guard takes it once. Refused: a non-empty sentence, *out
//         untouched.
//   odd:  the rest builds a packet, field by field (all little-endian):
//           u8 op | u16 server | u16 flags | u64 incarnation, seq, sent_ms,
//           query, gid, aux | u16 tcp_port | u16 udp_port | u16 list_len |
//           list_len bytes (an AttrList encoding; an empty list if it does
//           not decode) | u16 pad (> 0: an attribute "~pad" of pad bytes is
//           added, to reach the size limit) | u8 control | mutations
//         seal() it: a refusal is ROCL_EINVAL or ROCL_ENOSPC (only for a list
//         too large) with a sentence; a datagram must open to the same
//         packet and seal again to the same bytes. Then up to kMaxMutations
//         mutations (u8 kind | u16 pos | u64 value: set a header field, set
//         a body byte, xor or set any byte, truncate, append) change the
//         datagram; control bit 1 rewrites body_len to the new length, bit
//         0 signs the result again (a job member sending a bad packet), so
//         that the checks behind the MAC are reached.
//         open() of the result: an accepted one seals to the same bytes,
//         and was not changed unless signed again; a refused one has a
//         sentence.
// A SPAWN that opens has its request decoded too (spawn_request.hpp):
// decoded with a program, or refused with a sentence.
// Any broken invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (a valid packet of each op, in both modes) to <dir> and exits.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "directory/peer_protocol.hpp"
#include "directory/spawn_request.hpp"
#include "status/status.hpp"

#include "fuzz_util.hpp"

using namespace rocl::impl;
using namespace rocl::impl::peerproto;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "peer_fuzz", .last_error = rocl::impl::last_error};

using rocl::fuzz::Bytes;
using rocl::fuzz::write_file;

const JobSecret kSecret{};  // all zero: fixed, so that the seeds stay valid
constexpr std::size_t kMaxMutations = 8;
constexpr std::uint64_t kMaxGid = static_cast<std::uint64_t>(INT64_MAX);

// The header's fields (offset, bytes), for mutations that set one.
struct Field {
  std::size_t off;
  std::size_t width;
};
constexpr Field kFields[] = {{0, 4},  {4, 2},  {6, 2},  {8, 2},  {10, 2}, {12, 4},
                             {16, 8}, {24, 8}, {32, 8}, {40, 8}, {48, 8}, {56, 8}};

bool has_list(const Packet &p) {
  return p.op == Op::kQuery || p.op == Op::kNext || p.op == Op::kSpawn ||
         (p.op == Op::kAnswer && (p.flags & kNone) == 0) ||
         (p.op == Op::kSpawned && (p.flags & kNone) != 0);
}

bool same_list(const AttrList &a, const AttrList &b) {
  const auto x = a.bytes(), y = b.bytes();
  return a.count() == b.count() && x.size() == y.size() &&
         (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
}

// The header rules of peer_protocol.hpp, restated: an accepted packet obeys them.
void check_valid(const Packet &p) {
  const auto op = static_cast<std::uint16_t>(p.op);
  CHECK(op >= 1 && op <= kMaxOp, "op %u", unsigned(op));
  CHECK(p.server >= 1 && p.server <= kMaxServerId, "server %u", unsigned(p.server));
  CHECK(p.incarnation != 0 && p.seq != 0, "incarnation %" PRIx64 " seq %" PRIu64, p.incarnation,
        p.seq);
  switch (p.op) {
    case Op::kAnnounce:
      CHECK(p.flags == 0 && p.query == 0 && p.gid == 0 && p.aux != 0 && p.udp_port != 0,
            "ANNOUNCE fields");
      break;
    case Op::kBye:
      CHECK(p.flags == 0 && p.query == 0 && p.gid == 0 && p.aux == 0, "BYE fields");
      break;
    case Op::kQuery:
      CHECK((p.flags & ~kMulti) == 0 && p.query != 0 && p.gid <= kMaxGid && p.aux <= kMaxGid,
            "QUERY fields");
      CHECK(p.gid == 0 || (p.aux == 0 && p.flags == 0), "QUERY by gid with after or kMulti");
      break;
    case Op::kNext:
      CHECK(p.flags == 0 && p.query != 0 && p.gid != 0 && p.gid <= kMaxGid && p.aux == 0,
            "NEXT fields");
      break;
    case Op::kAnswer:
      CHECK((p.flags & ~(kMore | kNone)) == 0 && (p.flags & (kMore | kNone)) != (kMore | kNone),
            "ANSWER flags %#x", unsigned(p.flags));
      CHECK(p.query != 0, "ANSWER query 0");
      CHECK((p.flags & kNone) != 0 ? p.aux == 0
                                   : (p.aux >> 16) >= 1 && (p.aux >> 16) <= kMaxBatch &&
                                         (p.aux & 0xffff) < (p.aux >> 16),
            "ANSWER aux %" PRIx64, p.aux);
      CHECK((p.flags & kNone) != 0 ? p.gid == 0 && p.list.empty() : p.gid != 0 && p.gid <= kMaxGid,
            "ANSWER gid %" PRIx64, p.gid);
      break;
    case Op::kSpawn: {
      CHECK(p.flags == 0 && p.query != 0 && p.gid == 0 && p.aux <= kMaxSpawnLimitMs,
            "SPAWN fields");
      // The request inside: decoded, or refused with a sentence.
      SpawnRequest r;
      std::string what;
      if (decode_spawn_request(p.list, &r, &what) == ROCL_OK) {
        CHECK(!r.argv.empty() && !r.argv[0].empty(), "a spawn request without a program");
      } else {
        CHECK(!what.empty(), "a refused spawn request without a sentence");
      }
      break;
    }
    case Op::kSpawned:
      CHECK(p.query != 0 && p.flags != (kMore | kNone) && (p.flags & ~(kMore | kNone)) == 0,
            "SPAWNED flags %#x", unsigned(p.flags));
      CHECK(p.flags == kMore   ? p.gid == 0 && p.aux == 0
            : p.flags == kNone ? p.gid == 0 && p.aux >= 1 && p.aux <= kMaxSpawnError
                               : p.gid != 0 && p.gid <= kMaxGid && p.aux == 0,
            "SPAWNED gid %" PRIx64 " aux %" PRIx64, p.gid, p.aux);
      break;
  }
  if (p.op != Op::kAnnounce) {
    CHECK(p.tcp_port == 0 && p.udp_port == 0 && p.removals == 0, "ANNOUNCE's fields elsewhere");
  }
}

// open(); the invariants of an acceptance or a refusal. True if accepted.
bool check_open(std::span<const std::byte> datagram, Packet *out) {
  Packet p;
  p.seq = 0x5eed;
  std::string what;
  const int rc = open(datagram, kSecret, &p, &what);
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_EINVAL, "open rc %d", rc);
    CHECK(!what.empty(), "a refusal without a sentence");
    CHECK(p.seq == 0x5eed, "*out changed by a refusal");
    return false;
  }
  CHECK(datagram.size() >= kHeaderBytes + kMacBytes && datagram.size() <= kMaxDatagram, "%zu",
        datagram.size());
  check_valid(p);
  Bytes again;
  const int src = seal(p, kSecret, &again);
  CHECK(src == ROCL_OK, "an opened packet does not seal: %d", src);
  CHECK(again.size() == datagram.size() &&
            std::memcmp(again.data(), datagram.data(), again.size()) == 0,
        "an opened packet seals to other bytes (%zu, %zu)", again.size(), datagram.size());
  // The replay guard takes it once, when on time.
  ReplayGuard guard;
  std::string why;
  CHECK(guard.accept(p, p.sent_ms, &why), "a fresh guard refused: %s", why.c_str());
  CHECK(!guard.accept(p, p.sent_ms, &why), "a guard took a packet twice");
  CHECK(!why.empty() && guard.refused() == 1, "refusal sentence");
  if (p.sent_ms <= UINT64_MAX - ReplayGuard::kMaxSkewMs - 1) {
    Packet later = p;
    later.seq = p.seq == UINT64_MAX ? p.seq - 1 : p.seq + 1;
    CHECK(!guard.accept(later, p.sent_ms + ReplayGuard::kMaxSkewMs + 1, &why),
          "a stale packet accepted");
  }
  *out = std::move(p);
  return true;
}

void raw_mode(std::span<const std::byte> in) {
  Packet p;
  check_open(in, &p);
}

void build_mode(std::span<const std::byte> in) {
  rocl::fuzz::Reader r(in);
  Packet p;
  p.op = static_cast<Op>(r.u8());
  p.server = r.u16();
  p.flags = r.u16();
  p.incarnation = r.u64();
  p.seq = r.u64();
  p.sent_ms = r.u64();
  p.query = r.u64();
  p.gid = r.u64();
  p.aux = r.u64();
  p.tcp_port = r.u16();
  p.udp_port = r.u16();
  const std::size_t list_len = r.u16();
  const auto list_bytes = r.bytes(list_len);
  if (AttrList::decode(list_bytes, p.list) != ROCL_OK) {
    p.list = AttrList(1 << 20);
  }
  if (const std::size_t pad = r.u16(); pad > 0) {
    const Bytes value(pad, std::byte{'p'});
    (void)p.list.add("~pad", std::span<const std::byte>(value));  // may not fit its capacity
  }

  Bytes d = {std::byte{0x42}};
  clear_error();
  const int rc = seal(p, kSecret, &d);
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_EINVAL || rc == ROCL_ENOSPC, "seal rc %d", rc);
    CHECK(rc != ROCL_ENOSPC || p.list.bytes().size() > kMaxBody, "ENOSPC for %zu bytes",
          p.list.bytes().size());
    CHECK(last_error()[0] != '\0', "a seal refusal without a sentence");
    CHECK(d.size() == 1 && d[0] == std::byte{0x42}, "*out changed by a refusal");
    return;
  }
  CHECK(d.size() <= kMaxDatagram, "sealed %zu bytes", d.size());
  Packet back;
  CHECK(check_open(d, &back), "open refused what seal built");
  CHECK(back.op == p.op && back.server == p.server && back.flags == p.flags &&
            back.incarnation == p.incarnation && back.seq == p.seq && back.sent_ms == p.sent_ms &&
            back.query == p.query && back.gid == p.gid && back.aux == p.aux &&
            back.tcp_port == p.tcp_port && back.udp_port == p.udp_port &&
            back.removals == p.removals,
        "a field changed in the round trip");
  CHECK(has_list(p) ? same_list(back.list, p.list) : back.list.empty(),
        "the list changed in the round trip");

  // Mutate the datagram.
  const std::uint8_t control = r.u8();
  Bytes m = d;
  for (std::size_t i = 0; i < kMaxMutations && !r.empty(); ++i) {
    const std::uint8_t kind = r.u8();
    const std::size_t pos = r.u16();
    const std::uint64_t value = r.u64();
    const auto byte = static_cast<std::byte>(value);
    switch (kind % 6) {
      case 0:  // a header field
        if (m.size() >= kHeaderBytes) {
          const Field &f = kFields[pos % std::size(kFields)];
          for (std::size_t b = 0; b < f.width; ++b) {
            m[f.off + b] = static_cast<std::byte>(value >> (8 * b));
          }
        }
        break;
      case 1:  // a body byte
        if (m.size() > kHeaderBytes + kMacBytes) {
          m[kHeaderBytes + pos % (m.size() - kHeaderBytes - kMacBytes)] = byte;
        }
        break;
      case 2:
        if (!m.empty()) m[pos % m.size()] ^= byte;
        break;
      case 3:
        if (!m.empty()) m[pos % m.size()] = byte;
        break;
      case 4:
        m.resize(pos % (m.size() + 1));
        break;
      default:
        m.insert(m.end(), static_cast<std::size_t>(byte) + 1, byte);
    }
  }
  if ((control & 2) != 0 && m.size() >= kHeaderBytes + kMacBytes) {
    const auto body = static_cast<std::uint32_t>(m.size() - kHeaderBytes - kMacBytes);
    for (std::size_t i = 0; i < 4; ++i) m[12 + i] = static_cast<std::byte>(body >> (8 * i));
  }
  const bool resigned = (control & 1) != 0 && m.size() >= kMacBytes;
  if (resigned) {
    const std::size_t n = m.size() - kMacBytes;
    const auto mac =
        kSecret.prove(kMacLabel, {reinterpret_cast<const std::uint8_t *>(m.data()), n});
    std::memcpy(m.data() + n, mac.data(), kMacBytes);
  }
  Packet mp;
  if (check_open(m, &mp) && !resigned) {
    CHECK(m == d, "a changed datagram passed the MAC without being signed again");
  }
}

// ---- seed generator ---------------------------------------------------------

AttrList seed_list() {
  AttrList l(256);
  (void)l.add("type", std::string_view("worker"));
  (void)l.add_unspecified("name", 32);
  return l;
}

std::vector<Packet> seed_packets() {
  std::vector<Packet> all;
  Packet p;
  p.server = 3;
  p.incarnation = 0x1122334455667788ull;
  p.seq = 1;
  p.sent_ms = 1'700'000'000'000ull;
  Packet a = p;
  a.op = Op::kAnnounce;
  a.aux = p.sent_ms - 5000;
  a.tcp_port = 7001;
  a.udp_port = 7002;
  all.push_back(a);
  Packet b = p;
  b.op = Op::kBye;
  b.seq = 2;
  all.push_back(b);
  Packet q = p;
  q.op = Op::kQuery;
  q.flags = kMulti;
  q.query = 42;
  q.list = seed_list();
  all.push_back(q);
  Packet g = q;
  g.flags = 0;
  g.gid = 0x0001000000000009ull;
  g.list = AttrList(64);
  (void)g.list.add_unspecified("type", 16);
  all.push_back(g);
  Packet n = q;
  n.op = Op::kNext;
  n.flags = 0;
  n.gid = 0x0001000000000009ull;
  all.push_back(n);
  Packet w = q;
  w.op = Op::kAnswer;
  w.flags = kMore;
  w.gid = 0x000100000000000aull;
  w.aux = (std::uint64_t{2} << 16) | 1;  // the second of a batch of 2
  all.push_back(w);
  Packet none = w;
  none.flags = kNone;
  none.gid = 0;
  none.aux = 0;
  none.list = AttrList(1);
  all.push_back(none);
  Packet sp = p;
  sp.op = Op::kSpawn;
  sp.query = 43;
  sp.aux = 5000;
  SpawnRequest r;
  r.argv = {"/usr/bin/worker", "--steps", "10"};
  r.env = {"ROCL_WAIT=block"};
  r.parent = 0x0003000000000001ull;
  (void)encode_spawn_request(r, &sp.list);
  all.push_back(sp);
  Packet done = p;
  done.op = Op::kSpawned;
  done.query = 43;
  done.gid = 0x0002000000000005ull;
  all.push_back(done);
  Packet starting = done;
  starting.flags = kMore;
  starting.gid = 0;
  all.push_back(starting);
  Packet failed = starting;
  failed.flags = kNone;
  failed.aux = 9;
  failed.list = AttrList(128);
  (void)failed.list.add("why", std::string_view("no such program"));
  all.push_back(failed);
  return all;
}

void put(Bytes &out, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}

// The build-mode input that makes p, then `mutations` (control first).
Bytes build_input(const Packet &p, std::uint8_t control, const Bytes &mutations) {
  Bytes in = {std::byte{1}};
  put(in, static_cast<std::uint16_t>(p.op), 1);
  put(in, p.server, 2);
  put(in, p.flags, 2);
  for (std::uint64_t v : {p.incarnation, p.seq, p.sent_ms, p.query, p.gid, p.aux}) put(in, v, 8);
  put(in, p.tcp_port, 2);
  put(in, p.udp_port, 2);
  const auto list = has_list(p) ? p.list.bytes() : std::span<const std::byte>();
  put(in, list.size(), 2);
  in.insert(in.end(), list.begin(), list.end());
  put(in, 0, 2);  // no pad
  put(in, control, 1);
  in.insert(in.end(), mutations.begin(), mutations.end());
  return in;
}

void write_seeds(const char *dir) {
  int i = 0;
  for (const Packet &p : seed_packets()) {
    const std::string name = std::string(dir) + "/seed-" + std::to_string(i++) + "-" +
                             op_name(static_cast<std::uint16_t>(p.op));
    Bytes d;
    if (seal(p, kSecret, &d) != ROCL_OK) {
      std::fprintf(stderr, "peer_fuzz: a seed does not seal: %s\n", last_error());
      std::exit(1);
    }
    Bytes raw = {std::byte{0}};
    raw.insert(raw.end(), d.begin(), d.end());
    write_file(name + "-raw", raw);
    write_file(name + "-build", build_input(p, 0, {}));
    // Signed again after setting sent_ms (accepted) and a body byte.
    Bytes mutations;
    put(mutations, 0, 1);  // a header field:
    put(mutations, 8, 2);  // sent_ms
    put(mutations, p.sent_ms + 1000, 8);
    put(mutations, 1, 1);  // a body byte: 'w' of "worker" in a list
    put(mutations, 40, 2);
    put(mutations, 'W', 8);
    write_file(name + "-mutated", build_input(p, 3, mutations));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rocl::fuzz::pick_mode(data, size, {raw_mode, build_mode});
  return 0;
}
