// tcp_outbox.hpp - the send side of the TCP transport's connections: a
// message as queued frames (OutMsg), the queue of each connection written
// with sendmsg (an iovec per header and per payload: the payload is never
// copied), the EPOLLOUT interest while the socket is full, and the bound
// on queued bytes (see "Flow control" in tcp_transport.hpp).
#pragma once

#include <cstdint>
#include <mutex>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"
#include "transport/tcp/tcp_socket.hpp"

namespace rocl::impl::tcp::detail {

class Poller;

class Outbox {
 public:
  Outbox(Shared &shared, Poller &poller) : shared_(shared), poller_(poller) {}

  // msg (a block the transport now owns) for `destination`, as it is
  // queued: one frame, or kFragment frames beyond max_fragment_bytes.
  OutMsg frames_of(Message *msg, rocl_gid_t destination);

  // Under c.mu: whether c's queue takes `cost` more bytes. A message
  // larger than the bound still goes when the queue is empty, otherwise it
  // could never be sent.
  bool has_room(const Conn &c, std::uint64_t cost) const {
    return c.queued == 0 || c.queued + cost <= shared_.options.max_queued_bytes;
  }
  // Under c.mu (held through `lock` on entry and on return): waits until
  // c's queue has room for `cost` bytes (never on a driver of this
  // transport). False if c died or the transport stops.
  bool wait_for_room(Conn &c, std::unique_lock<std::mutex> &lock, std::uint64_t cost);
  // The same for any condition room() on c, also under c.mu.
  template <class Room>
  bool wait_until(Conn &c, std::unique_lock<std::mutex> &lock, Room room);

  // Under c.mu: appends out, writing right away if nobody else is writing.
  // ROCL_OK, or ROCL_ENOMEM with fail() (nothing queued).
  int enqueue(Conn &c, const OutMsg &out);
  // Under c.mu: writes as much of c's queue as the socket takes, asking
  // for EPOLLOUT while some is left. False on a socket error (the
  // connection is then to be dropped).
  bool flush(Conn &c);
  // Under c.mu: asks for EPOLLOUT (a driver then writes or drops c).
  void arm_out(Conn &c);
  // Under c.mu, c closing: every queued message fails (its block is
  // finished as failed; counted in failed_sends if `count`).
  void fail_all(Conn &c, bool count);

 private:
  void disarm_out(Conn &c);
  std::uint32_t frame_len(const OutMsg &m, std::uint64_t off) const;
  void account_written(Conn &c, std::uint64_t n);

  Shared &shared_;
  Poller &poller_;
};

template <class Room>
bool Outbox::wait_until(Conn &c, std::unique_lock<std::mutex> &lock, Room room) {
  for (unsigned round = 0;; ++round) {
    // Write ourselves rather than wait for a driver's EPOLLOUT: the driver
    // may be parked, or be this very thread's caller. A socket error is
    // left to the driver (armed EPOLLOUT reports it), which drops c.
    if (!flush(c)) arm_out(c);
    if (room()) return true;
    lock.unlock();
    back_off(round);
    lock.lock();
    if (c.dead || shared_.stop.load(std::memory_order_relaxed)) return false;
    if (room()) return true;
  }
}

}  // namespace rocl::impl::tcp::detail
