// directory_server.cpp - the node directory server (see directory_server.hpp).
#include "directory/directory_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "directory/dir_protocol.hpp"
#include "directory/peer_servers.hpp"
#include "directory/spawn_request.hpp"
#include "os/host.hpp"
#include "os/net.hpp"
#include "status/status.hpp"

namespace rocl::impl {
namespace {

using dirproto::Op;

constexpr std::size_t kReadChunk = 64 * 1024;
// Input buffer bound: one whole message of the largest size plus one read.
constexpr std::size_t kMaxInput = dirproto::kHeaderBytes + dirproto::kMaxBody + kReadChunk;
// Replies waiting for a client that does not read: past this, stop reading it.
constexpr std::size_t kMaxOutput = std::size_t{4} << 20;
constexpr std::size_t kMaxCursors = 256;
constexpr std::size_t kMaxConnections = 1024;
constexpr std::size_t kNoFd = static_cast<std::size_t>(-1);
static_assert(dirproto::kMaxOp < 16, "DirectoryServer::requests_ has a counter per op");

// send() of buf with fd attached as SCM_RIGHTS (to the first byte).
ssize_t send_with_fd(int sock, const std::byte *buf, std::size_t len, int fd) {
  iovec iov{const_cast<std::byte *>(buf), len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  return ::sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// A multi-answer query: its pattern, and with other servers in the job the
// answers they gave that the client has not had yet (RoCL 3.4), by server.
struct Cursor {
  AttrList pattern{1};
  bool global = false;
  std::map<std::uint16_t, std::deque<PeerServers::Answer>> held;
  std::set<std::uint16_t> more_at;  // servers that have more after what is held
};

struct Conn {
  int fd = -1;
  // How the log names the client: "<pid>" (Unix socket) or "<ip>:<port>".
  std::string who;
  // Over tcp: no descriptor can pass, so no removal epoch page.
  bool tcp = false;
  bool proven = false;
  JobSecret::Challenge challenge{};
  std::vector<std::byte> in;
  std::vector<std::byte> out;
  std::size_t out_off = 0;
  std::uint32_t events = 0;
  std::set<rocl_gid_t> contexts;  // registered through this connection
  // Multi-answer queries in progress: cursor id -> state. A cursor is
  // kept only while its last batch said more follow (dir_protocol.hpp).
  std::map<std::uint64_t, Cursor> cursors;
  // A request waits for other servers (peer_servers.hpp): the next ones
  // stay in `in` until its reply is queued.
  bool parked = false;
  std::uint64_t serial = 0;  // tells a reused fd's connection from this one
  std::uint64_t next_cursor = 1;
  // Offset in out of the message that carries the epoch page's descriptor
  // (the reply to PROVE), until it went out; kNoFd otherwise.
  std::size_t fd_at = kNoFd;

  std::size_t pending() const { return out.size() - out_off; }
};

bool fill_sockaddr(const std::string &path, sockaddr_un *sa) {
  std::memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sa->sun_path) {
    return false;
  }
  std::memcpy(sa->sun_path, path.data(), path.size());
  return true;
}

}  // namespace

struct DirectoryServer::Loop {
  int epfd = -1;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  DirectoryServer *srv = nullptr;
  std::uint64_t next_serial = 1;
  bool handling = false;  // inside handle(): a reply made now needs no process()
  // Requests waiting for other servers: the server thread does not spin
  // for the next request then (the other servers need the cpu more).
  std::size_t waiting_for_peers = 0;
  // Connections a callback replied to while another request was being
  // handled: run() goes on with them (their later requests, the flush).
  std::vector<int> touched;

  void log(const std::string &line) const {
    if (srv->log_) {
      srv->log_(line);
    }
  }

  void set_events(Conn &c) {
    std::uint32_t ev = 0;
    if (c.pending() < kMaxOutput) {
      ev |= EPOLLIN;
    }
    if (c.pending() > 0) {
      ev |= EPOLLOUT;
    }
    if (ev != c.events) {
      epoll_event e{};
      e.events = ev;
      e.data.fd = c.fd;
      epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &e);
      c.events = ev;
    }
  }

  void queue(Conn &c, const std::vector<std::byte> &msg) {
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
    }
    c.out.insert(c.out.end(), msg.begin(), msg.end());
  }

  void reply(Conn &c, std::int32_t status, std::uint64_t gid, std::uint64_t aux,
             std::span<const std::byte> body = {}) {
    queue(c, dirproto::encode_message(Op::kReply, status, gid, aux, body));
  }

  void reply_error(Conn &c, int code) { queue(c, dirproto::encode_error(code, last_error())); }

  // Resources left the directory: the removal epoch moves on, before the
  // reply that says so is queued (a client that has the reply sees it).
  void count_removal() {
    bump_epoch();
    if (srv->peers_) srv->peers_->count_removal();
  }
  // Resources may have left another server: routes cached here are checked
  // again (the removal epoch).
  void bump_epoch() {
    if (srv->epoch_) {
      srv->epoch_->bump();
    }
  }

