// tcp_internal.hpp - what the TCP transport's source files share (internal to
// src/transport/tcp/; the design is described in tcp_transport.hpp): small
// helpers, the per-connection state (Conn, OutMsg, the receive state machine's
// enums) and the declaration of TcpTransportImpl, whose members are defined by
// responsibility:
//   tcp_transport.cpp  construction, teardown (linger), counters, the factories
//   tcp_connect.cpp    listening, connecting, accepting, the handshake, closing
//   tcp_send.cpp       queueing, flushing, flow control on the send side
//   tcp_receive.cpp    reading, validation, reassembly, delivery, pausing
//   tcp_progress.cpp   the thread and callers' progress() (driving)
//   tcp_rendezvous.cpp rendezvous: parking large sends, stubs, pull, discard
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "rocl/generic/communicator.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/tcp/tcp_transport.hpp"
#include "wire/validate.hpp"

namespace rocl::impl::tcp::detail {

using Clock = std::chrono::steady_clock;
inline constexpr std::size_t kHeaderBytes = sizeof(wire::MessageHeader);

// ---- Helpers (tcp_connect.cpp) ---------------------------------------------

std::string sockaddr_name(const sockaddr_in &a);

// "tcp:1.2.3.4:5" -> sockaddr. False if malformed.
bool parse_address(std::string_view addr, sockaddr_in *out);

// An IPv4 literal, or the first IPv4 address of the interface so named.
bool resolve_bind(const std::string &what, in_addr *out);

// Blocking-with-deadline full read/write on a non-blocking socket.
bool io_full(int fd, void *buf, std::size_t len, bool writing, Clock::time_point deadline);

// ---- Helpers (tcp_progress.cpp) --------------------------------------------

// The transport whose receive lock the calling thread holds (nullptr: none),
// so that send() and progress() called from inside MessageSink::deliver know
// they run on a driver: progress() must not try-lock a mutex its thread owns,
// and send() must not wait for room, as that would stall its own receiving.
inline thread_local const void *t_driving = nullptr;

class DrivingScope {
 public:
  explicit DrivingScope(const void *transport) : saved_(t_driving) { t_driving = transport; }
  ~DrivingScope() { t_driving = saved_; }
  DrivingScope(const DrivingScope &) = delete;
  DrivingScope &operator=(const DrivingScope &) = delete;

 private:
  const void *saved_;
};

inline constexpr int kMaxEvents = 64;
// A connection's receive stage (Conn::stage): one recv() takes up to this
// many bytes, so that the small frames already there (headers, payloads,
// request bodies) cost no system call each.
inline constexpr std::size_t kStageBytes = std::size_t{64} << 10;
// Messages of at least this many bytes are "large" (Conn::direct): copying
// one through the stage would cost more than the system call it saves, so
// while they come, reads look ahead by one header only and each payload is
// read straight into its block.
inline constexpr std::size_t kDirectBytes = std::size_t{16} << 10;

// ---- Rendezvous (tcp_rendezvous.cpp) ------------------------------------------

struct Conn;

// What the sender's table of unrequested sends matches on: the connection
// and the cookie (the request's message_id). Never a pattern.
struct RndvKey {
  std::uint64_t conn;    // Conn::id
  std::uint64_t cookie;  // from the sender's message id counter

