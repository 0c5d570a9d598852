// spawn_request.hpp - what a process asks its directory server to start on
// a host (rocl_spawn), as it travels: the body of the directory protocol's
// SPAWN (dir_protocol.hpp) and of the servers' SPAWN datagram
// (peer_protocol.hpp), an AttrList with
//   argv    the program and its arguments, each followed by one NUL byte
//           (1..kMaxArgs of them, the first not empty)
//   env     "KEY=VALUE" strings, each followed by one NUL byte (may be
//           empty): ROCL_* options the spawner passes on; keys are
//           ROCL_ and upper-case letters, digits and '_'
//   parent  the spawner's context gid, 8 bytes in little-endian order
// and nothing else. The whole encoding is at most kMaxRequestBytes, so that
// it fits one datagram between servers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "directory/attr_list.hpp"
#include "rocl/rocl.h"

namespace rocl::impl {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  rocl_gid_t parent = ROCL_NULL_GID;

  static constexpr std::size_t kMaxRequestBytes = 32 * 1024;
  static constexpr std::size_t kMaxArgs = 1024;
};

// ROCL_OK and *out, or ROCL_EINVAL (ROCL_ENOSPC when too big) with a
// sentence in last_error() naming what is wrong with r.
int encode_spawn_request(const SpawnRequest &r, AttrList *out);

// Checks a received list (every rule above): ROCL_OK and *out, or
// ROCL_EINVAL with what is wrong in *what (*out unchanged).
int decode_spawn_request(const AttrList &list, SpawnRequest *out, std::string *what);

// The environment variables a spawner passes on: every ROCL_* option of
// `environ` except those that describe the spawner's own place in its job
// (rank, size, job folder, secret file, directory, host name, spawn id,
// parent), which the spawning server sets for the new process.
std::vector<std::string> spawn_options_of_environment();

// Whether the spawning server sets this variable itself (the list above).
bool is_job_variable(const std::string &key);

}  // namespace rocl::impl
