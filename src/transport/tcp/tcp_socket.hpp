// tcp_socket.hpp - the TCP transport's helpers around socket system calls:
// addresses, the blocking-with-deadline I/O of the handshake, and the
// non-blocking reads of the receive side. Free functions: no state.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace rocl::impl::tcp::detail {

// "1.2.3.4:5".
std::string sockaddr_name(const sockaddr_in &a);

// "tcp:1.2.3.4:5" or "tcp:127.0.0.1:5@<host id>" -> sockaddr. False if
// malformed.
bool parse_address(std::string_view addr, sockaddr_in *out);

// What to listen on (ROCL_TCP_BIND): an IPv4 literal; the first IPv4
// address of the interface so named; "auto": the first IPv4 address of an
// interface that is up and not loopback (loopback if there is none);
// "" or "loopback": 127.0.0.1. False if nothing matches.
bool resolve_bind(const std::string &what, in_addr *out);

// Blocking-with-deadline full read/write on a non-blocking socket. False:
// EOF, an error, or the deadline passed.
bool io_full(int fd, void *buf, std::size_t len, bool writing,
             std::chrono::steady_clock::time_point deadline);

// Reads into [p, p+len): bytes read, 0 would block, -1 closed or failed.
ssize_t read_some(int fd, void *p, std::size_t len);

// read_some into n buffers in turn (one recvmsg).
ssize_t read_vec(int fd, iovec *iov, int n);

// Round `round` of a wait for the peer (room in a queue, the linger): yield
// first (room usually frees within microseconds as the peer reads), then
// sleep 10 us doubling to 1 ms so that a stalled peer costs no CPU.
void back_off(unsigned round);

}  // namespace rocl::impl::tcp::detail
