// shm_connect.cpp - the inbox's life and the way to a peer's inbox: the
// constructor, init() (the memfd segment: created, sealed, mapped, its header
// and slots written, the progress thread started), the destructor, reaches(),
// and connect(): mapping a peer's inbox after checking it, claiming a slot
// and the job secret handshake (design: shm_transport.hpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "transport/shm/shm_internal.hpp"
#include "transport/shm/shm_process.hpp"

namespace rocl::impl::shm::detail {

ShmTransportImpl::ShmTransportImpl(const TransportEnv &env, const shm::Config &cfg, shm::LogFn log)
    : ShmTransport(env, "shm", std::move(log)), cfg_(cfg) {
  if (env_.secret == nullptr) {
    own_secret_ = JobSecret::generate();
    secret_ = &*own_secret_;
  } else {
    secret_ = env_.secret;
  }
}

ShmTransportImpl::~ShmTransportImpl() {
  if (thread_.joinable()) {
    stop_.store(true);
    hdr_->wake_seq.fetch_add(1);
    wake_inbox(&hdr_->wake_seq);
    thread_.join();
  }
  for (auto &s : rx_) drop_partial(s);
  {
    std::lock_guard<std::mutex> g(peers_mu_);
    for (auto &[peer, c] : peers_) {
      std::lock_guard<ConnMutex> lk(c->mu);
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

int ShmTransportImpl::init() {
  if (cfg_.slots == 0 || cfg_.slots > kMaxSlots || cfg_.ring_bytes < 4096 ||
      (cfg_.ring_bytes & (cfg_.ring_bytes - 1)) != 0 ||
      cfg_.ring_bytes > (std::uint64_t{1} << 30)) {
    return fail(ROCL_EINVAL, "shm: bad configuration (%u slots of %" PRIu64 " bytes)", cfg_.slots,
                cfg_.ring_bytes);
  }
  pool_send_limit_ = env_.rendezvous_threshold == 0
                         ? kBytesSendLimit
                         : std::min(kBytesSendLimit, rendezvous_threshold() - 1);
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
  const bool pool = env_.pool != nullptr && env_.pool->region_fd() >= 0;
  hdr_->pool_fd = pool ? static_cast<std::uint32_t>(env_.pool->region_fd()) : ~0u;
  hdr_->pool_pid = static_cast<std::uint32_t>(::getpid());
  hdr_->pool_bytes = pool ? env_.pool->region_bytes() : 0;
  rx_.resize(cfg_.slots);
  std::vector<std::uint64_t> keys(cfg_.slots);
  if (!JobSecret::random_bytes(keys.data(), keys.size() * sizeof keys[0])) {
    return fail(ROCL_ENOMEM, "shm: the random source gave no bytes for the seal keys");
  }
  for (std::uint32_t i = 0; i < cfg_.slots; ++i) {
    SlotCtl *ctl = new (slot_ctl(seg_, i)) SlotCtl{};
    rx_[i].seal_key = keys[i] | 1;  // odd: a seal is never 0 (shm_layout.hpp)
    rx_[i].ring = seg_ + hb + std::uint64_t{i} * cfg_.ring_bytes;
    ctl->seal_key.store(rx_[i].seal_key, std::memory_order_relaxed);
  }
  pools_.resize(cfg_.slots);
  retired_offers_ = std::make_unique<std::atomic<std::uint8_t>[]>(cfg_.slots);
  active_.reserve(cfg_.slots);
  limits_.max_fragment_bytes =
      // a frame with the largest header fits the ring (frame_bytes rounds up
      // to kFrameAlign, which divides ring_bytes)
      static_cast<std::uint32_t>(
          std::min<std::uint64_t>(cfg_.ring_bytes - kSealBytes - kMaxHeaderBytes, 1u << 30));
  // Lent sends need process_vm_readv; where a seccomp filter refuses it
  // even on our own memory, no peer will read ours either.
  cross_memory_ = probe_memory(static_cast<std::uint32_t>(::getpid()),
                               reinterpret_cast<std::uintptr_t>(&rx_[0].seal_key), rx_[0].seal_key);
  TransportCaps caps;
  caps.takes_lent_memory = cross_memory_;
  caps.bytes_send_limit = kBytesSendLimit;
  caps.takes_arrived = true;
  caps.makes_stubs = true;
  caps.pulls_into_memory = true;
  set_caps(caps);
  address_ = "shm:" + std::to_string(::getpid()) + ":" + std::to_string(fd_) + ":" +
             std::to_string(seg_bytes_) + ":" + host_tag();
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

// Is the peer still the process we connected to?
bool ShmTransportImpl::peer_alive(const Conn &c) {
  if (::kill(c.pid, 0) != 0 && errno == ESRCH) return false;
  const std::uint64_t st = process_start(c.pid);
  return st != 0 && st == c.start_time;
}

int ShmTransportImpl::connect(Conn &c, std::string_view peer_address) {
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
    return fail(ROCL_EPEER, "shm: %s is not the inbox announced by %.*s (size or seals)", path, al,
                ad);
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
  c.head = 0;  // a slot has one sender for the receiver's life: its ring is fresh
  c.seen_tail = 0;
  c.seal_key = c.ctl->seal_key.load(std::memory_order_relaxed);
  Hello h{};
  h.magic = kHelloMagic;
  h.pid = me;
  h.slot = c.slot;
  const auto proof = secret_->prove(shm::kProofLabel, ch);
  std::memcpy(h.proof, proof.data(), 32);
  const bool pool = env_.pool != nullptr && env_.pool->region_fd() >= 0;
  h.pool_fd = pool ? static_cast<std::uint32_t>(env_.pool->region_fd()) : ~0u;
  h.pool_bytes = pool ? env_.pool->region_bytes() : 0;
  static_assert(sizeof h <= kMaxHeaderBytes);
  // The memory probe: where the seal key is in our memory (Conn lives on
  // the heap for the connection's life).
  const std::uint64_t probe = reinterpret_cast<std::uintptr_t>(&c.seal_key);
  static_assert(sizeof probe == kHelloProbeBytes);
  // The ring is empty: room without waiting.
  put_frame(c, &h, sizeof h, reinterpret_cast<const std::byte *>(&probe), sizeof probe);
  // Wait for the verdict so that a refusal is reported by this send.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(shm::kHandshakeTimeoutMs);
  for (int spins = 0;; ++spins) {
    const std::uint32_t v = c.ctl->verdict.load(std::memory_order_acquire);
    if (v == kAccepted || v == kAcceptedPool || v == kAcceptedMemory || v == kAcceptedPoolMemory) {
      c.rendezvous = v == kAcceptedPool || v == kAcceptedPoolMemory;
      c.lend_memory = v == kAcceptedMemory || v == kAcceptedPoolMemory;
      break;
    }
    if (v == kRefused) {
      return fail(ROCL_EPEER, "shm: peer %.*s refused slot %u: job secret proof did not verify", al,
                  ad, c.slot);
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
  map_receiver_pool(c);
  c.connected = true;
  return ROCL_OK;
}

// Sender: maps the receiver's pool writable, if it announced one, so that
// the parts of its copy offers that land there are copied with memcpy
// rather than process_vm_writev (a system call that pins the pages, a large
// part of a message of tens of KiB: rocl-bench latency --transport shm shows
// it). Its header is the receiver's, read once; the mapping is checked like
// the receiver checks ours (size, seal against shrinking). Without it, offers
// go by process_vm_writev.
void ShmTransportImpl::map_receiver_pool(Conn &c) {
  const std::uint32_t fd = c.hdr->pool_fd, pid = c.hdr->pool_pid;
  const std::uint64_t bytes = c.hdr->pool_bytes;
  if (fd == ~0u || bytes == 0 || pid != static_cast<std::uint32_t>(c.pid)) return;
  void *p = map_memfd_of(pid, fd, bytes, true);
  if (p == nullptr) return;
  c.receiver_pool = static_cast<std::byte *>(p);
  c.receiver_pool_bytes = bytes;
}

}  // namespace rocl::impl::shm::detail
