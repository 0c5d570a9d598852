// tcp_internal.hpp - the TCP transport's object (internal to
// src/transport/tcp/; the design is described in tcp_transport.hpp). It is
// the Transport, and owns the parts that do the work, each with one job:
//   Shared             what every part reads or counts (tcp_shared.hpp)
//   Poller             the epoll sets and the thread's wake-up (tcp_poller.hpp)
//   ConnTable          the open connections, and the one we send on to
//                      each peer (tcp_conn_table.hpp)
//   Handshake          both sides of the job-secret proof (tcp_handshake.hpp)
//   Connector          listening, accepting, connecting (tcp_connect.hpp)
//   Outbox             queueing and writing frames, send-side flow control
//                      (tcp_outbox.hpp)
//   PausedReads        receive-side flow control (tcp_paused.hpp)
//   RendezvousSender   parking large messages until asked (tcp_rendezvous_send.hpp)
//   RendezvousReceiver stubs, pulls, discards (tcp_rendezvous_receive.hpp)
//   FrameReader        the receive state machine (tcp_receive.hpp)
//   Closer, Driver     closing a connection; the thread and callers'
//                      progress (tcp_driver.hpp)
// Each Conn (tcp_conn.hpp) is data those parts act on. The Transport's
// hooks forward to the parts; the parts reach each other by reference,
// never through a virtual call.
#pragma once

#include <string>
#include <string_view>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_conn_table.hpp"
#include "transport/tcp/tcp_connect.hpp"
#include "transport/tcp/tcp_driver.hpp"
#include "transport/tcp/tcp_handshake.hpp"
#include "transport/tcp/tcp_outbox.hpp"
#include "transport/tcp/tcp_paused.hpp"
#include "transport/tcp/tcp_poller.hpp"
#include "transport/tcp/tcp_receive.hpp"
#include "transport/tcp/tcp_rendezvous_receive.hpp"
#include "transport/tcp/tcp_rendezvous_send.hpp"
#include "transport/tcp/tcp_shared.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace rocl::impl::tcp::detail {

class TcpTransportImpl final : public TcpTransport {
 public:
  TcpTransportImpl(const TransportEnv &env, tcp::LogFn log, const tcp::Options &options);
  // Lingers, then closes (see "Shutdown" in tcp_transport.hpp).
  ~TcpTransportImpl() override;
  // Listens and starts the thread. ROCL_OK, or fail()'s code.
  int start();
  tcp::Stats stats() const noexcept override;

  // What the parts use of the Transport base, which keeps it protected.
  using Transport::arrived;
  using Transport::arrived_stub;
  using Transport::finish_sent;
  using Transport::hand_over;
  using Transport::log;

 private:
  std::string address_impl() const override { return connector_.address(); }
  // Any tcp address, but a loopback one only of this host (its host id).
  bool reaches_impl(std::string_view address) const noexcept override;
  int send_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                Message *msg) noexcept override;
  int progress_impl(const Waiter *waiter) noexcept override { return driver_.progress(waiter); }
  void poll_begin_impl() noexcept override { driver_.poll_begin(); }
  void poll_end_impl(bool will_sleep) noexcept override { driver_.poll_end(will_sleep); }
  bool idle_impl() const noexcept override { return table_.count(std::memory_order_relaxed) == 0; }
  void flush_impl(Clock::time_point deadline) noexcept override;
  // A connection paused for want of a pool block (its bytes wait in the
  // stage and the kernel's socket buffer).
  bool holds_unread_input_impl() const noexcept override { return paused_.held() != 0; }
  int pull_impl(Message *stub, Message **out) noexcept override {
    return rndv_receive_.pull(stub, out);
  }
  int pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept override {
    return rndv_receive_.pull_into(stub, dst, cap);
  }
  void discard_impl(Message *stub) noexcept override { rndv_receive_.discard(stub); }

  bool takes_rendezvous(const Message &msg) const;

  // Declared in the order they are made; each takes the ones it uses by
  // reference (some not made yet: they only keep the reference).
  Shared shared_;
  Poller poller_;
  ConnTable table_;
  Handshake handshake_;
  Connector connector_;
  Outbox outbox_;
  PausedReads paused_;
  RendezvousSender rndv_send_;
  RendezvousReceiver rndv_receive_;
  FrameReader reader_;
  Closer closer_;
  Driver driver_;
};

inline void Shared::log(const std::string &line) const noexcept {
  transport.log(line);
}

inline void Shared::finish_sent(BlockHeader *block, bool ok) const noexcept {
  transport.finish_sent(block, ok);
}

}  // namespace rocl::impl::tcp::detail
