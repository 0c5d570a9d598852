// shm_connect.cpp - connecting to a peer's inbox: mapping it after checking
// it, claiming a slot, the job secret handshake (see shm_connect.hpp; design:
// shm_transport.hpp).
#include "transport/shm/shm_connect.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "status/status.hpp"
#include "transport/shm/shm_process.hpp"

namespace rocl::impl::shm::detail {

int Connector::connect(Conn &c, std::string_view peer_address) {
  auto a = parse_address(peer_address);
  if (!a) {
    return fail(ROCL_EPEER, "shm: '%.*s' is not an shm address",
                static_cast<int>(peer_address.size()), peer_address.data());
  }
  SegShape shape;
  if (const int rc = map_inbox(c, *a, peer_address, &shape); rc != ROCL_OK) return rc;
  if (const int rc = claim_slot(c, shape, peer_address); rc != ROCL_OK) return rc;
  say_hello(c);
  if (const int rc = await_verdict(c, peer_address); rc != ROCL_OK) return rc;
  map_receiver_pool(c);
  c.connected = true;
  return ROCL_OK;
}

// Maps the inbox at `a` into c once it checks out: the process is the one
// alive now, the memfd is as big as announced and sealed against
// shrinking, and its header (untrusted too) describes this mapping.
int Connector::map_inbox(Conn &c, const ParsedAddress &a, std::string_view peer_address,
                         SegShape *shape) {
  const int al = static_cast<int>(peer_address.size());
  const char *ad = peer_address.data();
  c.pid = a.pid;
  c.start_time = process_start(a.pid);
  if (c.start_time == 0) return fail(ROCL_EPEER, "shm: peer process %d is gone", a.pid);
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", a.pid, a.fd);
  int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return fail(ROCL_EPEER, "shm: cannot open %s for peer %.*s: %s", path, al, ad,
                std::strerror(errno));
  }
  struct stat st {};
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != a.size ||
      a.size < 4096 + sizeof(SlotCtl) || seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    ::close(fd);
    return fail(ROCL_EPEER, "shm: %s is not the inbox announced by %.*s (size or seals)", path, al,
                ad);
  }
  void *p = ::mmap(nullptr, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    return fail(ROCL_EPEER, "shm: mmap of %s failed: %s", path, std::strerror(errno));
  }
  c.seg = static_cast<std::byte *>(p);
  c.seg_bytes = a.size;
  c.hdr = reinterpret_cast<SegHeader *>(c.seg);
  const SegShape s = read_shape(*c.hdr);
  if (!shape_ok(s, a.size)) {
    return fail(ROCL_EPEER, "shm: %s is not an rocl inbox (bad segment header)", path);
  }
  c.ring_bytes = s.ring_bytes;
  *shape = s;
  return ROCL_OK;
}

// Claims a free slot of c's inbox (owner 0 -> our pid), whose fresh ring
// becomes ours: a slot has one sender for the receiver's life.
int Connector::claim_slot(Conn &c, const SegShape &shape, std::string_view peer_address) {
  const std::uint64_t slots = shape.slots;
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
    return fail(ROCL_EPEER, "shm: inbox of %.*s has no free slot (%" PRIu64 " in use)",
                static_cast<int>(peer_address.size()), peer_address.data(), slots);
  }
  c.ring = c.seg + shape.header_bytes + std::uint64_t{c.slot} * c.ring_bytes;
  c.head = 0;
  c.seen_tail = 0;
  c.seal_key = c.ctl->seal_key.load(std::memory_order_relaxed);
  return ROCL_OK;
}

// The first frame of the slot: the proof of our job secret on the
// receiver's challenge, our pool, and the memory probe: where the seal key
// is in our memory (Conn lives on the heap for the connection's life).
void Connector::say_hello(Conn &c) {
  JobSecret::Challenge ch;
  std::memcpy(ch.data(), c.hdr->challenge, 32);
  const bool pool = pool_ != nullptr && pool_->region_fd() >= 0;
  const Hello h = make_hello(*secret_, ch, static_cast<std::uint32_t>(::getpid()), c.slot,
                             pool ? static_cast<std::uint32_t>(pool_->region_fd()) : ~0u,
                             pool ? pool_->region_bytes() : 0);
  static_assert(sizeof h <= kMaxHeaderBytes);
  const std::uint64_t probe = reinterpret_cast<std::uintptr_t>(&c.seal_key);
  static_assert(sizeof probe == kHelloProbeBytes);
  // The ring is empty: room without waiting.
  writer_.put_frame(c, &h, sizeof h, reinterpret_cast<const std::byte *>(&probe), sizeof probe);
}

// Waits for the receiver's verdict on our Hello, so that a refusal is
// reported by this send; learns what rendezvous the receiver can do.
int Connector::await_verdict(Conn &c, std::string_view peer_address) {
  const int al = static_cast<int>(peer_address.size());
  const char *ad = peer_address.data();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(shm::kHandshakeTimeoutMs);
  for (int spins = 0;; ++spins) {
    const std::uint32_t v = c.ctl->verdict.load(std::memory_order_acquire);
    if (v == kAccepted || v == kAcceptedPool || v == kAcceptedMemory || v == kAcceptedPoolMemory) {
      c.rendezvous = v == kAcceptedPool || v == kAcceptedPoolMemory;
      c.lend_memory = v == kAcceptedMemory || v == kAcceptedPoolMemory;
      return ROCL_OK;
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
    if (!c.peer_alive()) return fail(ROCL_EPEER, "shm: peer process %d is gone", c.pid);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Sender: maps the receiver's pool writable, if it announced one, so that
// the parts of its copy offers that land there are copied with memcpy
// rather than process_vm_writev (a system call that pins the pages, a large
// part of a message of tens of KiB: rocl-bench latency --transport shm shows
// it). Its header is the receiver's, read once; the mapping is checked like
// the receiver checks ours (size, seal against shrinking). Without it, offers
// go by process_vm_writev.
void Connector::map_receiver_pool(Conn &c) {
  const std::uint32_t fd = c.hdr->pool_fd, pid = c.hdr->pool_pid;
  const std::uint64_t bytes = c.hdr->pool_bytes;
  if (fd == ~0u || bytes == 0 || pid != static_cast<std::uint32_t>(c.pid)) return;
  void *p = map_memfd_of(pid, fd, bytes, true);
  if (p == nullptr) return;
  c.receiver_pool = static_cast<std::byte *>(p);
  c.receiver_pool_bytes = bytes;
}

}  // namespace rocl::impl::shm::detail
