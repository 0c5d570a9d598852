// shm_transport.cpp - the shm transport (design: shm_transport.hpp): its
// life (the inbox made, the progress thread started and stopped), its hooks
// driving the parts (listed in shm_internal.hpp), the progress thread, the
// counters, the options and the factories.
#include "transport/shm/shm_transport.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>

#include "status/status.hpp"
#include "transport/shm/shm_handshake.hpp"
#include "transport/shm/shm_process.hpp"
#include "transport/shm/shm_transport_impl.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl {
namespace shm::detail {
namespace {

// Frames of a size that fits the ring with the largest header (frame_bytes
// rounds up to kFrameAlign, which divides ring_bytes).
wire::Limits limits_for(const shm::Config &cfg) {
  wire::Limits limits;
  limits.max_fragment_bytes = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(cfg.ring_bytes - kSealBytes - kMaxHeaderBytes, 1u << 30));
  return limits;
}

}  // namespace

const JobSecret *ShmTransportImpl::secret_of(const TransportEnv &env,
                                             std::optional<JobSecret> &own) {
  if (env.secret != nullptr) return env.secret;
  own = JobSecret::generate();
  return &*own;
}

ShmTransportImpl::ShmTransportImpl(const TransportEnv &env, const shm::Config &cfg, shm::LogFn log)
    : ShmTransport(env, "shm", std::move(log)),
      cfg_(cfg),
      limits_(limits_for(cfg)),
      secret_(secret_of(env_, own_secret_)),
      inbox_(*this, env_, limits_, secret_, segment_, peer_pools_, counters_),
      rendezvous_reader_(*this, env_.pool, written_parts_, counters_),
      writer_(cfg_, env_, limits_, counters_),
      connector_(secret_, env_.pool, writer_),
      policy_(cfg_, env_, counters_),
      rendezvous_sender_(*this, peers_, writer_, written_parts_, counters_, env_.pool) {}

ShmTransportImpl::~ShmTransportImpl() {
  if (thread_.joinable()) {
    stop_.store(true);
    segment_.header()->wake_seq.fetch_add(1);
    wake_inbox(&segment_.header()->wake_seq);
    thread_.join();
  }
  inbox_.drop_partials();
  const auto g = peers_.lock();
  for (auto &[peer, c] : peers_.all()) {
    std::lock_guard<ConnMutex> lk(c->mu);
    rendezvous_sender_.reap(*c);
    rendezvous_sender_.drop_pending(*c);
  }
  peers_.all().clear();
}

int ShmTransportImpl::init() {
  if (cfg_.slots == 0 || cfg_.slots > kMaxSlots || cfg_.ring_bytes < 4096 ||
      (cfg_.ring_bytes & (cfg_.ring_bytes - 1)) != 0 ||
      cfg_.ring_bytes > (std::uint64_t{1} << 30) || cfg_.poll_lease_us <= 0) {
    return fail(ROCL_EINVAL, "shm: bad configuration (%u slots of %" PRIu64 " bytes)", cfg_.slots,
                cfg_.ring_bytes);
  }
  if (const int rc = segment_.create(cfg_, env_.pool); rc != ROCL_OK) return rc;
  if (const int rc = inbox_.open(cfg_.slots, cfg_.ring_bytes); rc != ROCL_OK) return rc;
  peer_pools_.open(cfg_.slots);
  rendezvous_reader_.open(cfg_.slots);
  lease_.attach(segment_.header(), cfg_.poll_lease_us);
  // Lent sends need process_vm_readv; where a seccomp filter refuses it
  // even on our own memory, no peer will read ours either.
  const std::uint64_t &probe = inbox_.probe_word();
  cross_memory_ = probe_memory(static_cast<std::uint32_t>(::getpid()),
                               reinterpret_cast<std::uintptr_t>(&probe), probe);
  TransportCaps caps;
  caps.takes_lent_memory = cross_memory_;
  caps.bytes_send_limit = kBytesSendLimit;
  caps.takes_arrived = true;
  caps.makes_stubs = true;
  caps.pulls_into_memory = true;
  caps.caller_wake = {&segment_.header()->wake_seq, &segment_.header()->wake_wanted, true};
  set_caps(caps);
  address_ = "shm:" + std::to_string(::getpid()) + ":" + std::to_string(segment_.fd()) + ":" +
             std::to_string(segment_.bytes()) + ":" + host_tag();
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    return fail(ROCL_ENOMEM, "shm: cannot start the progress thread");
  }
  return ROCL_OK;
}