  // Writes what it can. false if the connection failed (and was closed).
  bool flush(Conn &c) {
    while (c.pending() > 0) {
      ssize_t n;
      if (c.fd_at != kNoFd && c.out_off >= c.fd_at) {
        // The reply to PROVE: the page's descriptor rides on its first byte.
        n = send_with_fd(c.fd, c.out.data() + c.out_off, c.pending(), srv->epoch_->fd());
        if (n > 0) {
          c.fd_at = kNoFd;
        }
      } else {
        const std::size_t len = c.fd_at != kNoFd ? c.fd_at - c.out_off : c.pending();
        n = ::send(c.fd, c.out.data() + c.out_off, len, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          break;
        }
        close_conn(c);
        return false;
      }
      c.out_off += static_cast<std::size_t>(n);
    }
    if (c.pending() == 0) {
      c.out.clear();
      c.out_off = 0;
    }
    set_events(c);
    return true;
  }

  // Closes the connection: the contexts registered through it leave the
  // directory with all their resources.
  void close_conn(Conn &c) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.cursors.clear();
    std::size_t removed = 0;
    for (rocl_gid_t ctx : c.contexts) {
      const int n = srv->dir_->remove_context(ctx);
      removed += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    if (removed > 0) {
      count_removal();
      log("directory: client " + c.who + " disconnected; removed " + std::to_string(removed) +
          " resources of its " + std::to_string(c.contexts.size()) + " contexts");
    }
    conns.erase(c.fd);  // destroys c
  }

