// peer_servers.hpp - the other directory servers of a job, as one server
// sees them (RoCL sections 3.3 and 3.4): who is alive, and the questions
// this server asks them and answers for them, over UDP (peer_protocol.hpp).
//
//  - Presence: every server sends ANNOUNCE at start, every
//    `announce_every` and whenever resources leave it (its removal count)
//    to the host network's broadcast address and to each configured peer
//    address, and BYE when it stops. A server unheard for
//    `silent_periods` announce periods is dropped from the live list (and
//    the owner is told: its resources are gone for this server's clients).
//  - Lookup by gid (a send to a resource of another host): a unicast QUERY
//    to the server whose id the gid carries, retried on loss; its ANSWER
//    is the resource's whole attribute list, or kNone.
//  - Search by pattern (a single-answer query that missed locally): a
//    broadcast QUERY; only servers that have a match answer (RoCL 3.3), and
//    the first answer is the result; with none within `search_window` the
//    query is not found.
//  - Multi-answer queries (RoCL 3.4): a broadcast QUERY with kMulti, which
//    every live server answers (a batch of its first matches, or kNone, so
//    that the asker need not wait out a window); then a unicast NEXT to one
//    server whenever the answers it gave are used up, answered by its next
//    batch (up to 64 answers in as many datagrams, about 48 KiB of lists). The asker keeps the
//    state (directory_server.cpp); the answering side keeps none: a NEXT carries the pattern and
//    the gid after which to look.
//  - Spawning on another host (rocl_spawn, spawn_table.hpp): a unicast
//    SPAWN to that host's server, resent every `unicast_timeout` * 2 until
//    it answers. Its server answers every SPAWN at once: SPAWNED with kMore
//    while the process is still starting (the asker then waits on), the
//    final SPAWNED (the context gid, or the failure and its sentence) once
//    it is done, and again to every resend after that (it keeps the outcome
//    for kSpawnMemory). A spawn is started once per (asker, incarnation,
//    request id), however often the request arrives. No word from the host
//    for `unicast_tries` * 2 resends, or the host's server dropped: the
//    spawn fails with ROCL_EPEER naming the server.
//  - Requests from other servers are answered from the LocalDirectory at
//    once, on the server thread.
//  - Every packet is signed with the job secret; a packet that fails to
//    open, that the replay guard refuses, or that comes from our own id
//    with another incarnation is ignored and counted (`ignored()`); the
//    first of each kind is logged. Two servers with one id: the younger one
//    (later start, or the higher address at the same start) says so on its
//    log and refuses registrations from then on (conflict()), so that no
//    gid is ever issued twice by a job that noticed.
//
// Not thread safe: the server's loop thread owns it and calls on_readable
// when fd() is readable and on_tick at the latest by next_deadline().
// Callbacks (Done) run on that thread, inside on_readable/on_tick or the
// call that made them (an immediate failure).
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "directory/attr_list.hpp"
#include "directory/local_directory.hpp"
#include "directory/peer_protocol.hpp"
#include "security/job_secret.hpp"

namespace rocl::impl {

struct PeerConfig {
  // The UDP port every server of the job uses (0: this server has no peers).
  std::uint16_t port = 0;
  // Where to bind and whose broadcast address to use: an address, an
  // interface, "auto" or "loopback" (os::resolve_ipv4).
  std::string bind = "auto";
  // Further servers to tell and ask by unicast ("ADDRESS[:PORT]", the port
  // defaulting to `port`): hosts the broadcast does not reach, or servers
  // on one host's loopback (tests).
  std::vector<std::string> peers;
  // The directory's tcp port, announced (0: none).
  std::uint16_t directory_tcp_port = 0;
  // A UDP socket already bound (to every address) for the server to take
  // over and close, instead of binding `port`: a job whose launcher hands
  // every server the others' addresses (PMIx) binds an ephemeral port
  // first and publishes it. -1: bind `port`.
  int socket_fd = -1;
  // Whether to broadcast on the host network besides telling `peers`
  // (false when `peers` names every other server of the job).
  bool broadcast = true;
  std::chrono::milliseconds announce_every{1000};
  int silent_periods = 3;
  std::chrono::milliseconds search_window{20};
  std::chrono::milliseconds unicast_timeout{50};
  int unicast_tries = 4;
};

class PeerServers {
 public:
  using Clock = std::chrono::steady_clock;
  using LogFn = std::function<void(const std::string &)>;