bool ShmTransportImpl::reaches_impl(std::string_view address) const noexcept {
  try {
    auto a = parse_address(address);
    if (!a) return false;
    static const std::string tag = host_tag();
    return a->host == tag && pid_alive(a->pid);
  } catch (...) {
    return false;
  }
}

shm::Stats ShmTransportImpl::stats() const noexcept {
  shm::Stats s;
  s.refused = counters_.refused.load();
  s.poisoned = counters_.poisoned.load();
  s.unknown_destination = refused_arrivals();
  s.delivered = delivered();
  s.lend_refused = counters_.lend_refused.load();
  s.paused_reads = counters_.paused_reads.load();
  s.early_wraps = counters_.early_wraps.load();
  s.parts_copied_for_receivers = counters_.parts_copied_for_receivers.load();
  s.first_parts_copied_by_senders = counters_.first_parts_copied_by_senders.load();
  s.parts_copied_into_mapped_pools = counters_.parts_copied_into_mapped_pools.load();
  s.parts_copied_by_senders = counters_.parts_copied_by_senders.load();
  return s;
}

// ---- Sending ------------------------------------------------------------------

int ShmTransportImpl::send_impl(rocl_gid_t peer, std::string_view peer_address,
                                rocl_gid_t destination, Message *msg) noexcept {
  if (msg == nullptr) return fail(ROCL_EINVAL, "shm: send of a null message");
  if (msg->length > limits_.max_message_bytes) {
    return fail(ROCL_ETOOBIG, "shm: message of %zu bytes exceeds the limit %" PRIu64,
                static_cast<std::size_t>(msg->length), limits_.max_message_bytes);
  }
  Conn *c = peers_.conn_to(peer);
  if (c == nullptr) return fail(ROCL_ENOMEM, "shm: out of memory");
  std::unique_lock<ConnMutex> lk(c->mu);
  if (const int rc = ready_locked(peer, peer_address, c, lk); rc != ROCL_OK) return rc;
  // A message the policy would lend is copied through the ring now if
  // this receiver was lent enough already.
  bool rendezvous = policy_.prefers(*c, msg);
  if (rendezvous && !rendezvous_sender_.can_lend(*c, *msg)) {
    rendezvous = false;  // lent enough to this receiver: copy it through the ring
    counters_.lend_refused.fetch_add(1, std::memory_order_relaxed);
  }
  const int rc =
      rendezvous ? rendezvous_sender_.write_request(*c, destination, msg)
                 : writer_.write_message(*c, destination, msg->header,
                                         static_cast<const std::byte *>(msg->data), msg->length);
  if (rc != ROCL_OK) return abandon(peer, c, lk, rc);
  FrameWriter::unlock_and_wake(*c, lk);
  // A rendezvous block stays ours until the receiver has copied it.
  if (!rendezvous) finish_sent(block_of(msg), true);
  return ROCL_OK;
}

int ShmTransportImpl::send_bytes_impl(rocl_gid_t peer, std::string_view peer_address,
                                      rocl_gid_t destination, const CoreHeader &header,
                                      const void *data, std::size_t length, bool in_pool) noexcept {
  if (length > (in_pool ? policy_.pool_send_limit() : kBytesSendLimit)) return kNotTaken;
  Conn *c = peers_.conn_to(peer);
  if (c == nullptr) return fail(ROCL_ENOMEM, "shm: out of memory");
  std::unique_lock<ConnMutex> lk(c->mu);
  if (const int rc = ready_locked(peer, peer_address, c, lk); rc != ROCL_OK) return rc;
  if (length >= policy_.stream_from()) {
    if (in_pool && policy_.streaming(*c)) return kNotTaken;  // send() sends it by rendezvous
    policy_.streams(*c, length);  // a stream's first message: the next ones see whether it goes on
  }
  const int rc =
      writer_.write_message(*c, destination, header, static_cast<const std::byte *>(data), length);
  if (rc != ROCL_OK) return abandon(peer, c, lk, rc);
  FrameWriter::unlock_and_wake(*c, lk);
  return ROCL_OK;
}

int ShmTransportImpl::abandon(rocl_gid_t peer, Conn *c, std::unique_lock<ConnMutex> &lk, int rc) {
  c->dead = true;
  rendezvous_sender_.drop_pending(*c);
  lk.unlock();
  peers_.drop(peer, c);
  return rc;
}

