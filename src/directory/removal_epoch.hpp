// removal_epoch.hpp - the node directory server's removal epoch page
// (layout and rules: dir_protocol.hpp, "The removal epoch page").
//
// The server creates one at start (create()) and passes its descriptor to
// every client with the reply to PROVE; a client maps what it received
// (open()) read-only. Either way the page lives until the EpochPage dies.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace rocl::impl {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the removal epoch is shared between processes: it must be lock free");

class EpochPage {
 public:
  // Server side: a sealed memfd of dirproto::kEpochPageBytes, mapped
  // read-write, magic written, counter 0. nullptr and *why on failure.
  static std::unique_ptr<EpochPage> create(std::string *why);
  // Client side: maps fd read-only after checking it (a regular file of the
  // page's size, sealed against shrinking and growing, the magic). Takes fd
  // (closed here whatever happens: the mapping keeps the page). nullptr and
  // *why on failure.
  static std::unique_ptr<EpochPage> open(int fd, std::string *why);

  ~EpochPage();
  EpochPage(const EpochPage &) = delete;
  EpochPage &operator=(const EpochPage &) = delete;

  // The removal counter. Only the server's page may be written (bump()).
  const std::atomic<std::uint64_t> &counter() const noexcept { return *counter_; }
  // Server: one more removal (release), before the reply that reports it.
  void bump() noexcept { counter_->fetch_add(1, std::memory_order_release); }
  // Server: the descriptor to pass (-1 on a client's page).
  int fd() const noexcept { return fd_; }
  // Server: whether clients are kept from mapping the page writable
  // (F_SEAL_FUTURE_WRITE; old kernels lack it).
  bool write_sealed() const noexcept { return write_sealed_; }

 private:
  EpochPage(void *base, int fd, bool write_sealed);

  void *base_;
  std::atomic<std::uint64_t> *counter_;
  int fd_;
  bool write_sealed_;
};

}  // namespace rocl::impl