  // Sends a last reply (best effort) and closes.
  void finish(Conn &c, int code, const std::string &sentence) {
    queue(c, dirproto::encode_error(code, sentence, /*closing=*/true));
    while (c.pending() > 0) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.out_off, c.pending(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) {
        break;
      }
      c.out_off += static_cast<std::size_t>(n);
    }
    close_conn(c);
  }

  void drop(Conn &c, const std::string &what) {
    log("directory: client " + c.who + " sent " + what);
    finish(c, ROCL_EPEER, "directory dropped the connection: the client sent " + what);
  }

  void refuse(Conn &c, const std::string &why) {
    log("directory: client " + c.who + " refused: " + why);
    finish(c, ROCL_EPEER, dirproto::kRefusedSentence);
  }

  void accept_all(int listen_fd, bool tcp) {
    for (;;) {
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      const int fd = ::accept4(listen_fd, tcp ? reinterpret_cast<sockaddr *>(&from) : nullptr,
                               tcp ? &from_len : nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) {
          continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          log(std::string("directory: accept failed: ") + std::strerror(errno));
        }
        return;
      }
      std::string who;
      if (tcp) {
        char ip[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
        who = std::string(ip) + ":" + std::to_string(ntohs(from.sin_port));
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      } else {
        ucred cred{};
        socklen_t len = sizeof cred;
        who = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0
                  ? std::to_string(cred.pid)
                  : std::string("(pid unknown)");
      }
      if (conns.size() >= kMaxConnections) {
        log("directory: client " + who + " refused: " + std::to_string(kMaxConnections) +
            " connections are open already");
        ::close(fd);
        continue;
      }
      auto owned = std::make_unique<Conn>();
      Conn &c = *owned;
      c.fd = fd;
      c.serial = next_serial++;
      c.who = std::move(who);
      c.tcp = tcp;
      c.challenge = JobSecret::random_challenge();
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.fd = fd;
      if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        log(std::string("directory: epoll_ctl failed: ") + std::strerror(errno));
        ::close(fd);
        continue;
      }
      c.events = EPOLLIN;
      conns.emplace(fd, std::move(owned));
      queue(c, dirproto::encode_message(Op::kHello, ROCL_OK, 0, 0,
                                        std::as_bytes(std::span(c.challenge))));
      flush(c);
    }
  }

  // The batch body answering `pattern` after gid `after`, at most `most`
  // answers (dir_protocol.hpp). false + fail() if it would not fit a reply.
  bool batch(const AttrList &pattern, std::uint64_t after, std::uint32_t most, bool *more,
             std::vector<std::byte> *body) {
    dirproto::BatchWriter w(most);
    *more = srv->dir_->scan(pattern, after, [&](rocl_gid_t gid, const AttrList &list) {
      return w.add(gid, list.bytes());
    });
    *body = w.finish(*more);
    if (body->size() > dirproto::kMaxReplyBody) {
      fail(ROCL_EINTERNAL, "rocl_query_next: an answer of %zu bytes does not fit a reply",
           body->size());
      return false;
    }
    return true;
  }

  using Answers = std::vector<PeerServers::Answer>;

  // The callback of a request to other servers for connection c, which
  // parks until then (its later requests wait in `in`). fn(c, status,
  // answers, why) runs only if c is still open; then c goes on.
  template <class Fn>
  PeerServers::Done resume_later(Conn &c, Fn fn) {
    c.parked = true;
    ++waiting_for_peers;
    return [this, fd = c.fd, serial = c.serial, fn = std::move(fn)](
               int status, Answers answers, const std::string &why) mutable {
      if (waiting_for_peers > 0) --waiting_for_peers;
      auto it = conns.find(fd);
      if (it == conns.end() || it->second->serial != serial) return;  // closed meanwhile
      Conn &c = *it->second;
      c.parked = false;
      clear_error();
      fn(c, status, std::move(answers), why);
      if (handling) {
        touched.push_back(c.fd);
      } else if (!c.parked) {
        process(c);  // later requests, and the flush
      }
    };
  }

  // The reply to a QUERY another server answered (gid: the gid asked, or 0
  // for a search).
  void reply_answer(Conn &c, int status, const Answers &answers, const std::string &why,
                    AttrList &attrs, rocl_gid_t gid) {
    if (status < 0) {
      fail(status, "rocl_query: %s", why.c_str());
      reply_error(c, status);
      return;
    }
    if (answers.empty()) {
      if (gid != ROCL_NULL_GID) {
        fail(ROCL_ENOTFOUND, "rocl_query: %s is not registered (its server %u says so)",
             describe_gid(gid).c_str(), gid_server(gid));
      } else {
        fail(ROCL_ENOTFOUND,
             "rocl_query: no resource of the job matches (this server and the %zu others asked)",
             srv->peers_->live().size());
      }
      reply_error(c, ROCL_ENOTFOUND);
      return;
    }
    const PeerServers::Answer &a = answers.front();
    if (attrs.fill_from(a.list) != ROCL_OK) {
      reply_error(c, ROCL_ENOSPC);
      return;
    }
    reply(c, ROCL_OK, a.gid, 0, attrs.bytes());
  }

  // Keeps what other servers answered for a global cursor.
  static void hold(Cursor &cur, Answers &answers) {
    for (PeerServers::Answer &a : answers) {
      const std::uint16_t s = a.server;
      if (a.more) cur.more_at.insert(s);
      cur.held[s].push_back(std::move(a));
    }
  }

  // The next batch of global cursor `id` after gid `after`: servers in
  // increasing id (so gids increase), this one's matches from its DB, the
  // others' from what they answered. When a server's answers are used up
  // and it has more, a batch that has some ends there (the client asks
  // again); an empty one asks that server for its next answer first.
  void global_batch(Conn &c, std::uint64_t id, rocl_gid_t after, std::uint32_t most,
                    bool answers_next) {
    Cursor &cur = c.cursors.at(id);
    std::set<std::uint16_t> servers = cur.more_at;
    servers.insert(srv->server_id_);
    for (const auto &[s, q] : cur.held) servers.insert(s);
    const std::uint16_t from = after == ROCL_NULL_GID ? 0 : gid_server(after);
    dirproto::BatchWriter w(most);
    bool more = false;
    std::uint16_t ask = 0;
    rocl_gid_t ask_after = ROCL_NULL_GID;
    for (std::uint16_t s : servers) {
      if (s < from) continue;
      // From after if it is s's, else from s's first gid (1: before any).
      const rocl_gid_t after_s = gid_server(after) == s ? after : 1;
      if (s == srv->server_id_) {
        more = srv->dir_->scan(cur.pattern, after_s, [&](rocl_gid_t gid, const AttrList &list) {
          return w.add(gid, list.bytes());
        });
        if (more) break;
        continue;
      }
      auto &q = cur.held[s];
      rocl_gid_t last = after_s;
      while (!q.empty() && q.front().gid <= after) q.pop_front();
      while (!q.empty() && w.add(q.front().gid, q.front().list.bytes())) {
        last = q.front().gid;
        q.pop_front();
      }
      if (!q.empty()) {
        more = true;
        break;
      }
      if (cur.more_at.count(s) != 0) {
        if (w.count() > 0) {
          more = true;
          break;
        }
        ask = s;
        ask_after = last;
        break;
      }
      cur.held.erase(s);
    }
    if (ask != 0) {
      srv->peers_->next(
          ask, cur.pattern, ask_after,
          resume_later(c, [this, id, ask, after, most, answers_next](
                              Conn &c, int st, Answers answers, const std::string &why) {
            auto it = c.cursors.find(id);
            if (it == c.cursors.end()) return;
            if (st < 0) {
              c.cursors.erase(it);
              fail(st, "rocl_query_next: %s", why.c_str());
              reply_error(c, st);
              return;
            }
            it->second.more_at.erase(ask);
            hold(it->second, answers);
            global_batch(c, id, after, most, answers_next);
          }));
      return;
    }
    std::vector<std::byte> body = w.finish(more);
    if (!more) c.cursors.erase(id);
    // QUERY_NEXT's reply names its cursor; QUERY_START's only one kept.
    reply(c, ROCL_OK, 0, answers_next || more ? id : 0, body);
  }

  void drain_touched() {
    while (!touched.empty()) {
      const int fd = touched.back();
      touched.pop_back();
      auto it = conns.find(fd);
      if (it != conns.end() && !it->second->parked) process(*it->second);
    }
  }

  // Another server left (or restarted): what it answered is gone.
  void forget_server(std::uint16_t server) {
    for (auto &[fd, c] : conns) {
      for (auto &[id, cur] : c->cursors) {
        cur.held.erase(server);
        cur.more_at.erase(server);
      }
    }
    bump_epoch();
  }

  // Starts a spawn on this host (a client's, or another server's):
  // done(status, gid, why) now or once it is over.
  void spawn_here(const AttrList &list, std::uint64_t limit_ms, SpawnTable::Done done) {
    SpawnRequest request;
    std::string what;
    if (!srv->spawns_) {
      const char *name = std::getenv("ROCL_HOST_NAME");
      done(ROCL_EPEER, ROCL_NULL_GID,
           "rocl_spawn: host " + (name != nullptr && *name != '\0' ? name : os::host_name()) +
               " does not spawn processes: its directory server was not started for it "
               "(roclrun's servers spawn; rocld only with --spawn)");
      return;
    }
    if (decode_spawn_request(list, &request, &what) != ROCL_OK) {
      done(ROCL_EINVAL, ROCL_NULL_GID, "rocl_spawn: the server got " + what);
      return;
    }
    srv->spawns_->start(request, std::chrono::milliseconds(limit_ms), std::move(done));
    srv->spawned_running_.store(srv->spawns_->running(), std::memory_order_relaxed);
  }

  // Handles one checked-header message. false if the connection was closed.
  bool handle(Conn &c, const dirproto::Message &m) {
    const Op op = static_cast<Op>(m.header.op);
    if (!c.proven) {
      if (op != Op::kProve) {
        refuse(c, std::string("it sent ") + dirproto::op_name(m.header.op) +
                      " before proving the job secret");
        return false;
      }
      if (m.body.size() != dirproto::kProofBytes + dirproto::kChallengeBytes) {
        refuse(c, "its PROVE has " + std::to_string(m.body.size()) + " bytes, not 64");
        return false;
      }
      JobSecret::Digest proof;
      std::memcpy(proof.data(), m.body.data(), proof.size());
      if (!srv->secret_.verify(dirproto::kProveLabel, c.challenge, proof)) {
        refuse(c, "job secret proof did not verify");
        return false;
      }
      c.proven = true;
      const JobSecret::Digest mine = srv->secret_.prove(
          dirproto::kServerProveLabel,
          std::span(reinterpret_cast<const std::uint8_t *>(m.body.data()) + proof.size(),
                    dirproto::kChallengeBytes));
      if (srv->epoch_ && !c.tcp) {
        // flush() attaches the page's descriptor to this reply's first byte.
        reply(c, ROCL_OK, 0, dirproto::kEpochPageAttached, std::as_bytes(std::span(mine)));
        c.fd_at = c.out.size() - dirproto::kHeaderBytes - mine.size();
      } else {
        reply(c, ROCL_OK, 0, 0, std::as_bytes(std::span(mine)));
      }
      return true;
    }
    AttrList attrs(1);
    std::string what;
    std::uint32_t most = 0;
    if (dirproto::check_request(m, &attrs, &what, &most) != ROCL_OK) {
      drop(c, what);
      return false;
    }
    srv->requests_[m.header.op].fetch_add(1, std::memory_order_relaxed);
    Directory &dir = *srv->dir_;
    clear_error();
    switch (op) {
      case Op::kProve:
        drop(c, "a second PROVE");
        return false;
      case Op::kRegister: {
        const rocl_gid_t context = m.header.gid;
        if (srv->peers_ && srv->peers_->conflict()) {
          fail(ROCL_EBUSY, "rocl_register: %s", srv->peers_->conflict_sentence().c_str());
          reply_error(c, ROCL_EBUSY);
          break;
        }
        if (context != ROCL_NULL_GID && c.contexts.count(context) == 0) {
          fail(ROCL_EBADGID,
               "rocl_register: context 0x%016llx was not registered through this "
               "directory connection",
               static_cast<unsigned long long>(context));
          reply_error(c, ROCL_EBADGID);
          break;
        }
        const std::int64_t r = dir.register_resource(attrs, context);
        if (r < 0) {
          reply_error(c, static_cast<int>(r));
          break;
        }
        reply(c, ROCL_OK, static_cast<std::uint64_t>(r), 0);
        if (context == ROCL_NULL_GID) {
          c.contexts.insert(static_cast<rocl_gid_t>(r));
          // A spawned process's context: its spawner hears of it now.
          if (srv->spawns_) srv->spawns_->on_register(attrs, static_cast<rocl_gid_t>(r));
        }
        break;
      }
      case Op::kRemove: {
        const int r = dir.remove(m.header.gid);
        if (r < 0) {
          reply_error(c, r);
          break;
        }
        count_removal();
        reply(c, ROCL_OK, 0, 0);
        break;
      }
      case Op::kQuery: {
        rocl_gid_t gid = m.header.gid;
        PeerServers *peers = srv->peers_.get();
        if (peers != nullptr && gid != ROCL_NULL_GID && gid_server(gid) != srv->server_id_) {
          peers->lookup(gid, resume_later(c, [this, attrs, gid](Conn &c, int st, Answers a,
                                                                const std::string &why) mutable {
                          reply_answer(c, st, a, why, attrs, gid);
                        }));
          break;
        }
        const int r = dir.query(&gid, attrs);
        if (r == ROCL_ENOTFOUND && m.header.gid == ROCL_NULL_GID && peers != nullptr) {
          // RoCL 3.3: a query that misses here goes to every server.
          peers->search(attrs, resume_later(c, [this, attrs](Conn &c, int st, Answers a,
                                                             const std::string &why) mutable {
                          reply_answer(c, st, a, why, attrs, ROCL_NULL_GID);
                        }));
          break;
        }
        r < 0 ? reply_error(c, r) : reply(c, ROCL_OK, gid, 0, attrs.bytes());
        break;
      }
      case Op::kQueryStart: {
        if (srv->peers_ && !srv->peers_->live().empty()) {
          if (c.cursors.size() >= kMaxCursors) {
            fail(ROCL_EBUSY, "rocl_query_start: %zu queries are in progress on this connection",
                 c.cursors.size());
            reply_error(c, ROCL_EBUSY);
            break;
          }
          Cursor cur;
          cur.pattern = attrs;
          cur.global = true;
          const rocl_gid_t after = m.header.gid;
          srv->peers_->start_multi(attrs, after,
                                   resume_later(c, [this, cur = std::move(cur), after, most](
                                                       Conn &c, int st, Answers answers,
                                                       const std::string &why) mutable {
                                     if (st < 0) {
                                       fail(st, "rocl_query_start: %s", why.c_str());
                                       reply_error(c, st);
                                       return;
                                     }
                                     hold(cur, answers);
                                     const std::uint64_t id = c.next_cursor++;
                                     c.cursors.emplace(id, std::move(cur));
                                     global_batch(c, id, after, most, false);
                                   }));
          break;
        }
        bool more = false;
        std::vector<std::byte> body;
        if (!batch(attrs, m.header.gid, most, &more, &body)) {
          reply_error(c, ROCL_EINTERNAL);
          break;
        }
        std::uint64_t id = 0;
        if (more) {
          if (c.cursors.size() >= kMaxCursors) {
            fail(ROCL_EBUSY, "rocl_query_start: %zu queries are in progress on this connection",
                 c.cursors.size());
            reply_error(c, ROCL_EBUSY);
            break;
          }
          id = c.next_cursor++;
          Cursor cur;
          cur.pattern = std::move(attrs);
          c.cursors.emplace(id, std::move(cur));
        }
        reply(c, ROCL_OK, 0, id, body);
        break;
      }
      case Op::kQueryNext: {
        auto it = c.cursors.find(m.header.aux);
        if (it == c.cursors.end()) {
          fail(ROCL_EINVAL, "rocl_query_next: no query %llu is in progress on this connection",
               static_cast<unsigned long long>(m.header.aux));
          reply_error(c, ROCL_EINVAL);
          break;
        }
        if (it->second.global) {
          global_batch(c, it->first, m.header.gid, most, true);
          break;
        }
        bool more = false;
        std::vector<std::byte> body;
        if (!batch(it->second.pattern, m.header.gid, most, &more, &body)) {
          reply_error(c, ROCL_EINTERNAL);
          break;
        }
        if (!more) {
          c.cursors.erase(it);  // the client knows it is done
        }
        reply(c, ROCL_OK, 0, m.header.aux, body);
        break;
      }
      case Op::kQueryStop: {
        if (c.cursors.erase(m.header.aux) == 0) {
          fail(ROCL_EINVAL, "rocl_query_stop: no query %llu is in progress on this connection",
               static_cast<unsigned long long>(m.header.aux));
          reply_error(c, ROCL_EINVAL);
          break;
        }
        reply(c, ROCL_OK, 0, 0);
        break;
      }
      case Op::kRemoveContext: {
        const int r = dir.remove_context(m.header.gid);
        if (r < 0) {
          reply_error(c, r);
          break;
        }
        c.contexts.erase(m.header.gid);
        if (r > 0) {
          count_removal();
        }
        reply(c, ROCL_OK, static_cast<std::uint64_t>(r), 0);
        break;
      }
      case Op::kSpawn: {
        const rocl_gid_t where = m.header.gid;
        const std::uint16_t target = where == ROCL_NULL_GID ? srv->server_id_ : gid_server(where);
        PeerServers::Done done =
            resume_later(c, [this](Conn &c, int st, Answers answers, const std::string &why) {
              if (st < 0 || answers.empty()) {
                fail(st < 0 ? st : ROCL_EINTERNAL, "%s", why.c_str());
                reply_error(c, st < 0 ? st : ROCL_EINTERNAL);
                return;
              }
              reply(c, ROCL_OK, answers.front().gid, 0);
            });
        if (target == srv->server_id_) {
          spawn_here(attrs, m.header.aux, [done](int st, rocl_gid_t gid, const std::string &why) {
            Answers answers;
            if (st == ROCL_OK) answers.push_back(PeerServers::Answer{gid, 0, AttrList(1), false});
            done(st, std::move(answers), why);
          });
        } else if (!srv->peers_) {
          done(ROCL_EPEER, {},
               "rocl_spawn: " + describe_gid(where) + " belongs to directory server " +
                   std::to_string(target) +
                   ", and this host's server is not joined to the job's other servers");
        } else {
          srv->peers_->spawn(target, attrs, m.header.aux, std::move(done));
        }
        break;
      }
      case Op::kHello:
      case Op::kReply:
        drop(c, "a server op");  // check_request rejects these already
        return false;
    }
    return true;
  }

  // Handles every whole message in c.in. false if the connection was closed.
  bool process(Conn &c) {
    std::size_t off = 0;
    bool alive = true;
    while (c.pending() < kMaxOutput && !c.parked) {
      dirproto::Message m;
      std::size_t used = 0;
      std::string what;
      const int r = dirproto::parse_message(std::span(c.in).subspan(off), &m, &used, &what);
      if (r == 0) {
        break;
      }
      if (r < 0) {
        drop(c, what);
        return false;
      }
      try {
        handling = true;
        alive = handle(c, m);
        handling = false;
      } catch (const std::bad_alloc &) {
        handling = false;
        drop(c, "a request the server had no memory for");
        return false;
      }
      if (!alive) {
        return false;
      }
      off += used;
    }
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(off));
    return flush(c);
  }

  void on_readable(Conn &c) {
    while (c.pending() < kMaxOutput && c.in.size() < kMaxInput) {
      const std::size_t old = c.in.size();
      const std::size_t want = std::min(kReadChunk, kMaxInput - old);
      c.in.resize(old + want);
      const ssize_t n = ::recv(c.fd, c.in.data() + old, want, MSG_DONTWAIT);
      if (n <= 0) {
        c.in.resize(old);
        if (n < 0 && errno == EINTR) {
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          break;
        }
        close_conn(c);  // EOF or error: the process went away
        return;
      }
      c.in.resize(old + static_cast<std::size_t>(n));
      if (!process(c)) {
        return;
      }
    }
    set_events(c);
  }
};

