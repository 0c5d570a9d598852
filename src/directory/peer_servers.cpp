// peer_servers.cpp - the other directory servers of a job (peer_servers.hpp).
#include "directory/peer_servers.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "directory/directory.hpp"
#include "os/net.hpp"
#include "status/status.hpp"

namespace rocl::impl {
namespace {

using peerproto::Op;

std::uint64_t realtime_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

std::string name_of(const sockaddr_in &a) {
  return os::ipv4_text(a.sin_addr) + ":" + std::to_string(ntohs(a.sin_port));
}

// "ADDRESS[:PORT]" (ADDRESS an IPv4 literal or an interface).
bool parse_peer(const std::string &text, std::uint16_t default_port, sockaddr_in *out) {
  const auto colon = text.rfind(':');
  std::string host = text;
  long port = default_port;
  if (colon != std::string::npos) {
    host = text.substr(0, colon);
    char *end = nullptr;
    port = std::strtol(text.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || colon + 1 == text.size()) return false;
  }
  if (port <= 0 || port > 65535) return false;
  std::memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<std::uint16_t>(port));
  return host != "any" && os::resolve_ipv4(host, &out->sin_addr);
}

// Up to `most` matches of `pattern` after `after` at this server, in
// increasing gid, their lists adding up to at most kReplyBytes (one at
// least); *more: another match follows the last.
constexpr std::size_t kReplyBytes = 48 * 1024;
// The first batch of a multi-answer query: all servers answer at once.
constexpr std::size_t kFirstBatch = 16;
std::vector<PeerServers::Answer> matches(const LocalDirectory &dir, const AttrList &pattern,
                                         rocl_gid_t after, std::size_t most, bool *more) {
  std::vector<PeerServers::Answer> out;
  std::size_t bytes = 0;
  *more = dir.scan(pattern, after, [&](rocl_gid_t gid, const AttrList &list) {
    const std::size_t len = list.bytes().size();
    if (out.size() == most || (!out.empty() && bytes + len > kReplyBytes)) return false;
    bytes += len;
    PeerServers::Answer a;
    a.gid = gid;
    a.list = list;
    out.push_back(std::move(a));
    return true;
  });
  return out;
}

}  // namespace

PeerServers::PeerServers(const JobSecret &secret, std::uint16_t server_id, PeerConfig config,
                         const LocalDirectory &directory, LogFn log)
    : secret_(secret),
      id_(server_id),
      config_(std::move(config)),
      directory_(directory),
      log_(std::move(log)) {}

PeerServers::~PeerServers() {
  if (config_.socket_fd >= 0) ::close(config_.socket_fd);  // handed over, never opened
  if (fd_ >= 0) {
    announce(Op::kBye);
    ::close(fd_);
  }
}

int PeerServers::open() {
  in_addr local{};
  if (!os::resolve_ipv4(config_.bind, &local)) {
    return fail(ROCL_EINVAL,
                "directory peers: bind '%s' is neither an IPv4 address, an interface with one, "
                "'auto' nor 'loopback'",
                config_.bind.c_str());
  }
  for (const std::string &p : config_.peers) {
    sockaddr_in a{};
    if (!parse_peer(p, config_.port, &a)) {
      return fail(ROCL_EINVAL, "directory peers: '%s' is not ADDRESS[:PORT]", p.c_str());
    }
    unicast_peers_.push_back(a);
  }
  fd_ = config_.socket_fd >= 0 ? config_.socket_fd
                               : ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  config_.socket_fd = -1;  // ours now
  if (fd_ < 0) return fail(ROCL_EPEER, "directory peers: socket(): %s", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd_, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  // Replies come in bursts (every server's batch at once): room for them,
  // beyond net.core.rmem_max where we may (root), as much as allowed else.
  const int room = 8 << 20;
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof room) != 0) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
  }
  // Bound to every address: a socket bound to its unicast address would
  // not receive the network's broadcasts.
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(config_.port);
  socklen_t alen = sizeof a;
  const bool bound = ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &alen) == 0 &&
                     a.sin_port != 0;  // handed over bound
  if (!bound) {
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(config_.port);
  }
  if ((!bound && ::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) ||
      ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &alen) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    return fail(err == EADDRINUSE ? ROCL_EBUSY : ROCL_EPEER,
                "directory peers: bind to udp port %u: %s", config_.port, std::strerror(err));
  }
  port_ = ntohs(a.sin_port);
  in_addr b{};
  if (config_.broadcast && os::broadcast_of(local, &b)) {
    broadcast_.sin_family = AF_INET;
    broadcast_.sin_addr = b;
    broadcast_.sin_port = htons(port_);
  }
  while (incarnation_ == 0) JobSecret::random_bytes(&incarnation_, sizeof incarnation_);
  start_ms_ = realtime_ms();
  announce(Op::kAnnounce);
  return ROCL_OK;
}

