// context.hpp - one per process (rocl_init): owns the buffer pool, the
// directory access, the local resources and one end-point per transport,
// shared by all threads. The C and C++ APIs are thin wrappers over it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "core/ack_queue.hpp"
#include "core/caller_progress.hpp"
#include "core/options.hpp"
#include "core/requests.hpp"
#include "core/resource_table.hpp"
#include "core/route_cache.hpp"
#include "core/router.hpp"
#include "core/stripe_reassembly.hpp"
#include "core/user_buffers.hpp"
#include "directory/directory.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/transport.hpp"

struct rocl_request;

namespace rocl::impl {

struct ReceiveOp;

// A receive's tag and domain, checked: ROCL_OK or ROCL_EINVAL with its
// sentence (`who`: the call's name).
inline int check_receive_args(const char *who, int tag, std::uint32_t domain) noexcept {
  if (tag < ROCL_ANY_TAG)
    return fail(ROCL_EINVAL, "%s: tag %d is neither >= 0 nor ROCL_ANY", who, tag);
  if (domain > kDomainMask) {
    return fail(ROCL_EINVAL, "%s: domain %#x exceeds ROCL_DOMAIN_MAX", who, unsigned(domain));
  }
  return ROCL_OK;
}

class Context final : public MessageSink {
 public:
  // rocl_init / rocl_exit: reference-counted process-wide instance.
  static std::int64_t acquire_global();
  static int release_global();
  // How many rocl_init calls the global context has outstanding (0: none).
  static int global_references();
  // The live context or nullptr. Valid while the caller's rocl_init
  // reference is held (calls racing with the last rocl_exit are the user's
  // bug, as in every C library).
  static Context *current() noexcept { return current_.load(std::memory_order_acquire); }

  explicit Context(const Options &options);  // throws on set-up failure
  ~Context() override;

  rocl_gid_t gid() const noexcept { return gid_; }
  const Options &options() const noexcept { return options_; }
  BufferPool &pool() noexcept { return *pool_; }
  Directory &directory() noexcept { return *directory_; }
  // The job's secret, nullptr when the process is in no job.
  const JobSecret *secret() const noexcept { return secret_ ? &*secret_ : nullptr; }

  // Resources (rocl_register / rocl_delete).
  std::int64_t register_resource(const AttrList &attrs);
  int delete_resource(rocl_gid_t gid);

  // Buffers (rocl_bf*): the application's side of the pool.
  UserBuffers buffers() noexcept { return UserBuffers(*pool_); }

  // Messages (rocl_send / rocl_recv, the x forms and the immediate forms).
  // `domain_word` is domain_word(domain, flags) (message.hpp).
  int send(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word, void *ptr,
           std::size_t len) noexcept;
  int recv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, std::uint32_t domain, void *into,
           std::size_t cap, rocl_status_t *status, int timeout) noexcept;
  int probe(rocl_gid_t dgid, rocl_gid_t ogid, int tag, std::uint32_t domain, rocl_status_t *status,
            int timeout) noexcept;
  // rocl_route: the messages resource gid sends take the rail named
  // `network` (Router::bind); "" or nullptr undoes it.
  int bind_route(rocl_gid_t gid, const char *network) noexcept;
  // rocl_bfnet: the same for the messages sent from pool buffer ptr.
  int bind_route(void *buffer, const char *network) noexcept;
  // The immediate operations (rocl_isend ... rocl_cancel).
  Requests &requests() noexcept { return requests_; }

  // MessageSink: arrivals from every transport.
  int deliver(rocl_gid_t destination, Message *msg, const Waiter *waiter) noexcept override;
  bool deliver_pieces(rocl_gid_t destination, const CoreHeader &header, const ByteRange *pieces,
                      int count, std::size_t length, const Waiter *waiter) noexcept override;
  bool may_take_pieces(rocl_gid_t destination, const Waiter *waiter) const noexcept override;
  void progressed() noexcept override {
    if (acks_.waiting()) send_acks();
  }

