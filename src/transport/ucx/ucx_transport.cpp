// ucx_transport.cpp - see ucx_transport.hpp.
#include "transport/ucx/ucx_transport.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "os/host.hpp"
#include "os/net.hpp"
#include "os/process.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/ucx/ucx_driver_thread.hpp"
#include "transport/ucx/ucx_wire.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace rocl::impl {
namespace ucx {
namespace {

struct Options {
  std::string bind;            // ROCL_UCX_BIND
  std::size_t max_queued;      // ROCL_UCX_MAX_QUEUED
  std::size_t bytes_limit;     // ROCL_UCX_BYTES_LIMIT
  std::size_t rndv_threshold;  // ROCL_UCX_RNDV_THRESHOLD
};

constexpr OptionRow kOptions[] = {
    {"ROCL_UCX_BIND", "",
     "The network devices UCX may use: loopback (lo), auto (the first interface that is up and "
     "not loopback), an interface name, an IPv4 address (its interface), or all (UCX's own "
     "choice: InfiniBand, RoCE and every Ethernet interface); empty: as ROCL_TCP_BIND "
     "(loopback unless set; roclrun --hosts sets auto). UCX_NET_DEVICES, if set, wins. Shared "
     "memory between processes of a host is used either way.",
     OptionType::kString},
    {"ROCL_UCX_MAX_QUEUED", "4M",
     "Bytes of ucx sends not yet completed by UCX, per transport, beyond which a send waits "
     "(flow control).",
     OptionType::kSize},
    {"ROCL_UCX_BYTES_LIMIT", "64K",
     "The largest message the ucx transport sends straight from the caller's bytes, without a "
     "pool block: UCX completes it at once, or it is copied aside and sent as any other (0: "
     "never).",
     OptionType::kSize},
    {"ROCL_UCX_RNDV_THRESHOLD", "1M",
     "Over ucx, messages of at least this many bytes (or ROCL_RNDV_THRESHOLD, if lower) go by "
     "UCX's rendezvous: the payload waits at the sender until a receive matches and is read "
     "straight into the receive's memory or block (at most 64 messages or 256 MiB wait so per "
     "transport; beyond, eagerly). Others go eagerly. 0: ROCL_RNDV_THRESHOLD alone.",
     OptionType::kSize},
};

// ROCL_UCX_BIND, or ROCL_TCP_BIND's choice when it is empty (one setting
// for a host's network, whichever transport crosses it).
std::string bind_of(const OptionValues &values) {
  if (const std::string &own = values.text("ROCL_UCX_BIND"); !own.empty()) return own;
  // A list there names tcp's rails: ucx, given no rails of its own,
  // takes the first network.
  const char *tcp = std::getenv("ROCL_TCP_BIND");
  const std::vector<std::string> rails = split_list(tcp != nullptr ? tcp : "");
  return rails.empty() ? "loopback" : rails.front();
}

Options options_from(const OptionValues &values) {
  return Options{bind_of(values), values.size("ROCL_UCX_MAX_QUEUED"),
                 values.size("ROCL_UCX_BYTES_LIMIT"), values.size("ROCL_UCX_RNDV_THRESHOLD")};
}

// What ROCL_UCX_BIND means as UCX_NET_DEVICES ("" for UCX's default).
std::string net_devices_for(const std::string &bind) {
  if (bind == "all") return "";
  in_addr a{};
  std::string name;
  if (!os::resolve_ipv4(bind.empty() ? "loopback" : bind, &a)) {
    throw std::invalid_argument("ROCL_UCX_BIND='" + bind + "' names no interface or address here");
  }
  if (!os::interface_of(a, &name)) {
    throw std::invalid_argument("ROCL_UCX_BIND='" + bind + "': no interface has " +
                                os::ipv4_text(a));
  }
  return name;
}

std::string checked_address(std::string address) {
  if (address.size() > kMaxAddressBytes) {
    throw std::runtime_error("ucx: the worker's address takes " + std::to_string(address.size()) +
                             " bytes, more than an address may (" +
                             std::to_string(kMaxAddressBytes) + "); restrict UCX_TLS");
  }
  return address;
}

// Set while this thread drives the worker (its callbacks run, deliveries
// are made): a send from there must not wait for room.
thread_local bool t_driving = false;

struct SendOp;

struct Peer {
  ucp_ep_h ep = nullptr;
  std::unordered_set<SendOp *> pending;  // sends UCX has not completed (under mu_)
  std::string address;
  Address parsed;
  bool same_host = false;  // no UCX error handling: liveness is the process's
  std::atomic<bool> failed{false};
  std::string why;  // UCX's reason, once failed