bool PeerServers::seal(peerproto::Packet &p, std::vector<std::byte> *out) {
  p.server = id_;
  p.incarnation = incarnation_;
  p.seq = ++seq_;
  p.sent_ms = realtime_ms();
  const int rc = peerproto::seal(p, secret_, out);
  if (rc != ROCL_OK && log_) log_(std::string("directory peers: ") + last_error());
  return rc == ROCL_OK;
}

void PeerServers::send_to(const sockaddr_in &to, const std::vector<std::byte> &datagram) {
  ::sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
           reinterpret_cast<const sockaddr *>(&to), sizeof to);
}

void PeerServers::broadcast(const std::vector<std::byte> &datagram) {
  if (broadcast_.sin_port != 0) send_to(broadcast_, datagram);
  for (const sockaddr_in &p : unicast_peers_) send_to(p, datagram);
}

peerproto::Packet PeerServers::presence(Op op) const {
  peerproto::Packet p;
  p.op = op;
  if (op == Op::kAnnounce) {
    p.aux = start_ms_;
    p.tcp_port = config_.directory_tcp_port;
    p.udp_port = port_;
    p.removals = removals_;
  }
  return p;
}

void PeerServers::announce(Op op) {
  peerproto::Packet p = presence(op);
  std::vector<std::byte> d;
  if (seal(p, &d)) broadcast(d);
  next_announce_ = Clock::now() + config_.announce_every;
}

void PeerServers::announce_to(const sockaddr_in &to) {
  peerproto::Packet p = presence(Op::kAnnounce);
  std::vector<std::byte> d;
  if (seal(p, &d)) send_to(to, d);
}

void PeerServers::on_readable() {
  std::vector<std::byte> buf(peerproto::kMaxDatagram + 1);
  for (;;) {
    sockaddr_in from{};
    socklen_t flen = sizeof from;
    const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr *>(&from), &flen);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN, or an ICMP error of an earlier send: nothing to read
    }
    peerproto::Packet p;
    std::string what;
    if (peerproto::open(std::span(buf.data(), static_cast<std::size_t>(n)), secret_, &p, &what) !=
        ROCL_OK) {
      ignore(Ignored::kNotOurs, from, "a datagram from " + name_of(from) + " with " + what);
      continue;
    }
    handle(p, from);
  }
}

void PeerServers::ignore(Ignored kind, const sockaddr_in &from, const std::string &what) {
  ++ignored_;
  if (ignored_said_.size() > kMaxSaid) return;
  if (!ignored_said_.emplace(from.sin_addr.s_addr, kind).second) return;
  if (!log_) return;
  if (ignored_said_.size() > kMaxSaid) {
    log_("directory peers: ignored datagrams from more than " + std::to_string(kMaxSaid) +
         " sources; further ones are only counted");
  } else {
    log_("directory peers: ignored " + what +
         " (further ones of this kind from there are only "
         "counted)");
  }
}

void PeerServers::handle(const peerproto::Packet &p, const sockaddr_in &from) {
  if (p.server == id_) {
    if (p.incarnation == incarnation_) return;  // our own broadcast
    ++ignored_;
    if (p.op == Op::kAnnounce && !conflict_) {
      // Two servers with one id: the younger stops issuing gids.
      const bool younger =
          start_ms_ > p.aux || (start_ms_ == p.aux && incarnation_ > p.incarnation);
      if (!younger) {
        // Make sure the younger hears of us, whatever its list of peers.
        announce_to(from);
      } else {
        conflict_ = true;
        conflict_why_ = "directory server id " + std::to_string(id_) +
                        " is also used by the server at " + name_of(from) +
                        ", which started first; this server issues no gids (give each host's "
                        "rocld its own --server-id)";
        if (log_) log_("directory peers: " + conflict_why_);
      }
    }
    return;
  }
  std::string why;
  if (!guard_.accept(p, realtime_ms(), &why)) {
    ignore(Ignored::kRefused, from, "a packet from " + name_of(from) + ": " + why);
    return;
  }
  heard(p, from);
  switch (p.op) {
    case Op::kAnnounce:
      return;
    case Op::kBye:
      drop(p.server, "said goodbye");
      return;
    case Op::kQuery:
    case Op::kNext:
      answer_query(p, from);
      return;
    case Op::kAnswer:
      take_answer(p);
      return;
    case Op::kSpawn:
      serve_spawn(p, from);
      return;
    case Op::kSpawned:
      take_spawned(p);
      return;
  }
}

