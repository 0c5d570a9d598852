// remote_directory.hpp - a Directory that is the node's directory server
// (directory_server.hpp), reached over its Unix socket (dir_protocol.hpp).
//
// Thread safe: one blocking connection behind a mutex, one request at a time.
// Cursors share the connection (a QueryCursor may outlive the Directory) and
// fetch answers in batches (dir_protocol.hpp, version 3): most next() calls
// are served from the batch held, without a round trip or the connection's
// mutex; the removal epoch tells when a held answer may be stale.
// Once the connection is lost (server gone, protocol broken, reply timeout),
// every later call fails with ROCL_EPEER and a sentence saying so.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "directory/directory.hpp"
#include "security/job_secret.hpp"

namespace rocl::impl {

// Connects to the server at `address` and proves secret (the server proves
// it back). address: unix:PATH (or a bare PATH), the host's own server; or
// tcp:HOST:PORT, a server on any host (HOST a name or an IPv4 address).
// nullptr + fail() with a sentence naming the server on error: ROCL_EINVAL
// (path too long, a name that does not resolve), ROCL_EPEER (no server,
// refused, broken handshake, the server could not prove the secret,
// another protocol version).
//
// The Directory's removal_epoch() is the server's counter, mapped read-only
// from the page it passes with the handshake (dir_protocol.hpp). Without it
// (an old kernel's server, a lost descriptor) the connection works as
// before and one sentence says so: to note, or to stderr ("rocl: ...")
// when note is empty. Over tcp no page can pass and nothing is said.
std::unique_ptr<Directory> connect_directory(
    const std::string &address, const JobSecret &secret,
    const std::function<void(const std::string &)> &note = {});

}  // namespace rocl::impl