  struct Answer {
    rocl_gid_t gid = ROCL_NULL_GID;
    std::uint16_t server = 0;
    AttrList list{1};   // the resource's whole list
    bool more = false;  // that server has more matches after this one
  };
  // status ROCL_OK with the answers (none: not found), or a negative code
  // with the sentence in `why`.
  using Done = std::function<void(int status, std::vector<Answer> answers, const std::string &why)>;

  PeerServers(const JobSecret &secret, std::uint16_t server_id, PeerConfig config,
              const LocalDirectory &directory, LogFn log);
  ~PeerServers();  // sends BYE
  PeerServers(const PeerServers &) = delete;
  PeerServers &operator=(const PeerServers &) = delete;

  // Binds the UDP socket and announces. ROCL_OK, or a negative code +
  // fail() (a bind that fails, an unknown bind name, a bad peer address).
  int open();
  int fd() const noexcept { return fd_; }
  std::uint16_t port() const noexcept { return port_; }

  // Reads and handles every datagram waiting.
  void on_readable();
  // Announces when due, drops silent servers, times requests out.
  void on_tick();
  // When on_tick is next due.
  Clock::time_point next_deadline() const;

  // The requests (above). `after`: answers have a larger gid.
  void lookup(rocl_gid_t gid, Done done);
  void search(const AttrList &pattern, Done done);
  void start_multi(const AttrList &pattern, rocl_gid_t after, Done done);
  void next(std::uint16_t server, const AttrList &pattern, rocl_gid_t after, Done done);

  // Spawning (above): done(status, answers, why) with one answer whose gid
  // is the new context's, or status < 0 and the sentence. limit_ms: 0 none.
  void spawn(std::uint16_t target, const AttrList &request, std::uint64_t limit_ms, Done done);
  // The answering side: handler(asker's server id, request, limit_ms,
  // reply) starts a spawn another server asked for; reply(status, gid,
  // why) once, now or later, on the loop thread. Without one, spawns are
  // refused.
  using SpawnReply = std::function<void(int status, rocl_gid_t gid, const std::string &why)>;
  using SpawnHandler = std::function<void(std::uint16_t from, const AttrList &request,
                                          std::uint64_t limit_ms, SpawnReply reply)>;
  void on_spawn(SpawnHandler handler) { spawn_handler_ = std::move(handler); }
  static constexpr std::chrono::seconds kSpawnMemory{60};

  // Ids of the live servers (ourselves excluded), increasing.
  std::vector<std::uint16_t> live() const;
  bool is_live(std::uint16_t server) const { return table_.count(server) != 0; }
  // Another server has our id and we are the younger (see above).
  bool conflict() const noexcept { return conflict_; }
  const std::string &conflict_sentence() const noexcept { return conflict_why_; }
  // Called with the id of a server dropped for silence or BYE.
  void on_dropped(std::function<void(std::uint16_t)> fn) { dropped_ = std::move(fn); }
  // Resources left this server: its removal count goes up and the others
  // hear it at once (an ANNOUNCE), so that routes their clients cached to
  // our resources are checked again (the removal epoch, directory.hpp).
  void count_removal();
  // Called with the id of a server whose removal count changed.
  void on_removal(std::function<void(std::uint16_t)> fn) { removal_ = std::move(fn); }
  // Datagrams ignored (not the job's, malformed, replayed, our own id from
  // another incarnation).
  std::uint64_t ignored() const noexcept { return ignored_; }