void PeerServers::serve_spawn(const peerproto::Packet &p, const sockaddr_in &from) {
  const ServedKey key{p.server, p.incarnation, p.query};
  auto [it, fresh] = served_.try_emplace(key);
  if (!fresh) {
    send_spawned(key, it->second);  // a resend: say how far it got
    return;
  }
  constexpr std::size_t kMaxServed = 4096;
  if (served_.size() > kMaxServed || !spawn_handler_) {
    Served &s = it->second;
    s.done = true;
    s.status = ROCL_EPEER;
    s.why = spawn_handler_ ? "rocl_spawn: the host's directory server has " +
                                 std::to_string(kMaxServed) + " spawns to remember already"
                           : "rocl_spawn: the host's directory server does not spawn processes";
    s.forget_at = Clock::now() + kSpawnMemory;
    send_spawned(key, s);
    return;
  }
  send_spawned(key, it->second);  // still starting: the asker waits on
  (void)from;
  spawn_handler_(p.server, p.list, p.aux,
                 [this, key](int status, rocl_gid_t gid, const std::string &why) {
                   auto found = served_.find(key);
                   if (found == served_.end()) return;
                   Served &s = found->second;
                   s.done = true;
                   s.status = status;
                   s.gid = gid;
                   s.why = why;
                   s.forget_at = Clock::now() + kSpawnMemory;
                   send_spawned(key, s);
                 });
}

void PeerServers::send_spawned(const ServedKey &key, const Served &s) {
  auto peer = table_.find(std::get<0>(key));
  if (peer == table_.end()) return;  // the asker left: nobody to tell
  peerproto::Packet reply;
  reply.op = Op::kSpawned;
  reply.query = std::get<2>(key);
  if (!s.done) {
    reply.flags = peerproto::kMore;
  } else if (s.status < 0) {
    reply.flags = peerproto::kNone;
    reply.aux = static_cast<std::uint64_t>(
        -std::max(s.status, -static_cast<int>(peerproto::kMaxSpawnError)));
    AttrList why(static_cast<int>(s.why.size() + 64));
    why.add("why", s.why);
    reply.list = std::move(why);
  } else {
    reply.gid = s.gid;
  }
  std::vector<std::byte> d;
  if (seal(reply, &d)) send_to(peer->second.address, d);
}

void PeerServers::take_spawned(const peerproto::Packet &p) {
  auto it = pending_.find(p.query);
  if (it == pending_.end()) return;  // late, or a duplicate
  Pending &q = it->second;
  if (q.kind != Kind::kSpawn || p.server != q.target) return;
  if (p.flags == peerproto::kMore) {
    // Alive and starting it: ask again later, as often as it takes.
    q.tries_left = config_.unicast_tries * 2;
    q.deadline = Clock::now() + config_.unicast_timeout * 2;
    return;
  }
  if (p.flags == peerproto::kNone) {
    std::size_t len = 0;
    const std::byte *why = p.list.get("why", &len);
    finish(p.query, -static_cast<int>(p.aux),
           why != nullptr
               ? std::string(reinterpret_cast<const char *>(why), len)
               : std::string("rocl_spawn failed on directory server ") + std::to_string(p.server));
    return;
  }
  Answer a;
  a.server = p.server;
  a.gid = p.gid;
  q.answers.push_back(std::move(a));
  finish(p.query, ROCL_OK, {});
}

