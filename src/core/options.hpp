// options.hpp - the core's tunables, read from ROCL_* environment
// variables through the option rows (config/options.hpp): the core's own
// rows and every built transport's, so tools can print them all with their
// docs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/options.hpp"
#include "directory/directory.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl {

struct Options {
  std::size_t pool_max = 0;                  // ROCL_POOL_MAX
  std::size_t pool_thread_cache = 0;         // ROCL_POOL_THREAD_CACHE
  std::uint32_t spin_us = 0;                 // ROCL_SPIN_US
  wait::Mode wait_mode = wait::Mode::kAuto;  // ROCL_WAIT
  std::uint32_t peer_check_ms = 0;           // ROCL_PEER_CHECK_MS
  std::size_t rndv_threshold = 0;            // ROCL_RNDV_THRESHOLD
  std::size_t rndv_copy_threshold = 0;       // ROCL_RNDV_COPY_THRESHOLD
  std::size_t lend_threshold = 0;            // ROCL_LEND_THRESHOLD
  std::uint32_t linger_ms = 0;               // ROCL_LINGER_MS
  std::size_t stripe_threshold = 0;          // ROCL_STRIPE_THRESHOLD
  std::size_t stripe_fragment = 0;           // ROCL_STRIPE_FRAGMENT
  std::uint32_t stripe_resend_ms = 0;        // ROCL_STRIPE_RESEND_MS
  std::string transports;                    // ROCL_TRANSPORTS
  std::string directory;                     // ROCL_DIRECTORY
  std::string secret_file;                   // ROCL_SECRET_FILE
  std::string host_name;                     // ROCL_HOST_NAME
  std::string spawn_id;                      // ROCL_SPAWN_ID
  rocl_gid_t parent = ROCL_NULL_GID;         // ROCL_PARENT
  GidWidth gid_width = GidWidth::kWide;      // ROCL_GID_BITS
  // Every option's value, the transports' own included: each transport
  // reads its rows from here (TransportEnv::options).
  OptionValues values;
};

// The core's option rows.
std::span<const OptionRow> core_option_rows() noexcept;

// The core's and every built transport's options at their defaults.
OptionValues all_option_defaults();

// The Options of `values` (which hold at least the core's rows).
Options options_from(const OptionValues &values);

// Defaults overridden by the environment. On a malformed value, prints a
// warning naming the variable to stderr and keeps the default.
Options load_options();

// Prints name, value in force, default and doc of every option.
void print_options(std::FILE *out);

// Every option's name (the core's and each built transport's) and every
// other ROCL_* variable rocl knows (config/known_variables.hpp).
std::vector<std::string_view> known_variable_names();

// The warnings (one line each, no newline) for this process's ROCL_*
// environment variables that rocl does not know.
std::vector<std::string> unknown_variable_warnings();

// Prints unknown_variable_warnings() to stderr, the first time it is called
// in the process only: a program that calls rocl_init and rocl_exit in turn
// is told once.
void report_unknown_variables_once();

}  // namespace rocl::impl
