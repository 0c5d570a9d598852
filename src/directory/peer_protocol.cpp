// peer_protocol.cpp - the datagrams between the directory servers of a job
// (see peer_protocol.hpp).
#include "directory/peer_protocol.hpp"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#include "directory/little_endian.hpp"
#include "status/status.hpp"

namespace rocl::impl::peerproto {
namespace {

constexpr std::uint64_t kMaxGid = static_cast<std::uint64_t>(INT64_MAX);

using le::get;
using le::put;

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

using ull = unsigned long long;

// The header as it is on the wire.
struct Header {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::uint16_t op = 0;
  std::uint16_t server = 0;
  std::uint16_t flags = 0;
  std::uint32_t body_len = 0;
  std::uint64_t incarnation = 0;
  std::uint64_t seq = 0;
  std::uint64_t sent_ms = 0;
  std::uint64_t query = 0;
  std::uint64_t gid = 0;
  std::uint64_t aux = 0;
};

void encode_header(const Header &h, std::byte *out) {
  put<std::uint32_t>(out, h.magic);
  put<std::uint16_t>(out + 4, h.version);
  put<std::uint16_t>(out + 6, h.op);
  put<std::uint16_t>(out + 8, h.server);
  put<std::uint16_t>(out + 10, h.flags);
  put<std::uint32_t>(out + 12, h.body_len);
  put<std::uint64_t>(out + 16, h.incarnation);
  put<std::uint64_t>(out + 24, h.seq);
  put<std::uint64_t>(out + 32, h.sent_ms);
  put<std::uint64_t>(out + 40, h.query);
  put<std::uint64_t>(out + 48, h.gid);
  put<std::uint64_t>(out + 56, h.aux);
}

Header decode_header(const std::byte *p) {
  Header h;
  h.magic = get<std::uint32_t>(p);
  h.version = get<std::uint16_t>(p + 4);
  h.op = get<std::uint16_t>(p + 6);
  h.server = get<std::uint16_t>(p + 8);
  h.flags = get<std::uint16_t>(p + 10);
  h.body_len = get<std::uint32_t>(p + 12);
  h.incarnation = get<std::uint64_t>(p + 16);
  h.seq = get<std::uint64_t>(p + 24);
  h.sent_ms = get<std::uint64_t>(p + 32);
  h.query = get<std::uint64_t>(p + 40);
  h.gid = get<std::uint64_t>(p + 48);
  h.aux = get<std::uint64_t>(p + 56);
  return h;
}

bool has_list(Op op, std::uint16_t flags) {
  return op == Op::kQuery || op == Op::kNext || op == Op::kSpawn ||
         (op == Op::kAnswer && (flags & kNone) == 0) ||
         (op == Op::kSpawned && (flags & kNone) != 0);
}

// The flags an op may carry.
std::uint16_t allowed_flags(Op op) {
  switch (op) {
    case Op::kAnswer:
      return kMore | kNone;
    case Op::kQuery:
      return kMulti;
    case Op::kSpawned:
      return kMore | kNone;
    default:
      return 0;
  }
}

int bad(std::string *what, std::string sentence) {
  *what = std::move(sentence);
  return ROCL_EINVAL;
}

// A field that must be 0 for op.
int expect_zero(const char *op, const char *field, std::uint64_t v, const char *why,
                std::string *what) {
  if (v == 0) return ROCL_OK;
  return bad(what, format("%s with %s 0x%llx (must be 0%s)", op, field, static_cast<ull>(v), why));
}

// The rules of the header that hold whatever the body: everything but the
// MAC and the body's contents. The magic and version first, so that a
// stranger's datagram is named as such.
int check_header(const Header &h, std::string *what) {
  if (h.magic != kMagic) {
    return bad(what, format("a bad magic 0x%08llx (expected 0x%08llx, \"RPER\")",
                            static_cast<ull>(h.magic), static_cast<ull>(kMagic)));
  }
  if (h.version != kVersion) {
    return bad(what, format("peer protocol version %llu, but this server speaks version %llu (the "
                            "directory servers of a job must come from the same rocl release)",
                            static_cast<ull>(h.version), static_cast<ull>(kVersion)));
  }
  if (h.op == 0 || h.op > kMaxOp) {
    return bad(what, format("an unknown op %llu (1..%llu are ANNOUNCE, BYE, QUERY, ANSWER, NEXT, "
                            "SPAWN, SPAWNED)",
                            static_cast<ull>(h.op), static_cast<ull>(kMaxOp)));
  }
  const auto op = static_cast<Op>(h.op);
  const char *name = op_name(h.op);
  if (h.server == 0 || h.server > kMaxServerId) {
    return bad(what, format("%s from server %llu (server ids are 1..%llu)", name,
                            static_cast<ull>(h.server), static_cast<ull>(kMaxServerId)));
  }
  if ((h.flags & ~allowed_flags(op)) != 0) {
    return bad(what, format("%s with flags 0x%llx (%s may carry 0x%llx at most)", name,
                            static_cast<ull>(h.flags), name, static_cast<ull>(allowed_flags(op))));
  }
  if (h.incarnation == 0) {
    return bad(what, format("%s with incarnation 0 (a server's incarnation is never 0)", name));
  }
  if (h.seq == 0) {
    return bad(what, format("%s with seq 0 (an incarnation's first packet has seq 1)", name));
  }
  if (h.body_len > kMaxBody) {
    return bad(what, format("%s with body_len %llu (at most %llu fit a datagram)", name,
                            static_cast<ull>(h.body_len), static_cast<ull>(kMaxBody)));
  }
  int rc = ROCL_OK;
  switch (op) {
    case Op::kAnnounce:
      if ((rc = expect_zero(name, "query", h.query, "", what)) != ROCL_OK ||
          (rc = expect_zero(name, "gid", h.gid, "", what)) != ROCL_OK) {
        return rc;
      }
      if (h.aux == 0) {
        return bad(what, "ANNOUNCE with aux 0 (aux is the server's start time, never 0)");
      }
      if (h.body_len != kAnnounceBodyBytes) {
        return bad(what,
                   format("ANNOUNCE with body_len %llu (expected %llu)",
                          static_cast<ull>(h.body_len), static_cast<ull>(kAnnounceBodyBytes)));
      }
      return ROCL_OK;
    case Op::kBye:
      if ((rc = expect_zero(name, "query", h.query, "", what)) != ROCL_OK ||
          (rc = expect_zero(name, "gid", h.gid, "", what)) != ROCL_OK ||
          (rc = expect_zero(name, "aux", h.aux, "", what)) != ROCL_OK ||
          (rc = expect_zero(name, "body_len", h.body_len, ": BYE has no body", what)) != ROCL_OK) {
        return rc;
      }
      return ROCL_OK;
    case Op::kQuery:
      if (h.query == 0) {
        return bad(what, "QUERY with query 0 (an asker's query ids are never 0)");
      }
      if (h.gid > kMaxGid) {
        return bad(what,
                   format("QUERY by gid 0x%llx (gids are 1..INT64_MAX)", static_cast<ull>(h.gid)));
      }
      if (h.gid != 0) {
        if ((h.flags & kMulti) != 0) {
          return bad(what, format("QUERY by gid 0x%llx with flags 0x%llx (kMulti: a multi-answer "
                                  "query searches by pattern, gid 0)",
                                  static_cast<ull>(h.gid), static_cast<ull>(h.flags)));
        }
        return expect_zero(name, "aux", h.aux, ": a QUERY by gid has no `after`", what);
      }
      if (h.aux > kMaxGid) {
        return bad(what, format("QUERY by pattern with aux (after) 0x%llx (gids are "
                                "1..INT64_MAX, 0: from the start)",
                                static_cast<ull>(h.aux)));
      }
      return ROCL_OK;
    case Op::kNext:
      if (h.query == 0) {
        return bad(what, "NEXT with query 0 (an asker's query ids are never 0)");
      }
      if (h.gid == 0 || h.gid > kMaxGid) {
        return bad(what, format("NEXT with gid (after) 0x%llx (must be a gid, 1..INT64_MAX)",
                                static_cast<ull>(h.gid)));
      }
      return expect_zero(name, "aux", h.aux, ": NEXT's `after` is its gid", what);
    case Op::kAnswer:
      if (h.query == 0) {
        return bad(what, "ANSWER with query 0 (it echoes the asker's query id, never 0)");
      }
      if ((h.flags & kNone) != 0) {
        if ((h.flags & kMore) != 0) {
          return bad(what, format("ANSWER with flags 0x%llx (kNone, no match, and kMore, more "
                                  "matches, exclude each other)",
                                  static_cast<ull>(h.flags)));
        }
        if ((rc = expect_zero(name, "gid", h.gid, " with kNone", what)) != ROCL_OK ||
            (rc = expect_zero(name, "body_len", h.body_len, " with kNone", what)) != ROCL_OK) {
          return rc;
        }
      } else if (h.gid == 0 || h.gid > kMaxGid) {
        return bad(what, format("ANSWER with gid 0x%llx (an answer's gid is 1..INT64_MAX; "
                                "gid 0 only with kNone)",
                                static_cast<ull>(h.gid)));
      }
      if ((h.flags & kNone) != 0) return expect_zero(name, "aux", h.aux, " with kNone", what);
      {
        const std::uint64_t total = h.aux >> 16, index = h.aux & 0xffff;
        if (total < 1 || total > kMaxBatch || index >= total) {
          return bad(what, format("ANSWER with aux 0x%llx (answer %llu of a batch of %llu; a "
                                  "batch holds 1..%zu)",
                                  static_cast<ull>(h.aux), static_cast<ull>(index),
                                  static_cast<ull>(total), kMaxBatch));
        }
      }
      return ROCL_OK;
    case Op::kSpawn:
      if (h.query == 0) {
        return bad(what, "SPAWN with query 0 (an asker's request ids are never 0)");
      }
      if (h.aux > kMaxSpawnLimitMs) {
        return bad(what, format("SPAWN with aux (its time limit) %llu ms (at most %llu; 0: none)",
                                static_cast<ull>(h.aux), static_cast<ull>(kMaxSpawnLimitMs)));
      }
      return expect_zero(name, "gid", h.gid, "", what);
    case Op::kSpawned:
      if (h.query == 0) {
        return bad(what, "SPAWNED with query 0 (it echoes the asker's request id, never 0)");
      }
      if (h.flags == (kMore | kNone)) {
        return bad(what, "SPAWNED with both kMore (still starting) and kNone (failed)");
      }
      if (h.flags == kMore) {
        if ((rc = expect_zero(name, "gid", h.gid, " with kMore", what)) != ROCL_OK ||
            (rc = expect_zero(name, "aux", h.aux, " with kMore", what)) != ROCL_OK) {
          return rc;
        }
        return expect_zero(name, "body_len", h.body_len, " with kMore", what);
      }
      if (h.flags == kNone) {
        if (h.aux == 0 || h.aux > kMaxSpawnError) {
          return bad(what, format("SPAWNED failing with aux %llu (minus a ROCL_E* code, 1..%llu)",
                                  static_cast<ull>(h.aux), static_cast<ull>(kMaxSpawnError)));
        }
        return expect_zero(name, "gid", h.gid, " with kNone", what);
      }
      if (h.gid == 0 || h.gid > kMaxGid) {
        return bad(what, format("SPAWNED with gid 0x%llx (the new context's gid, 1..INT64_MAX)",
                                static_cast<ull>(h.gid)));
      }
      if ((rc = expect_zero(name, "aux", h.aux, "", what)) != ROCL_OK) return rc;
      return expect_zero(name, "body_len", h.body_len, ": a spawn done has no body", what);
  }
  return bad(what, "an unknown op");  // not reached: the op was checked above
}

int check_announce_body(std::uint16_t udp_port, std::string *what) {
  if (udp_port == 0) {
    return bad(what, "ANNOUNCE with udp port 0 (the server's peer port is never 0)");
  }
  return ROCL_OK;
}

JobSecret::Digest mac(const JobSecret &secret, std::span<const std::byte> signed_bytes) {
  return secret.prove(kMacLabel, {reinterpret_cast<const std::uint8_t *>(signed_bytes.data()),
                                  signed_bytes.size()});
}

}  // namespace

const char *op_name(std::uint16_t op) noexcept {
  switch (static_cast<Op>(op)) {
    case Op::kAnnounce:
      return "ANNOUNCE";
    case Op::kBye:
      return "BYE";
    case Op::kQuery:
      return "QUERY";
    case Op::kAnswer:
      return "ANSWER";
    case Op::kNext:
      return "NEXT";
    case Op::kSpawn:
      return "SPAWN";
    case Op::kSpawned:
      return "SPAWNED";
  }
  return "an unknown op";
}

int seal(const Packet &p, const JobSecret &secret, std::vector<std::byte> *out) {
  Header h;
  h.op = static_cast<std::uint16_t>(p.op);
  h.server = p.server;
  h.flags = p.flags;
  h.incarnation = p.incarnation;
  h.seq = p.seq;
  h.sent_ms = p.sent_ms;
  h.query = p.query;
  h.gid = p.gid;
  h.aux = p.aux;
  const bool valid_op = h.op >= 1 && h.op <= kMaxOp;
  const bool listed = valid_op && has_list(p.op, p.flags);
  std::size_t body = 0;
  if (listed) {
    body = p.list.bytes().size();
    if (body > kMaxBody) {
      return fail(ROCL_ENOSPC,
                  "peer packet: %s with an attribute list of %zu bytes: a datagram has room for "
                  "%zu bytes of body at most (%zu bytes in all)",
                  op_name(h.op), body, kMaxBody, kMaxDatagram);
    }
    if (body < AttrList::kHeaderBytes) {
      return fail(ROCL_EINVAL, "peer packet: %s with a moved-from attribute list", op_name(h.op));
    }
  } else if (p.op == Op::kAnnounce) {
    body = kAnnounceBodyBytes;
  }
  h.body_len = static_cast<std::uint32_t>(body);
  std::string what;
  if (check_header(h, &what) != ROCL_OK) {
    return fail(ROCL_EINVAL, "peer packet not sealed: %s", what.c_str());
  }
  if (!listed && !p.list.empty()) {
    return fail(ROCL_EINVAL, "peer packet not sealed: %s%s with a list of %zu attributes (%s)",
                op_name(h.op), p.op == Op::kAnswer ? " with kNone" : "", p.list.count(),
                p.op == Op::kAnswer ? "no match has no list" : "it carries no list");
  }
  if (p.op == Op::kAnnounce) {
    if (check_announce_body(p.udp_port, &what) != ROCL_OK) {
      return fail(ROCL_EINVAL, "peer packet not sealed: %s", what.c_str());
    }
  } else if (p.tcp_port != 0 || p.udp_port != 0 || p.removals != 0) {
    return fail(ROCL_EINVAL,
                "peer packet not sealed: %s with tcp port %u, udp port %u, removals %u (only "
                "ANNOUNCE carries them)",
                op_name(h.op), static_cast<unsigned>(p.tcp_port), static_cast<unsigned>(p.udp_port),
                static_cast<unsigned>(p.removals));
  }

  std::vector<std::byte> d(kHeaderBytes + body + kMacBytes);
  encode_header(h, d.data());
  std::byte *b = d.data() + kHeaderBytes;
  if (listed) {
    std::memcpy(b, p.list.bytes().data(), body);
  } else if (p.op == Op::kAnnounce) {
    put<std::uint16_t>(b, p.tcp_port);
    put<std::uint16_t>(b + 2, p.udp_port);
    put<std::uint32_t>(b + 4, p.removals);
  }
  const JobSecret::Digest digest = mac(secret, std::span(d).first(kHeaderBytes + body));
  std::memcpy(d.data() + kHeaderBytes + body, digest.data(), kMacBytes);
  *out = std::move(d);
  return ROCL_OK;
}

int open(std::span<const std::byte> datagram, const JobSecret &secret, Packet *out,
         std::string *what) {
  const std::size_t size = datagram.size();
  if (size < kHeaderBytes + kMacBytes) {
    return bad(what, format("a datagram of %zu bytes (a peer packet has at least %zu: a %zu-byte "
                            "header and a %zu-byte MAC)",
                            size, kHeaderBytes + kMacBytes, kHeaderBytes, kMacBytes));
  }
  if (size > kMaxDatagram) {
    return bad(what, format("a datagram of %zu bytes (a peer packet has at most %zu)", size,
                            kMaxDatagram));
  }
  const Header h = decode_header(datagram.data());
  if (check_header(h, what) != ROCL_OK) {
    return ROCL_EINVAL;
  }
  const std::size_t between = size - kHeaderBytes - kMacBytes;
  if (h.body_len != between) {
    return bad(what, format("%s with body_len %llu but %zu bytes lie between the header and the "
                            "MAC",
                            op_name(h.op), static_cast<ull>(h.body_len), between));
  }
  const auto signed_bytes = datagram.first(kHeaderBytes + between);
  JobSecret::Digest proof{};
  std::memcpy(proof.data(), datagram.data() + kHeaderBytes + between, kMacBytes);
  if (!secret.verify(
          kMacLabel,
          {reinterpret_cast<const std::uint8_t *>(signed_bytes.data()), signed_bytes.size()},
          proof)) {
    return bad(what, format("%s from server %llu with a bad MAC (not signed with this job's "
                            "secret)",
                            op_name(h.op), static_cast<ull>(h.server)));
  }

  // Authenticated: now the body.
  Packet p;
  p.op = static_cast<Op>(h.op);
  p.server = h.server;
  p.flags = h.flags;
  p.incarnation = h.incarnation;
  p.seq = h.seq;
  p.sent_ms = h.sent_ms;
  p.query = h.query;
  p.gid = h.gid;
  p.aux = h.aux;
  const auto body = datagram.subspan(kHeaderBytes, between);
  if (p.op == Op::kAnnounce) {  // body_len is 8: check_header
    p.tcp_port = get<std::uint16_t>(body.data());
    p.udp_port = get<std::uint16_t>(body.data() + 2);
    p.removals = get<std::uint32_t>(body.data() + 4);
    if (check_announce_body(p.udp_port, what) != ROCL_OK) return ROCL_EINVAL;
  } else if (has_list(p.op, p.flags)) {
    if (AttrList::decode(body, p.list) != ROCL_OK) {
      return bad(what, format("%s with a bad attribute list in its body: %s", op_name(h.op),
                              last_error()));
    }
  }
  *out = std::move(p);
  return ROCL_OK;
}

bool ReplayGuard::refuse(std::string *why, std::string sentence) {
  refused_ += 1;
  *why = std::move(sentence);
  return false;
}

bool ReplayGuard::accept(const Packet &p, std::uint64_t now_ms, std::string *why) {
  const char *name = op_name(static_cast<std::uint16_t>(p.op));
  if (p.server == 0 || p.server > kMaxServerId) {
    return refuse(why, format("%s from server %llu (server ids are 1..%llu)", name,
                              static_cast<ull>(p.server), static_cast<ull>(kMaxServerId)));
  }
  const bool old = p.sent_ms < now_ms;
  const std::uint64_t skew = old ? now_ms - p.sent_ms : p.sent_ms - now_ms;
  if (skew > kMaxSkewMs) {
    return refuse(why, format("%s from server %llu with sent_ms %llu, %llu ms %s this server's "
                              "clock (%llu): more than %llu ms apart (a replay, or clocks out "
                              "of step)",
                              name, static_cast<ull>(p.server), static_cast<ull>(p.sent_ms),
                              static_cast<ull>(skew), old ? "behind" : "ahead of",
                              static_cast<ull>(now_ms), static_cast<ull>(kMaxSkewMs)));
  }
  if (p.incarnation == 0 || p.seq == 0) {
    return refuse(why, format("%s from server %llu with incarnation 0x%llx, seq %llu (neither "
                              "is ever 0)",
                              name, static_cast<ull>(p.server), static_cast<ull>(p.incarnation),
                              static_cast<ull>(p.seq)));
  }
  Server &server = servers_[p.server];
  Incarnation *inc = nullptr;
  Incarnation *victim = &server[0];
  for (Incarnation &i : server) {
    if (i.id == p.incarnation) {
      inc = &i;
      break;
    }
    // A free slot first, else the least recently used one.
    if (victim->id != 0 && (i.id == 0 || i.last_use < victim->last_use)) {
      victim = &i;
    }
  }
  if (inc == nullptr) {
    if (victim->id == 0) {
      tracked_ += 1;
    }
    *victim = Incarnation{.id = p.incarnation, .top = p.seq, .mask = 1, .last_use = ++uses_};
    return true;
  }
  if (p.seq > inc->top) {
    const std::uint64_t shift = p.seq - inc->top;
    inc->mask = shift >= kWindow ? 0 : inc->mask << shift;
    inc->mask |= 1;
    inc->top = p.seq;
  } else {
    const std::uint64_t behind = inc->top - p.seq;
    if (behind >= kWindow) {
      return refuse(why, format("%s from server %llu incarnation 0x%llx with seq %llu, older "
                                "than the last %llu seqs (the newest is %llu): too late or a "
                                "replay",
                                name, static_cast<ull>(p.server), static_cast<ull>(p.incarnation),
                                static_cast<ull>(p.seq), static_cast<ull>(kWindow),
                                static_cast<ull>(inc->top)));
    }
    const std::uint64_t bit = std::uint64_t{1} << behind;
    if ((inc->mask & bit) != 0) {
      return refuse(why, format("%s from server %llu incarnation 0x%llx with seq %llu, "
                                "accepted before: a replay or a duplicate",
                                name, static_cast<ull>(p.server), static_cast<ull>(p.incarnation),
                                static_cast<ull>(p.seq)));
    }
    inc->mask |= bit;
  }
  inc->last_use = ++uses_;
  return true;
}

}  // namespace rocl::impl::peerproto