DirectoryServer::DirectoryServer(std::string socket_path, JobSecret secret, std::uint16_t server_id)
    : path_(std::move(socket_path)), secret_(secret), server_id_(server_id) {
  log_ = [](const std::string &line) { std::fprintf(stderr, "rocld: %s\n", line.c_str()); };
}

DirectoryServer::~DirectoryServer() {
  stop();
}

void DirectoryServer::set_log(LogFn log) {
  log_ = std::move(log);
}

std::uint64_t DirectoryServer::requests(std::uint16_t op) const {
  return op < requests_.size() ? requests_[op].load(std::memory_order_relaxed) : 0;
}

std::size_t DirectoryServer::resources() const {
  return dir_ ? dir_->size() : 0;
}

const std::atomic<std::uint64_t> *DirectoryServer::removal_epoch() const noexcept {
  return epoch_ ? &epoch_->counter() : nullptr;
}

int DirectoryServer::start() {
  if (started_) {
    return fail(ROCL_EBUSY, "directory server on %s: already started", path_.c_str());
  }
  if (server_id_ < 1 || server_id_ > max_server_id(width_)) {
    return fail(ROCL_EINVAL, "directory server: server id %u is outside 1..%u%s", server_id_,
                max_server_id(width_), width_ == GidWidth::kCompact ? " (ROCL_GID_BITS=31)" : "");
  }
  sockaddr_un sa;
  if (!fill_sockaddr(path_, &sa)) {
    return fail(ROCL_EINVAL, "directory server: socket path '%s' is empty or longer than %zu bytes",
                path_.c_str(), sizeof sa.sun_path - 1);
  }
  struct stat st;
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return fail(ROCL_EBUSY, "directory server: %s exists and is not a socket; leaving it alone",
                  path_.c_str());
    }
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
      return fail(ROCL_EPEER, "directory server: socket(): %s", std::strerror(errno));
    }
    const int rc = ::connect(probe, reinterpret_cast<sockaddr *>(&sa), sizeof sa);
    const int err = errno;
    ::close(probe);
    if (rc == 0) {
      return fail(ROCL_EBUSY, "directory server: a server already answers on %s", path_.c_str());
    }
    if (err != ECONNREFUSED) {
      return fail(ROCL_EPEER, "directory server: probing %s: %s", path_.c_str(),
                  std::strerror(err));
    }
    ::unlink(path_.c_str());  // stale: its server is gone
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return fail(ROCL_EPEER, "directory server: socket(): %s", std::strerror(errno));
  }
  if (::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(err == EADDRINUSE ? ROCL_EBUSY : ROCL_EPEER, "directory server: bind(%s): %s",
                path_.c_str(), std::strerror(err));
  }
  ::chmod(path_.c_str(), 0600);
  if (::lstat(path_.c_str(), &st) == 0) {
    socket_ino_ = st.st_ino;
  }
  auto loop = std::make_unique<Loop>();
  loop->srv = this;
  loop->epfd = ::epoll_create1(EPOLL_CLOEXEC);
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  bool ok = ::listen(fd, 128) == 0 && loop->epfd >= 0 && wake >= 0;
  const int err = errno;
  if (ok) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    ok = epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &e) == 0;
    e.data.fd = wake;
    ok = ok && epoll_ctl(loop->epfd, EPOLL_CTL_ADD, wake, &e) == 0;
  }
  if (!ok) {
    ::close(fd);
    if (loop->epfd >= 0) {
      ::close(loop->epfd);
    }
    if (wake >= 0) {
      ::close(wake);
    }
    ::unlink(path_.c_str());
    return fail(ROCL_EPEER, "directory server on %s: listen/epoll setup failed: %s", path_.c_str(),
                std::strerror(err));
  }
  if (!tcp_address_.empty()) {
    const int tfd = open_tcp_listener();
    if (tfd < 0) {
      const std::string why = last_error();
      ::close(fd);
      ::close(loop->epfd);
      ::close(wake);
      ::unlink(path_.c_str());
      return fail(ROCL_EPEER, "%s", why.c_str());
    }
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = tfd;
    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, tfd, &e);
    tcp_fd_ = tfd;
  }
  if (!dir_) {
    dir_ = std::make_unique<LocalDirectory>(server_id_, width_);
  }
  if (!epoch_tried_) {
    epoch_tried_ = true;
    std::string why;
    epoch_ = EpochPage::create(&why);
    if (!epoch_ && log_) {
      log_("directory: no removal epoch page (" + why +
           "); clients will find routes they cached to removed resources stale only when a "
           "send over them fails");
    } else if (epoch_ && !epoch_->write_sealed() && log_) {
      log_(
          "directory: this kernel has no F_SEAL_FUTURE_WRITE; clients could map the removal "
          "epoch page writable");
    }
  }
  if (peer_config_) {
    if (peer_config_->directory_tcp_port == 0) peer_config_->directory_tcp_port = tcp_port_;
    auto peers = std::make_unique<PeerServers>(secret_, server_id_, *peer_config_, *dir_, log_);
    if (peers->open() != ROCL_OK) {
      const std::string why = last_error();
      ::close(fd);
      if (tcp_fd_ >= 0) ::close(tcp_fd_);
      tcp_fd_ = -1;
      ::close(loop->epfd);
      ::close(wake);
      ::unlink(path_.c_str());
      return fail(ROCL_EPEER, "%s", why.c_str());
    }
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = peers->fd();
    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, peers->fd(), &e);
    Loop *l = loop.get();
    peers->on_dropped([l](std::uint16_t server) { l->forget_server(server); });
    peers->on_removal([l](std::uint16_t) { l->bump_epoch(); });
    peers_ = std::move(peers);
  }
  if (spawn_config_) {
    const int epfd = loop->epfd;
    spawns_ = std::make_unique<SpawnTable>(
        *spawn_config_,
        [epfd](int child_fd, bool add) {
          epoll_event e{};
          e.events = EPOLLIN;
          e.data.fd = child_fd;
          epoll_ctl(epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, child_fd, &e);
        },
        [this](const std::string &line) {
          if (log_) log_(line);
        });
    if (host_gid_ == ROCL_NULL_GID) {
      AttrList host(512);
      const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
      host.add("type", std::string_view("rocl-host"));
      host.add("host", std::string_view(spawn_config_->host_name));
      host.add("cpus", std::string_view(std::to_string(cpus > 0 ? cpus : 1)));
      host.add("server", std::string_view(std::to_string(server_id_)));
      const std::int64_t gid = dir_->register_resource(host, ROCL_NULL_GID);
      if (gid > 0) host_gid_ = static_cast<rocl_gid_t>(gid);
    }
  }
  if (peers_) {
    // Other servers' spawns: started here, or refused with this host's name.
    Loop *l = loop.get();
    peers_->on_spawn(
        [l](std::uint16_t, const AttrList &request, std::uint64_t limit_ms,
            PeerServers::SpawnReply reply) { l->spawn_here(request, limit_ms, std::move(reply)); });
  }
  listen_fd_ = fd;
  wake_fd_ = wake;
  loop_ = std::move(loop);
  started_ = true;
  thread_ = std::thread([this] { run(); });
  return ROCL_OK;
}

