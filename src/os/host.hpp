// host.hpp - what makes a host a host for rocl: the kernel it boots (boot
// id), the pid namespace (whose pids its processes share) and the network
// namespace (whose addresses and loopback they share). Two processes with
// the same host id may use shared memory and loopback sockets between them;
// two with different ones talk over the network, even on one machine (the
// test hosts are network namespaces of one machine, and must behave as
// separate hosts).
#pragma once

#include <cstdint>
#include <string>

namespace rocl::impl::os {

// "<boot id>:<pid namespace inode>:<network namespace inode>", the same for
// every process of the caller's host; computed once.
const std::string &host_tag();

// A 64-bit digest of host_tag() (FNV-1a), as 16 lower-case hex digits: short
// enough for addresses and the directory's "host.id" attribute.
const std::string &host_id();

// The host's name (gethostname), "localhost" if it has none.
std::string host_name();

// The inode of the caller's network namespace (/proc/self/ns/net), 0 if
// unknown.
std::uint64_t net_namespace();

}  // namespace rocl::impl::os
