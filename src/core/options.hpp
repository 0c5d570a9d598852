// options.hpp - every tunable of rocl in one declarative table, read from
// ROCL_* environment variables, so tools can print them all with their docs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace rocl::impl {

struct Options {
  std::size_t pool_max;                   // ROCL_POOL_MAX
  std::size_t pool_thread_cache;          // ROCL_POOL_THREAD_CACHE
  std::uint32_t spin_us;                  // ROCL_SPIN_US
  std::uint32_t cpu_sharers;              // ROCL_CPU_SHARERS
  std::uint32_t peer_check_ms;            // ROCL_PEER_CHECK_MS
  std::size_t rndv_threshold;             // ROCL_RNDV_THRESHOLD
  std::size_t rndv_copy_threshold;        // ROCL_RNDV_COPY_THRESHOLD
  std::size_t tcp_rndv_threshold;         // ROCL_TCP_RNDV_THRESHOLD
  std::size_t shm_rndv_threshold;         // ROCL_SHM_RNDV_THRESHOLD
  std::size_t shm_stream_rndv_threshold;  // ROCL_SHM_STREAM_RNDV_THRESHOLD
  std::string tcp_congestion;             // ROCL_TCP_CONGESTION
  std::size_t lend_threshold;             // ROCL_LEND_THRESHOLD
  std::size_t shm_lend_threshold;         // ROCL_SHM_LEND_THRESHOLD
  std::uint32_t linger_ms;                // ROCL_LINGER_MS
  std::string transports;                 // ROCL_TRANSPORTS
  std::string directory;                  // ROCL_DIRECTORY
  std::string secret_file;                // ROCL_SECRET_FILE
};

// Defaults overridden by the environment. On a malformed value, prints a
// warning naming the variable to stderr and keeps the default.
Options load_options();

// Prints name, value in force, default and doc of every option.
void print_options(std::FILE *out);

// Parses "64K", "2M", "4G", "1048576"; false if malformed.
bool parse_size(const char *text, std::size_t *out);

// The names of a comma-separated option value ("shm,tcp"), in order; empty
// ones ("a,,b", a trailing comma) are skipped.
std::vector<std::string> split_list(std::string_view list);

}  // namespace rocl::impl