int ShmTransportImpl::ready_locked(rocl_gid_t peer, std::string_view peer_address, Conn *c,
                                   std::unique_lock<ConnMutex> &lk) {
  if (c->dead) {
    const pid_t pid = c->pid;
    lk.unlock();
    peers_.drop(peer, c);
    return fail(ROCL_EPEER, "shm: peer process %d is gone", static_cast<int>(pid));
  }
  if (c->connected) return ROCL_OK;
  const int rc = connector_.connect(*c, peer_address);
  if (rc != ROCL_OK) {
    c->dead = true;
    lk.unlock();
    peers_.drop(peer, c);
  }
  return rc;
}

// ---- Receiving ----------------------------------------------------------------

// Caller progress (contract in transport.hpp): a poll of the rings if no
// other thread polls them (Inbox's try-lock).
int ShmTransportImpl::progress_impl(const Waiter *waiter) noexcept {
  lease_.count_progress();
  // Freed buffers count as events: a sender waiting for lent sends to
  // complete spins on while they do (a window of them completes one by one,
  // and a sleep between two cost the window up to the sleep).
  const int reaped = rendezvous_sender_.reap_all();
  return reaped + inbox_.poll(false, waiter);
}

// The shortcut of a receive whose message waits at the front of a ring
// (contract in transport.hpp): a receiver behind a stream finds most of
// its messages so, and taking one here skips its delivery (the mailbox's
// lock, its queue, the receive's own lock to take it back out: rocl-bench
// bandwidth --transport shm of small messages shows it). Counts as a poll
// (the lease: senders do not wake the thread while receives keep taking).
Message *ShmTransportImpl::take_arrived_impl(rocl_gid_t destination, const CoreHeader &pattern,
                                             ReadyFn ready, const void *arg, bool *left) noexcept {
  if (!inbox_.try_enter()) return nullptr;
  lease_.count_poll();
  Message *m = nullptr;
  if (ready(arg)) {
    m = inbox_.take_front(destination, pattern, left);
    // Our own messages sent by rendezvous: their receivers' copy offers
    // and the buffers they hand back are progress()'s (reap_all), and a
    // receiver waits for the offer it made, which a sender that only
    // looked here would leave waiting (rocl-bench latency --transport shm
    // of 16-64 KiB shows it).
    if (left != nullptr && rendezvous_sender_.has_pending()) *left = true;
  } else if (left != nullptr) {
    *left = true;  // the mailbox first: the core's to say
  }
  inbox_.leave();
  return m;
}

// The thread, every lease period while `pollers` is raised: lowers it if no
// caller polled since the last period, then polls once. True if it lowered
// it.
bool ShmTransportImpl::lower_pollers_if_idle() noexcept {
  if (!lease_.lower_if_idle()) return false;
  inbox_.poll(true);
  return true;
}

// Rounds the progress thread spins before it sleeps: kIdleSpins if it may
// run on more than one cpu, a few if it shares a single cpu with the
// process's other threads (a process pinned to one core, as MPI-style jobs
// are). There a spinning progress thread takes the cpu from the thread that
// computes or receives (the scheduler hands the cpu over only after a slice
// of about a millisecond), and each wake-up then costs the pinned receiver
// several times its ping-pong latency (compare's rocl-mpi-shm latency rows
// show it). Read again after each wake-up: the affinity may change.
int ShmTransportImpl::idle_spins() noexcept {
  constexpr int kIdleSpins = 2000;
  // Pinned: just enough to catch the next fragment its sender is writing
  // (a 32 KiB copy) instead of sleeping between the fragments of a message.
  constexpr int kPinnedSpins = 200;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return kIdleSpins;
  return CPU_COUNT(&set) > 1 ? kIdleSpins : kPinnedSpins;
}

// The progress thread: polls while nobody else does, spins a little when
// idle (idle_spins), then sleeps until a sender wakes it. While callers
// poll it sleeps at once and senders leave it alone.
void ShmTransportImpl::run() {
  SegHeader *hdr = segment_.header();
  int idle = 0;
  int spins = idle_spins();
  while (!stop_.load(std::memory_order_relaxed)) {
    env_.sink->progressed();  // what the polls of the last round delivered
    if (!lease_.callers_poll() || lower_pollers_if_idle()) {
      lease_.restart_period();  // nobody polls (now): the next lease starts short
      if (inbox_.poll(true) != 0) {
        idle = 0;
        continue;
      }
      // Spin idle only while no other rocl thread is runnable on this cpu:
      // the spin would take the cpu from the thread that is to send.
      if (++idle == 1 && wait::cpu_is_shared()) idle = spins;
      if (idle < spins) {
        cpu_relax();
        continue;
      }
    }
    hdr->sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint32_t seq = hdr->wake_seq.load(std::memory_order_acquire);
    rendezvous_sender_.reap_all();
    if ((lease_.callers_poll() || inbox_.poll(true) == 0) && !stop_.load()) {
      // Sleep long, unless senders' buffers wait to be reaped or a paused
      // slot waits for a pool block (kRetryMs), or callers poll: then wake
      // when their lease may have run out.
      const bool soon = rendezvous_sender_.has_pending() || inbox_.holds_unread_input();
      const long us = lease_.sleep_bound(soon ? shm::kRetryMs * 1000L : 50000);
      timespec ts{0, us * 1000};
      sleep_on_inbox(&hdr->wake_seq, seq, &ts);
      lease_.woke();
    }
    hdr->sleeping.store(0, std::memory_order_relaxed);
    idle = 0;
    spins = idle_spins();
  }
}

}  // namespace shm::detail

