// inproc_transport.cpp - see inproc_transport.hpp.
#include "transport/inproc/inproc_transport.hpp"

#include <unistd.h>

#include <string>

namespace rocl::impl {
namespace {

class InprocTransport final : public Transport {
 public:
  explicit InprocTransport(const TransportEnv &env)
      : Transport(env, "inproc"),
        address_("pid:" + std::to_string(::getpid()) + "/" + std::to_string(env.instance)) {}

 private:
  std::string address_impl() const override { return address_; }
  bool reaches_impl(std::string_view address) const noexcept override {
    return address == address_;
  }

  int send_impl(rocl_gid_t /*peer*/, std::string_view peer_address, rocl_gid_t destination,
                Message *msg) noexcept override {
    if (peer_address != address_) return ROCL_EPEER;
    // The receiver now owns the block: whether or not it was marked
    // return_after_send, the sender has nothing left to do with it.
    return env_.sink->deliver(destination, msg, nullptr);
  }

  int progress_impl(const Waiter *) noexcept override { return 0; }  // delivery is synchronous

  std::string address_;
};

}  // namespace

std::unique_ptr<Transport> make_inproc_transport(const TransportEnv &env) {
  return std::make_unique<InprocTransport>(env);
}

// Constant-initialised, so that the table is whole before any code runs.
extern constinit const TransportEntry transport_entry_inproc = {
    "inproc",
    "same process: hands the buffer pointer to the receiving resource, no copy",
    Reach::kProcess,
    {},
    &make_inproc_transport};

}  // namespace rocl::impl
