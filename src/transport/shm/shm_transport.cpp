// shm_transport.cpp - the shm transport's counters and factories (design:
// shm_transport.hpp; the implementation, by responsibility, is listed in
// shm_internal.hpp).
#include "transport/shm/shm_transport.hpp"

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl {
namespace shm::detail {

shm::Stats ShmTransportImpl::stats() const noexcept {
  shm::Stats s;
  s.refused = refused_.load();
  s.poisoned = poisoned_.load();
  s.unknown_destination = unknown_.load();
  s.delivered = delivered_.load();
  s.lend_refused = lend_refused_.load();
  s.paused_reads = paused_reads_.load();
  s.early_wraps = early_wraps_.load();
  s.parts_copied_for_receivers = parts_copied_for_receivers_.load();
  s.first_parts_copied_by_senders = first_parts_copied_by_senders_.load();
  s.parts_copied_into_mapped_pools = parts_copied_into_mapped_pools_.load();
  s.parts_copied_by_senders = parts_copied_by_senders_.load();
  return s;
}

}  // namespace shm::detail

std::unique_ptr<ShmTransport> make_shm_transport_with(const TransportEnv &env,
                                                      const shm::Config &config, shm::LogFn log) {
  std::unique_ptr<shm::detail::ShmTransportImpl> t;
  try {
    t = std::make_unique<shm::detail::ShmTransportImpl>(env, config, std::move(log));
  } catch (...) {
    fail(ROCL_ENOMEM, "shm: out of memory");
    return nullptr;
  }
  if (t->init() != ROCL_OK) return nullptr;
  return t;
}

std::unique_ptr<Transport> make_shm_transport(const TransportEnv &env) {
  return make_shm_transport_with(env, shm::Config{}, nullptr);
}

}  // namespace rocl::impl
