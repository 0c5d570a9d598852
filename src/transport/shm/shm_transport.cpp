// shm_transport.cpp - see shm_transport.hpp.
#include "transport/shm/shm_transport.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "wire/message_header.hpp"
#include "wire/validate.hpp"

namespace rocl::impl {
namespace {

constexpr std::uint64_t kSegMagic = 0x6d68536c636f5221ull;    // "!RoclShm"
constexpr std::uint64_t kHelloMagic = 0x6f6c6c65486d6853ull;  // "ShmHello"
constexpr std::uint32_t kSegVersion = 2;                      // 2: pollers word
constexpr std::uint64_t kFrameAlign = 64;
constexpr std::uint32_t kMaxSlots = 1024;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint32_t>) == 4);

struct SegHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t slots;
  std::uint64_t ring_bytes;
  std::uint64_t header_bytes;  // offset of the first ring
  std::uint8_t challenge[32];
  alignas(64) std::atomic<std::uint32_t> wake_seq;  // futex word
  std::atomic<std::uint32_t> sleeping;              // receiver's thread announced it sleeps
  std::atomic<std::uint32_t> pollers;               // receiver's callers polling the rings
  alignas(64) std::atomic<std::uint32_t> claims;    // slots claimed so far (senders add 1)
};

// Enum of what the receiver decided about a slot (informational for the
// sender; the receiver trusts only its own local state).
// kAcceptedPool: accepted, and the receiver mapped the sender's buffer pool
// (read-only), so large messages may go by rendezvous.
enum Verdict : std::uint32_t { kPending = 0, kAccepted = 1, kRefused = 2, kAcceptedPool = 3 };

struct SlotCtl {
  alignas(64) std::atomic<std::uint32_t> owner;  // sender pid, 0 = free
  std::atomic<std::uint32_t> verdict;
  alignas(64) std::atomic<std::uint64_t> head;  // written by the sender
  alignas(64) std::atomic<std::uint64_t> tail;  // written by the receiver
  // Rendezvous cookies the receiver is done with (bit i: cookie i); the
  // receiver sets bits, the sender takes them.
  alignas(64) std::atomic<std::uint64_t> pulled;
};
static_assert(sizeof(SlotCtl) == 256);

struct Hello {
  std::uint64_t magic;
  std::uint32_t pid;
  std::uint32_t slot;
  std::uint8_t proof[32];
  std::uint32_t pool_fd;  // the sender's pool memfd (/proc/<pid>/fd/<n>), ~0u: none
  std::uint32_t pad;
  std::uint64_t pool_bytes;  // its size
};
static_assert(sizeof(Hello) == 64);

constexpr std::uint64_t header_bytes_for(std::uint32_t slots) {
  const std::uint64_t raw = 4096 + std::uint64_t{slots} * sizeof(SlotCtl);
  return (raw + 4095) & ~std::uint64_t{4095};
}

SlotCtl *slot_ctl(std::byte *seg, std::uint32_t i) {
  return reinterpret_cast<SlotCtl *>(seg + 4096) + i;
}

std::uint64_t pad64(std::uint64_t n) {
  return (n + kFrameAlign - 1) & ~(kFrameAlign - 1);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

long futex(std::atomic<std::uint32_t> *addr, int op, std::uint32_t val, const timespec *ts) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(addr), op, val, ts, nullptr, 0);
}

std::string read_small_file(const char *path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return {};
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "<boot id>:<pid ns inode>": equal for two processes iff they share kernel
// boot and pid namespace, i.e. their pids mean the same processes.
std::string host_tag() {
  std::string boot = read_small_file("/proc/sys/kernel/random/boot_id");
  struct stat st {};
  std::uint64_t ns = 0;
  if (::stat("/proc/self/ns/pid", &st) == 0) ns = st.st_ino;
  if (boot.empty()) boot = "noboot";
  return boot + ":" + std::to_string(ns);
}

// Start time (clock ticks since boot) of process pid, 0 if it is dead, a
// zombie or unknown.
std::uint64_t process_start(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::string s = read_small_file(path);
  const auto rp = s.rfind(')');
  if (rp == std::string::npos || rp + 2 >= s.size()) return 0;
  const char state = s[rp + 2];
  if (state == 'Z' || state == 'X' || state == 'x') return 0;
  // Fields after ')' start at field 3 (state); starttime is field 22.
  const char *p = s.c_str() + rp + 2;
  for (int field = 3; field < 22 && *p; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return 0;
    ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

bool pid_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) == 0) return true;
  return errno == EPERM;
}

struct ParsedAddress {
  pid_t pid = 0;
  int fd = -1;
  std::uint64_t size = 0;
  std::string host;
};

std::optional<ParsedAddress> parse_address(std::string_view a) {
  if (a.substr(0, 4) != "shm:") return std::nullopt;
  a.remove_prefix(4);
  ParsedAddress out;
  std::uint64_t v[3];
  for (auto &x : v) {
    const auto colon = a.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 20) return std::nullopt;
    x = 0;
    for (char c : a.substr(0, colon)) {
      if (c < '0' || c > '9') return std::nullopt;
      x = x * 10 + static_cast<std::uint64_t>(c - '0');
    }
    a.remove_prefix(colon + 1);
  }
  if (v[0] == 0 || v[0] > 0x7fffffff || v[1] > 0x7fffffff) return std::nullopt;
  out.pid = static_cast<pid_t>(v[0]);
  out.fd = static_cast<int>(v[1]);
  out.size = v[2];
  out.host = std::string(a);
  return out;
}

class ShmTransportImpl;

