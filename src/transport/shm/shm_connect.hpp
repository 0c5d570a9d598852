// shm_connect.hpp - the way to a peer's inbox (design: shm_transport.hpp):
// mapping it after checking it, claiming a slot, the job secret handshake,
// and mapping the receiver's pool for copy offers.
#pragma once

#include <string_view>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "transport/shm/shm_frame_writer.hpp"
#include "transport/shm/shm_handshake.hpp"
#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

class Connector {
 public:
  // `secret` proves our job on every connection; `pool` (ours, or nullptr)
  // is announced to the receiver, which may map it for rendezvous.
  Connector(const JobSecret *secret, const BufferPool *pool, FrameWriter &writer) noexcept
      : secret_(secret), pool_(pool), writer_(writer) {}

  // Connects c, new and locked, to the inbox published as `peer_address`:
  // maps it, claims a free slot, writes the Hello and waits for the
  // receiver's verdict (blocks: up to kHandshakeTimeoutMs, so not from
  // inside MessageSink::deliver). ROCL_OK, c connected; or ROCL_EPEER from
  // fail() saying why, c to be dropped.
  int connect(Conn &c, std::string_view peer_address);

 private:
  // *shape: the inbox's header as checked (the header itself may change).
  static int map_inbox(Conn &c, const ParsedAddress &a, std::string_view peer_address,
                       SegShape *shape);
  static int claim_slot(Conn &c, const SegShape &shape, std::string_view peer_address);
  void say_hello(Conn &c);
  static int await_verdict(Conn &c, std::string_view peer_address);
  static void map_receiver_pool(Conn &c);

  const JobSecret *secret_;
  const BufferPool *pool_;
  FrameWriter &writer_;
};

}  // namespace rocl::impl::shm::detail
