// shm_transport_impl.hpp - the shm transport itself (design:
// shm_transport.hpp): the Transport whose hooks drive the parts it owns
// (shm_internal.hpp lists them), and the progress thread.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "security/job_secret.hpp"
#include "transport/shm/shm_connect.hpp"
#include "transport/shm/shm_frame_writer.hpp"
#include "transport/shm/shm_inbox.hpp"
#include "transport/shm/shm_inbox_segment.hpp"
#include "transport/shm/shm_internal.hpp"
#include "transport/shm/shm_peer_table.hpp"
#include "transport/shm/shm_poll_lease.hpp"
#include "transport/shm/shm_rendezvous.hpp"
#include "transport/shm/shm_rendezvous_reader.hpp"
#include "transport/shm/shm_written_parts.hpp"
#include "wire/validate.hpp"

namespace rocl::impl::shm::detail {

class ShmTransportImpl final : public ShmTransport {
 public:
  ShmTransportImpl(const TransportEnv &env, const shm::Config &cfg, shm::LogFn log);
  ~ShmTransportImpl() override;
  // Makes the inbox and starts the progress thread. ROCL_OK or the code of
  // fail() saying why not; once, before any other call.
  int init();

  shm::Stats stats() const noexcept override;

  // What the parts use of the Transport base (contracts in transport.hpp).
  using Transport::arrived;
  using Transport::arrived_stub;
  using Transport::count_delivered;
  using Transport::finish_sent;
  using Transport::hand_over;
  using Transport::log;

 private:
  bool reaches_impl(std::string_view address) const noexcept override;
  std::string address_impl() const override { return address_; }
  int send_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                Message *msg) noexcept override;
  // Declines a pool buffer from the size send() would send by rendezvous,
  // or while such buffers stream to `peer` (RendezvousPolicy).
  int send_bytes_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                      const CoreHeader &header, const void *data, std::size_t length,
                      bool in_pool) noexcept override;
  int progress_impl(const Waiter *waiter) noexcept override;
  Message *take_arrived_impl(rocl_gid_t destination, const CoreHeader &pattern, ReadyFn ready,
                             const void *arg, bool *left) noexcept override;
  void poll_begin_impl() noexcept override { lease_.begin(); }
  void poll_end_impl(bool will_sleep) noexcept override { lease_.end(will_sleep); }
  int pull_impl(Message *stub, Message **out) noexcept override {
    return rendezvous_reader_.pull(stub, out);
  }
  void discard_impl(Message *stub) noexcept override { rendezvous_reader_.discard(stub); }
  int pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept override {
    return rendezvous_reader_.pull_into(stub, dst, cap);
  }
  bool holds_unread_input_impl() const noexcept override { return inbox_.holds_unread_input(); }

  // c locked: connects it if need be. ROCL_OK, or why not (c then dropped
  // and `lk` unlocked).
  int ready_locked(rocl_gid_t peer, std::string_view peer_address, Conn *c,
                   std::unique_lock<ConnMutex> &lk);
  // A write to c (locked by lk) failed with rc: the peer died or broke the
  // ring. c is dead, what waits on it fails, and later sends make a new
  // connection. Returns rc.
  int abandon(rocl_gid_t peer, Conn *c, std::unique_lock<ConnMutex> &lk, int rc);

  void run();
  static int idle_spins() noexcept;
  bool lower_pollers_if_idle() noexcept;
  static const JobSecret *secret_of(const TransportEnv &env, std::optional<JobSecret> &own);

  const shm::Config cfg_;
  wire::Limits limits_;
  std::optional<JobSecret> own_secret_;  // without a job: made here
  const JobSecret *const secret_;
  std::string address_;
  // process_vm_readv works in this process (init: a read of our own
  // memory); whether a peer may read ours is probed per slot (Hello).
  bool cross_memory_ = false;

  InboxSegment segment_;
  PeerPools peer_pools_;
  ShmCounters counters_;
  // Which part of the latest copy-offer receives this cpu wrote: the hint
  // RendezvousSender gives when one is sent on.
  WrittenParts written_parts_;
  Inbox inbox_;
  PollLease lease_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  RendezvousReader rendezvous_reader_;

  PeerTable peers_;
  FrameWriter writer_;
  Connector connector_;
  RendezvousPolicy policy_;
  RendezvousSender rendezvous_sender_;
};

}  // namespace rocl::impl::shm::detail