// Our side of a connection to a peer's inbox: a mapping and a claimed slot.
struct Conn {
  std::mutex mu;  // serialises the senders of this process to the peer
  bool connected = false;
  bool dead = false;
  std::byte *seg = nullptr;
  std::size_t seg_bytes = 0;
  SegHeader *hdr = nullptr;
  SlotCtl *ctl = nullptr;
  std::byte *ring = nullptr;
  std::uint64_t ring_bytes = 0;
  std::uint64_t head = 0;       // our copy of ctl->head
  std::uint64_t seen_tail = 0;  // the receiver's tail when we last read it
  std::uint32_t slot = 0;
  pid_t pid = 0;
  std::uint64_t start_time = 0;
  // Rendezvous (only if the receiver can read our memory): blocks whose
  // payload the receiver will copy, by cookie, until it sets the bit.
  bool rendezvous = false;  // the receiver mapped our pool
  std::uint64_t pending_mask = 0;
  std::uint64_t pending_bytes = 0;
  BlockHeader *pending[64] = {};

  ~Conn() {
    if (seg != nullptr) ::munmap(seg, seg_bytes);
  }
};

// The receiver's private state of one slot (never in shared memory).
struct RxSlot {
  enum State { kNew, kOk, kPoisoned } state = kNew;
  std::uint64_t tail = 0;
  std::uint32_t pid = 0;
  bool pool_mapped = false;      // pools_[slot] maps the sender's pool
  BlockHeader *block = nullptr;  // message being reassembled
  wire::MessageHeader first{};
  std::uint64_t done = 0;
  std::string name;  // "shm slot N (pid P)", for error sentences
};

class ShmTransportImpl final : public ShmTransport {
 public:
  ShmTransportImpl(const TransportEnv &env, const shm::Config &cfg, shm::LogFn log)
      : env_(env), cfg_(cfg), log_(std::move(log)) {
    if (!log_) {
      log_ = [](const std::string &s) { std::fprintf(stderr, "rocl: %s\n", s.c_str()); };
    }
    if (env_.secret == nullptr) {
      own_secret_ = JobSecret::generate();
      secret_ = &*own_secret_;
    } else {
      secret_ = env_.secret;
    }
  }

  ~ShmTransportImpl() override {
    if (thread_.joinable()) {
      stop_.store(true);
      hdr_->wake_seq.fetch_add(1);
      futex(&hdr_->wake_seq, FUTEX_WAKE, 1, nullptr);
      thread_.join();
    }
    for (auto &s : rx_) drop_partial(s);
    {
      std::lock_guard<std::mutex> g(peers_mu_);
      for (auto &[peer, c] : peers_) {
        std::lock_guard<std::mutex> lk(c->mu);
        reap(*c);
        drop_pending(*c);
      }
      peers_.clear();
    }
    for (const PeerPool &p : pools_) {
      if (p.base != nullptr) ::munmap(const_cast<std::byte *>(p.base), p.bytes);
    }
    if (seg_ != nullptr) ::munmap(seg_, seg_bytes_);
    if (fd_ >= 0) ::close(fd_);
  }

  int init() {
    if (cfg_.slots == 0 || cfg_.slots > kMaxSlots || cfg_.ring_bytes < 4096 ||
        (cfg_.ring_bytes & (cfg_.ring_bytes - 1)) != 0 ||
        cfg_.ring_bytes > (std::uint64_t{1} << 30)) {
      return fail(ROCL_EINVAL, "shm: bad configuration (%u slots of %" PRIu64 " bytes)", cfg_.slots,
                  cfg_.ring_bytes);
    }
    const std::uint64_t hb = header_bytes_for(cfg_.slots);
    seg_bytes_ = hb + std::uint64_t{cfg_.slots} * cfg_.ring_bytes;
    fd_ = static_cast<int>(
        ::syscall(SYS_memfd_create, "rocl-shm", 3u /*MFD_CLOEXEC | MFD_ALLOW_SEALING*/));
    if (fd_ < 0) return fail(ROCL_ENOMEM, "shm: memfd_create failed: %s", std::strerror(errno));
    if (::ftruncate(fd_, static_cast<off_t>(seg_bytes_)) != 0) {
      return fail(ROCL_ENOMEM, "shm: ftruncate to %zu bytes failed: %s", seg_bytes_,
                  std::strerror(errno));
    }
    // Sealed so that no process (a hostile sender included) can shrink the
    // segment under our mapping and make us fault.
    if (::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      return fail(ROCL_ENOMEM, "shm: sealing the segment failed: %s", std::strerror(errno));
    }
    void *p = ::mmap(nullptr, seg_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return fail(ROCL_ENOMEM, "shm: mmap failed: %s", std::strerror(errno));
    seg_ = static_cast<std::byte *>(p);
    hdr_ = new (seg_) SegHeader{};
    hdr_->magic = kSegMagic;
    hdr_->version = kSegVersion;
    hdr_->slots = cfg_.slots;
    hdr_->ring_bytes = cfg_.ring_bytes;
    hdr_->header_bytes = hb;
    challenge_ = JobSecret::random_challenge();
    std::memcpy(hdr_->challenge, challenge_.data(), 32);
    for (std::uint32_t i = 0; i < cfg_.slots; ++i) new (slot_ctl(seg_, i)) SlotCtl{};
    rx_.resize(cfg_.slots);
    pools_.resize(cfg_.slots);
    active_.reserve(cfg_.slots);
    limits_.max_fragment_bytes =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(cfg_.ring_bytes - 64, 1u << 30));
    address_ = "shm:" + std::to_string(::getpid()) + ":" + std::to_string(fd_) + ":" +
               std::to_string(seg_bytes_) + ":" + host_tag();
    try {
      thread_ = std::thread([this] { run(); });
    } catch (...) {
      return fail(ROCL_ENOMEM, "shm: cannot start the progress thread");
    }
    return ROCL_OK;
  }