 private:
  struct Peer {
    sockaddr_in address{};
    std::uint64_t incarnation = 0;
    std::uint64_t start_ms = 0;
    std::uint16_t tcp_port = 0;
    std::uint32_t removals = 0;
    Clock::time_point heard{};
  };
  enum class Kind { kLookup, kSearch, kMulti, kNext, kSpawn };
  // A spawn another server asked for, by (server, incarnation, request id).
  struct Served {
    bool done = false;
    int status = ROCL_OK;
    rocl_gid_t gid = ROCL_NULL_GID;
    std::string why;
    Clock::time_point forget_at = Clock::time_point::max();
  };
  using ServedKey = std::tuple<std::uint16_t, std::uint64_t, std::uint64_t>;
  // A server's reply in several datagrams (peer_protocol.hpp, ANSWER's aux).
  struct Batch {
    unsigned total = 0;
    std::uint64_t seen = 0;  // bit i: answer i arrived
    std::vector<Answer> answers;
  };
  struct Pending {
    Kind kind = Kind::kLookup;
    Done done;
    Clock::time_point deadline{};
    int tries_left = 0;
    std::uint16_t target = 0;            // unicast: the server asked
    peerproto::Packet request;           // sealed again to resend it
    std::vector<std::uint16_t> awaited;  // multi: servers yet to answer
    std::vector<Answer> answers;
    std::map<std::uint16_t, Batch> batches;  // replies not yet whole, by server
  };

  peerproto::Packet presence(peerproto::Op op) const;  // ANNOUNCE or BYE
  void announce(peerproto::Op op);                     // to everyone
  void announce_to(const sockaddr_in &to);
  void send_to(const sockaddr_in &to, const std::vector<std::byte> &datagram);
  void broadcast(const std::vector<std::byte> &datagram);
  bool seal(peerproto::Packet &p, std::vector<std::byte> *out);
  std::uint64_t ask(Kind kind, peerproto::Packet &p, std::uint16_t target, Done done);
  void resend(Pending &q);
  void handle(const peerproto::Packet &p, const sockaddr_in &from);
  void heard(const peerproto::Packet &p, const sockaddr_in &from);
  void answer_query(const peerproto::Packet &p, const sockaddr_in &from);
  void take_answer(const peerproto::Packet &p);
  void serve_spawn(const peerproto::Packet &p, const sockaddr_in &from);
  void send_spawned(const ServedKey &key, const Served &s);
  void take_spawned(const peerproto::Packet &p);
  void finish(std::uint64_t id, int status, const std::string &why);
  void drop(std::uint16_t server, const std::string &why);
  // Counts an ignored datagram; says the first of each kind from each
  // source (up to kMaxSaid of them) on the log.
  enum class Ignored { kNotOurs, kRefused };
  void ignore(Ignored kind, const sockaddr_in &from, const std::string &what);

  JobSecret secret_;
  std::uint16_t id_;
  PeerConfig config_;
  const LocalDirectory &directory_;
  LogFn log_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  sockaddr_in broadcast_{};  // sin_port 0: none
  std::vector<sockaddr_in> unicast_peers_;
  std::uint64_t incarnation_ = 0;
  std::uint64_t start_ms_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t next_query_ = 1;
  Clock::time_point next_announce_{};
  std::map<std::uint16_t, Peer> table_;
  std::map<std::uint64_t, Pending> pending_;
  peerproto::ReplayGuard guard_;
  std::uint64_t ignored_ = 0;
  static constexpr std::size_t kMaxSaid = 64;
  std::set<std::pair<std::uint32_t, Ignored>> ignored_said_;  // (source address, kind)
  bool conflict_ = false;
  std::string conflict_why_;
  std::function<void(std::uint16_t)> dropped_;
  std::function<void(std::uint16_t)> removal_;
  std::uint32_t removals_ = 0;
  SpawnHandler spawn_handler_;
  std::map<ServedKey, Served> served_;
};

}  // namespace rocl::impl
