// inproc_transport.hpp - the transport between resources of one process:
// the sender's block is handed to the receiving resource's mailbox by
// pointer. Nothing is copied, nothing waits: delivery happens inside send.
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace rocl::impl {

std::unique_ptr<Transport> make_inproc_transport(const TransportEnv &env);

}  // namespace rocl::impl
