// directory_server.hpp - the node directory server (RoCL paper, section 3.2):
// one per node, serving the processes of a job over a Unix stream socket,
// and optionally any host's over tcp (protocol: dir_protocol.hpp), from an
// in-memory LocalDirectory.
//
//  - Every connection must first prove the job secret (challenge-response);
//    a refusal is logged and the connection closed.
//  - Contexts registered through a connection belong to it: when it closes
//    (the process exits or dies) each is remove_context'ed, so a dead
//    process's resources leave the directory.
//  - A peer breaking the protocol is logged ("directory: client <pid> sent
//    <what>") and dropped; the other connections are not affected.
//  - One thread runs an epoll loop over non-blocking sockets; input and
//    output buffers of a connection are bounded.
//  - Removals are counted in a shared page (the removal epoch,
//    dir_protocol.hpp): every REMOVE or REMOVE_CONTEXT that removed
//    something, and every closed connection that took resources along, adds
//    1 before the reply. The page's descriptor goes to each client with the
//    reply to PROVE (SCM_RIGHTS). If the page cannot be made, start() logs it
//    and clients are told there is none.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "directory/local_directory.hpp"
#include "directory/peer_servers.hpp"
#include "directory/removal_epoch.hpp"
#include "directory/spawn_table.hpp"
#include "security/job_secret.hpp"

namespace rocl::impl {

class DirectoryServer {
 public:
  using LogFn = std::function<void(const std::string &)>;

  DirectoryServer(std::string socket_path, JobSecret secret, std::uint16_t server_id = 1);
  ~DirectoryServer();  // stop()
  DirectoryServer(const DirectoryServer &) = delete;
  DirectoryServer &operator=(const DirectoryServer &) = delete;

  // Where log lines go (one sentence each, no newline); default: stderr with
  // a "rocld: " prefix. Set before start(); called on the server thread.
  void set_log(LogFn log);

  // Also serve clients over tcp (ROCL_DIRECTORY=tcp:HOST:PORT), from
  // start() on: address is [HOST:]PORT, HOST an IPv4 address, an
  // interface, "auto" or "any" (default any), PORT 0 for one the kernel
  // picks (tcp_port() tells it). Such clients get no removal epoch page (no
  // descriptor passes over tcp). Call before start(); ROCL_EBUSY after.
  int listen_tcp(std::string address);
  // Join the job's other directory servers (peer_servers.hpp) from start()
  // on: resources registered anywhere in the job are found here (lookups
  // by gid go to the gid's server; a query that misses here is broadcast;
  // multi-answer queries gather every server's matches). Without it this
  // server knows only its own clients' resources. Call before start().
  void set_peers(PeerConfig config);
  // Start processes for rocl_spawn (spawn_table.hpp), asked by this
  // server's clients or by the job's other servers, from start() on; the
  // host is then a resource {type=rocl-host, host=NAME, cpus=N, server=ID}
  // (a context of its own, the server's first gid) that spawners find by
  // name. Without it SPAWN requests are refused with a sentence saying so.
  // Spawned processes still running at stop() are stopped. Call before
  // start().
  void enable_spawn(SpawnConfig config) { spawn_config_ = std::move(config); }
  // The host resource's gid (ROCL_NULL_GID without enable_spawn).
  rocl_gid_t host_gid() const noexcept { return host_gid_; }
  // Thread safe: processes spawned here and not yet ended.
  std::size_t spawned_running() const noexcept {
    return spawned_running_.load(std::memory_order_relaxed);
  }

  // The width of the gids issued (directory.hpp; ROCL_GID_BITS): compact
  // ones allow server ids 1..127. Call before start().
  void set_gid_width(GidWidth width) { width_ = width; }
  // How long the server thread keeps looking for the next request (epoll
  // with no timeout) after serving one before it sleeps: a client's query
  // that comes within it costs no wake-up of the server, which would cost
  // more than the query itself. 0: sleep at once. Call before start().
  static constexpr std::chrono::microseconds kDefaultSpin{50};
  void set_spin(std::chrono::microseconds spin) { spin_ = spin; }
  // Thread safe, for tests and tools: how many other servers are live now,
  // and how many of their datagrams were ignored (peer_servers.hpp).
  std::size_t live_peers() const noexcept { return live_peers_.load(std::memory_order_relaxed); }
  std::uint64_t ignored_peer_packets() const noexcept {
    return ignored_peer_packets_.load(std::memory_order_relaxed);
  }

  // The tcp port and address served, once started with listen_tcp (0, "").
  std::uint16_t tcp_port() const noexcept { return tcp_port_; }
  const std::string &tcp_ip() const noexcept { return tcp_ip_; }

  // Binds the socket (a stale socket file is unlinked only if no server
  // answers on it; anything else at the path is left alone), listens and
  // starts the server thread. ROCL_OK, or a negative code + fail():
  // ROCL_EINVAL (bad server id, path too long), ROCL_EBUSY (a server answers
  // on the path, or already started), ROCL_EPEER (socket errors).
  int start();
  // Stops the thread, closes every connection and unlinks the socket file.
  // Idempotent.
  void stop();

  // Number of resources registered now.
  std::size_t resources() const;
  // Requests of op (dirproto::Op) served so far (well-formed ones, from
  // proven clients): QUERY_START + QUERY_NEXT count a multi-answer query's
  // round trips.
  std::uint64_t requests(std::uint16_t op) const;
  // The removal counter clients see, nullptr before start() or when the
  // page could not be made.
  const std::atomic<std::uint64_t> *removal_epoch() const noexcept;
  const std::string &socket_path() const { return path_; }

 private:
  struct Loop;  // directory_server.cpp
  void run();
  int open_tcp_listener();  // the tcp listening socket, or -1 + fail()

  std::string path_;
  JobSecret secret_;
  std::uint16_t server_id_;
  LogFn log_;
  std::unique_ptr<LocalDirectory> dir_;
  std::unique_ptr<EpochPage> epoch_;  // made by start(), kept across stop()
  bool epoch_tried_ = false;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::string tcp_address_;  // listen_tcp's, "" for none
  int tcp_fd_ = -1;
  std::uint16_t tcp_port_ = 0;
  std::string tcp_ip_;
  std::optional<PeerConfig> peer_config_;
  GidWidth width_ = GidWidth::kWide;
  std::chrono::microseconds spin_ = kDefaultSpin;
  std::unique_ptr<PeerServers> peers_;
  std::optional<SpawnConfig> spawn_config_;
  std::unique_ptr<SpawnTable> spawns_;
  rocl_gid_t host_gid_ = ROCL_NULL_GID;
  std::atomic<std::size_t> spawned_running_{0};
  std::atomic<std::size_t> live_peers_{0};
  std::atomic<std::uint64_t> ignored_peer_packets_{0};
  unsigned long long socket_ino_ = 0;
  bool started_ = false;
  std::array<std::atomic<std::uint64_t>, 16> requests_{};  // by op
};

}  // namespace rocl::impl