  bool is_pattern() const { return false; }
  bool operator==(const RndvKey &o) const { return conn == o.conn && cookie == o.cookie; }
  bool operator<(const RndvKey &o) const {
    return conn != o.conn ? conn < o.conn : cookie < o.cookie;
  }
};
using RndvEnvelope = generic::Envelope<RndvKey>;
using RndvTable = generic::Communicator<RndvKey>;

// Sender: a large message parked until its receiver replies, then until its
// data is written. One of a connection's kMaxParkedMessages slots.
struct ParkedSend : RndvEnvelope {
  BlockHeader *block = nullptr;  // the message's block (state kLibrary)
  const std::byte *data = nullptr;
  std::uint64_t length = 0;
  wire::MessageHeader hdr{};    // the request's header; the data frames' template
  wire::RendezvousBody body{};  // the request's body, written from here
};

// Receiver: what a stub's payload holds. `transport` first, as
// rendezvous_transport() expects.
struct Stub {
  Transport *transport;
  std::uint64_t conn;    // Conn::id of the connection the request came on
  std::uint64_t cookie;  // the request's cookie
  char peer[40];         // the sender's "ip:port", for sentences
};

// Receiver: a pull waiting for its data. Lives on the pulling thread's
// stack; the driver reads the data into block (straight from the socket,
// but for what its connection's stage already held), then sets state (under
// rndv_mu_) as its last touch.
struct Pull {
  Pull(BlockHeader *b, std::byte *to) : block(b), into(to) {}
  BlockHeader *block;         // nullptr: a pull into the caller's memory (pull_into)
  std::byte *into;            // where the data goes: block's payload, or that memory
  std::atomic<int> state{0};  // 0 waiting, 1 done, -1 the connection died
};

// Receiver: a request received, from its stub's delivery until its data is
// in or its stub is discarded (or the connection dies).
struct InRndv {
  wire::MessageHeader request;  // validated: source, destination, tag, domain, total_length
  std::weak_ptr<Conn> conn;
  Pull *pull = nullptr;  // registered by pull(): the data may come
  bool reading = false;  // the driver reads the data into pull's block
};

// ---- Connections -------------------------------------------------------------

// One message queued for sending, with how far it got.
struct OutMsg {
  BlockHeader *block;       // nullptr: a rendezvous request or reply (no block)
  wire::MessageHeader hdr;  // template: kind, ids, total_length
  const std::byte *data;
  std::uint64_t total;
  std::uint64_t cost;            // counted against Options::max_queued_bytes
  std::uint64_t frame_off = 0;   // payload offset of the current frame
  std::uint64_t frame_sent = 0;  // bytes of the current frame (header + payload) written
  ParkedSend *parked = nullptr;  // rendezvous data: its slot is freed once written
};

// kNeedBlock: a first frame's header is validated and its message needs a
// block from the pool (a rendezvous request: a block for its stub); if the
// pool has none, reading the connection pauses in this state (see
// pause_reading). kRequestBody: reading a rendezvous request's body.
enum class Rx { kHello, kProof, kHeader, kNeedBlock, kPayload, kRequestBody };

// Where one step of the receive state machine leaves a connection.
enum class Step { kMore, kIdle, kDrop };

// What an allocation for an arriving message gave.
enum class Take { kGot, kWait, kNever };

struct Conn {
  Conn(std::uint64_t i, int f, rocl_gid_t p, std::string name)
      : id(i), fd(f), peer(p), peer_name(std::move(name)) {}

  const std::uint64_t id;  // unique in this transport, never reused (RndvKey::conn)

  // Send side and epoll interest: guarded by mu.
  std::mutex mu;
  int fd;
  rocl_gid_t peer;              // peer context, once known (for sentences); guarded by mu
  const std::string peer_name;  // "127.0.0.1:PORT" (the socket's, not the listening one)
  // The peer's listening address, this connection's key in peers_ while we
  // send on it ("" for neither); guarded by the transport's mu_.
  std::string peer_address;
  bool dead = false;
  bool want_out = false;
  bool rx_paused = false;  // EPOLLIN removed: waiting for a block
  std::deque<OutMsg> q;
  std::uint64_t queued = 0;  // sum of q's costs

  // Rendezvous, sender side; guarded by mu. A slot is
  // taken by send() and freed when its data is written or it is dropped.
  RndvTable parked;                              // unrequested sends, by {id, cookie}
  std::unique_ptr<ParkedSend[]> slots;           // kMaxParkedMessages, made on first use
  std::uint64_t free_slots = ~std::uint64_t{0};  // bit i: slots[i] is free
  std::size_t parked_n = 0;                      // slots taken
  std::uint64_t parked_bytes = 0;                // their messages' bytes
  RndvEnvelope reply;  // an arriving reply, as the table's request (driver only)