  // Whether a peer of this host has exited (its pid gone or reused).
  bool exited() const noexcept {
    return same_host && os::process_start(static_cast<pid_t>(parsed.pid)) != parsed.start;
  }
};

// A send UCX has not completed yet: its header must outlive the call.
struct SendOp {
  AmHeader wire{};
  BlockHeader *block = nullptr;  // finished when UCX completes it; nullptr for a hello
  std::size_t bytes = 0;
  class UcxTransport *transport = nullptr;
  bool parked = false;               // by rendezvous: waits for the receiver's pull
  Hello hello{};                     // a hello's payload
  std::vector<std::uint8_t> copy{};  // send_bytes' bytes when UCX could not take them at once
  Peer *peer = nullptr;              // while UCX has not completed it
  void *request = nullptr;
  bool abandoned = false;  // finished by us (its peer exited); UCX may still hold it
};

// An arrival that waits its turn (ucx_transport.hpp, "Order").
struct Arrival {
  rocl_gid_t destination;
  CoreHeader header;
  std::size_t length;
  void *data;  // UCX's persistent data (eager) or rendezvous descriptor
  bool rendezvous;
};

// What a rendezvous stub's block holds (rendezvous_transport reads the
// first member).
struct StubInfo {
  Transport *transport;
  void *descriptor;  // UCX's, for ucp_am_recv_data_nbx or ucp_am_data_release
};

// A receive of a rendezvous payload, until UCX completes it.
struct PayloadReceive {
  bool done = false;
  ucs_status_t status = UCS_OK;
};

AmHeader message_header(rocl_gid_t destination, const CoreHeader &header) noexcept {
  return AmHeader{kAmMagic, AmKind::kMessage, destination, header};
}

// A send UCX completes later: known to its peer, so that it can be
// failed if the peer's process exits (UCX would wait for it forever
// without error handling). Under the transport's lock.
void track(SendOp *op, Peer &p, void *request) noexcept {
  op->peer = &p;
  op->request = request;
  try {
    p.pending.insert(op);
  } catch (...) {  // untracked: it completes when UCX says, as before
    op->peer = nullptr;
  }
}

// Whether a peer failed: UCX said so, or (a peer of this host, looked at
// every 20 ms through *next_look) its process exited. Under the
// transport's lock.
bool has_failed(Peer &p, std::chrono::steady_clock::time_point *next_look) noexcept {
  if (p.failed.load()) return true;
  const auto now = std::chrono::steady_clock::now();
  if (!p.same_host || now < *next_look) return false;
  *next_look = now + std::chrono::milliseconds(20);
  if (!p.exited()) return false;
  p.why = "its process exited";
  p.failed.store(true);
  return true;
}

// UCX's completion of a rendezvous payload's receive (PayloadReceive).
void on_received(void *request, ucs_status_t status, std::size_t, void *user_data) {
  auto *r = static_cast<PayloadReceive *>(user_data);
  r->status = status;
  r->done = true;
  ucp_request_free(request);
}

// What a stub of this transport holds.
StubInfo stub_info(Message *stub) noexcept {
  StubInfo info;
  std::memcpy(&info, payload_of(block_of(stub)), sizeof info);
  return info;
}

class UcxTransport final : public Transport {
 public:
  UcxTransport(const TransportEnv &env, const Options &options)
      : Transport(env, "ucx"),
        options_(options),
        worker_(net_devices_for(options.bind)),
        address_(checked_address(format_address(Address{
            os::host_id(), ::getpid(), os::process_start(::getpid()), worker_.address_hex()}))),
        secret_(env.secret != nullptr ? *env.secret : JobSecret::generate()) {
    TransportCaps caps;
    caps.takes_lent_memory = true;
    caps.makes_stubs = true;
    caps.pulls_into_memory = true;
    caps.bytes_send_limit = options.bytes_limit;
    set_caps(caps);
    ucp_am_handler_param_t handler{};
    handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                         UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    handler.id = kAmId;
    handler.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
    handler.cb = &UcxTransport::on_am;
    handler.arg = this;
    const ucs_status_t status = ucp_worker_set_am_recv_handler(worker_.worker(), &handler);
    if (status != UCS_OK) {
      throw std::runtime_error("ucx: setting the message handler: " + status_text(status));
    }
    thread_.emplace(worker_.event_fd(), [this] { return look(); });
  }

  ~UcxTransport() override {
    thread_.reset();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(env_.linger_ms);
    auto next_look = std::chrono::steady_clock::now();
    drive_until(
        [&] {
          if (in_flight_.load() == 0 && parked_count_.load() == 0) return true;
          if (std::chrono::steady_clock::now() < next_look) return false;
          next_look = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
          return all_peers_failed();
        },
        deadline);
    if (in_flight_.load() != 0 || parked_count_ != 0) {
      log("ucx: closing with " + std::to_string(in_flight_.load() + parked_bytes_.load()) +
          " bytes of sends not completed; they are dropped");
    }
    std::lock_guard<std::recursive_mutex> lock(mu_);
    drop_arrivals();
    close_endpoints();
  }

