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
  s.unknown_destination = refused_arrivals();
  s.delivered = delivered();
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

namespace shm {
namespace {
constexpr OptionRow kOptions[] = {
    {"ROCL_SHM_RNDV_THRESHOLD", "8K",
     "Over shm, pool buffers of at least this many bytes (or ROCL_RNDV_THRESHOLD, if lower) "
     "go by rendezvous: the receiver copies the payload from the sender's pool, mapped "
     "read-only, when a receive matches, while the sender, waiting for a reply or its next "
     "send, writes the other half into the receive's block through its mapping of the "
     "receiver's pool (both cpus copy, each the half its cache holds when a message is sent "
     "back). Below about 8 KiB the rings answer sooner; above, both cpus copying beats the "
     "ring's two copies in a row (rocl-bench latency bandwidth --transport shm with another "
     "value shows it). ROCL_RNDV_THRESHOLD=0 turns it off too (0: ROCL_RNDV_THRESHOLD alone).",
     OptionType::kSize},
    {"ROCL_SHM_STREAM_RNDV_THRESHOLD", "4K",
     "Over shm, pool buffers of at least this many bytes, below ROCL_SHM_RNDV_THRESHOLD, go by "
     "rendezvous too when they stream: when nothing arrived over shm since this sender's last "
     "such message to the same process (no reply came in between). A ping-pong's message is "
     "copied through the ring, which answers sooner; a stream's by rendezvous, where both "
     "cpus copy (rocl-bench bandwidth --transport shm with this option at 0 shows it). 0: "
     "never.",
     OptionType::kSize},
    {"ROCL_SHM_LEND_THRESHOLD", "128K",
     "Over shm, what a send lends (ROCL_LEND_THRESHOLD) is read by the receiver from the "
     "sender's memory only from this many bytes; a smaller lent message is copied through "
     "the ring at once (memcpy in, memcpy out), and its send completes then. The kernel's "
     "cross-memory copy costs a system call and page pinning per call, and on some machines "
     "it copies far slower than memcpy, so below about 128 KiB the ring wins there (rocl-bench "
     "mpi's latency and bw with this option at 0 show where reading pays on a machine). 0: "
     "ROCL_LEND_THRESHOLD alone.",
     OptionType::kSize},
};
}  // namespace

std::span<const OptionRow> option_rows() noexcept {
  return kOptions;
}

Config config_from(const OptionValues &options) {
  Config c;
  c.rendezvous_threshold = options.size("ROCL_SHM_RNDV_THRESHOLD");
  c.stream_rendezvous_threshold = options.size("ROCL_SHM_STREAM_RNDV_THRESHOLD");
  c.lend_threshold = options.size("ROCL_SHM_LEND_THRESHOLD");
  return c;
}
}  // namespace shm

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
  return make_shm_transport_with(env, read_options(env, shm::option_rows(), shm::config_from),
                                 nullptr);
}

// Constant-initialised, so that the table is whole before any code runs.
extern constinit const TransportEntry transport_entry_shm = {
    "shm",
    "same host: memfd inbox of per-sender lock-free rings, futex wake-ups, one copy each way",
    Reach::kHost, shm::kOptions, &make_shm_transport};

}  // namespace rocl::impl