  // Receive side: the driver only (whoever holds the transport's rx_mu_).
  Rx rx = Rx::kHello;
  std::array<std::byte, 64> buf{};  // the handshake's messages
  std::size_t got = 0;              // bytes of buf read so far
  JobSecret::Challenge challenge{};
  std::string hello_address;  // acceptor: the connector's listening address, from its Hello
  wire::MessageHeader h{};
  BlockHeader *rx_block = nullptr;  // message being received (state kLibrary)
  std::byte *rx_at = nullptr;       // where its payload goes (rx_block's, or a pull's memory)
  wire::MessageHeader first{};      // first frame of the message being received
  std::uint64_t rx_done = 0;        // payload bytes of the message received so far
  std::uint64_t frame_left = 0;     // payload bytes of the current frame still to read
  std::uint64_t turn_read = 0;      // bytes read in the current turn (Options::turn_bytes)
  // The stage: bytes read from the socket ahead of the state machine, made
  // on the first read after the handshake (kStageBytes or kReplyStageBytes)
  // and freed with the connection. [stage_pos, stage_end) is read but not
  // yet parsed; it only ever starts with a partial header or request body
  // when a read is due, and a payload's rest beyond it is read straight into
  // the block. Epoll never reports these bytes: a turn may only end where
  // the state needs more than the stage holds (see waits_for_bytes), or
  // paused (the retry parses the stage first).
  std::unique_ptr<std::byte[]> stage;
  std::size_t stage_cap = 0;
  std::size_t stage_pos = 0;
  std::size_t stage_end = 0;
  // A read this turn got fewer bytes than it asked for (past a payload's
  // end): the socket was drained, so the turn ends at the next read instead
  // of making it (it would say EAGAIN; level-triggered epoll reports bytes
  // that came since).
  bool drained = false;
  // The message being (or last) received is large (kDirectBytes): reads
  // ask for one header (or request body) beyond what the state needs, not
  // for a whole stage, as the next message is likely large too.
  bool direct = false;
  bool pause_logged = false;
  Pull *rx_pull = nullptr;            // rx_block is this pull's (rendezvous data)
  BlockHeader *stub_block = nullptr;  // a stub's block, between allocation and delivery
};

inline Step to_step(bool ok) {
  return ok ? Step::kMore : Step::kDrop;
}

// ---- The transport -------------------------------------------------------------

class TcpTransportImpl final : public TcpTransport {
 public:
  // tcp_transport.cpp
  TcpTransportImpl(const TransportEnv &env, tcp::LogFn log, const tcp::Options &options);
  ~TcpTransportImpl() override;
  tcp::Stats stats() const noexcept override;

  std::string address_impl() const override { return address_; }
  bool reaches_impl(std::string_view address) const noexcept override {
    return address.substr(0, 4) == "tcp:";
  }

  // tcp_connect.cpp
  int start();

  // tcp_send.cpp
  int send_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                Message *msg) noexcept override;

  // tcp_progress.cpp
  int progress_impl(const Waiter *waiter) noexcept override;
  void flush_impl(Clock::time_point deadline) noexcept override;
  // An epoll_wait per call: polled once every 32 rounds next to shm.
  // Whether callers poll the connections, so the thread leaves them alone.
  bool callers_drive() const noexcept { return pollers_.load() > 0 && conn_count_.load() != 0; }
  bool idle_impl() const noexcept override {
    return conn_count_.load(std::memory_order_relaxed) == 0;
  }
  void poll_begin_impl() noexcept override;
  void poll_end_impl(bool will_sleep) noexcept override;

  // tcp_rendezvous.cpp
  int pull_impl(Message *stub, Message **out) noexcept override;
  int pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept override;
  void discard_impl(Message *stub) noexcept override;
  // A connection paused for want of a pool block (its bytes wait in the
  // stage and the kernel's socket buffer).
  bool holds_unread_input_impl() const noexcept override {
    return held_.load(std::memory_order_relaxed) != 0;
  }

 private:
  bool takes_rendezvous(const Message &msg) const;
  // Options of every connection's socket: no Nagle, ROCL_TCP_CONGESTION.
  void tune_socket(int fd);

  // ---- Teardown (tcp_transport.cpp) -----------------------------------------
  bool holds(bool parked_too);
  void report_dropped();
  void close_gracefully(Clock::time_point deadline);

  // ---- Connections (tcp_connect.cpp) ----------------------------------------
  std::shared_ptr<Conn> find_peer(std::string_view peer_address);
  void adopt(Conn &c, const std::string &peer_address);
  std::shared_ptr<Conn> connect_peer(rocl_gid_t peer, std::string_view peer_address);
  void accept_all();
  bool is_live(Conn *c);
  void close_conn(Conn &c, bool count);
  void drop(Conn *c);
  Step rx_handshake(Conn &c);
  bool on_hello(Conn &c);
  bool on_proof(Conn &c);
  bool refuse(Conn &c, const std::string &why);

