// tcp_transport.cpp - see tcp_transport.hpp.
#include "transport/tcp/tcp_transport.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/futex.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "wire/validate.hpp"

namespace rocl::impl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kHeaderBytes = sizeof(wire::MessageHeader);

std::string sockaddr_name(const sockaddr_in &a) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// "tcp:1.2.3.4:5" -> sockaddr. False if malformed.
bool parse_address(std::string_view addr, sockaddr_in *out) {
  if (addr.substr(0, 4) != "tcp:") return false;
  addr.remove_prefix(4);
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= addr.size()) return false;
  const std::string host(addr.substr(0, colon));
  unsigned port = 0;
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + static_cast<unsigned>(c - '0');
    if (port > 65535) return false;
  }
  if (port == 0) return false;
  std::memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<std::uint16_t>(port));
  return ::inet_pton(AF_INET, host.c_str(), &out->sin_addr) == 1;
}

// An IPv4 literal, or the first IPv4 address of the interface so named.
bool resolve_bind(const std::string &what, in_addr *out) {
  if (what.empty()) {
    out->s_addr = htonl(INADDR_LOOPBACK);
    return true;
  }
  if (::inet_pton(AF_INET, what.c_str(), out) == 1) return true;
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET && what == i->ifa_name) {
      *out = reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr;
      found = true;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

// Blocking-with-deadline full read/write on a non-blocking socket.
bool io_full(int fd, void *buf, std::size_t len, bool writing, Clock::time_point deadline) {
  auto *p = static_cast<std::uint8_t *>(buf);
  while (len > 0) {
    const ssize_t n = writing ? ::send(fd, p, len, MSG_NOSIGNAL) : ::recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return false;  // EOF while reading
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    ::poll(&pfd, 1, static_cast<int>(left));
  }
  return true;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// The thread parks on the poller count itself: pollers pay nothing to keep it
// parked, and the last one can wake it with a single syscall.
static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
void futex_wait(std::atomic<int> &word, int expected, int timeout_ms) {
  timespec ts{0, timeout_ms * 1000000L};
  ::syscall(SYS_futex, reinterpret_cast<int *>(&word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr,
            0);
}
void futex_wake_all(std::atomic<int> &word) {
  ::syscall(SYS_futex, reinterpret_cast<int *>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
            nullptr, 0);
}

// The transport whose receive lock the calling thread holds (nullptr: none),
// so that send() and progress() called from inside MessageSink::deliver know
// they run on a driver: progress() must not try-lock a mutex its thread owns,
// and send() must not wait for room, as that would stall its own receiving.
thread_local const void *t_driving = nullptr;

class DrivingScope {
 public:
  explicit DrivingScope(const void *transport) : saved_(t_driving) { t_driving = transport; }
  ~DrivingScope() { t_driving = saved_; }
  DrivingScope(const DrivingScope &) = delete;
  DrivingScope &operator=(const DrivingScope &) = delete;

 private:
  const void *saved_;
};

constexpr int kMaxEvents = 64;
// Bytes read from one connection per turn: one busy connection cannot keep a
// driver (maybe a caller in progress()) for long; level-triggered epoll
// reports the rest on the next turn.
constexpr std::uint64_t kTurnBytes = std::uint64_t{4} << 20;

// One message queued for sending, with how far it got.
struct OutMsg {
  BlockHeader *block;
  wire::MessageHeader hdr;  // template: kind, ids, total_length
  const std::byte *data;
  std::uint64_t total;
  std::uint64_t cost;            // counted against Options::max_queued_bytes
  std::uint64_t frame_off = 0;   // payload offset of the current frame
  std::uint64_t frame_sent = 0;  // bytes of the current frame (header + payload) written
};

// kNeedBlock: a first frame's header is validated and its message needs a
// block from the pool; if the pool has none, reading the connection pauses
// in this state (see pause_reading).
enum class Rx { kHello, kProof, kHeader, kNeedBlock, kPayload, kConnectorSide };

// Where one step of the receive state machine leaves a connection.
enum class Step { kMore, kIdle, kDrop };

// What an allocation for an arriving message gave.
enum class Take { kGot, kWait, kNever };

struct Conn {
  Conn(int f, bool out, rocl_gid_t p, std::string name)
      : fd(f), outgoing(out), peer(p), peer_name(std::move(name)) {}

  // Send side and epoll interest: guarded by mu.
  std::mutex mu;
  int fd;
  const bool outgoing;
  const rocl_gid_t peer;
  const std::string peer_name;  // "127.0.0.1:PORT"
  bool dead = false;
  bool want_out = false;
  bool rx_paused = false;  // EPOLLIN removed: waiting for a block
  std::deque<OutMsg> q;
  std::uint64_t queued = 0;  // sum of q's costs

  // Receive side: the driver only (whoever holds the transport's rx_mu_).
  Rx rx = Rx::kHello;
  std::array<std::byte, 64> buf{};
  std::size_t got = 0;
  JobSecret::Challenge challenge{};
  wire::MessageHeader h{};
  BlockHeader *rx_block = nullptr;  // message being received (state kLibrary)
  wire::MessageHeader first{};      // first frame of the message being received
  std::uint64_t rx_done = 0;        // payload bytes of the message received so far
  std::uint64_t frame_left = 0;     // payload bytes of the current frame still to read
  std::uint64_t turn_read = 0;      // bytes read in the current turn (kTurnBytes)
  bool pause_logged = false;
};

Step to_step(bool ok) {
  return ok ? Step::kMore : Step::kDrop;
}

class TcpTransportImpl final : public TcpTransport {
 public:
  TcpTransportImpl(const TransportEnv &env, tcp::LogFn log, const tcp::Options &options)
      : env_(env), log_(std::move(log)), options_(options) {
    if (env_.secret == nullptr) {
      own_secret_ = JobSecret::generate();
      secret_ = &*own_secret_;
    } else {
      secret_ = env_.secret;
    }
    if (!log_) {
      log_ = [](const std::string &s) { std::fprintf(stderr, "rocl: %s\n", s.c_str()); };
    }
    if (options_.max_queued_bytes == 0) options_.max_queued_bytes = tcp::kDefaultMaxQueuedBytes;
  }

  int start() {
    in_addr ip{};
    if (!resolve_bind(env_.bind_address, &ip)) {
      return fail(ROCL_EINVAL, "tcp: bind address '%s' is neither an IPv4 address nor an interface",
                  env_.bind_address.c_str());
    }
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return fail(ROCL_EPEER, "tcp: socket: %s", std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr = ip;
    a.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
      return fail(ROCL_EPEER, "tcp: bind/listen on %s: %s", env_.bind_address.c_str(),
                  std::strerror(errno));
    }
    socklen_t alen = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&a), &alen);
    address_ = "tcp:" + sockaddr_name(a);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) return fail(ROCL_EPEER, "tcp: epoll/eventfd failed");
    // Level-triggered (no EPOLLET) everywhere: the thread's unlocked
    // epoll_wait is only a peek, and a readiness one driver leaves is
    // reported again to the next (see "Progress" in the header).
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listen_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
    ev.data.ptr = &wake_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    thread_ = std::thread([this] { run(); });
    return ROCL_OK;
  }

  ~TcpTransportImpl() override {
    if (thread_.joinable()) {
      stop_.store(true);
      kick();
      futex_wake_all(pollers_);
      thread_.join();
    }
    std::lock_guard lock(mu_);
    for (auto &[c, sp] : all_) close_conn(*sp, false);
    all_.clear();
    peers_.clear();
    paused_.clear();
    for (int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  std::string_view name() const noexcept override { return "tcp"; }
  std::string address() const override { return address_; }
  bool reaches(std::string_view address) const noexcept override {
    return address.substr(0, 4) == "tcp:";
  }
  int register_memory(void *, std::size_t) noexcept override { return ROCL_OK; }

  int progress() noexcept override {
    if (t_driving == this) return 0;  // from inside deliver: this thread is driving already
    std::unique_lock lock(rx_mu_, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    const int n = drive_locked();
    caller_events_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    return n;
  }

  void poll_begin() noexcept override {
    // seq_cst, paired with wait_until_ready(): either the thread sees the
    // count before its epoll_wait, or we see it inside and kick it out.
    if (pollers_.fetch_add(1) == 0 && in_epoll_.load()) kick();
  }

  void poll_end(bool will_sleep) noexcept override {
    // Lazy hand-back: what already arrived is handled now rather than after
    // the thread's next park timeout (kParkMs).
    if (!will_sleep) progress();
    // Prompt hand-back: the last poller wakes the thread, which then polls
    // every descriptor (level-triggered: nothing ready is missed).
    if (pollers_.fetch_sub(1) == 1 && will_sleep) futex_wake_all(pollers_);
  }

  tcp::Stats stats() const noexcept override {
    tcp::Stats s;
    s.refused = refused_.load();
    s.dropped_connections = dropped_.load();
    s.failed_sends = failed_sends_.load();
    s.unknown_destination = unknown_.load();
    s.paused_reads = paused_reads_.load();
    s.send_waits = send_waits_.load();
    s.peak_queued_bytes = peak_queued_.load();
    s.thread_events = thread_events_.load();
    s.caller_events = caller_events_.load();
    return s;
  }

  int send(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
           Message *msg) noexcept override {
    if (msg == nullptr) return fail(ROCL_EINVAL, "tcp: send of a null message");
    if (msg->length > limits_.max_message_bytes) {
      return fail(ROCL_ETOOBIG, "tcp: message of %" PRIu64 " bytes exceeds the limit %" PRIu64,
                  static_cast<std::uint64_t>(msg->length), limits_.max_message_bytes);
    }
    const OutMsg out = make_out(msg, destination);
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::shared_ptr<Conn> c = find_peer(peer);
      if (c == nullptr) {
        try {
          c = connect_peer(peer, peer_address);
        } catch (...) {
          return fail(ROCL_ENOMEM, "tcp: out of memory connecting to %.*s",
                      static_cast<int>(peer_address.size()), peer_address.data());
        }
        if (c == nullptr) return ROCL_EPEER;  // connect_peer said why
      }
      std::unique_lock lock(c->mu);
      if (c->dead) continue;  // reconnect once
      if (!wait_for_room(*c, lock, out.cost)) {
        return fail(ROCL_EPEER,
                    "tcp: peer %.*s (context 0x%llx) went away while send() waited for room in "
                    "its queue",
                    static_cast<int>(peer_address.size()), peer_address.data(),
                    static_cast<unsigned long long>(peer));
      }
      return enqueue(*c, out);
    }
    return fail(ROCL_EPEER, "tcp: peer %.*s (context 0x%llx) is gone",
                static_cast<int>(peer_address.size()), peer_address.data(),
                static_cast<unsigned long long>(peer));
  }

 private:
  void log(const std::string &s) { log_(s); }

  // ---- Sending -------------------------------------------------------------

  OutMsg make_out(Message *msg, rocl_gid_t destination) {
    OutMsg out{};
    out.block = block_of(msg);
    out.data = static_cast<const std::byte *>(msg->data);
    out.total = msg->length;
    out.cost = out.total + kHeaderBytes;  // so that empty messages count too
    auto &h = out.hdr;
    h.magic = wire::kMagic;
    h.version = wire::kVersion;
    h.kind = out.total > limits_.max_fragment_bytes ? wire::Kind::kFragment : wire::Kind::kEager;
    h.source = msg->header.source;
    h.destination = destination;
    h.tag = msg->header.tag;
    h.domain = msg->header.domain;
    h.message_id = next_id_.fetch_add(1, std::memory_order_relaxed);
    h.total_length = out.total;
    return out;
  }

  // Under c.mu. A message larger than the bound still goes when the queue is
  // empty, otherwise it could never be sent.
  bool has_room(const Conn &c, std::uint64_t cost) const {
    return c.queued == 0 || c.queued + cost <= options_.max_queued_bytes;
  }

  // Under c.mu (held through `lock` on entry and on return): waits until c's
  // queue has room for `cost` bytes. False if c died or the transport stops.
  bool wait_for_room(Conn &c, std::unique_lock<std::mutex> &lock, std::uint64_t cost) {
    if (has_room(c, cost) || t_driving == this) return true;
    send_waits_.fetch_add(1, std::memory_order_relaxed);
    for (unsigned round = 0;; ++round) {
      // Write ourselves rather than wait for a driver's EPOLLOUT: the driver
      // may be parked, or be this very thread's caller. A socket error is
      // left to the driver (armed EPOLLOUT reports it), which drops c.
      if (!flush(c)) arm_out(c);
      if (has_room(c, cost)) return true;
      lock.unlock();
      back_off(round);
      lock.lock();
      if (c.dead || stop_.load(std::memory_order_relaxed)) return false;
      if (has_room(c, cost)) return true;
    }
  }

  // Round `round` of a wait for room: yield first (room usually frees within
  // microseconds as the peer reads), then sleep 10 us doubling to 1 ms so
  // that a stalled peer costs no CPU.
  static void back_off(unsigned round) {
    constexpr unsigned kYieldRounds = 16;
    if (round < kYieldRounds) {
      std::this_thread::yield();
      return;
    }
    const unsigned shift = std::min(round - kYieldRounds, 7u);
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(10u << shift, 1000u)));
  }

  // Under c.mu: appends out, writing right away if nobody else is writing.
  int enqueue(Conn &c, const OutMsg &out) {
    try {
      c.q.push_back(out);
    } catch (...) {
      return fail(ROCL_ENOMEM, "tcp: out of memory queueing a message");
    }
    c.queued += out.cost;
    note_peak(c.queued);
    if (c.q.size() == 1 && !c.want_out) {
      // Nobody else is writing: try right away; the rest waits for EPOLLOUT.
      if (!flush(c)) {
        // The socket failed: a driver will see it and drop the connection;
        // the message stays queued and is failed with it.
        arm_out(c);
      }
    }
    return ROCL_OK;
  }

  void note_peak(std::uint64_t v) {
    std::uint64_t cur = peak_queued_.load(std::memory_order_relaxed);
    while (v > cur && !peak_queued_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }

  std::shared_ptr<Conn> find_peer(rocl_gid_t peer) {
    std::lock_guard lock(mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return nullptr;
    if (it->second->dead) {
      peers_.erase(it);
      return nullptr;
    }
    return it->second;
  }

  // Connects and runs the connector's handshake in the calling thread.
  std::shared_ptr<Conn> connect_peer(rocl_gid_t peer, std::string_view peer_address) {
    std::lock_guard connect_lock(connect_mu_);
    if (auto c = find_peer(peer)) return c;
    sockaddr_in a{};
    const std::string pa(peer_address);
    if (!parse_address(peer_address, &a)) {
      fail(ROCL_EPEER, "tcp: peer address '%s' is not tcp:<ipv4>:<port>", pa.c_str());
      return nullptr;
    }
    const std::string who = sockaddr_name(a);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      fail(ROCL_EPEER, "tcp: socket: %s", std::strerror(errno));
      return nullptr;
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(tcp::kHandshakeTimeoutMs);
    auto bail = [&](const std::string &why) -> std::shared_ptr<Conn> {
      ::close(fd);
      fail(ROCL_EPEER, "tcp: peer %s %s", who.c_str(), why.c_str());
      return nullptr;
    };
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
      if (errno != EINPROGRESS) return bail(std::string("unreachable: ") + std::strerror(errno));
      pollfd pfd{fd, POLLOUT, 0};
      if (::poll(&pfd, 1, tcp::kHandshakeTimeoutMs) <= 0) return bail("unreachable: timed out");
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return bail(std::string("unreachable: ") + std::strerror(err));
    }
    set_nodelay(fd);
    tcp::Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, env_.instance, 0};
    JobSecret::Challenge theirs{};
    if (!io_full(fd, &hello, sizeof hello, true, deadline) ||
        !io_full(fd, theirs.data(), theirs.size(), false, deadline)) {
      refused_.fetch_add(1);
      log("tcp: peer " + who + " refused: closed the connection during the handshake");
      return bail("refused the connection during the handshake");
    }
    std::array<std::uint8_t, 64> answer{};
    const auto proof = secret_->prove(tcp::kConnectLabel, theirs);
    const auto mine = JobSecret::random_challenge();
    std::memcpy(answer.data(), proof.data(), 32);
    std::memcpy(answer.data() + 32, mine.data(), 32);
    std::array<std::uint8_t, 33> verdict{};
    if (!io_full(fd, answer.data(), answer.size(), true, deadline) ||
        !io_full(fd, verdict.data(), 1, false, deadline)) {
      refused_.fetch_add(1);
      log("tcp: peer " + who + " refused: closed the connection during the handshake");
      return bail("refused the connection during the handshake");
    }
    if (verdict[0] != 0) {
      refused_.fetch_add(1);
      log("tcp: peer " + who + " refused: job secret proof did not verify");
      return bail("refused: job secret proof did not verify");
    }
    JobSecret::Digest their_proof{};
    if (!io_full(fd, their_proof.data(), their_proof.size(), false, deadline)) {
      refused_.fetch_add(1);
      log("tcp: peer " + who + " refused: closed the connection during the handshake");
      return bail("refused the connection during the handshake");
    }
    if (!secret_->verify(tcp::kAcceptLabel, mine, their_proof)) {
      refused_.fetch_add(1);
      log("tcp: peer " + who + " refused: job secret proof did not verify");
      return bail("refused: job secret proof did not verify");
    }
    auto c = std::make_shared<Conn>(fd, true, peer, who);
    c->rx = Rx::kConnectorSide;
    {
      std::lock_guard lock(mu_);
      all_.emplace(c.get(), c);
      peers_[peer] = c;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c.get();
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    return c;
  }

  // ---- Epoll interest (under c.mu) ------------------------------------------

  void update_interest(Conn &c) {
    if (c.dead) return;
    epoll_event ev{};
    ev.events = (c.rx_paused ? 0u : std::uint32_t{EPOLLIN | EPOLLRDHUP}) |
                (c.want_out ? std::uint32_t{EPOLLOUT} : 0u);
    ev.data.ptr = &c;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  }
  void arm_out(Conn &c) {
    if (c.want_out) return;
    c.want_out = true;
    update_interest(c);
  }
  void disarm_out(Conn &c) {
    if (!c.want_out) return;
    c.want_out = false;
    update_interest(c);
  }

  void finish_block(BlockHeader *b, bool ok) { finish_sent_block(env_, b, ok); }

  std::uint32_t frame_len(const OutMsg &m, std::uint64_t off) const {
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(m.total - off, limits_.max_fragment_bytes));
  }

  // Writes as much of c.q as the socket takes. Under c.mu. False on a socket
  // error (the connection is then to be dropped).
  bool flush(Conn &c) {
    constexpr int kMaxFrames = 32;
    while (!c.q.empty()) {
      std::array<wire::MessageHeader, kMaxFrames> hdrs;
      std::array<iovec, 2 * kMaxFrames> iov;
      int nf = 0;
      int ni = 0;
      for (std::size_t qi = 0; qi < c.q.size() && nf < kMaxFrames; ++qi) {
        const OutMsg &m = c.q[qi];
        std::uint64_t off = m.frame_off;
        std::uint64_t sent = m.frame_sent;
        for (;;) {
          if (nf == kMaxFrames) break;
          const std::uint32_t fl = frame_len(m, off);
          auto &h = hdrs[nf++];
          h = m.hdr;
          h.fragment_offset = off;
          h.fragment_length = fl;
          if (sent < kHeaderBytes) {
            iov[ni++] = {reinterpret_cast<std::byte *>(&h) + sent, kHeaderBytes - sent};
          }
          const std::uint64_t pdone = sent > kHeaderBytes ? sent - kHeaderBytes : 0;
          if (fl > pdone) {
            iov[ni++] = {const_cast<std::byte *>(m.data) + off + pdone, fl - pdone};
          }
          off += fl;
          sent = 0;
          if (off >= m.total) break;
        }
      }
      msghdr mh{};
      mh.msg_iov = iov.data();
      mh.msg_iovlen = static_cast<std::size_t>(ni);
      ssize_t n = ::sendmsg(c.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          arm_out(c);
          return true;
        }
        return false;
      }
      account_written(c, static_cast<std::uint64_t>(n));
    }
    disarm_out(c);
    return true;
  }

  // Under c.mu: n more bytes of c.q are written; frame by frame, finished
  // messages leave the queue (and its byte count) and their blocks are done.
  void account_written(Conn &c, std::uint64_t left) {
    while (!c.q.empty()) {
      OutMsg &m = c.q.front();
      const std::uint64_t frame = kHeaderBytes + frame_len(m, m.frame_off);
      const std::uint64_t take = std::min(left, frame - m.frame_sent);
      m.frame_sent += take;
      left -= take;
      if (m.frame_sent < frame) break;
      m.frame_off += frame - kHeaderBytes;
      m.frame_sent = 0;
      if (m.frame_off >= m.total) {
        BlockHeader *b = m.block;
        c.queued -= m.cost;
        c.q.pop_front();
        finish_block(b, true);
      }
    }
  }

  // Closes c: fails its queue, frees a half-received block. Caller holds mu_
  // and drives (rx_mu_), or is the only thread left: only a driver may close,
  // since a driver may be reading c.fd without c.mu.
  void close_conn(Conn &c, bool count) {
    std::lock_guard lock(c.mu);
    if (c.dead) return;
    c.dead = true;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    for (auto &m : c.q) {
      finish_block(m.block, false);
      if (count) failed_sends_.fetch_add(1);
    }
    c.q.clear();
    c.queued = 0;
    if (c.rx_block != nullptr) {
      env_.pool->release(c.rx_block, BlockState::kLibrary);
      c.rx_block = nullptr;
    }
  }

  // Driver: removes a connection (kept alive until the batch ends).
  void drop(Conn *c) {
    std::erase(paused_, c);
    paused_n_.store(paused_.size());
    std::lock_guard lock(mu_);
    auto it = all_.find(c);
    if (it == all_.end()) return;
    graveyard_.push_back(it->second);
    close_conn(*c, true);
    if (c->outgoing) {
      auto p = peers_.find(c->peer);
      if (p != peers_.end() && p->second.get() == c) peers_.erase(p);
    }
    all_.erase(it);
  }

  // ---- Driving: the thread, callers' progress() -----------------------------

  void run() {
    while (!stop_.load(std::memory_order_acquire)) {
      if (pollers_.load() > 0) {
        park();
        continue;
      }
      if (!wait_until_ready()) continue;
      std::lock_guard lock(rx_mu_);
      thread_events_.fetch_add(static_cast<std::uint64_t>(drive_locked()),
                               std::memory_order_relaxed);
    }
  }

  // Sleeps while callers poll (they handle arrivals), re-checking every
  // kParkMs: poll_end(false) does not wake the thread.
  void park() {
    const int n = pollers_.load();
    if (n > 0) futex_wait(pollers_, n, tcp::kParkMs);
  }

  // Waits, without the receive lock, until a descriptor is ready or a paused
  // connection is due for a retry. False: do not drive now (callers began
  // polling; EINTR). The event returned is discarded: by the time the lock
  // is taken another driver may have handled it (or closed its connection),
  // so drive_locked() polls afresh; level-triggered, the peek consumes nothing.
  bool wait_until_ready() {
    in_epoll_.store(true);  // seq_cst: see poll_begin() and pause_reading()
    bool ready = false;
    if (pollers_.load() == 0) {
      const int timeout = paused_n_.load() > 0 ? tcp::kRetryMs : -1;
      epoll_event ev;
      const int n = ::epoll_wait(epoll_fd_, &ev, 1, timeout);
      ready = n > 0 || (n == 0 && timeout >= 0);
    }
    in_epoll_.store(false);
    return ready && pollers_.load() == 0;
  }

  void kick() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto r = ::write(wake_fd_, &one, sizeof one);
  }

  // Under rx_mu_: handles what is ready now, without blocking; returns the
  // number of events handled (counting a paused connection resumed as one).
  int drive_locked() {
    const DrivingScope scope(this);
    resumed_ = 0;
    std::array<epoll_event, kMaxEvents> evs;
    const int n = ::epoll_wait(epoll_fd_, evs.data(), kMaxEvents, 0);
    for (int i = 0; i < n; ++i) handle_event(evs[i]);
    retry_paused_if_due();
    graveyard_.clear();
    return std::max(n, 0) + resumed_;
  }

  void handle_event(const epoll_event &ev) {
    void *p = ev.data.ptr;
    if (p == &wake_fd_) {
      std::uint64_t v;
      [[maybe_unused]] auto r = ::read(wake_fd_, &v, sizeof v);
    } else if (p == &listen_fd_) {
      accept_all();
    } else {
      on_conn(static_cast<Conn *>(p), ev.events);
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_in a{};
      socklen_t alen = sizeof a;
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&a), &alen,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      set_nodelay(fd);
      auto c = std::make_shared<Conn>(fd, false, 0, sockaddr_name(a));
      {
        std::lock_guard lock(mu_);
        all_.emplace(c.get(), c);
      }
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.ptr = c.get();
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  bool is_live(Conn *c) {
    std::lock_guard lock(mu_);
    return all_.find(c) != all_.end();
  }

  void on_conn(Conn *c, std::uint32_t events) {
    if (!is_live(c)) return;  // dropped earlier in this batch
    if (events & EPOLLOUT) {
      bool ok;
      {
        std::lock_guard lock(c->mu);
        ok = c->dead || flush(*c);
      }
      if (!ok) {
        drop(c);
        return;
      }
    }
    if (c->rx == Rx::kNeedBlock) {
      // Paused: only retry_paused_if_due() reads it. A hang-up is still
      // reported (and would repeat, level-triggered): the peer reset the
      // connection, so its unread bytes are gone anyway.
      if (events & (EPOLLHUP | EPOLLERR)) drop(c);
      return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      if (!receive(*c)) drop(c);
    }
  }

  // ---- Flow control on the receive side (driver) ----------------------------

  // No block for the message announced in c.h: stops reading c (the kernel's
  // TCP window then holds the sender back) until a retry gets one.
  void pause_reading(Conn &c) {
    {
      std::lock_guard lock(c.mu);
      if (!c.rx_paused) {
        c.rx_paused = true;
        update_interest(c);
        paused_reads_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!c.pause_logged) {
      c.pause_logged = true;
      log("tcp: no buffer for a " + std::to_string(c.h.total_length) + "-byte message from " +
          c.peer_name + " (pool full): reading from it paused until blocks are released " +
          "(logged once per connection)");
    }
    paused_.push_back(&c);
    paused_n_.store(paused_.size());  // seq_cst, then in_epoll_: see wait_until_ready()
    // The thread may be waiting with no timeout: make it take the retry one.
    if (paused_.size() == 1 && in_epoll_.load()) kick();
  }

  void resume_reading(Conn &c) {
    std::lock_guard lock(c.mu);
    if (!c.rx_paused) return;
    c.rx_paused = false;
    update_interest(c);
    ++resumed_;
  }

  // Gives paused connections another try, at most every kRetryMs (a failing
  // allocation is not free: the pool reclaims its caches first). A connection
  // still without a block pauses itself again.
  void retry_paused_if_due() {
    if (paused_.empty()) return;
    const auto now = Clock::now();
    if (now < next_retry_) return;
    next_retry_ = now + std::chrono::milliseconds(tcp::kRetryMs);
    std::vector<Conn *> list;
    list.swap(paused_);
    paused_n_.store(0);
    for (Conn *c : list) {
      if (!receive(*c)) drop(c);
    }
  }

  // ---- Receiving (driver) ---------------------------------------------------

  // Reads into [p, p+len): bytes read, 0 would block, -1 closed or failed.
  static ssize_t read_some(int fd, void *p, std::size_t len) {
    for (;;) {
      const ssize_t n = ::recv(fd, p, len, 0);
      if (n > 0) return n;
      if (n == 0) return -1;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return -1;
    }
  }

  bool refuse(Conn &c, const std::string &why) {
    refused_.fetch_add(1);
    log("tcp: peer " + c.peer_name + " refused: " + why);
    return false;
  }

  bool protocol_error(const std::string &what) {
    dropped_.fetch_add(1);
    log(what);
    return false;
  }

  // Reads what is there, up to about kTurnBytes. False: drop the connection.
  bool receive(Conn &c) {
    c.turn_read = 0;
    for (;;) {
      const Step s = rx_step(c);
      if (s != Step::kMore) return s == Step::kIdle;
      if (c.turn_read >= kTurnBytes && waits_for_bytes(c)) return true;
    }
  }

  // Whether c can only move on with more bytes from the socket, so that
  // stopping its turn here is safe: level-triggered epoll reports the bytes
  // again. Stopping elsewhere (a frame read but not delivered, a block not yet
  // asked for) would leave it stuck once the peer goes quiet.
  static bool waits_for_bytes(const Conn &c) {
    return c.rx == Rx::kHeader || (c.rx == Rx::kPayload && c.frame_left > 0);
  }

  Step rx_step(Conn &c) {
    switch (c.rx) {
      case Rx::kConnectorSide:
        return rx_connector_side(c);
      case Rx::kHello:
      case Rx::kProof:
        return rx_handshake(c);
      case Rx::kHeader:
        return rx_header(c);
      case Rx::kNeedBlock:
        return rx_need_block(c);
      case Rx::kPayload:
        return rx_payload(c);
    }
    return Step::kDrop;
  }

  // The side that connected only sends: any byte from the acceptor is wrong.
  Step rx_connector_side(Conn &c) {
    std::byte b;
    const ssize_t n = read_some(c.fd, &b, 1);
    if (n == 0) return Step::kIdle;
    if (n < 0) return Step::kDrop;  // the peer closed: drop quietly
    protocol_error("tcp: peer " + c.peer_name + " sent data on a connection it accepted; dropped");
    return Step::kDrop;
  }

  Step rx_handshake(Conn &c) {
    const std::size_t want = c.rx == Rx::kHello ? sizeof(tcp::Hello) : 64;
    const ssize_t n = read_some(c.fd, c.buf.data() + c.got, want - c.got);
    if (n == 0) return Step::kIdle;
    if (n < 0) return to_step(refuse(c, "closed the connection during the handshake"));
    c.got += static_cast<std::size_t>(n);
    if (c.got < want) return Step::kMore;
    c.got = 0;
    return to_step(c.rx == Rx::kHello ? on_hello(c) : on_proof(c));
  }

  // A Hello is in c.buf: check it, send our challenge.
  bool on_hello(Conn &c) {
    tcp::Hello hello;
    std::memcpy(&hello, c.buf.data(), sizeof hello);
    if (hello.magic != tcp::kHelloMagic) {
      char m[64];
      std::snprintf(m, sizeof m, "hello magic 0x%08x is not 0x%08x", hello.magic, tcp::kHelloMagic);
      return refuse(c, m);
    }
    if (hello.version != tcp::kHandshakeVersion) {
      return refuse(c, "hello version " + std::to_string(hello.version) + " is not supported");
    }
    c.challenge = JobSecret::random_challenge();
    if (!io_full(c.fd, c.challenge.data(), c.challenge.size(), true,
                 Clock::now() + std::chrono::milliseconds(100))) {
      return refuse(c, "could not send the challenge");
    }
    c.rx = Rx::kProof;
    return true;
  }

  // The connector's proof and challenge are in c.buf: verify, answer.
  bool on_proof(Conn &c) {
    JobSecret::Digest proof;
    JobSecret::Challenge theirs;
    std::memcpy(proof.data(), c.buf.data(), 32);
    std::memcpy(theirs.data(), c.buf.data() + 32, 32);
    std::array<std::uint8_t, 33> verdict{};
    if (!secret_->verify(tcp::kConnectLabel, c.challenge, proof)) {
      verdict[0] = 1;
      io_full(c.fd, verdict.data(), 1, true, Clock::now() + std::chrono::milliseconds(100));
      return refuse(c, "job secret proof did not verify");
    }
    const auto mine = secret_->prove(tcp::kAcceptLabel, theirs);
    std::memcpy(verdict.data() + 1, mine.data(), 32);
    if (!io_full(c.fd, verdict.data(), verdict.size(), true,
                 Clock::now() + std::chrono::milliseconds(100))) {
      return refuse(c, "could not send the handshake answer");
    }
    c.rx = Rx::kHeader;
    return true;
  }

  Step rx_header(Conn &c) {
    const ssize_t n = read_some(c.fd, c.buf.data() + c.got, kHeaderBytes - c.got);
    if (n == 0) return Step::kIdle;
    if (n < 0) {
      if (c.got != 0 || c.rx_block != nullptr) {
        protocol_error("tcp: peer " + c.peer_name + " closed in the middle of a frame");
      }
      return Step::kDrop;
    }
    c.turn_read += static_cast<std::uint64_t>(n);
    c.got += static_cast<std::size_t>(n);
    if (c.got < kHeaderBytes) return Step::kMore;
    c.got = 0;
    return to_step(start_frame(c));
  }

  Step rx_need_block(Conn &c) {
    switch (take_block(c)) {
      case Take::kGot:
        resume_reading(c);
        return Step::kMore;
      case Take::kWait:
        pause_reading(c);
        return Step::kIdle;
      case Take::kNever:
        break;
    }
    protocol_error("tcp: a " + std::to_string(c.h.total_length) + "-byte message from " +
                   c.peer_name + " can never fit the buffer pool (ROCL_POOL_MAX); " +
                   "connection dropped");
    return Step::kDrop;
  }

  Step rx_payload(Conn &c) {
    if (c.frame_left == 0) return to_step(end_frame(c));
    std::byte *dst = payload_of(c.rx_block) + c.rx_done;
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(c.frame_left, std::uint64_t{1} << 30));
    const ssize_t n = read_some(c.fd, dst, want);
    if (n == 0) return Step::kIdle;
    if (n < 0) {
      protocol_error("tcp: peer " + c.peer_name + " closed in the middle of a frame");
      return Step::kDrop;
    }
    c.turn_read += static_cast<std::uint64_t>(n);
    c.rx_done += static_cast<std::uint64_t>(n);
    c.frame_left -= static_cast<std::uint64_t>(n);
    return Step::kMore;
  }

  // A header is in c.buf: validate it; a message's first frame then waits
  // for its block (kNeedBlock), a later fragment continues into the block.
  bool start_frame(Conn &c) {
    wire::MessageHeader &h = c.h;
    if (wire::decode_header(std::span<const std::byte>(c.buf.data(), kHeaderBytes), limits_,
                            c.peer_name, &h) != ROCL_OK) {
      return protocol_error(std::string("tcp: ") + last_error() + "; connection dropped");
    }
    if (h.kind != wire::Kind::kEager && h.kind != wire::Kind::kFragment) {
      return protocol_error("tcp: frame from " + c.peer_name + ": kind " + wire::kind_name(h.kind) +
                            " is not used by tcp; connection dropped");
    }
    if (c.rx_block == nullptr) {
      if (h.fragment_offset != 0) {
        return protocol_error("tcp: frame from " + c.peer_name + ": fragment_offset " +
                              std::to_string(h.fragment_offset) +
                              " of a message's first frame is not 0; connection dropped");
      }
      c.rx = Rx::kNeedBlock;
      return true;
    }
    if (!continues_message(c)) return false;
    c.frame_left = h.fragment_length;
    c.rx = Rx::kPayload;
    return true;
  }

  // Continuing a fragmented message: same message, next piece in order.
  bool continues_message(Conn &c) {
    const auto &h = c.h;
    const auto &f = c.first;
    if (h.kind == wire::Kind::kFragment && h.message_id == f.message_id &&
        h.total_length == f.total_length && h.source == f.source &&
        h.destination == f.destination && h.tag == f.tag && h.domain == f.domain &&
        h.fragment_offset == c.rx_done) {
      return true;
    }
    return protocol_error("tcp: frame from " + c.peer_name + ": fragment of message " +
                          std::to_string(h.message_id) + " at fragment_offset " +
                          std::to_string(h.fragment_offset) + " does not continue message " +
                          std::to_string(f.message_id) + " (expected offset " +
                          std::to_string(c.rx_done) + "); connection dropped");
  }

  // A block for the message whose first header is c.h.
  Take take_block(Conn &c) {
    const std::uint64_t len = c.h.total_length;
    BlockHeader *b = env_.pool != nullptr ? env_.pool->allocate(len) : nullptr;
    if (b == nullptr) return can_ever_fit(len) ? Take::kWait : Take::kNever;
    b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
    c.rx_block = b;
    c.first = c.h;
    c.rx_done = 0;
    c.frame_left = c.h.fragment_length;
    c.rx = Rx::kPayload;
    return Take::kGot;
  }

  // Whether waiting for the pool can help: its cap holds a block for len.
  bool can_ever_fit(std::uint64_t len) const {
    if (env_.pool == nullptr) return false;
    const unsigned order = BufferPool::order_for(static_cast<std::size_t>(len));
    return order < 64 && (std::size_t{1} << order) <= env_.pool->stats().cap_bytes;
  }

  // The current frame is complete; deliver the message if it was the last.
  bool end_frame(Conn &c) {
    c.rx = Rx::kHeader;
    if (c.rx_done < c.first.total_length) return true;
    BlockHeader *b = c.rx_block;
    c.rx_block = nullptr;
    Message *m = message_in(b);
    m->header = CoreHeader{c.first.source, c.first.tag, c.first.domain};
    m->data = payload_of(b);
    m->length = c.first.total_length;
    b->state.store(BlockState::kLibrary, std::memory_order_release);
    if (env_.sink->deliver(c.first.destination, m) != ROCL_OK) {
      unknown_.fetch_add(1);
      char line[160];
      std::snprintf(line, sizeof line, "tcp: message from %s for unknown resource 0x%016" PRIx64,
                    c.peer_name.c_str(), c.first.destination);
      log(line);
      std::destroy_at(m);
      env_.pool->release(b, BlockState::kLibrary);
    }
    return true;
  }

  TransportEnv env_;
  tcp::LogFn log_;
  tcp::Options options_;
  std::optional<JobSecret> own_secret_;
  const JobSecret *secret_ = nullptr;
  wire::Limits limits_{};
  std::string address_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> next_id_{1};

  std::mutex connect_mu_;  // one handshake at a time
  std::mutex mu_;          // all_, peers_
  std::unordered_map<Conn *, std::shared_ptr<Conn>> all_;
  std::unordered_map<rocl_gid_t, std::shared_ptr<Conn>> peers_;

  // Driving. rx_mu_ is the receive lock: whoever holds it drives (polls
  // epoll with timeout 0 and handles), and the fields below it are its own.
  std::mutex rx_mu_;
  std::vector<std::shared_ptr<Conn>> graveyard_;  // dropped this batch
  std::vector<Conn *> paused_;                    // connections waiting for a block
  Clock::time_point next_retry_{};
  int resumed_ = 0;                       // paused connections that got a block, this drive
  std::atomic<std::size_t> paused_n_{0};  // paused_.size(), for the thread's epoll timeout
  std::atomic<int> pollers_{0};           // callers between poll_begin and poll_end; a futex
  std::atomic<bool> in_epoll_{false};     // the thread is in (or about to enter) epoll_wait

  std::atomic<std::uint64_t> refused_{0}, dropped_{0}, failed_sends_{0}, unknown_{0};
  std::atomic<std::uint64_t> paused_reads_{0}, send_waits_{0}, peak_queued_{0};
  std::atomic<std::uint64_t> thread_events_{0}, caller_events_{0};
};

}  // namespace

std::unique_ptr<TcpTransport> make_tcp_transport_with_log(const TransportEnv &env, tcp::LogFn log,
                                                          const tcp::Options &options) {
  auto t = std::make_unique<TcpTransportImpl>(env, std::move(log), options);
  if (t->start() != ROCL_OK) return nullptr;
  return t;
}

std::unique_ptr<Transport> make_tcp_transport(const TransportEnv &env) {
  return make_tcp_transport_with_log(env, nullptr);
}

}  // namespace rocl::impl