void DirectoryServer::set_peers(PeerConfig config) {
  peer_config_ = std::move(config);
}

int DirectoryServer::listen_tcp(std::string address) {
  if (started_) {
    return fail(ROCL_EBUSY, "directory server on %s: listen_tcp after start", path_.c_str());
  }
  tcp_address_ = std::move(address);
  return ROCL_OK;
}

int DirectoryServer::open_tcp_listener() {
  const auto colon = tcp_address_.rfind(':');
  const std::string host = colon == std::string::npos ? "any" : tcp_address_.substr(0, colon);
  const std::string port_text =
      colon == std::string::npos ? tcp_address_ : tcp_address_.substr(colon + 1);
  char *end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  in_addr ip{};
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535 ||
      !os::resolve_ipv4(host.empty() ? "any" : host, &ip)) {
    return fail(ROCL_EINVAL,
                "directory server: tcp listen address '%s' is not [ADDRESS|INTERFACE|auto:]PORT",
                tcp_address_.c_str());
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ROCL_EPEER, "directory server: socket(): %s", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = ip;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t alen = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &alen) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(err == EADDRINUSE ? ROCL_EBUSY : ROCL_EPEER,
                "directory server: tcp listen on %s:%ld: %s", os::ipv4_text(ip).c_str(), port,
                std::strerror(err));
  }
  tcp_port_ = ntohs(a.sin_port);
  tcp_ip_ = os::ipv4_text(a.sin_addr);
  return fd;
}