  // ---- Sending (tcp_send.cpp) -------------------------------------------------
  OutMsg make_out(Message *msg, rocl_gid_t destination);
  bool has_room(const Conn &c, std::uint64_t cost) const;
  bool wait_for_room(Conn &c, std::unique_lock<std::mutex> &lock, std::uint64_t cost);
  template <class Room>
  bool wait_until(Conn &c, std::unique_lock<std::mutex> &lock, Room room);
  static void back_off(unsigned round);
  int enqueue(Conn &c, const OutMsg &out);
  void note_peak(std::uint64_t v);
  void update_interest(Conn &c);
  void arm_out(Conn &c);
  void disarm_out(Conn &c);
  void finish_block(BlockHeader *b, bool ok) { finish_sent(b, ok); }
  std::uint32_t frame_len(const OutMsg &m, std::uint64_t off) const;
  bool flush(Conn &c);
  void account_written(Conn &c, std::uint64_t left);

  // ---- Receiving (tcp_receive.cpp) --------------------------------------------
  void pause_reading(Conn &c);
  void resume_reading(Conn &c);
  void retry_paused_if_due();
  static ssize_t read_some(int fd, void *p, std::size_t len);
  static ssize_t read_vec(int fd, iovec *iov, int n);
  bool protocol_error(const std::string &what);
  bool receive(Conn &c);
  static bool waits_for_bytes(const Conn &c);
  static std::size_t staged(const Conn &c) { return c.stage_end - c.stage_pos; }
  static void consume(Conn &c, std::size_t n);
  bool make_stage(Conn &c);
  Step fill_stage(Conn &c, std::size_t need);
  Step read_payload(Conn &c);
  Step after_read(Conn &c, ssize_t n, bool drained);
  Step rx_step(Conn &c);
  Step rx_header(Conn &c);
  Step rx_need_block(Conn &c);
  Step rx_payload(Conn &c);
  bool start_frame(Conn &c, const std::byte *header);
  bool continues_message(Conn &c);
  Take take_block(Conn &c);
  bool can_ever_fit(std::uint64_t len) const;
  bool end_frame(Conn &c);

  // ---- Rendezvous (tcp_rendezvous.cpp) ------------------------------------------
  // Sender.
  bool has_parking(const Conn &c, std::uint64_t len) const;
  int send_rendezvous(Conn &c, std::unique_lock<std::mutex> &lock, rocl_gid_t destination,
                      Message *msg, rocl_gid_t peer, std::string_view peer_address);
  void free_slot(Conn &c, ParkedSend &p);
  void fail_parked(Conn &c, bool count);
  bool on_reply(Conn &c);
  // Receiver.
  Step rx_request_body(Conn &c);
  bool start_request(Conn &c);
  Take take_stub(Conn &c);
  bool deliver_stub(Conn &c);
  int start_pull_data(Conn &c);
  void finish_pull(Conn &c);
  void fail_pulls(Conn &c);
  void let_go(const Stub &st);
  int reply(Conn &c, const wire::MessageHeader &request, std::uint64_t total);
  void wait_pull(Pull &p, const Stub &st, std::size_t len);
  void release_stub(Message *stub);
  static Stub stub_of(Message *stub);
  int pull_data(const Stub &st, std::size_t len, Pull &p);

  // ---- Driving: the thread, callers' progress() (tcp_progress.cpp) ---------
  void run();
  void park();
  bool wait_until_ready();
  void kick();
  // direct: may read the only connection straight away (callers' progress).
  int drive_locked(bool direct = false);
  int read_solo(Conn &c);
  void handle_event(const epoll_event &ev);
  void on_conn(Conn *c, std::uint32_t events);

  tcp::Options options_;
  std::optional<JobSecret> own_secret_;
  const JobSecret *secret_ = nullptr;
  wire::Limits limits_{};
  std::string address_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;         // the drivers' set: the listening socket and the connections
  int thread_epoll_fd_ = -1;  // the thread's: epoll_fd_ and wake_fd_ (read by the thread only)
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> next_id_{1};    // message ids and rendezvous cookies
  std::atomic<std::uint64_t> next_conn_{1};  // Conn::id

