// ucx_worker.cpp - see ucx_worker.hpp.
#include "transport/ucx/ucx_worker.hpp"

#include <cstdlib>
#include <stdexcept>

namespace rocl::impl::ucx {

std::string status_text(ucs_status_t status) {
  return ucs_status_string(status);
}

std::string to_hex(const void *bytes, std::size_t length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto *p = static_cast<const std::uint8_t *>(bytes);
  std::string text(2 * length, '0');
  for (std::size_t i = 0; i < length; ++i) {
    text[2 * i] = kDigits[p[i] >> 4];
    text[2 * i + 1] = kDigits[p[i] & 0xf];
  }
  return text;
}

bool from_hex(std::string_view text, std::vector<std::uint8_t> *out) {
  if (text.size() % 2 != 0) return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  out->assign(text.size() / 2, 0);
  for (std::size_t i = 0; i < out->size(); ++i) {
    const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

namespace {

[[noreturn]] void refused(const char *what, ucs_status_t status) {
  throw std::runtime_error(std::string("ucx: ") + what + ": " + status_text(status));
}

}  // namespace

Worker::Worker(const std::string &net_devices) {
  ucp_config_t *config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) refused("reading UCX's configuration", status);
  if (!net_devices.empty() && std::getenv("UCX_NET_DEVICES") == nullptr) {
    status = ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
    if (status != UCS_OK) {
      ucp_config_release(config);
      refused(("network devices '" + net_devices + "'").c_str(), status);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (status != UCS_OK) refused("making a context", status);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // The transport holds a lock around every call (ucx_transport.hpp).
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = ucp_worker_create(context_, &wp, &worker_);
  if (status != UCS_OK) {
    ucp_cleanup(context_);
    refused("making a worker", status);
  }
  status = ucp_worker_get_efd(worker_, &event_fd_);
  ucp_address_t *address = nullptr;
  std::size_t address_length = 0;
  if (status == UCS_OK) status = ucp_worker_get_address(worker_, &address, &address_length);
  if (status != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    refused("reading the worker's address", status);
  }
  address_hex_ = to_hex(address, address_length);
  ucp_worker_release_address(worker_, address);
}

Worker::~Worker() {
  if (memh_ != nullptr) ucp_mem_unmap(context_, memh_);
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

bool Worker::map_memory(void *base, std::size_t len, std::string *why) noexcept {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = base;
  params.length = len;
  const ucs_status_t status = ucp_mem_map(context_, &params, &memh_);
  if (status == UCS_OK) return true;
  memh_ = nullptr;
  try {
    *why = status_text(status);
  } catch (...) {
  }
  return false;
}

}  // namespace rocl::impl::ucx
