// ucx_worker.hpp - one UCP context and worker: what the ucx transport asks
// of UCX, with UCX's errors in UCX's own words. Not thread safe: the
// transport serialises every call (ucx_transport.hpp, "Threads").
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rocl::impl::ucx {

// UCX's text for a status ("Destination is unreachable").
std::string status_text(ucs_status_t status);

// A worker address as text (lower-case hex) and back. from_hex is false on
// anything that is not an even number of hex digits.
std::string to_hex(const void *bytes, std::size_t length);
bool from_hex(std::string_view text, std::vector<std::uint8_t> *out);

// The active message id of rocl's messages on this worker.
constexpr unsigned kAmId = 0x52;

class Worker {
 public:
  // Reads UCX's configuration (UCX_* variables), restricts its network
  // devices to `net_devices` unless it is empty or UCX_NET_DEVICES is set,
  // and makes a context with active messages and wake-ups and one worker.
  // Throws std::runtime_error with UCX's sentence if UCX refuses.
  explicit Worker(const std::string &net_devices);
  ~Worker();
  Worker(const Worker &) = delete;
  Worker &operator=(const Worker &) = delete;

  ucp_context_h context() const noexcept { return context_; }
  ucp_worker_h worker() const noexcept { return worker_; }
  // The worker's address as published: hex of UCX's address blob.
  const std::string &address_hex() const noexcept { return address_hex_; }
  // A file descriptor readable when the armed worker has events.
  int event_fd() const noexcept { return event_fd_; }

  // Registers [base, base+len) with every memory domain (ucp_mem_map), so
  // that transfers from and into it need no registration of their own.
  // False, leaving nothing registered, if UCX refuses (the reason in *why).
  bool map_memory(void *base, std::size_t len, std::string *why) noexcept;
  ucp_mem_h memory() const noexcept { return memh_; }

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_mem_h memh_ = nullptr;
  int event_fd_ = -1;
  std::string address_hex_;
};

}  // namespace rocl::impl::ucx