 private:
  friend class Requests;  // a part of the context, over its send and receive steps
  struct Outgoing;
  int prepare_outgoing(const char *who, void *ptr, std::size_t len, Outgoing &out) noexcept;
  void undo_outgoing(Outgoing &out) noexcept;
  Resource *arrival_resource(rocl_gid_t destination, const ReceiveOp *op) const noexcept;
  [[gnu::noinline]] int recv_posted(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern,
                                    void *into, std::size_t cap, rocl_status_t *status,
                                    int timeout) noexcept;
  int check_send_args(rocl_gid_t ogid, int tag) noexcept;
  // r: resources_.peek(dgid).
  bool take_waiting(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern, void *into,
                    std::size_t cap, rocl_status_t *status, int *rc) noexcept;
  // r: resources_.peek(dgid); a receive that may wait (timeout != 0).
  bool take_arrived(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern, void *into,
                    std::size_t cap, rocl_status_t *status, int *rc) noexcept;
  int finish_receive(Envelope *msg, void *into, std::size_t cap, rocl_status_t *status) noexcept;
  int finish_take(rocl_gid_t dgid, Message *msg, void *into, std::size_t cap,
                  rocl_status_t *status) noexcept;
  // A blocking receive's wait at the transports' input fronts, after
  // take_arrived's look missed (messaging.cpp): true if it took its
  // message (*rc), false to post and wait. Out of line, as recv_posted: a
  // receive that takes its message at the first look saves no registers
  // for it.
  [[gnu::noinline]] bool spin_take(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern,
                                   void *into, std::size_t cap, rocl_status_t *status,
                                   int *rc) noexcept;
  // r: the resource the stub goes back to if the pull fails, held; nullptr:
  // none (deleted), the stub is dropped then.
  int pull_if_rendezvous(Resource *r, Envelope **msg) noexcept;
  // A matched rendezvous stub whose transport can pull into the caller's
  // memory: pulled straight to into (cut to cap), status filled; true if so
  // (*rc its outcome), false to take the pool-block path.
  bool pull_into_caller(Envelope *msg, void *into, std::size_t cap, rocl_status_t *status,
                        int *rc) noexcept;
  // spun: the caller spun already (await_hand_off): sleep at once.
  int await_receive(Resource *r, Envelope &env, int timeout, Envelope **msg, ReceiveOp &op,
                    bool spun = false) noexcept;
  int await_hand_off(Resource *r, Envelope &env, std::uint64_t ticket, int timeout, Envelope **msg,
                     ReceiveOp &op) noexcept;
  void free_message(Envelope *msg) noexcept;
  // deliver() past the striped messages' hold (the reassembly's hand-on).
  int deliver_now(rocl_gid_t destination, Message *msg, const Waiter *waiter) noexcept;
  void start_transports();
  // ROCL_FLAG_ACK (acks.cpp): a message matched on `receiver`: queue its
  // acknowledgement (under a transport's locks) or send it now. The flag's
  // test inline: it is on the path of every receive, the ack on few.
  void note_match(rocl_gid_t receiver, const CoreHeader &h, bool may_send_now) noexcept {
    if ((h.flags() & ROCL_FLAG_ACK) != 0) acknowledge(receiver, h, may_send_now);
  }
  void acknowledge(rocl_gid_t receiver, const CoreHeader &h, bool may_send_now) noexcept;
  // send() without the check that ogid is a resource of ours: for an
  // acknowledgement from a receiver deleted since it matched.
  int send_as(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word, void *ptr,
              std::size_t len) noexcept;
  void send_acks() noexcept;

  static std::atomic<Context *> current_;

  Options options_;
  std::unique_ptr<BufferPool> pool_;
  Directory *directory_ = nullptr;              // the process's, or owned_directory_
  std::unique_ptr<Directory> owned_directory_;  // a connection to a node server
  std::optional<JobSecret> secret_;             // the job's, when in a job
  ResourceTable resources_;
  // The options of each rail after a transport's first (TransportEnv::
  // rail): its network option set to its own entry. They outlive the
  // transports.
  std::vector<std::unique_ptr<OptionValues>> rail_options_;
  std::vector<std::unique_ptr<Transport>> transports_;
  // The in-process hand-off (a transport of Reach::kProcess), when enabled.
  Transport *local_ = nullptr;
  AckQueue acks_;  // acknowledgements deliver() could not send
  // The other transports, driven by waiting callers too.
  CallerProgress progress_;
  rocl_gid_t gid_ = ROCL_NULL_GID;
  // Held exclusively while a registration is between the directory and the
  // resource table, so a sender that found the gid in the directory but not
  // yet in the table can wait for it instead of failing.
  std::shared_mutex registering_;
  Router router_{options_, registering_};  // where each message goes
  // Striped messages arriving: fragments (messages to gid_) gathered, and
  // the messages of a pair held behind an incomplete one.
  std::unique_ptr<StripeReassembly> stripes_;
  // gid_ once registered, for the transports' threads (which run before):
  // the destination of fragments. ROCL_ANY_GID before, which no message has.
  std::atomic<rocl_gid_t> fragment_gid_{ROCL_ANY_GID};
  Requests requests_{*this};
};

}  // namespace rocl::impl