void PeerServers::heard(const peerproto::Packet &p, const sockaddr_in &from) {
  auto [it, fresh] = table_.try_emplace(p.server);
  Peer &peer = it->second;
  const bool restarted = !fresh && peer.incarnation != p.incarnation;
  peer.address = from;
  peer.heard = Clock::now();
  if (p.op == Op::kAnnounce) {
    peer.start_ms = p.aux;
    peer.tcp_port = p.tcp_port;
    const bool changed = !fresh && !restarted && peer.removals != p.removals;
    peer.removals = p.removals;
    if (changed && removal_) removal_(p.server);
  }
  peer.incarnation = p.incarnation;
  if (fresh || restarted) {
    if (log_) {
      log_("directory peers: server " + std::to_string(p.server) + " at " + name_of(from) +
           (fresh ? " joined" : " restarted"));
    }
    if (restarted && dropped_) dropped_(p.server);  // what it held is gone
    // Tell a newcomer about us now rather than at our next period.
    if (p.op != Op::kBye) announce_to(from);
  }
}

void PeerServers::answer_query(const peerproto::Packet &p, const sockaddr_in &from) {
  std::vector<Answer> found;
  bool more = false;
  if (p.op == Op::kQuery && p.gid != 0) {
    AttrList all(1);
    found = matches(directory_, all, p.gid - 1, 1, &more);
    if (!found.empty() && found.front().gid != p.gid) found.clear();
    more = false;
  } else {
    // A multi-answer query's next gets a whole batch, its start (which
    // every server answers at once) a smaller one, a search one answer.
    const std::size_t most = p.op == Op::kNext                    ? peerproto::kMaxBatch
                             : (p.flags & peerproto::kMulti) != 0 ? kFirstBatch
                                                                  : 1;
    found = matches(directory_, p.list, p.op == Op::kNext ? p.gid : p.aux, most, &more);
  }
  const bool search = p.op == Op::kQuery && p.gid == 0 && (p.flags & peerproto::kMulti) == 0;
  if (found.empty() && search) return;  // only servers that have a match answer a search
  peerproto::Packet reply;
  reply.op = Op::kAnswer;
  reply.query = p.query;
  std::vector<std::byte> d;
  if (found.empty()) {
    reply.flags = peerproto::kNone;
    if (seal(reply, &d)) send_to(from, d);
    return;
  }
  const std::uint64_t total = found.size();
  for (std::size_t i = 0; i < found.size(); ++i) {
    reply.gid = found[i].gid;
    reply.list = std::move(found[i].list);
    reply.aux = total << 16 | i;
    // More after this batch: said by its last answer.
    reply.flags = more && i + 1 == found.size() ? peerproto::kMore : 0;
    if (seal(reply, &d)) {
      send_to(from, d);
    } else if (log_) {
      log_("directory peers: resource " + describe_gid(reply.gid) + " not reported to server " +
           std::to_string(p.server) + ": its attribute list does not fit a datagram");
    }
  }
}

void PeerServers::take_answer(const peerproto::Packet &p) {
  auto it = pending_.find(p.query);
  if (it == pending_.end()) return;  // late (timed out) or a duplicate
  Pending &q = it->second;
  if ((q.kind == Kind::kLookup || q.kind == Kind::kNext) && p.server != q.target) return;
  if (q.kind == Kind::kMulti &&
      std::find(q.awaited.begin(), q.awaited.end(), p.server) == q.awaited.end()) {
    return;
  }
  if ((p.flags & peerproto::kNone) == 0) {
    // One answer of the server's batch: the reply is whole with all of them.
    Batch &b = q.batches[p.server];
    const unsigned total = static_cast<unsigned>(p.aux >> 16);
    const unsigned index = static_cast<unsigned>(p.aux & 0xffff);
    if (b.total == 0) b.total = total;
    if (total != b.total || (b.seen >> index & 1) != 0) return;  // another reply's, or again
    b.seen |= std::uint64_t{1} << index;
    Answer a;
    a.server = p.server;
    a.gid = p.gid;
    a.more = (p.flags & peerproto::kMore) != 0;
    a.list = p.list;
    b.answers.push_back(std::move(a));
    if (b.answers.size() < b.total) return;
    for (Answer &x : b.answers) q.answers.push_back(std::move(x));
    q.batches.erase(p.server);
  }
  if (q.kind == Kind::kMulti) {
    q.awaited.erase(std::find(q.awaited.begin(), q.awaited.end(), p.server));
    if (!q.awaited.empty()) return;
  } else if (q.kind == Kind::kSearch && q.answers.empty()) {
    return;  // a search waits for a match
  }
  finish(p.query, ROCL_OK, {});
}

