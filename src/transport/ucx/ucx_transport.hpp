// ucx_transport.hpp - the UCX transport: rocl's messages as UCP active
// messages, over whatever UCX finds (shared memory and tcp here; InfiniBand
// and RoCE on a cluster, with the same code).
//
// End-point: one UCP context and worker per transport (ucx_worker.hpp).
// Address: "ucx:<hex of the worker's address>", published in the directory
// as any transport's; reaches every other ucx address. UCX's network
// devices are ROCL_UCX_BIND's (loopback unless told otherwise, as tcp's
// ROCL_TCP_BIND), unless UCX_NET_DEVICES is set; the rest of UCX's
// configuration is UCX's own (UCX_TLS, UCX_RNDV_THRESH, ...).
//
// Messages: one active message each, id ucx::kAmId, header AmHeader
// (ucx_wire.hpp: magic, kind, destination gid, CoreHeader), payload the
// message's bytes where they are: a pool block (the pool region is mapped
// with ucp_mem_map once, register_memory) or the application's memory for
// a lent message (caps().takes_lent_memory), finished when UCX reports
// the send complete. UCX picks eager or rendezvous by size; a rendezvous
// message lands straight in a pool block at the receiver. send_bytes
// copies a small message out before it returns (UCX's immediate
// completion) or declines.
//
// Order: active messages of one end-point arrive in the order sent. An
// arrival is delivered at once if nothing arrived before it waits; else it
// joins a queue of arrivals delivered strictly in order: an eager one
// waits there with UCX's persistent data, a rendezvous one while its bytes
// come into a pool block. An arrival for which the pool has no block (flow
// control) waits in the queue, and UCX keeps the rendezvous payloads at
// their senders meanwhile.
//
// Job secret: the first active message on every end-point a transport
// makes is a hello (AmKind::kHello) whose proof, under the job secret, is
// bound to the receiver's address and a fresh nonce; every message carries
// its reply end-point (UCP_AM_SEND_FLAG_REPLY), and a receiver takes
// messages only from end-points whose hello it accepted (each nonce once).
// Refusals are logged once per end-point. Without a job secret the
// transport makes a random one: only its own end-points are then accepted.
//
// Threads: every call into UCX is made under one lock (the worker is
// UCS_THREAD_MODE_SERIALIZED). The transport's thread sleeps on the
// worker's event descriptor (ucp_worker_arm) and drives it when events
// come; a caller that waits for an arrival drives it itself (progress(),
// a try-lock) and the thread stays parked while any caller polls.
//
// Flow control: the bytes of sends not yet completed by UCX are bounded
// (ROCL_UCX_MAX_QUEUED); beyond it send() drives the worker until enough
// complete, or returns ROCL_EPEER naming the peer if its end-point fails
// meanwhile (the caller keeps the message). A send from inside a delivery
// never waits.
//
// Failures: end-points use UCX's peer error handling; a failed end-point
// fails its queued sends (their blocks finished as failed) and every later
// send to that peer with ROCL_EPEER and UCX's reason.
#pragma once

#include <memory>
#include <span>

#include "config/options.hpp"
#include "transport/transport.hpp"

namespace rocl::impl {

std::unique_ptr<Transport> make_ucx_transport(const TransportEnv &env);

namespace ucx {
std::span<const OptionRow> option_rows() noexcept;
}  // namespace ucx

}  // namespace rocl::impl
