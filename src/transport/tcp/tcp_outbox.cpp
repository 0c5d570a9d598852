// tcp_outbox.cpp - queueing and writing the TCP transport's frames
// (tcp_outbox.hpp).
#include "transport/tcp/tcp_outbox.hpp"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>

#include "status/status.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_poller.hpp"

namespace rocl::impl::tcp::detail {

OutMsg Outbox::frames_of(Message *msg, rocl_gid_t destination) {
  OutMsg out{};
  out.block = block_of(msg);
  out.data = static_cast<const std::byte *>(msg->data);
  out.total = msg->length;
  out.cost = out.total + kHeaderBytes;  // so that empty messages count too
  auto &h = out.hdr;
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind =
      out.total > shared_.limits.max_fragment_bytes ? wire::Kind::kFragment : wire::Kind::kEager;
  h.source = msg->header.source;
  h.destination = destination;
  h.tag = msg->header.tag;
  h.domain = msg->header.domain;
  h.message_id = shared_.next_message_id();
  h.total_length = out.total;
  return out;
}

bool Outbox::wait_for_room(Conn &c, std::unique_lock<std::mutex> &lock, std::uint64_t cost) {
  if (has_room(c, cost) || shared_.drives_here()) return true;
  shared_.counters.send_waits.fetch_add(1, std::memory_order_relaxed);
  return wait_until(c, lock, [&] { return has_room(c, cost); });
}

int Outbox::enqueue(Conn &c, const OutMsg &out) {
  try {
    c.q.push_back(out);
  } catch (...) {
    return fail(ROCL_ENOMEM, "tcp: out of memory queueing a message");
  }
  c.queued += out.cost;
  TcpCounters::raise(shared_.counters.peak_queued, c.queued);
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

void Outbox::arm_out(Conn &c) {
  if (c.want_out) return;
  c.want_out = true;
  poller_.set_interest(c);
}

void Outbox::disarm_out(Conn &c) {
  if (!c.want_out) return;
  c.want_out = false;
  poller_.set_interest(c);
}

std::uint32_t Outbox::frame_len(const OutMsg &m, std::uint64_t off) const {
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(m.total - off, shared_.limits.max_fragment_bytes));
}

bool Outbox::flush(Conn &c) {
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
void Outbox::account_written(Conn &c, std::uint64_t left) {
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
      if (b != nullptr) shared_.finish_sent(b, true);  // nullptr: a rendezvous request or reply
      if (p != nullptr) c.parking.release(*p);
    }
  }
}

void Outbox::fail_all(Conn &c, bool count) {
  for (auto &m : c.q) {
    if (m.block == nullptr) continue;  // a rendezvous request or reply
    shared_.finish_sent(m.block, false);
    if (count) shared_.counters.failed_sends.fetch_add(1);
  }
  c.q.clear();
  c.queued = 0;
}

}  // namespace rocl::impl::tcp::detail
