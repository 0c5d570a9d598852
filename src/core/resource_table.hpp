// resource_table.hpp - gid -> Resource for the resources of this process.
//
// Read on every send and receive, written on register/delete: lookups take
// no lock (open addressing over atomics); writers serialise on a mutex and
// grow the table by publishing a new copy. Old copies and Resource objects
// stay allocated until the table dies, which is what makes lock-free reads
// safe (see Resource for how stale pointers are detected).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "core/resource.hpp"

namespace rocl::impl {

class ResourceTable {
 public:
  ResourceTable();
  ~ResourceTable();
  ResourceTable(const ResourceTable &) = delete;
  ResourceTable &operator=(const ResourceTable &) = delete;

  // A live resource with this gid with a reference taken, or nullptr.
  // Lock-free; the caller must call put() when done.
  Resource *get(rocl_gid_t gid) const noexcept;
  // True if gid is a live resource of this process (as of a moment during
  // the call). Reads the table only: neither a reference nor the
  // resource's own cache lines, so checking a gid on every send or
  // receive does not bounce a resource's lines between threads.
  bool contains(rocl_gid_t gid) const noexcept;
  // The live resource with this gid, without a reference (nullptr if
  // none): for a look into its mailbox that checks, under the mailbox's
  // lock, that the gid is still this one (Communicator::take_queued); the
  // object may be deleted and recycled at any moment, but is never freed
  // while the table lives, and its mailbox never rebuilt (Resource::start).
  Resource *peek(rocl_gid_t gid) const noexcept {
    if (gid == ROCL_NULL_GID || gid == ROCL_ANY_GID) return nullptr;
    Resource *r = find(gid);
    return r != nullptr && r->gid() == gid ? r : nullptr;
  }
  // Drops a reference from get(); recycles the object after the last one.
  void put(Resource *r) noexcept;

  // Creates the live resource for a new gid (never used before).
  Resource *insert(rocl_gid_t gid);
  // Unpublishes gid and returns its resource with the registration's
  // reference still held (the caller closes the mailbox, then put()s it);
  // nullptr if gid is not here.
  Resource *remove(rocl_gid_t gid);
  // Waits (up to `limit`) until no thread is inside a call holding a
  // reference; true if so. For teardown, after every resource was removed
  // and closed.
  bool wait_for_callers(std::chrono::milliseconds limit) const;
  // Gids of all live resources (for teardown).
  std::vector<rocl_gid_t> gids() const;

 private:
  struct Slot {
    std::atomic<rocl_gid_t> key{ROCL_NULL_GID};
    std::atomic<Resource *> value{nullptr};
  };
  struct Table {
    explicit Table(std::size_t capacity) : mask(capacity - 1), slots(capacity) {}
    std::size_t mask;
    std::vector<Slot> slots;
  };

  Resource *find(rocl_gid_t gid) const noexcept;
  void grow_locked();
  static std::size_t hash(rocl_gid_t gid) noexcept { return gid * 0x9E3779B97F4A7C15ull >> 17; }

  std::atomic<Table *> table_;
  mutable std::mutex writer_;
  std::size_t used_slots_ = 0;                            // live + tombstones, under writer_
  std::vector<std::unique_ptr<Table>> tables_;            // current and retired copies
  std::vector<std::unique_ptr<Resource>> all_resources_;  // type-stable storage
  std::vector<Resource *> free_resources_;
};

}  // namespace rocl::impl