void DirectoryServer::run() {
  Loop &L = *loop_;
  epoll_event events[64];
  using SpinClock = std::chrono::steady_clock;
  SpinClock::time_point spin_until{};  // looks without sleeping until then
  for (;;) {
    int timeout = -1;
    if (peers_) {
      const auto left = peers_->next_deadline() - PeerServers::Clock::now();
      timeout = static_cast<int>(std::clamp<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1, 0, 1000));
    }
    if (spawns_) {
      const auto due = spawns_->next_deadline();
      if (due != SpawnTable::Clock::time_point::max()) {
        const long long ms = std::clamp<long long>(
            std::chrono::duration_cast<std::chrono::milliseconds>(due - SpawnTable::Clock::now())
                    .count() +
                1,
            0, 1000);
        timeout = timeout < 0 ? static_cast<int>(ms) : std::min(timeout, static_cast<int>(ms));
      }
    }
    if (L.waiting_for_peers == 0 && SpinClock::now() < spin_until) timeout = 0;
    const int n = ::epoll_wait(L.epfd, events, 64, timeout);
    if (spawns_) {
      spawns_->on_tick();
      spawned_running_.store(spawns_->running(), std::memory_order_relaxed);
    }
    if (n == 0 && timeout == 0) sched_yield();  // spinning: the client may need this cpu
    if (peers_) {
      peers_->on_tick();
      live_peers_.store(peers_->live().size(), std::memory_order_relaxed);
      ignored_peer_packets_.store(peers_->ignored(), std::memory_order_relaxed);
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      L.log(std::string("directory: epoll_wait failed: ") + std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        return;
      }
      if (peers_ && fd == peers_->fd()) {
        peers_->on_readable();
        live_peers_.store(peers_->live().size(), std::memory_order_relaxed);
        ignored_peer_packets_.store(peers_->ignored(), std::memory_order_relaxed);
        continue;
      }
      if (fd == listen_fd_ || fd == tcp_fd_) {
        L.accept_all(fd, fd == tcp_fd_);
        continue;
      }
      if (spawns_ && spawns_->owns(fd)) {
        spawns_->on_exit(fd);
        spawned_running_.store(spawns_->running(), std::memory_order_relaxed);
        continue;
      }
      auto it = L.conns.find(fd);
      if (it == L.conns.end()) {
        continue;
      }
      // A client asked: its next question may well come at once.
      if (spin_.count() > 0) spin_until = SpinClock::now() + spin_;
      Conn &c = *it->second;
      if (events[i].events & EPOLLOUT) {
        if (!L.flush(c)) {
          continue;
        }
        // Requests held back while the client did not read its replies.
        if (!c.in.empty() && c.pending() < kMaxOutput && !L.process(c)) {
          continue;
        }
      }
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        L.on_readable(c);
      }
    }
    L.drain_touched();
  }
}

void DirectoryServer::stop() {
  if (!started_) {
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
  // Spawned processes end with the server (the job); spawners still
  // waiting hear why.
  if (spawns_) {
    spawns_->stop_all();
    loop_->drain_touched();
    spawns_.reset();
    spawned_running_.store(0, std::memory_order_relaxed);
  }
  while (!loop_->conns.empty()) {
    loop_->close_conn(*loop_->conns.begin()->second);
  }
  peers_.reset();  // says goodbye
  ::close(loop_->epfd);
  ::close(wake_fd_);
  ::close(listen_fd_);
  if (tcp_fd_ >= 0) ::close(tcp_fd_);
  wake_fd_ = listen_fd_ = tcp_fd_ = -1;
  loop_.reset();
  struct stat st;
  if (::lstat(path_.c_str(), &st) == 0 && st.st_ino == socket_ino_) {
    ::unlink(path_.c_str());  // ours (not a later server's)
  }
  started_ = false;
}

}  // namespace rocl::impl