 private:
  // ---- Transport hooks ------------------------------------------------------
  std::string address_impl() const override { return address_; }
  bool reaches_impl(std::string_view address) const noexcept override {
    return address.starts_with("ucx:");
  }

  int send_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                Message *msg) noexcept override {
    BlockHeader *block = block_of(msg);
    const std::size_t bytes = msg->length;
    if (int rc = wait_for_room(peer, peer_address); rc != ROCL_OK) return rc;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Peer *p = connect(peer, peer_address);
    if (p == nullptr) return ROCL_EPEER;
    auto *op = new (std::nothrow) SendOp{.wire = message_header(destination, msg->header),
                                         .block = block,
                                         .bytes = bytes,
                                         .transport = this};
    if (op == nullptr) return fail(ROCL_ENOMEM, "ucx: no memory for a send");
    ucp_request_param_t param = send_param(op);
    const bool in_pool = !is_lent(msg) && worker_.memory() != nullptr;
    if (in_pool) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param.memh = worker_.memory();
    }
    op->parked = takes_rendezvous(msg);
    if (op->parked) param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_RNDV;
    account(*op, 1);
    const ucs_status_ptr_t r =
        ucp_am_send_nbx(p->ep, kAmId, &op->wire, sizeof op->wire, msg->data, bytes, &param);
    if (r == nullptr) {
      complete_send(op, UCS_OK);
      return ROCL_OK;
    }
    if (UCS_PTR_IS_ERR(r)) {
      account(*op, -1);
      delete op;
      return fail(ROCL_EPEER, "ucx: send to peer 0x%016" PRIx64 " failed: %s", peer,
                  ucs_status_string(UCS_PTR_STATUS(r)));
    }
    track(op, *p, r);
    // Completions come only from progress: reap those of earlier sends, so
    // that their blocks go back to the pool while this thread keeps sending.
    if (!t_driving) drive(nullptr);
    return ROCL_OK;
  }

