// tcp_driver.hpp - who drives the TCP transport (see "Progress" in
// tcp_transport.hpp): all receiving, accepting, EPOLLOUT flushing and
// dropping of connections happens under one receive lock, held by the
// transport's own thread or by a caller in progress(). The thread peeks
// with epoll_wait without the lock and sleeps on the count of polling
// callers while there are any, so that arrivals wake no thread.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class ConnTable;
class Connector;
class FrameReader;
class Outbox;
class PausedReads;
class Poller;
class RendezvousReceiver;
class RendezvousSender;

// Closes a connection: every part gives up what it holds of it.
class Closer {
 public:
  Closer(Poller &poller, Outbox &outbox, PausedReads &paused, FrameReader &reader,
         RendezvousSender &rndv_send, RendezvousReceiver &rndv_receive)
      : poller_(poller),
        outbox_(outbox),
        paused_(paused),
        reader_(reader),
        rndv_send_(rndv_send),
        rndv_receive_(rndv_receive) {}

  // Queued and parked sends fail (counted in failed_sends if `count`), a
  // half-received block and the stage are freed, the pulls waiting for
  // data from c fail. Under the table's lock, by a driver or the only
  // thread left: only a driver may close, since a driver may be reading
  // c.fd without c.mu.
  void close(Conn &c, bool count);

 private:
  Poller &poller_;
  Outbox &outbox_;
  PausedReads &paused_;
  FrameReader &reader_;
  RendezvousSender &rndv_send_;
  RendezvousReceiver &rndv_receive_;
};

class Driver {
 public:
  Driver(Shared &shared, ConnTable &table, Poller &poller, Connector &connector, Outbox &outbox,
         PausedReads &paused, FrameReader &reader, Closer &closer)
      : shared_(shared),
        table_(table),
        poller_(poller),
        connector_(connector),
        outbox_(outbox),
        paused_(paused),
        reader_(reader),
        closer_(closer) {}

  // Starts the transport's thread; stop() ends it (the stop flag set,
  // the thread woken and joined). running(): started and not stopped.
  void start();
  void stop();
  bool running() const noexcept { return thread_.joinable(); }

  // Transport::progress, poll_begin, poll_end (contracts in transport.hpp).
  int progress(const Waiter *waiter);
  void poll_begin();
  void poll_end(bool will_sleep);
  // Whether callers poll the connections, so the thread leaves them alone.
  bool callers_drive() const noexcept;

  // Under the receive lock: handles what is ready now, without blocking;
  // returns the number of events handled (counting a paused connection
  // resumed as one). Re-entrant (a pull inside deliver drives again).
  // direct: may read the only connection straight away (callers'
  // progress).
  int drive_locked(bool direct = false);

 private:
  void run();
  void park();
  bool wait_until_ready();
  int read_solo(Conn &c);
  void handle_event(const epoll_event &ev);
  void on_conn(Conn *c, std::uint32_t events);
  void drop(Conn *c);
  void retry_paused();

  Shared &shared_;
  ConnTable &table_;
  Poller &poller_;
  Connector &connector_;
  Outbox &outbox_;
  PausedReads &paused_;
  FrameReader &reader_;
  Closer &closer_;
  std::thread thread_;

  // The receive lock: whoever holds it drives (polls epoll with timeout 0
  // and handles), and the fields below it are its own.
  std::mutex rx_mu_;
  std::vector<std::shared_ptr<Conn>> graveyard_;  // dropped this batch
  int drive_depth_ = 0;                           // > 1: a nested drive (pull inside deliver)
  unsigned direct_drives_ = 0;  // drives that read the solo connection without epoll
  // Callers between poll_begin and poll_end. The transport's thread parks
  // on this count itself (a futex): pollers pay nothing to keep it parked,
  // and the last one wakes it with a single system call.
  std::atomic<std::int32_t> pollers_{0};
};

}  // namespace rocl::impl::tcp::detail