  std::string_view name() const noexcept override { return "shm"; }
  std::string address() const override { return address_; }

  bool reaches(std::string_view address) const noexcept override {
    try {
      auto a = parse_address(address);
      if (!a) return false;
      static const std::string tag = host_tag();
      return a->host == tag && pid_alive(a->pid);
    } catch (...) {
      return false;
    }
  }

  // Caller progress (contract in transport.hpp). The receive state (rx_) is
  // guarded by rx_busy_, a try-lock: whoever holds it polls the rings.
  int progress() noexcept override {
    reap_all();
    return poll_locked(false);
  }

  void poll_begin() noexcept override { hdr_->pollers.fetch_add(1, std::memory_order_seq_cst); }

  void poll_end(bool will_sleep) noexcept override {
    hdr_->pollers.fetch_sub(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (will_sleep) {
      wake(hdr_);  // the thread takes over at once
    } else {
      poll_locked(true);  // a sender that saw us polling published before this
    }
  }
  int register_memory(void *, std::size_t) noexcept override { return ROCL_OK; }

  shm::Stats stats() const noexcept override {
    shm::Stats s;
    s.refused = refused_.load();
    s.poisoned = poisoned_.load();
    s.unknown_destination = unknown_.load();
    s.delivered = delivered_.load();
    return s;
  }

  int send(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
           Message *msg) noexcept override {
    if (msg == nullptr) return fail(ROCL_EINVAL, "shm: send of a null message");
    if (msg->length > limits_.max_message_bytes) {
      return fail(ROCL_ETOOBIG, "shm: message of %zu bytes exceeds the limit %" PRIu64,
                  static_cast<std::size_t>(msg->length), limits_.max_message_bytes);
    }
    std::shared_ptr<Conn> c;
    try {
      std::lock_guard<std::mutex> g(peers_mu_);
      auto &slot = peers_[peer];
      if (!slot) slot = std::make_shared<Conn>();
      c = slot;
    } catch (...) {
      return fail(ROCL_ENOMEM, "shm: out of memory");
    }
    std::unique_lock<std::mutex> lk(c->mu);
    if (c->dead) {
      forget(peer, c);
      return fail(ROCL_EPEER, "shm: peer process %d is gone", static_cast<int>(c->pid));
    }
    if (!c->connected) {
      const int rc = connect(*c, peer_address);
      if (rc != ROCL_OK) {
        c->dead = true;
        lk.unlock();
        forget(peer, c);
        return rc;
      }
    }
    const bool rendezvous = c->rendezvous && env_.rendezvous_threshold != 0 &&
                            msg->length >= env_.rendezvous_threshold && in_pool(msg);
    const int rc =
        rendezvous ? write_rendezvous(*c, destination, msg) : write_message(*c, destination, msg);
    if (rc != ROCL_OK) {
      c->dead = true;
      drop_pending(*c);
      lk.unlock();
      forget(peer, c);
      return rc;
    }
    lk.unlock();
    // A rendezvous block stays ours until the receiver has copied it.
    if (!rendezvous) finish_sent_block(env_, block_of(msg), true);
    return ROCL_OK;
  }

  // Rendezvous, receiver side (contract in transport.hpp): one copy from
  // the sender's buffer straight into a block of ours, on the receiving
  // thread, then the cookie goes back so the sender can free its buffer.
  int pull(Message *stub, Message **out) noexcept override {
    const Stub st = stub_of(stub);
    const CoreHeader header = stub->header;
    const std::size_t len = stub->length;
    release_stub(stub);
    BlockHeader *b = env_.pool->allocate(len);
    if (b == nullptr) {
      hand_back(st);
      return fail(ROCL_ENOMEM, "shm: no pool block for a %zu-byte message from pid %u: %s", len,
                  st.pid, last_error());
    }
    const int rc = read_peer(st, payload_of(b), len);
    hand_back(st);
    if (rc != ROCL_OK) {
      env_.pool->release(b, BlockState::kLibrary);
      return rc;
    }
    b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
    Message *m = message_in(b);
    m->header = header;
    m->data = payload_of(b);
    m->length = len;
    *out = m;
    return ROCL_OK;
  }

  void discard(Message *stub) noexcept override {
    const Stub st = stub_of(stub);
    release_stub(stub);
    hand_back(st);
  }

 private:
  // ---- rendezvous ----

  // What a stub's payload holds. `transport` first: rendezvous_transport().
  struct Stub {
    Transport *transport;
    SlotCtl *ctl;
    const std::byte *pool;     // the sender's pool, mapped read-only
    std::uint64_t pool_bytes;  // its size
    std::uint64_t offset;      // the payload's offset in it
    std::uint64_t cookie;
    std::uint32_t pid;
    std::uint32_t slot;
  };

  // A sender's buffer pool as mapped here, once per slot, kept until we end.
  struct PeerPool {
    const std::byte *base = nullptr;
    std::size_t bytes = 0;
  };

  bool in_pool(const Message *msg) const {
    const auto *base = static_cast<const std::byte *>(env_.pool->region_base());
    const auto *p = static_cast<const std::byte *>(msg->data);
    return p >= base && msg->length <= env_.pool->region_bytes() &&
           static_cast<std::size_t>(p - base) <= env_.pool->region_bytes() - msg->length;
  }

  static Stub stub_of(Message *stub) {
    Stub st;
    std::memcpy(&st, payload_of(block_of(stub)), sizeof st);
    return st;
  }

  void release_stub(Message *stub) {
    BlockHeader *b = block_of(stub);
    std::destroy_at(stub);
    env_.pool->release(b, BlockState::kLibrary);
  }

  // Tells the sender it may free the buffer behind the cookie.
  static void hand_back(const Stub &st) {
    st.ctl->pulled.fetch_or(std::uint64_t{1} << st.cookie, std::memory_order_release);
  }

  // Copies the payload out of the sender's pool into dst: the one copy.
  // The offset comes from the other process: checked against the mapping.
  static int read_peer(const Stub &st, std::byte *dst, std::size_t len) {
    if (st.offset > st.pool_bytes || len > st.pool_bytes - st.offset) {
      return fail(ROCL_EPEER,
                  "shm: rendezvous from pid %u (slot %u) names bytes %" PRIu64
                  "+%zu outside its "
                  "%" PRIu64 "-byte pool",
                  st.pid, st.slot, st.offset, len, st.pool_bytes);
    }
    std::memcpy(dst, st.pool + st.offset, len);
    return ROCL_OK;
  }

  // Maps the sender's pool read-only (its memfd, sealed against shrinking so
  // that it cannot make us fault). False if anything does not check out:
  // the slot then works without rendezvous.
  bool map_peer_pool(std::uint32_t slot, std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes) {
    if (fd == ~0u || bytes == 0 || env_.pool == nullptr) return false;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, fd);
    const int f = ::open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return false;
    struct stat st {};
    const int seals = ::fcntl(f, F_GET_SEALS);
    void *p = MAP_FAILED;
    if (::fstat(f, &st) == 0 && static_cast<std::uint64_t>(st.st_size) == bytes && seals >= 0 &&
        (seals & F_SEAL_SHRINK) != 0) {
      p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED | MAP_NORESERVE, f, 0);
    }
    ::close(f);
    if (p == MAP_FAILED) return false;
    pools_[slot] = PeerPool{static_cast<const std::byte *>(p), bytes};
    return true;
  }

  // Sender: frees the buffers the receiver has copied. c.mu held.
  void reap(Conn &c) {
    if (c.pending_mask == 0) return;
    const std::uint64_t done =
        c.ctl->pulled.exchange(0, std::memory_order_acq_rel) & c.pending_mask;
    for (std::uint64_t bits = done; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      BlockHeader *b = c.pending[i];
      c.pending[i] = nullptr;
      c.pending_bytes -= reinterpret_cast<Message *>(owner_area_of(b))->length;
      finish_sent_block(env_, b, true);
    }
    c.pending_mask &= ~done;
    pending_total_.fetch_sub(__builtin_popcountll(done), std::memory_order_relaxed);
  }

  // Sender: the peer is gone; its copies will never come. c.mu held.
  void drop_pending(Conn &c) {
    for (std::uint64_t bits = c.pending_mask; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      finish_sent_block(env_, c.pending[i], false);
      c.pending[i] = nullptr;
    }
    pending_total_.fetch_sub(__builtin_popcountll(c.pending_mask), std::memory_order_relaxed);
    c.pending_mask = 0;
    c.pending_bytes = 0;
  }

  // Frees copied buffers of every connection (progress, never blocks).
  void reap_all() {
    if (pending_total_.load(std::memory_order_relaxed) == 0) return;
    std::unique_lock<std::mutex> g(peers_mu_, std::try_to_lock);
    if (!g.owns_lock()) return;
    for (auto &[peer, c] : peers_) {
      std::unique_lock<std::mutex> lk(c->mu, std::try_to_lock);
      if (lk.owns_lock()) reap(*c);
    }
  }

  // Waits for a free cookie within the pending bound (flow control: the
  // receiver copies when its user receives). ROCL_OK or ROCL_EPEER.
  int wait_cookie(Conn &c, std::uint64_t len) {
    int sleep_us = 20;
    auto next_check = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      reap(c);
      if (c.pending_mask != ~std::uint64_t{0} &&
          (c.pending_mask == 0 || c.pending_bytes + len <= shm::kMaxPendingBytes)) {
        return ROCL_OK;
      }
      if (spins < 500) {
        cpu_relax();
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_check) {
        if (!peer_alive(c)) {
          return fail(ROCL_EPEER, "shm: peer process %d died holding rendezvous messages", c.pid);
        }
        next_check = now + std::chrono::milliseconds(20);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      sleep_us = std::min(sleep_us * 2, 1000);
    }
  }

  // Sends a rendezvous request for msg; its block waits in c.pending.
  int write_rendezvous(Conn &c, rocl_gid_t destination, Message *msg) {
    if (const int rc = wait_cookie(c, msg->length); rc != ROCL_OK) return rc;
    const int cookie = __builtin_ctzll(~c.pending_mask);
    wire::MessageHeader h{};
    h.magic = wire::kMagic;
    h.version = wire::kVersion;
    h.kind = wire::Kind::kRendezvousRequest;
    h.source = msg->header.source;
    h.destination = destination;
    h.tag = msg->header.tag;
    h.domain = msg->header.domain;
    h.message_id = next_id_.fetch_add(1, std::memory_order_relaxed);
    h.total_length = msg->length;
    h.fragment_length = sizeof(wire::RendezvousBody);
    const auto *base = static_cast<const std::byte *>(env_.pool->region_base());
    const auto offset =
        static_cast<std::uint64_t>(static_cast<const std::byte *>(msg->data) - base);
    const wire::RendezvousBody body{offset, static_cast<std::uint64_t>(cookie)};
    const std::uint64_t frame = sizeof h + pad64(sizeof body);
    if (const int rc = wait_space(c, frame); rc != ROCL_OK) return rc;
    c.pending[cookie] = block_of(msg);
    c.pending_mask |= std::uint64_t{1} << cookie;
    c.pending_bytes += msg->length;
    pending_total_.fetch_add(1, std::memory_order_relaxed);
    std::memcpy(c.ring + (c.head & (c.ring_bytes - 1)), &h, sizeof h);
    copy_in(c, c.head + sizeof h, reinterpret_cast<const std::byte *>(&body), sizeof body);
    publish(c, c.head + frame);
    return ROCL_OK;
  }

  // Receiver: a rendezvous request becomes a stub in the destination's
  // mailbox; the copy happens when a receive matches it (pull).
  int take_rendezvous(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const wire::MessageHeader &h,
                      std::uint64_t frame) {
    if (!s.pool_mapped || s.block != nullptr) {
      poison(i, s, ctl,
             s.pool_mapped ? "rendezvous request in the middle of a fragmented message"
                           : "rendezvous request, but the sender's pool is not mapped here",
             false);
      return -1;
    }
    wire::RendezvousBody body;
    copy_out(i, s.tail + sizeof h, reinterpret_cast<std::byte *>(&body), sizeof body);
    consume(s, ctl, frame);
    if (body.cookie >= 64) {
      poison(i, s, ctl, "rendezvous cookie " + std::to_string(body.cookie) + " is not 0..63",
             false);
      return -1;
    }
    const Stub st{this, ctl, pools_[i].base, pools_[i].bytes, body.address, body.cookie, s.pid, i};
    BlockHeader *b = env_.pool->allocate(sizeof st);
    if (b == nullptr) {
      hand_back(st);
      log("shm: no pool block for a rendezvous stub from pid " + std::to_string(s.pid) +
          "; message dropped: " + last_error());
      return 1;
    }
    std::memcpy(payload_of(b), &st, sizeof st);
    Message *m = message_in(b);
    m->header = CoreHeader{h.source, h.tag, h.domain};
    m->length = h.total_length;
    m->rendezvous = true;
    b->state.store(BlockState::kLibrary, std::memory_order_release);
    if (env_.sink->deliver(h.destination, m) != ROCL_OK) {
      unknown_.fetch_add(1);
      log("shm: rendezvous message from pid " + std::to_string(s.pid) + " for an unknown resource");
      discard(m);
    } else {
      delivered_.fetch_add(1);
    }
    return 1;
  }

  void log(const std::string &s) {
    try {
      log_(s);
    } catch (...) {
    }
  }

  void forget(rocl_gid_t peer, const std::shared_ptr<Conn> &c) {
    std::lock_guard<std::mutex> g(peers_mu_);
    auto it = peers_.find(peer);
    if (it != peers_.end() && it->second == c) peers_.erase(it);
  }

  // Is the peer still the process we connected to?
  static bool peer_alive(const Conn &c) {
    if (::kill(c.pid, 0) != 0 && errno == ESRCH) return false;
    const std::uint64_t st = process_start(c.pid);
    return st != 0 && st == c.start_time;
  }

  int connect(Conn &c, std::string_view peer_address) {
    const int al = static_cast<int>(peer_address.size());
    const char *ad = peer_address.data();
    auto a = parse_address(peer_address);
    if (!a) return fail(ROCL_EPEER, "shm: '%.*s' is not an shm address", al, ad);
    c.pid = a->pid;
    c.start_time = process_start(a->pid);
    if (c.start_time == 0) return fail(ROCL_EPEER, "shm: peer process %d is gone", a->pid);
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", a->pid, a->fd);
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      return fail(ROCL_EPEER, "shm: cannot open %s for peer %.*s: %s", path, al, ad,
                  std::strerror(errno));
    }
    struct stat st {};
    const int seals = ::fcntl(fd, F_GET_SEALS);
    if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != a->size ||
        a->size < 4096 + sizeof(SlotCtl) || seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
      ::close(fd);
      return fail(ROCL_EPEER, "shm: %s is not the inbox announced by %.*s (size or seals)", path,
                  al, ad);
    }
    void *p = ::mmap(nullptr, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
      return fail(ROCL_EPEER, "shm: mmap of %s failed: %s", path, std::strerror(errno));
    }
    c.seg = static_cast<std::byte *>(p);
    c.seg_bytes = a->size;
    c.hdr = reinterpret_cast<SegHeader *>(c.seg);
    // The peer's header is untrusted too: check it describes this mapping.
    const std::uint64_t slots = c.hdr->slots, rb = c.hdr->ring_bytes;
    if (c.hdr->magic != kSegMagic || c.hdr->version != kSegVersion || slots == 0 ||
        slots > kMaxSlots || rb < 4096 || (rb & (rb - 1)) != 0 ||
        c.hdr->header_bytes != header_bytes_for(static_cast<std::uint32_t>(slots)) ||
        c.hdr->header_bytes + slots * rb != a->size) {
      return fail(ROCL_EPEER, "shm: %s is not an rocl inbox (bad segment header)", path);
    }
    c.ring_bytes = rb;
    JobSecret::Challenge ch;
    std::memcpy(ch.data(), c.hdr->challenge, 32);
    const std::uint32_t me = static_cast<std::uint32_t>(::getpid());
    bool claimed = false;
    for (std::uint32_t i = 0; i < slots && !claimed; ++i) {
      SlotCtl *s = slot_ctl(c.seg, i);
      std::uint32_t expect = 0;
      if (s->owner.load(std::memory_order_relaxed) == 0 &&
          s->owner.compare_exchange_strong(expect, me, std::memory_order_acq_rel)) {
        c.slot = i;
        c.ctl = s;
        claimed = true;
        c.hdr->claims.fetch_add(1, std::memory_order_release);
      }
    }
    if (!claimed) {
      return fail(ROCL_EPEER, "shm: inbox of %.*s has no free slot (%" PRIu64 " in use)", al, ad,
                  slots);
    }
    c.ring = c.seg + c.hdr->header_bytes + std::uint64_t{c.slot} * rb;
    c.head = c.ctl->head.load(std::memory_order_relaxed);
    c.seen_tail = c.head;
    Hello h{};
    h.magic = kHelloMagic;
    h.pid = me;
    h.slot = c.slot;
    const auto proof = secret_->prove(shm::kProofLabel, ch);
    std::memcpy(h.proof, proof.data(), 32);
    const bool pool = env_.pool != nullptr && env_.pool->region_fd() >= 0;
    h.pool_fd = pool ? static_cast<std::uint32_t>(env_.pool->region_fd()) : ~0u;
    h.pool_bytes = pool ? env_.pool->region_bytes() : 0;
    std::memcpy(c.ring + (c.head & (rb - 1)), &h, sizeof h);
    publish(c, c.head + sizeof h);
    // Wait for the verdict so that a refusal is reported by this send.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(shm::kHandshakeTimeoutMs);
    for (int spins = 0;; ++spins) {
      const std::uint32_t v = c.ctl->verdict.load(std::memory_order_acquire);
      if (v == kAccepted || v == kAcceptedPool) {
        c.rendezvous = v == kAcceptedPool;
        break;
      }
      if (v == kRefused) {
        return fail(ROCL_EPEER, "shm: peer %.*s refused slot %u: job secret proof did not verify",
                    al, ad, c.slot);
      }
      if (spins < 200) {
        cpu_relax();
        continue;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return fail(ROCL_EPEER, "shm: peer %.*s did not answer the handshake within %d ms", al, ad,
                    shm::kHandshakeTimeoutMs);
      }
      if (!peer_alive(c)) return fail(ROCL_EPEER, "shm: peer process %d is gone", c.pid);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    c.connected = true;
    return ROCL_OK;
  }

  // Makes the frames up to `head` visible, then wakes the receiver's thread
  // only if it sleeps and no caller of the receiver is polling (that caller
  // will see the frame; poll_end makes sure of it). Dekker pairing: we store
  // head then load sleeping/pollers; the receiver stores sleeping/pollers
  // then loads head.
  void publish(Conn &c, std::uint64_t head) {
    c.head = head;
    c.ctl->head.store(head, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (c.hdr->sleeping.load(std::memory_order_relaxed) != 0 &&
        c.hdr->pollers.load(std::memory_order_relaxed) == 0) {
      wake(c.hdr);
    }
  }

  static void wake(SegHeader *h) {
    h->wake_seq.fetch_add(1, std::memory_order_release);
    futex(&h->wake_seq, FUTEX_WAKE, 1, nullptr);
  }

  // Waits until `need` bytes are free in c's ring. ROCL_OK or ROCL_EPEER.
  int wait_space(Conn &c, std::uint64_t need) {
    // The tail we saw last is a lower bound of the receiver's: if it leaves
    // room, do not touch the receiver's cache line at all.
    if (c.ring_bytes - (c.head - c.seen_tail) >= need) return ROCL_OK;
    int spins = 0;
    int sleep_us = 20;
    auto next_check = std::chrono::steady_clock::now();
    for (;;) {
      const std::uint64_t tail = c.ctl->tail.load(std::memory_order_acquire);
      if (tail > c.head || c.head - tail > c.ring_bytes) {
        return fail(ROCL_EPEER, "shm: peer process %d corrupted the ring of slot %u", c.pid,
                    c.slot);
      }
      c.seen_tail = tail;
      if (c.ring_bytes - (c.head - tail) >= need) return ROCL_OK;
      if (c.ctl->verdict.load(std::memory_order_relaxed) == kRefused) {
        return fail(ROCL_EPEER, "shm: peer process %d dropped slot %u", c.pid, c.slot);
      }
      if (++spins < 500) {
        cpu_relax();
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_check) {
        if (!peer_alive(c)) {
          return fail(ROCL_EPEER, "shm: peer process %d died with its ring full", c.pid);
        }
        next_check = now + std::chrono::milliseconds(20);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      sleep_us = std::min(sleep_us * 2, 1000);
    }
  }

  void copy_in(Conn &c, std::uint64_t pos, const std::byte *src, std::uint64_t n) {
    const std::uint64_t off = pos & (c.ring_bytes - 1);
    const std::uint64_t first = std::min(n, c.ring_bytes - off);
    std::memcpy(c.ring + off, src, first);
    if (n > first) std::memcpy(c.ring, src + first, n - first);
  }

  int write_message(Conn &c, rocl_gid_t destination, Message *msg) {
    const std::uint64_t total = msg->length;
    const std::uint64_t chunk =
        std::min<std::uint64_t>(c.ring_bytes / 4, limits_.max_fragment_bytes);
    wire::MessageHeader h{};
    h.magic = wire::kMagic;
    h.version = wire::kVersion;
    h.kind = total > chunk ? wire::Kind::kFragment : wire::Kind::kEager;
    h.source = msg->header.source;
    h.destination = destination;
    h.tag = msg->header.tag;
    h.domain = msg->header.domain;
    h.message_id = next_id_.fetch_add(1, std::memory_order_relaxed);
    h.total_length = total;
    const auto *data = static_cast<const std::byte *>(msg->data);
    std::uint64_t off = 0;
    do {
      const std::uint64_t len = std::min(total - off, chunk);
      h.fragment_offset = off;
      h.fragment_length = static_cast<std::uint32_t>(len);
      const std::uint64_t frame = sizeof h + pad64(len);
      if (const int rc = wait_space(c, frame); rc != ROCL_OK) return rc;
      std::memcpy(c.ring + (c.head & (c.ring_bytes - 1)), &h, sizeof h);
      if (len != 0) copy_in(c, c.head + sizeof h, data + off, len);
      publish(c, c.head + frame);
      off += len;
    } while (off < total);
    return ROCL_OK;
  }

  // ---- receiving (whoever holds rx_busy_: the thread or a polling caller) ----

  // Polls the rings if nobody else does (or, with wait, once the current
  // poller is done). Returns the frames handled.
  int poll_locked(bool wait) noexcept {
    // Test before test-and-set: many spinning callers must not keep
    // writing the flag's cache line while one of them polls.
    while (rx_busy_.test(std::memory_order_relaxed) ||
           rx_busy_.test_and_set(std::memory_order_acquire)) {
      if (!wait) return 0;
      cpu_relax();
    }
    const int n = poll_once();
    rx_busy_.clear(std::memory_order_release);
    return n;
  }

  bool callers_poll() const noexcept { return hdr_->pollers.load(std::memory_order_relaxed) != 0; }

  // The progress thread: polls while nobody else does, spins a little when
  // idle, then sleeps until a sender wakes it. While callers poll it sleeps
  // at once and senders leave it alone.
  void run() {
    int idle = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      if (!callers_poll()) {
        if (poll_locked(true) != 0) {
          idle = 0;
          continue;
        }
        if (++idle < 2000) {
          cpu_relax();
          continue;
        }
      }
      hdr_->sleeping.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      const std::uint32_t seq = hdr_->wake_seq.load(std::memory_order_acquire);
      reap_all();
      if ((callers_poll() || poll_locked(true) == 0) && !stop_.load()) {
        // Sleep long, unless senders' buffers wait to be reaped.
        const long ms = pending_total_.load(std::memory_order_relaxed) != 0 ? 1 : 50;
        timespec ts{0, ms * 1000 * 1000};
        futex(&hdr_->wake_seq, FUTEX_WAIT, seq, &ts);
      }
      hdr_->sleeping.store(0, std::memory_order_relaxed);
      idle = 0;
    }
  }

  // Rebuilds the list of claimed slots when a sender claimed one since we
  // last looked, so that a poll reads only the slots in use.
  void refresh_active() {
    const std::uint32_t claims = hdr_->claims.load(std::memory_order_acquire);
    if (claims == seen_claims_) return;
    seen_claims_ = claims;
    active_.clear();
    for (std::uint32_t i = 0; i < cfg_.slots; ++i) {
      if (rx_[i].state == RxSlot::kPoisoned) continue;
      if (rx_[i].state != RxSlot::kNew ||
          slot_ctl(seg_, i)->owner.load(std::memory_order_acquire) != 0) {
        active_.push_back(i);
      }
    }
  }

  int poll_once() {
    int n = 0;
    refresh_active();
    for (const std::uint32_t i : active_) {
      RxSlot &s = rx_[i];
      if (s.state == RxSlot::kPoisoned) continue;
      SlotCtl *ctl = slot_ctl(seg_, i);
      // Drain a bounded number of frames per slot per round for fairness.
      for (int k = 0; k < 16; ++k) {
        const int r = poll_slot(i, s, ctl);
        if (r <= 0) break;
        n += r;
      }
    }
    return n;
  }

  void poison(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::string &why, bool refusal) {
    s.state = RxSlot::kPoisoned;
    drop_partial(s);
    ctl->verdict.store(kRefused, std::memory_order_release);
    (refusal ? refused_ : poisoned_).fetch_add(1);
    log("shm: slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ") " +
        (refusal ? "refused: " : "dropped: ") + why);
  }

  void drop_partial(RxSlot &s) {
    if (s.block != nullptr && env_.pool != nullptr) {
      env_.pool->release(s.block, BlockState::kLibrary);
    }
    s.block = nullptr;
    s.done = 0;
  }

  void copy_out(std::uint32_t i, std::uint64_t pos, std::byte *dst, std::uint64_t n) {
    std::byte *ring = seg_ + hdr_->header_bytes + std::uint64_t{i} * cfg_.ring_bytes;
    const std::uint64_t off = pos & (cfg_.ring_bytes - 1);
    const std::uint64_t first = std::min(n, cfg_.ring_bytes - off);
    std::memcpy(dst, ring + off, first);
    if (n > first) std::memcpy(dst + first, ring, n - first);
  }

  void consume(RxSlot &s, SlotCtl *ctl, std::uint64_t bytes) {
    s.tail += bytes;
    ctl->tail.store(s.tail, std::memory_order_release);
  }

  // 1: handled a frame, 0: nothing there, -1: slot poisoned.
  int poll_slot(std::uint32_t i, RxSlot &s, SlotCtl *ctl) {
    const std::uint64_t head = ctl->head.load(std::memory_order_acquire);
    if (head == s.tail) return 0;
    const std::uint64_t avail = head - s.tail;
    if (head < s.tail || avail > cfg_.ring_bytes || (avail % kFrameAlign) != 0) {
      if (s.state == RxSlot::kNew) s.pid = ctl->owner.load(std::memory_order_relaxed);
      char why[128];
      std::snprintf(why, sizeof why,
                    "head %" PRIu64 " is not a valid ring index (tail %" PRIu64 ")", head, s.tail);
      poison(i, s, ctl, why, false);
      return -1;
    }
    if (s.state == RxSlot::kNew) {
      s.pid = ctl->owner.load(std::memory_order_relaxed);
      Hello h;
      copy_out(i, s.tail, reinterpret_cast<std::byte *>(&h), sizeof h);
      JobSecret::Digest proof;
      std::memcpy(proof.data(), h.proof, 32);
      if (h.magic != kHelloMagic || h.slot != i ||
          !secret_->verify(shm::kProofLabel, challenge_, proof)) {
        poison(i, s, ctl, "job secret proof did not verify", true);
        return -1;
      }
      s.state = RxSlot::kOk;
      try {
        s.name = "shm slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ")";
      } catch (...) {  // only the sentences of later errors get poorer
      }
      s.pool_mapped = map_peer_pool(i, s.pid, h.pool_fd, h.pool_bytes);
      consume(s, ctl, sizeof h);
      ctl->verdict.store(s.pool_mapped ? kAcceptedPool : kAccepted, std::memory_order_release);
      return 1;
    }
    wire::MessageHeader h;
    std::byte raw[sizeof h];
    copy_out(i, s.tail, raw, sizeof raw);
    if (wire::decode_header(raw, limits_, s.name, &h) != ROCL_OK) {
      poison(i, s, ctl, last_error(), false);
      return -1;
    }
    const std::uint64_t frame = sizeof h + pad64(h.fragment_length);
    if (frame > avail) return 0;  // the sender publishes whole frames; wait for it
    if (h.kind == wire::Kind::kRendezvousRequest) return take_rendezvous(i, s, ctl, h, frame);
    if (h.kind != wire::Kind::kEager && h.kind != wire::Kind::kFragment) {
      poison(i, s, ctl,
             std::string("frame kind ") + wire::kind_name(h.kind) + " is not used by shm", false);
      return -1;
    }
    if (s.block == nullptr) {
      if (h.fragment_offset != 0) {
        poison(i, s, ctl,
               "fragment_offset " + std::to_string(h.fragment_offset) + " does not start a message",
               false);
        return -1;
      }
      if (env_.pool == nullptr) {
        poison(i, s, ctl, "no buffer pool to receive into", false);
        return -1;
      }
      BlockHeader *b = env_.pool->allocate(h.total_length);
      if (b == nullptr) {
        poison(i, s, ctl,
               "no pool block for a message of " + std::to_string(h.total_length) +
                   " bytes: " + last_error(),
               false);
        return -1;
      }
      b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
      s.block = b;
      s.first = h;
      s.done = 0;
    } else {
      const auto &f = s.first;
      if (h.kind != wire::Kind::kFragment || h.message_id != f.message_id ||
          h.total_length != f.total_length || h.fragment_offset != s.done || h.source != f.source ||
          h.destination != f.destination || h.tag != f.tag || h.domain != f.domain) {
        poison(i, s, ctl,
               "fragment of message " + std::to_string(h.message_id) + " at offset " +
                   std::to_string(h.fragment_offset) + " does not continue message " +
                   std::to_string(f.message_id) + " at offset " + std::to_string(s.done),
               false);
        return -1;
      }
    }
    if (h.fragment_length != 0) {
      copy_out(i, s.tail + sizeof h, payload_of(s.block) + h.fragment_offset, h.fragment_length);
    }
    s.done += h.fragment_length;
    consume(s, ctl, frame);
    if (s.done < s.first.total_length) return 1;
    BlockHeader *b = s.block;
    s.block = nullptr;
    s.done = 0;
    Message *m = message_in(b);
    m->header = CoreHeader{s.first.source, s.first.tag, s.first.domain};
    m->data = payload_of(b);
    m->length = s.first.total_length;
    b->state.store(BlockState::kLibrary, std::memory_order_release);
    if (env_.sink->deliver(s.first.destination, m) != ROCL_OK) {
      unknown_.fetch_add(1);
      char line[160];
      std::snprintf(line, sizeof line,
                    "shm: message from slot %u (pid %u) for unknown resource 0x%016" PRIx64, i,
                    s.pid, s.first.destination);
      log(line);
      std::destroy_at(m);
      env_.pool->release(b, BlockState::kLibrary);
    } else {
      delivered_.fetch_add(1);
    }
    return 1;
  }

  TransportEnv env_;
  shm::Config cfg_;
  shm::LogFn log_;
  std::optional<JobSecret> own_secret_;
  const JobSecret *secret_ = nullptr;
  wire::Limits limits_;
  std::string address_;

  int fd_ = -1;
  std::byte *seg_ = nullptr;
  std::size_t seg_bytes_ = 0;
  SegHeader *hdr_ = nullptr;
  JobSecret::Challenge challenge_{};
  std::vector<RxSlot> rx_;             // only by the holder of rx_busy_ (as the two below)
  std::vector<std::uint32_t> active_;  // claimed slots, in index order
  // Senders' pools by slot: written once at the handshake (before any stub
  // of that slot exists), read by pull() on any thread, unmapped at the end.
  std::vector<PeerPool> pools_;
  std::uint32_t seen_claims_ = 0;
  std::atomic_flag rx_busy_ = ATOMIC_FLAG_INIT;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex peers_mu_;
  std::map<rocl_gid_t, std::shared_ptr<Conn>> peers_;
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::int64_t> pending_total_{0};  // rendezvous buffers not yet reaped

  std::atomic<std::uint64_t> refused_{0}, poisoned_{0}, unknown_{0}, delivered_{0};
};

}  // namespace

std::unique_ptr<ShmTransport> make_shm_transport_with(const TransportEnv &env,
                                                      const shm::Config &config, shm::LogFn log) {
  std::unique_ptr<ShmTransportImpl> t;
  try {
    t = std::make_unique<ShmTransportImpl>(env, config, std::move(log));
  } catch (...) {
    fail(ROCL_ENOMEM, "shm: out of memory");
    return nullptr;
  }
  if (t->init() != ROCL_OK) return nullptr;
  return t;
}

std::unique_ptr<Transport> make_shm_transport(const TransportEnv &env) {
  return make_shm_transport_with(env, shm::Config{}, nullptr);
}

}  // namespace rocl::impl