  int send_bytes_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                      const CoreHeader &header, const void *data, std::size_t length,
                      bool in_pool) noexcept override {
    (void)in_pool;
    if (length > options_.bytes_limit) return kNotTaken;
    if (int rc = wait_for_room(peer, peer_address); rc != ROCL_OK) return rc;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Peer *p = connect(peer, peer_address);
    if (p == nullptr) return ROCL_EPEER;
    const AmHeader wire = message_header(destination, header);
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    const ucs_status_ptr_t r =
        ucp_am_send_nbx(p->ep, kAmId, &wire, sizeof wire, data, length, &param);
    if (r == nullptr) return ROCL_OK;
    if (!UCS_PTR_IS_ERR(r)) {  // not expected with immediate completion forced
      ucp_request_free(r);
      return ROCL_OK;
    }
    if (UCS_PTR_STATUS(r) != UCS_ERR_NO_RESOURCE) {
      return fail(ROCL_EPEER, "ucx: send to peer 0x%016" PRIx64 " failed: %s", peer,
                  ucs_status_string(UCS_PTR_STATUS(r)));
    }
    return send_copy(*p, peer, wire, data, length);
  }

  // A small message UCX cannot send at once (its end-point still being
  // wired up, its queue busy): copied, then sent as any other.
  int send_copy(Peer &p, rocl_gid_t peer, const AmHeader &wire, const void *data,
                std::size_t length) noexcept {
    SendOp *op = nullptr;
    try {
      op = new SendOp{.wire = wire, .block = nullptr, .bytes = length, .transport = this};
      op->copy.assign(static_cast<const std::uint8_t *>(data),
                      static_cast<const std::uint8_t *>(data) + length);
    } catch (...) {
      delete op;
      return kNotTaken;
    }
    ucp_request_param_t param = send_param(op);
    in_flight_.fetch_add(length);
    const ucs_status_ptr_t r =
        ucp_am_send_nbx(p.ep, kAmId, &op->wire, sizeof op->wire, op->copy.data(), length, &param);
    if (r == nullptr) {
      complete_send(op, UCS_OK);
    } else if (UCS_PTR_IS_ERR(r)) {
      in_flight_.fetch_sub(length);
      delete op;
      return fail(ROCL_EPEER, "ucx: send to peer 0x%016" PRIx64 " failed: %s", peer,
                  ucs_status_string(UCS_PTR_STATUS(r)));
    } else {
      track(op, p, r);
      if (!t_driving) drive(nullptr);  // reaps what completed since
    }
    return ROCL_OK;
  }

  int progress_impl(const Waiter *waiter) noexcept override {
    std::unique_lock<std::recursive_mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    return drive(waiter);
  }

  void poll_begin_impl() noexcept override { thread_->begin_polling(); }
  // A caller about to sleep needs the thread at once; so do eager sends
  // still in flight (nothing but polling moves them).
  void poll_end_impl(bool will_sleep) noexcept override {
    thread_->end_polling(will_sleep || sends_in_flight());
  }

  // Eager sends UCX has not completed: they move on only when the worker
  // is progressed (no event says a peer's queue has room again).
  bool sends_in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed) != 0; }

  bool idle_impl() const noexcept override { return !active_.load(std::memory_order_relaxed); }

  void flush_impl(std::chrono::steady_clock::time_point deadline) noexcept override {
    drive_until([this] { return in_flight_.load() == 0; }, deadline);
  }

  bool holds_unread_input_impl() const noexcept override {
    return waiting_for_blocks_.load(std::memory_order_relaxed);
  }

  int register_memory_impl(void *base, std::size_t len) noexcept override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    std::string why;
    if (!worker_.map_memory(base, len, &why)) {
      // UCX registers what it sends and receives on the fly instead.
      log("ucx: the buffer pool is not mapped with UCX (" + why +
          "): transfers register their memory each");
    }
    return ROCL_OK;
  }

  // ---- Sending ------------------------------------------------------------
  // Whether a message goes by rendezvous, its payload waiting at this side
  // until the receiver pulls it straight into its memory (under mu_): from
  // ROCL_UCX_RNDV_THRESHOLD or ROCL_RNDV_THRESHOLD, whichever is lower,
  // while what waits so is within its bounds, as tcp's parked messages.
  // Others go eagerly: rocl_send never waits for a receive (rocl.h), and
  // UCX's eager protocol copies a large message through its fragments
  // several times over.
  bool takes_rendezvous(const Message *msg) const noexcept {
    const std::size_t bytes = msg->length;
    const bool large = (options_.rndv_threshold != 0 && bytes >= options_.rndv_threshold) ||
                       (env_.rendezvous_threshold != 0 && bytes >= env_.rendezvous_threshold);
    if (!large) return false;
    return parked_count_ == 0 ||
           (parked_count_ < kMaxParkedMessages && parked_bytes_ + bytes <= kMaxParkedBytes);
  }

  // Counts a send in (+1) or out (-1): eager bytes against the flow
  // control's bound, rendezvous ones against the parking bounds.
  void account(const SendOp &op, int sign) noexcept {
    if (op.parked && sign > 0) {
      parked_count_.fetch_add(1);
      parked_bytes_.fetch_add(op.bytes);
    } else if (op.parked) {
      parked_count_.fetch_sub(1);
      parked_bytes_.fetch_sub(op.bytes);
    } else if (sign > 0) {
      in_flight_.fetch_add(op.bytes);
    } else {
      in_flight_.fetch_sub(op.bytes);
    }
  }

  static ucp_request_param_t send_param(SendOp *op) noexcept {
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send = &UcxTransport::on_sent;
    param.user_data = op;
    // Eager unless the caller asks for UCX's rendezvous (UCX would choose it
    // by size otherwise, and a rendezvous send waits for a receive).
    param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    return param;
  }

  static void on_sent(void *request, ucs_status_t status, void *user_data) {
    auto *op = static_cast<SendOp *>(user_data);
    if (!op->abandoned) op->transport->complete_send(op, status);
    ucp_request_free(request);
  }

  void complete_send(SendOp *op, ucs_status_t status) noexcept {
    if (op->peer != nullptr) op->peer->pending.erase(op);
    if (op->block != nullptr) finish_sent(op->block, status == UCS_OK);
    account(*op, -1);
    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
      log("ucx: a send failed: " + status_text(status));
    }
    delete op;
  }

  // Waits while the sends in flight exceed the bound (not from inside a
  // delivery). ROCL_EPEER if the peer's end-point fails meanwhile.
  int wait_for_room(rocl_gid_t peer, std::string_view peer_address) noexcept {
    if (in_flight_.load(std::memory_order_relaxed) <= options_.max_queued || t_driving) {
      return ROCL_OK;
    }
    auto next_look = std::chrono::steady_clock::now();
    auto failed = [&] {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      const auto it = peers_.find(peer);
      return it != peers_.end() && has_failed(*it->second, &next_look);
    };
    drive_until([&] { return in_flight_.load() <= options_.max_queued || failed(); },
                std::chrono::steady_clock::time_point::max());
    if (!failed()) return ROCL_OK;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return connect(peer, peer_address) == nullptr ? ROCL_EPEER : ROCL_OK;
  }

  // Fails the sends to peers of this host whose process has exited,
  // looked at every 20 ms while any waits. Under mu_.
  void fail_sends_to_exited() noexcept {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_liveness_look_) return;
    next_liveness_look_ = now + std::chrono::milliseconds(20);
    for (auto &[gid, p] : peers_) {
      if (p->pending.empty() || !p->same_host) continue;
      auto look = now;
      if (!has_failed(*p, &look)) continue;
      abandon_sends(*p);
    }
  }

  // UCX cancels no send of an end-point without error handling: the sends
  // to a peer whose process exited are finished here as failed (their
  // blocks back to their owners, who learn ROCL_EPEER), and UCX's requests
  // are left to it. Their ops live until the worker is gone, in case UCX
  // completes them after all.
  void abandon_sends(Peer &p) noexcept {
    for (SendOp *op : p.pending) {
      if (op->block != nullptr) finish_sent(op->block, false);
      op->block = nullptr;
      account(*op, -1);
      op->bytes = 0;
      op->abandoned = true;
      op->peer = nullptr;
      try {
        abandoned_.emplace_back(op);
      } catch (...) {  // kept by nobody: lost, rather than freed under UCX
      }
    }
    p.pending.clear();
  }

  // Whether every peer has failed (nothing sent to them will complete).
  bool all_peers_failed() noexcept {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    for (auto &[gid, p] : peers_) {
      if (!has_failed(*p, &now)) return false;
    }
    return true;
  }

  // The end-point to `peer`, made on first use (and its hello sent); under
  // mu_. nullptr with fail() naming the peer if it cannot be made or has
  // failed.
  Peer *connect(rocl_gid_t peer, std::string_view peer_address) noexcept {
    const auto it = peers_.find(peer);
    if (it != peers_.end()) {
      Peer *p = it->second.get();
      if (p->failed.load(std::memory_order_relaxed)) {
        fail(ROCL_EPEER, "ucx: peer 0x%016" PRIx64 " is unreachable: %s", peer, p->why.c_str());
        return nullptr;
      }
      return p;
    }
    return connect_new(peer, peer_address);
  }

  Peer *connect_new(rocl_gid_t peer, std::string_view peer_address) noexcept {
    std::vector<std::uint8_t> blob;
    Address parsed;
    try {
      if (!parse_address(peer_address, &parsed) || !from_hex(parsed.worker_hex, &blob)) {
        fail(ROCL_EPEER, "ucx: peer 0x%016" PRIx64 " has a malformed address", peer);
        return nullptr;
      }
      auto p = std::make_unique<Peer>();
      p->address = std::string(peer_address);
      p->same_host = parsed.host_id == os::host_id();
      p->parsed = std::move(parsed);
      ucp_ep_params_t params{};
      params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
      params.address = reinterpret_cast<const ucp_address_t *>(blob.data());
      // UCX's shared memory has no peer failure handling and is refused
      // under it: a peer of this host goes without (its liveness is its
      // process's), one of another host with.
      params.err_mode = p->same_host ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
      if (!p->same_host) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_handler.cb = &UcxTransport::on_ep_error;
        params.err_handler.arg = p.get();
      }
      const ucs_status_t status = ucp_ep_create(worker_.worker(), &params, &p->ep);
      if (status != UCS_OK) {
        fail(ROCL_EPEER, "ucx: cannot reach peer 0x%016" PRIx64 ": %s", peer,
             ucs_status_string(status));
        return nullptr;
      }
      active_.store(true, std::memory_order_relaxed);
      Peer *raw = p.get();
      peers_.emplace(peer, std::move(p));
      if (!send_hello(*raw)) {
        fail(ROCL_EPEER, "ucx: cannot greet peer 0x%016" PRIx64 ": %s", peer, raw->why.c_str());
        return nullptr;
      }
      return raw;
    } catch (...) {
      fail(ROCL_ENOMEM, "ucx: no memory for a connection");
      return nullptr;
    }
  }

  bool send_hello(Peer &p) noexcept {
    auto *op = new (std::nothrow) SendOp{.wire = AmHeader{kAmMagic, AmKind::kHello, 0, {}},
                                         .block = nullptr,
                                         .bytes = sizeof(Hello),
                                         .transport = this};
    if (op == nullptr || !JobSecret::random_bytes(op->hello.nonce, sizeof op->hello.nonce)) {
      delete op;
      p.why = "no memory or randomness for the hello";
      return false;
    }
    try {
      op->hello.proof = secret_.prove("rocl-ucx", hello_challenge(p.address, op->hello.nonce));
    } catch (...) {
      delete op;
      p.why = "no memory for the hello";
      return false;
    }
    ucp_request_param_t param = send_param(op);
    in_flight_.fetch_add(op->bytes);
    const ucs_status_ptr_t r = ucp_am_send_nbx(p.ep, kAmId, &op->wire, sizeof op->wire, &op->hello,
                                               sizeof op->hello, &param);
    if (r == nullptr) {
      complete_send(op, UCS_OK);
    } else if (UCS_PTR_IS_ERR(r)) {
      in_flight_.fetch_sub(op->bytes);
      p.why = status_text(UCS_PTR_STATUS(r));
      delete op;
      return false;
    } else {
      track(op, p, r);
    }
    return true;
  }

  static void on_ep_error(void *arg, ucp_ep_h, ucs_status_t status) {
    auto *p = static_cast<Peer *>(arg);
    p->why = status_text(status);
    p->failed.store(true);
  }

  void close_endpoints() noexcept {
    std::vector<ucs_status_ptr_t> closing;
    for (auto &[gid, p] : peers_) {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
      const ucs_status_ptr_t r = ucp_ep_close_nbx(p->ep, &param);
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (ucs_status_ptr_t r : closing) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS &&
             std::chrono::steady_clock::now() < deadline) {
        ucp_worker_progress(worker_.worker());
      }
      ucp_request_free(r);
    }
    peers_.clear();
  }

  // ---- Receiving ----------------------------------------------------------
  static ucs_status_t on_am(void *arg, const void *header, std::size_t header_length, void *data,
                            std::size_t length, const ucp_am_recv_param_t *param) {
    return static_cast<UcxTransport *>(arg)->arrived_am(header, header_length, data, length, param);
  }

  ucs_status_t arrived_am(const void *header_bytes, std::size_t header_length, void *data,
                          std::size_t length, const ucp_am_recv_param_t *param) noexcept {
    active_.store(true, std::memory_order_relaxed);
    AmHeader h{};
    const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    const ucp_ep_h from =
        (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
    if (const char *bad = check_header(header_bytes, header_length, length, &h)) {
      refuse_once(from, std::string("malformed active message (") + bad + ")");
      return UCS_OK;
    }
    if (h.kind == AmKind::kHello) {
      if (rendezvous) {
        refuse_once(from, "hello by rendezvous");
        return UCS_OK;
      }
      accept_hello(from, *static_cast<const Hello *>(data));
      return UCS_OK;
    }
    if (from == nullptr || !greeted_.contains(from)) {
      refuse_once(from, "message from an end-point that proved no job secret");
      return UCS_OK;
    }
    // Delivered at once only if nothing waits before it, and not while a
    // pull waits for its payload: a sink that pulls inside its delivery
    // must see the next message after the one it pulls.
    if (!rendezvous && arrivals_.empty() && pulls_waiting_ == 0 &&
        deliver_now(h.destination, h.header, data, length)) {
      return UCS_OK;
    }
    try {
      arrivals_.push_back(Arrival{h.destination, h.header, length, data, rendezvous});
    } catch (...) {
      log("ucx: no memory to queue an arrival; dropped");
      return UCS_OK;
    }
    return UCS_INPROGRESS;
  }

  void accept_hello(ucp_ep_h from, const Hello &hello) noexcept {
    try {
      const std::string nonce(reinterpret_cast<const char *>(hello.nonce), sizeof hello.nonce);
      const bool fresh = !nonces_.contains(nonce);
      if (from == nullptr || !fresh ||
          !secret_.verify("rocl-ucx", hello_challenge(address_, hello.nonce), hello.proof)) {
        refuse_once(from, fresh ? "hello with a wrong proof of the job secret" : "hello replayed");
        return;
      }
      nonces_.insert(nonce);
      greeted_.insert(from);
    } catch (...) {
      log("ucx: no memory to accept a hello");
    }
  }

  void refuse_once(ucp_ep_h from, const std::string &what) noexcept {
    try {
      if (!refused_.insert(from).second) return;
      char line[64];
      std::snprintf(line, sizeof line, " (end-point %p); refused", static_cast<void *>(from));
      log("ucx: " + what + line);
    } catch (...) {
    }
  }

  // Delivers an eager arrival whose bytes are at `data`: into a posted
  // receive's memory, or a pool block. False if the pool has no block now.
  bool deliver_now(rocl_gid_t destination, const CoreHeader &header, const void *data,
                   std::size_t length) noexcept {
    if (env_.sink->deliver_bytes(destination, header, data, length, waiter_)) {
      count_delivered();
      ++events_;
      return true;
    }
    BlockHeader *b = env_.pool->allocate(length);
    if (b == nullptr) {
      if (!env_.pool->can_ever_hold(length)) {
        log("ucx: a message of " + std::to_string(length) +
            " bytes can never fit the pool; dropped");
        return true;
      }
      return false;
    }
    std::memcpy(payload_of(b), data, length);
    hand_over(destination, arrived(b, header, length), waiter_, [] { return std::string("ucx"); });
    ++events_;
    return true;
  }

  // Delivers the queue's arrivals in order: eager ones as they are,
  // rendezvous ones as stubs (their payloads stay at the sender until a
  // receive pulls them). Stops at one for which the pool has no block.
  // Under mu_, outside UCX's callbacks, never nested (a pull inside a
  // delivery drives the worker again).
  void drain() noexcept {
    if (draining_) return;
    draining_ = true;
    bool short_of_blocks = false;
    while (!arrivals_.empty()) {
      const Arrival a = arrivals_.front();
      if (!a.rendezvous) {
        if (!deliver_now(a.destination, a.header, a.data, a.length)) {
          short_of_blocks = true;
          break;
        }
        arrivals_.pop_front();
        ucp_am_data_release(worker_.worker(), a.data);
        continue;
      }
      BlockHeader *b = env_.pool->allocate(sizeof(StubInfo));
      if (b == nullptr) {
        short_of_blocks = true;
        break;
      }
      const StubInfo info{this, a.data};
      std::memcpy(payload_of(b), &info, sizeof info);
      arrivals_.pop_front();
      hand_over(a.destination, arrived_stub(b, a.header, a.length), waiter_,
                [] { return std::string("ucx"); });
      ++events_;
    }
    waiting_for_blocks_.store(short_of_blocks, std::memory_order_relaxed);
    draining_ = false;
  }

  void release_stub(Message *stub) noexcept {
    BlockHeader *b = block_of(stub);
    end_message(b);
    env_.pool->release(b, BlockState::kLibrary);
  }

  int pull_impl(Message *stub, Message **out) noexcept override {
    const StubInfo info = stub_info(stub);
    const CoreHeader header = stub->header;
    const std::size_t length = stub->length;
    BlockHeader *b = env_.pool->allocate(length);
    if (b == nullptr) {  // the stub stays, for the core to queue again
      const std::string why = last_error();
      *out = stub;
      return fail(ROCL_ENOMEM, "ucx: no pool block for a %zu-byte rendezvous message: %s", length,
                  why.c_str());
    }
    release_stub(stub);
    if (const int rc = receive_payload(info.descriptor, payload_of(b), length, true);
        rc != ROCL_OK) {
      env_.pool->release(b, BlockState::kUser);
      return rc;
    }
    *out = arrived(b, header, length);
    return ROCL_OK;
  }

  int pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept override {
    const StubInfo info = stub_info(stub);
    const std::size_t length = stub->length;
    release_stub(stub);
    if (cap >= length) return receive_payload(info.descriptor, dst, length, false);
    // Cut to fit: UCX receives whole messages only.
    std::unique_ptr<std::byte[]> whole(new (std::nothrow) std::byte[length]);
    if (whole == nullptr) {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      ucp_am_data_release(worker_.worker(), info.descriptor);
      return fail(ROCL_ENOMEM, "ucx: out of memory for a %zu-byte rendezvous message cut to %zu",
                  length, cap);
    }
    const int rc = receive_payload(info.descriptor, whole.get(), length, false);
    if (rc == ROCL_OK && cap != 0) std::memcpy(dst, whole.get(), cap);
    return rc;
  }

  void discard_impl(Message *stub) noexcept override {
    const StubInfo info = stub_info(stub);
    release_stub(stub);
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ucp_am_data_release(worker_.worker(), info.descriptor);
  }

  // Receives a rendezvous payload into [dst, dst+length) and waits for it,
  // driving the worker. UCX owns the descriptor from here, whatever the
  // outcome. in_pool: dst is in the mapped pool region.
  int receive_payload(void *descriptor, void *dst, std::size_t length, bool in_pool) noexcept {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    PayloadReceive receive;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = &on_received;
    param.user_data = &receive;
    if (in_pool && worker_.memory() != nullptr) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param.memh = worker_.memory();
    }
    const ucs_status_ptr_t r =
        ucp_am_recv_data_nbx(worker_.worker(), descriptor, dst, length, &param);
    if (r == nullptr) return ROCL_OK;
    if (UCS_PTR_IS_ERR(r)) {
      receive.done = true;
      receive.status = UCS_PTR_STATUS(r);
    }
    ++pulls_waiting_;
    while (!receive.done) drive(waiter_);
    --pulls_waiting_;
    if (receive.status == UCS_OK) return ROCL_OK;
    return fail(ROCL_EPEER, "ucx: a %zu-byte rendezvous message was lost: %s", length,
                ucs_status_string(receive.status));
  }

  void drop_arrivals() noexcept {
    if (!arrivals_.empty()) {
      log("ucx: closing with " + std::to_string(arrivals_.size()) +
          " arrived messages not delivered; they are dropped");
    }
    for (const Arrival &a : arrivals_) ucp_am_data_release(worker_.worker(), a.data);
    arrivals_.clear();
  }

  // ---- Driving ------------------------------------------------------------
  // Progresses the worker until it has nothing more, delivering what came;
  // under mu_. Returns the deliveries made. Nests (a pull inside a
  // delivery waits for its payload by driving again).
  int drive(const Waiter *waiter) noexcept {
    const bool was_driving = t_driving;
    const Waiter *outer_waiter = waiter_;
    const int outer_events = events_;
    t_driving = true;
    waiter_ = waiter;
    events_ = 0;
    while (ucp_worker_progress(worker_.worker()) != 0) {
    }
    if (!arrivals_.empty()) drain();
    if (parked_count_.load(std::memory_order_relaxed) != 0 ||
        in_flight_.load(std::memory_order_relaxed) != 0) {
      fail_sends_to_exited();
    }
    const int events = events_;
    waiter_ = outer_waiter;
    events_ = outer_events + events;
    t_driving = was_driving;
    return events;
  }

  template <class Done>
  void drive_until(Done done, std::chrono::steady_clock::time_point deadline) noexcept {
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::recursive_mutex> lock(mu_);
        drive(nullptr);
      }
      if (!done()) std::this_thread::yield();
    }
  }

  // One look of the transport's thread (DriverThread::Look): drives the
  // worker, then arms it unless sends in flight need polling; how long the
  // thread may sleep on its events.
  std::chrono::microseconds look() noexcept {
    ucs_status_t armed = UCS_ERR_BUSY;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      drive(nullptr);
      if (!sends_in_flight()) armed = ucp_worker_arm(worker_.worker());
    }
    // Outside the worker's lock: what the deliveries could not send from
    // under it (acknowledgements), as every transport's thread does.
    env_.sink->progressed();
    if (armed == UCS_ERR_BUSY) {
      // Sends in flight: a short nap between looks, not a spin that would
      // take the cpu of the threads sharing it.
      return std::chrono::microseconds(sends_in_flight() ? 50 : 0);
    }
    // Arrivals waiting for pool blocks are retried soon; otherwise the
    // nap only bounds a missed wake-up.
    return std::chrono::microseconds(waiting_for_blocks_.load(std::memory_order_relaxed) ? 1000
                                                                                         : 100000);
  }

  const Options options_;
  // Declared before the worker, so destroyed after it: UCX may complete
  // an abandoned send until then.
  std::vector<std::unique_ptr<SendOp>> abandoned_;
  Worker worker_;
  const std::string address_;
  const JobSecret secret_;

  std::recursive_mutex mu_;  // every call into UCX, and what follows
  std::unordered_map<rocl_gid_t, std::unique_ptr<Peer>> peers_;
  std::deque<Arrival> arrivals_;
  std::set<ucp_ep_h> greeted_;  // reply end-points whose hello was accepted
  std::set<ucp_ep_h> refused_;  // refusals logged
  std::set<std::string> nonces_;
  const Waiter *waiter_ = nullptr;
  int events_ = 0;
  bool draining_ = false;
  int pulls_waiting_ = 0;  // receive_payload calls waiting (nested) on this worker
  std::chrono::steady_clock::time_point next_liveness_look_{};

  static constexpr std::size_t kMaxParkedMessages = 64;
  static constexpr std::size_t kMaxParkedBytes = std::size_t{256} << 20;
  std::atomic<std::size_t> parked_count_{0};
  std::atomic<std::size_t> parked_bytes_{0};
  std::atomic<std::size_t> in_flight_{0};  // eager bytes not completed
  std::atomic<bool> waiting_for_blocks_{false};
  std::atomic<bool> active_{false};
  std::optional<DriverThread> thread_;  // last: started once the rest is made
};

}  // namespace

std::span<const OptionRow> option_rows() noexcept {
  return kOptions;
}

}  // namespace ucx

std::unique_ptr<Transport> make_ucx_transport(const TransportEnv &env) {
  try {
    const ucx::Options options = read_options(env, ucx::kOptions, ucx::options_from);
    return std::make_unique<ucx::UcxTransport>(env, options);
  } catch (const std::exception &e) {
    fail(ROCL_EINTERNAL, "%s", e.what());
    return nullptr;
  }
}

extern constinit const TransportEntry transport_entry_ucx = {
    "ucx",
    "UCX active messages (shared memory, tcp; InfiniBand and RoCE where present), zero-copy "
    "from pool blocks and lent memory",
    Reach::kNetwork,
    ucx::kOptions,
    &make_ucx_transport,
    false,
    "ROCL_UCX_BIND"};

}  // namespace rocl::impl