void PeerServers::finish(std::uint64_t id, int status, const std::string &why) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending q = std::move(it->second);
  pending_.erase(it);
  std::sort(q.answers.begin(), q.answers.end(),
            [](const Answer &x, const Answer &y) { return x.gid < y.gid; });
  q.done(status, std::move(q.answers), why);
}

std::uint64_t PeerServers::ask(Kind kind, peerproto::Packet &p, std::uint16_t target, Done done) {
  const std::uint64_t id = next_query_++;
  p.query = id;
  std::vector<std::byte> d;
  if (!seal(p, &d)) {
    const std::string why = last_error();
    done(ROCL_ENOSPC, {}, why);
    return 0;
  }
  Pending q;
  q.kind = kind;
  q.done = std::move(done);
  q.target = target;
  q.request = p;
  if (kind == Kind::kLookup || kind == Kind::kNext || kind == Kind::kSpawn) {
    send_to(table_.at(target).address, d);
  } else {
    broadcast(d);
  }
  if (kind == Kind::kMulti) q.awaited = live();
  q.tries_left = kind == Kind::kSearch  ? 0
                 : kind == Kind::kSpawn ? config_.unicast_tries * 2
                                        : config_.unicast_tries - 1;
  q.deadline = Clock::now() + (kind == Kind::kSearch  ? config_.search_window
                               : kind == Kind::kSpawn ? config_.unicast_timeout * 2
                                                      : config_.unicast_timeout);
  pending_.emplace(id, std::move(q));
  return id;
}

void PeerServers::resend(Pending &q) {
  // Under a new seq: the replay guard refuses a seq it has seen.
  std::vector<std::byte> d;
  if (!seal(q.request, &d)) return;
  if (q.kind == Kind::kMulti) {
    for (std::uint16_t s : q.awaited) {
      auto it = table_.find(s);
      if (it != table_.end()) send_to(it->second.address, d);
    }
  } else if (auto it = table_.find(q.target); it != table_.end()) {
    send_to(it->second.address, d);
  }
}

void PeerServers::lookup(rocl_gid_t gid, Done done) {
  const std::uint16_t server = gid_server(gid);
  if (table_.count(server) == 0) {
    done(ROCL_ENOTFOUND, {},
         describe_gid(gid) + " belongs to directory server " + std::to_string(server) +
             ", which is not among the live servers of the job");
    return;
  }
  peerproto::Packet p;
  p.op = Op::kQuery;
  p.gid = gid;
  ask(Kind::kLookup, p, server, std::move(done));
}

void PeerServers::search(const AttrList &pattern, Done done) {
  if (table_.empty()) {
    done(ROCL_OK, {}, {});
    return;
  }
  peerproto::Packet p;
  p.op = Op::kQuery;
  p.list = pattern;
  ask(Kind::kSearch, p, 0, std::move(done));
}

void PeerServers::start_multi(const AttrList &pattern, rocl_gid_t after, Done done) {
  if (table_.empty()) {
    done(ROCL_OK, {}, {});
    return;
  }
  peerproto::Packet p;
  p.op = Op::kQuery;
  p.flags = peerproto::kMulti;
  p.aux = after;
  p.list = pattern;
  ask(Kind::kMulti, p, 0, std::move(done));
}

void PeerServers::next(std::uint16_t server, const AttrList &pattern, rocl_gid_t after, Done done) {
  if (table_.count(server) == 0) {
    done(ROCL_EPEER, {},
         "directory server " + std::to_string(server) +
             " left the job while a multi-answer query still had answers there");
    return;
  }
  peerproto::Packet p;
  p.op = Op::kNext;
  p.gid = after;
  p.list = pattern;
  ask(Kind::kNext, p, server, std::move(done));
}

void PeerServers::spawn(std::uint16_t target, const AttrList &request, std::uint64_t limit_ms,
                        Done done) {
  if (table_.count(target) == 0) {
    done(ROCL_EPEER, {},
         "rocl_spawn: the host of directory server " + std::to_string(target) +
             " is not reachable: that server is not among the live servers of the job");
    return;
  }
  peerproto::Packet p;
  p.op = Op::kSpawn;
  p.aux = std::min<std::uint64_t>(limit_ms, peerproto::kMaxSpawnLimitMs);
  p.list = request;
  ask(Kind::kSpawn, p, target, std::move(done));
}

