// tcp_send.cpp - the send side of the TCP transport: send() (which hands
// large messages to rendezvous, tcp_rendezvous.cpp), queueing a message per
// connection, writing the queue with sendmsg (header and payload iovecs, no
// copy), the epoll EPOLLOUT interest, and flow control on the send side (the
// per-connection bound on queued bytes; see "Flow control" in
// tcp_transport.hpp).
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cinttypes>

#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {

int TcpTransportImpl::send_impl(rocl_gid_t peer, std::string_view peer_address,
                                rocl_gid_t destination, Message *msg) noexcept {
  if (msg == nullptr) return fail(ROCL_EINVAL, "tcp: send of a null message");
  if (msg->length > limits_.max_message_bytes) {
    return fail(ROCL_ETOOBIG, "tcp: message of %" PRIu64 " bytes exceeds the limit %" PRIu64,
                static_cast<std::uint64_t>(msg->length), limits_.max_message_bytes);
  }
  const bool large = takes_rendezvous(*msg);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Conn> c = find_peer(peer_address);
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
    if (c->dead) continue;             // reconnect once
    if (c->peer == 0) c->peer = peer;  // an accepted connection learns it here
    if (large) {
      // Rendezvous, unless the parking is full and waiting for it is not
      // allowed here (inside deliver on a driver, or by the options).
      if (has_parking(*c, msg->length) ||
          (t_driving != this && !options_.eager_when_parking_full)) {
        return send_rendezvous(*c, lock, destination, msg, peer, peer_address);
      }
      rndv_eager_.fetch_add(1, std::memory_order_relaxed);
    }
    const OutMsg out = make_out(msg, destination);
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

// Whether msg goes by rendezvous: from env.rendezvous_threshold, and a
// message from the application's memory (lent, or the core's copy of it:
// msg->rendezvous) already from Options::rendezvous_threshold. Its receive
// most likely has memory of its own (MPI's do), which rendezvous lets read
// the socket straight into; a pool buffer is most likely received as a
// block, which eager fills as fast without the request's round trip
// (rocl-bench latency --transport tcp and compare's rocl-mpi-tcp latency
// rows at 1 MiB, with the thresholds moved, show it). (A request's 16-byte
// body must fit within total_length: docs/protocol.md.)
bool TcpTransportImpl::takes_rendezvous(const Message &msg) const {
  if (env_.rendezvous_threshold == 0) return false;
  std::size_t threshold = env_.rendezvous_threshold;
  if (options_.rendezvous_threshold != 0 && (is_lent(&msg) || msg.rendezvous)) {
    threshold = std::min(threshold, options_.rendezvous_threshold);
  }
  return msg.length >= std::max(threshold, sizeof(wire::RendezvousBody));
}

OutMsg TcpTransportImpl::make_out(Message *msg, rocl_gid_t destination) {
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
bool TcpTransportImpl::has_room(const Conn &c, std::uint64_t cost) const {
  return c.queued == 0 || c.queued + cost <= options_.max_queued_bytes;
}

// Under c.mu (held through `lock` on entry and on return): waits until c's
// queue has room for `cost` bytes. False if c died or the transport stops.
bool TcpTransportImpl::wait_for_room(Conn &c, std::unique_lock<std::mutex> &lock,
                                     std::uint64_t cost) {
  if (has_room(c, cost) || t_driving == this) return true;
  send_waits_.fetch_add(1, std::memory_order_relaxed);
  return wait_until(c, lock, [&] { return has_room(c, cost); });
}

// Round `round` of a wait for room: yield first (room usually frees within
// microseconds as the peer reads), then sleep 10 us doubling to 1 ms so
// that a stalled peer costs no CPU.
void TcpTransportImpl::back_off(unsigned round) {
  constexpr unsigned kYieldRounds = 16;
  if (round < kYieldRounds) {
    std::this_thread::yield();
    return;
  }
  const unsigned shift = std::min(round - kYieldRounds, 7u);
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(10u << shift, 1000u)));
}

// Under c.mu: appends out, writing right away if nobody else is writing.
int TcpTransportImpl::enqueue(Conn &c, const OutMsg &out) {
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

void TcpTransportImpl::note_peak(std::uint64_t v) {
  std::uint64_t cur = peak_queued_.load(std::memory_order_relaxed);
  while (v > cur && !peak_queued_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void TcpTransportImpl::update_interest(Conn &c) {
  if (c.dead) return;
  epoll_event ev{};
  ev.events = (c.rx_paused ? 0u : std::uint32_t{EPOLLIN | EPOLLRDHUP}) |
              (c.want_out ? std::uint32_t{EPOLLOUT} : 0u);
  ev.data.ptr = &c;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void TcpTransportImpl::arm_out(Conn &c) {
  if (c.want_out) return;
  c.want_out = true;
  update_interest(c);
}

void TcpTransportImpl::disarm_out(Conn &c) {
  if (!c.want_out) return;
  c.want_out = false;
  update_interest(c);
}

std::uint32_t TcpTransportImpl::frame_len(const OutMsg &m, std::uint64_t off) const {
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(m.total - off, limits_.max_fragment_bytes));
}

// Writes as much of c.q as the socket takes. Under c.mu. False on a socket
// error (the connection is then to be dropped).
bool TcpTransportImpl::flush(Conn &c) {
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
void TcpTransportImpl::account_written(Conn &c, std::uint64_t left) {
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
      ParkedSend *p = m.parked;
      c.queued -= m.cost;
      c.q.pop_front();
      if (b != nullptr) finish_block(b, true);  // nullptr: a rendezvous request or reply
      if (p != nullptr) free_slot(c, *p);
    }
  }
}

}  // namespace rocl::impl::tcp::detail
