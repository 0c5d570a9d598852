// net.hpp - what rocl asks the kernel about the host's IPv4 network: which
// address a name means (ROCL_TCP_BIND, a directory server's listen address)
// and the broadcast address of the network an address is on (the directory
// servers' global queries).
#pragma once

#include <netinet/in.h>

#include <string>

namespace rocl::impl::os {

// What to bind to: an IPv4 literal; the first IPv4 address of the
// interface so named; "auto": the first IPv4 address of an interface that is
// up and not loopback (loopback if there is none); "" or "loopback":
// 127.0.0.1; "any": 0.0.0.0. False if nothing matches.
bool resolve_ipv4(const std::string &what, in_addr *out);

// The broadcast address of the interface that has address `local` (e.g.
// 10.201.0.255 for 10.201.0.3/24). False if no interface has it or it has
// no broadcast address (loopback).
bool broadcast_of(in_addr local, in_addr *out);

// The name of the interface that has address `local` ("lo" for 127.0.0.1).
// False if no interface has it.
bool interface_of(in_addr local, std::string *name);

// "1.2.3.4".
std::string ipv4_text(in_addr a);

}  // namespace rocl::impl::os