void PeerServers::count_removal() {
  ++removals_;
  announce(Op::kAnnounce);
}

std::vector<std::uint16_t> PeerServers::live() const {
  std::vector<std::uint16_t> ids;
  for (const auto &[server, peer] : table_) ids.push_back(server);
  return ids;
}

void PeerServers::drop(std::uint16_t server, const std::string &why) {
  if (table_.erase(server) == 0) return;
  if (log_) log_("directory peers: server " + std::to_string(server) + " " + why + "; dropped");
  if (dropped_) dropped_(server);
  std::vector<std::uint64_t> failed;
  for (auto &[id, q] : pending_) {
    if (q.kind == Kind::kMulti) {
      auto w = std::find(q.awaited.begin(), q.awaited.end(), server);
      if (w != q.awaited.end()) q.awaited.erase(w);
      if (q.awaited.empty()) failed.push_back(id);
    } else if ((q.kind == Kind::kLookup || q.kind == Kind::kNext || q.kind == Kind::kSpawn) &&
               q.target == server) {
      failed.push_back(id);
    }
  }
  for (std::uint64_t id : failed) {
    const Kind kind = pending_.at(id).kind;
    if (kind == Kind::kMulti) {
      finish(id, ROCL_OK, {});
    } else if (kind == Kind::kSpawn) {
      finish(id, ROCL_EPEER,
             "rocl_spawn: the host of directory server " + std::to_string(server) +
                 " went away before the spawn was done (the server " + why + ")");
    } else {
      finish(id, ROCL_EPEER, "directory server " + std::to_string(server) + " " + why);
    }
  }
}

void PeerServers::on_tick() {
  const auto now = Clock::now();
  if (now >= next_announce_) {
    announce(Op::kAnnounce);
    const auto silence = config_.announce_every * config_.silent_periods;
    std::vector<std::uint16_t> silent;
    for (const auto &[server, peer] : table_) {
      if (now - peer.heard > silence) silent.push_back(server);
    }
    for (std::uint16_t s : silent) {
      drop(s, "was silent for " +
                  std::to_string(
                      std::chrono::duration_cast<std::chrono::milliseconds>(silence).count()) +
                  " ms");
    }
  }
  for (auto it = served_.begin(); it != served_.end();) {
    it = it->second.forget_at <= now ? served_.erase(it) : std::next(it);
  }
  std::vector<std::uint64_t> due;
  for (const auto &[id, q] : pending_) {
    if (now >= q.deadline) due.push_back(id);
  }
  for (std::uint64_t id : due) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    Pending &q = it->second;
    if (q.tries_left > 0) {
      --q.tries_left;
      q.deadline =
          now + (q.kind == Kind::kSpawn ? config_.unicast_timeout * 2 : config_.unicast_timeout);
      resend(q);
      continue;
    }
    if (q.kind == Kind::kSearch) {
      finish(id, ROCL_OK, {});
    } else if (q.kind == Kind::kMulti) {
      std::string missing;
      for (std::uint16_t s : q.awaited) missing += " " + std::to_string(s);
      if (log_) log_("directory peers: a multi-answer query went on without servers" + missing);
      finish(id, ROCL_OK, {});
    } else if (q.kind == Kind::kSpawn) {
      finish(id, ROCL_EPEER,
             "rocl_spawn: the host of directory server " + std::to_string(q.target) +
                 " is not reachable: its server did not answer " +
                 std::to_string(config_.unicast_tries * 2 + 1) + " spawn requests " +
                 std::to_string(config_.unicast_timeout.count() * 2) + " ms apart");
    } else {
      finish(id, ROCL_EPEER,
             "directory server " + std::to_string(q.target) + " did not answer " +
                 std::to_string(config_.unicast_tries) + " tries " +
                 std::to_string(config_.unicast_timeout.count()) + " ms apart");
    }
  }
}

PeerServers::Clock::time_point PeerServers::next_deadline() const {
  auto t = next_announce_;
  for (const auto &[id, q] : pending_) t = std::min(t, q.deadline);
  return t;
}

}  // namespace rocl::impl