  std::mutex connect_mu_;  // one handshake at a time
  std::mutex mu_;          // all_, peers_, Conn::peer_address
  std::unordered_map<Conn *, std::shared_ptr<Conn>> all_;
  // all_.size(), read without mu_: with no connection, callers' progress()
  // has nothing to poll (the thread accepts) and returns at once.
  std::atomic<std::size_t> conn_count_{0};
  // The connection when all_ holds exactly one, else null (set with
  // conn_count_, under mu_). A driver may use it: only a driver drops a
  // connection, so it stays alive while the driver holds rx_mu_.
  std::atomic<Conn *> solo_{nullptr};
  void count_conns_locked() noexcept {
    conn_count_.store(all_.size());
    solo_.store(all_.size() == 1 ? all_.begin()->first : nullptr, std::memory_order_release);
  }
  // The connection we send on to each peer, by its listening address
  // (looked up by string_view: no string made per send).
  struct AddressHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, std::shared_ptr<Conn>, AddressHash, std::equal_to<>> peers_;

  // Driving. rx_mu_ is the receive lock: whoever holds it drives (polls
  // epoll with timeout 0 and handles), and the fields below it are its own.
  std::mutex rx_mu_;
  // The receive whose caller drives now (rx_mu_ held), handed to the sink
  // with each arrival; nullptr while the transport's thread or a caller
  // waiting for no receive drives. Set and cleared under rx_mu_ only.
  const Waiter *rx_waiter_ = nullptr;
  std::vector<std::shared_ptr<Conn>> graveyard_;  // dropped this batch
  std::vector<Conn *> paused_;                    // connections waiting for a block
  Clock::time_point next_retry_{};
  int resumed_ = 0;                       // paused connections that got a block, this drive
  std::atomic<std::size_t> paused_n_{0};  // paused_.size(), for the thread's epoll timeout
  std::atomic<std::size_t> held_{0};      // live connections with rx_paused set
  // Callers between poll_begin and poll_end. The transport's thread parks
  // on this count itself (a futex): pollers pay nothing to keep it parked,
  // and the last one wakes it with a single system call.
  std::atomic<std::int32_t> pollers_{0};
  std::atomic<bool> in_epoll_{false};  // the thread is in (or about to enter) epoll_wait
  int drive_depth_ = 0;                // > 1: a nested drive (pull inside deliver)
  unsigned direct_drives_ = 0;         // drives that read solo_ without epoll

  // Rendezvous, receiver side: requests whose stubs are out, by {conn, cookie}.
  std::mutex rndv_mu_;               // rndv_in_ and every Pull::state
  std::condition_variable rndv_cv_;  // a Pull::state changed
  std::map<RndvKey, InRndv> rndv_in_;

  std::atomic<std::uint64_t> connects_{0}, refused_{0}, dropped_{0}, failed_sends_{0};
  std::atomic<std::uint64_t> paused_reads_{0}, send_waits_{0}, peak_queued_{0};
  std::atomic<std::uint64_t> thread_events_{0}, caller_events_{0};
  std::atomic<std::uint64_t> rndv_sends_{0}, rndv_waits_{0}, rndv_eager_{0}, peak_parked_{0};
  std::atomic<std::uint64_t> rndv_stubs_{0}, rndv_pulls_{0}, rndv_discards_{0};
  std::atomic<std::uint64_t> congestion_refused_{0};
};

// Under c.mu (held through `lock` on entry and on return): waits until
// room() holds. False if c died or the transport stops.
template <class Room>
bool TcpTransportImpl::wait_until(Conn &c, std::unique_lock<std::mutex> &lock, Room room) {
  for (unsigned round = 0;; ++round) {
    // Write ourselves rather than wait for a driver's EPOLLOUT: the driver
    // may be parked, or be this very thread's caller. A socket error is
    // left to the driver (armed EPOLLOUT reports it), which drops c.
    if (!flush(c)) arm_out(c);
    if (room()) return true;
    lock.unlock();
    back_off(round);
    lock.lock();
    if (c.dead || stop_.load(std::memory_order_relaxed)) return false;
    if (room()) return true;
  }
}

}  // namespace rocl::impl::tcp::detail