namespace shm {
namespace {
constexpr OptionRow kOptions[] = {
    {"ROCL_SHM_RNDV_THRESHOLD", "8K",
     "Over shm, pool buffers of at least this many bytes (or ROCL_RNDV_THRESHOLD, if lower) "
     "go by rendezvous: the receiver copies the payload from the sender's pool, mapped "
     "read-only, when a receive matches, while the sender, waiting for a reply or its next "
     "send, writes the other half into the receive's block through its mapping of the "
     "receiver's pool (both cpus copy, each the half its cache holds when a message is sent "
     "back). Below about 8 KiB the rings answer sooner; above, both cpus copying beats the "
     "ring's two copies in a row (rocl-bench latency bandwidth --transport shm with another "
     "value shows it). ROCL_RNDV_THRESHOLD=0 turns it off too (0: ROCL_RNDV_THRESHOLD alone).",
     OptionType::kSize},
    {"ROCL_SHM_STREAM_RNDV_THRESHOLD", "4K",
     "Over shm, pool buffers of at least this many bytes, below ROCL_SHM_RNDV_THRESHOLD, go by "
     "rendezvous too when they stream: when nothing arrived over shm since this sender's last "
     "such message to the same process (no reply came in between). A ping-pong's message is "
     "copied through the ring, which answers sooner; a stream's by rendezvous, where both "
     "cpus copy (rocl-bench bandwidth --transport shm with this option at 0 shows it). 0: "
     "never.",
     OptionType::kSize},
    {"ROCL_SHM_LEND_THRESHOLD", "128K",
     "Over shm, what a send lends (ROCL_LEND_THRESHOLD) is read by the receiver from the "
     "sender's memory only from this many bytes; a smaller lent message is copied through "
     "the ring at once (memcpy in, memcpy out), and its send completes then. The kernel's "
     "cross-memory copy costs a system call and page pinning per call, and on some machines "
     "it copies far slower than memcpy, so below about 128 KiB the ring wins there (rocl-bench "
     "mpi's latency and bw with this option at 0 show where reading pays on a machine). 0: "
     "ROCL_LEND_THRESHOLD alone.",
     OptionType::kSize},
};
}  // namespace

std::span<const OptionRow> option_rows() noexcept {
  return kOptions;
}

Config config_from(const OptionValues &options) {
  Config c;
  c.rendezvous_threshold = options.size("ROCL_SHM_RNDV_THRESHOLD");
  c.stream_rendezvous_threshold = options.size("ROCL_SHM_STREAM_RNDV_THRESHOLD");
  c.lend_threshold = options.size("ROCL_SHM_LEND_THRESHOLD");
  return c;
}
}  // namespace shm

std::unique_ptr<ShmTransport> make_shm_transport_with(const TransportEnv &env,
                                                      const shm::Config &config, shm::LogFn log) {
  std::unique_ptr<shm::detail::ShmTransportImpl> t;
  try {
    t = std::make_unique<shm::detail::ShmTransportImpl>(env, config, std::move(log));
  } catch (...) {
    fail(ROCL_ENOMEM, "shm: out of memory");
    return nullptr;
  }
  if (t->init() != ROCL_OK) return nullptr;
  return t;
}

std::unique_ptr<Transport> make_shm_transport(const TransportEnv &env) {
  return make_shm_transport_with(env, read_options(env, shm::option_rows(), shm::config_from),
                                 nullptr);
}

// Constant-initialised, so that the table is whole before any code runs.
extern constinit const TransportEntry transport_entry_shm = {
    "shm",
    "same host: memfd inbox of per-sender lock-free rings, futex wake-ups, one copy each way",
    Reach::kHost, shm::kOptions, &make_shm_transport};

}  // namespace rocl::impl
