// resource_table.cpp - see resource_table.hpp.
#include "core/resource_table.hpp"

#include <algorithm>
#include <thread>

namespace rocl::impl {

ResourceTable::ResourceTable() {
  tables_.push_back(std::make_unique<Table>(256));
  table_.store(tables_.back().get(), std::memory_order_release);
}

ResourceTable::~ResourceTable() = default;

Resource *ResourceTable::find(rocl_gid_t gid) const noexcept {
  const Table *t = table_.load(std::memory_order_acquire);
  for (std::size_t i = hash(gid) & t->mask;; i = (i + 1) & t->mask) {
    rocl_gid_t key = t->slots[i].key.load(std::memory_order_acquire);
    if (key == gid) return t->slots[i].value.load(std::memory_order_acquire);
    if (key == ROCL_NULL_GID) return nullptr;
  }
}

Resource *ResourceTable::get(rocl_gid_t gid) const noexcept {
  if (gid == ROCL_NULL_GID || gid == ROCL_ANY_GID) return nullptr;
  Resource *r = find(gid);
  return r != nullptr && r->acquire(gid) ? r : nullptr;
}

bool ResourceTable::contains(rocl_gid_t gid) const noexcept {
  if (gid == ROCL_NULL_GID || gid == ROCL_ANY_GID) return false;
  // The slot alone: remove() empties it before the object can be
  // recycled. Reading the resource's gid instead would pull in its first
  // line, which its owner writes whenever it posts a receive (a receiver
  // checking whether its sender is local would move that line twice per
  // message).
  return find(gid) != nullptr;
}

void ResourceTable::put(Resource *r) noexcept {
  if (!r->release()) return;
  std::lock_guard lock(writer_);
  r->retire();
  free_resources_.push_back(r);
}

void ResourceTable::grow_locked() {
  Table *old = table_.load(std::memory_order_relaxed);
  std::size_t live = 0;
  for (auto &s : old->slots) live += s.value.load(std::memory_order_relaxed) != nullptr;
  std::size_t capacity = old->slots.size();
  while (live * 4 >= capacity) capacity *= 2;  // keep the new table at most 1/4 full of live ones
  auto fresh = std::make_unique<Table>(capacity);
  used_slots_ = 0;
  for (auto &s : old->slots) {
    Resource *r = s.value.load(std::memory_order_relaxed);
    if (r == nullptr) continue;
    rocl_gid_t key = s.key.load(std::memory_order_relaxed);
    std::size_t i = hash(key) & fresh->mask;
    while (fresh->slots[i].key.load(std::memory_order_relaxed) != ROCL_NULL_GID) {
      i = (i + 1) & fresh->mask;
    }
    fresh->slots[i].value.store(r, std::memory_order_relaxed);
    fresh->slots[i].key.store(key, std::memory_order_relaxed);
    ++used_slots_;
  }
  tables_.push_back(std::move(fresh));
  table_.store(tables_.back().get(), std::memory_order_release);
}

Resource *ResourceTable::insert(rocl_gid_t gid) {
  std::lock_guard lock(writer_);
  Table *t = table_.load(std::memory_order_relaxed);
  if ((used_slots_ + 1) * 2 > t->slots.size()) {
    grow_locked();
    t = table_.load(std::memory_order_relaxed);
  }
  Resource *r;
  if (free_resources_.empty()) {
    all_resources_.push_back(std::make_unique<Resource>());
    r = all_resources_.back().get();
  } else {
    r = free_resources_.back();
    free_resources_.pop_back();
  }
  r->start(gid);
  std::size_t i = hash(gid) & t->mask;
  while (t->slots[i].key.load(std::memory_order_relaxed) != ROCL_NULL_GID) i = (i + 1) & t->mask;
  // Value before key: a reader that sees the key sees the value too.
  t->slots[i].value.store(r, std::memory_order_release);
  t->slots[i].key.store(gid, std::memory_order_release);
  ++used_slots_;
  return r;
}

Resource *ResourceTable::remove(rocl_gid_t gid) {
  std::lock_guard lock(writer_);
  Table *t = table_.load(std::memory_order_relaxed);
  for (std::size_t i = hash(gid) & t->mask;; i = (i + 1) & t->mask) {
    rocl_gid_t key = t->slots[i].key.load(std::memory_order_relaxed);
    if (key == ROCL_NULL_GID) return nullptr;
    if (key != gid) continue;
    // The key stays as a tombstone: gids are never reused.
    return t->slots[i].value.exchange(nullptr, std::memory_order_acq_rel);
  }
}

bool ResourceTable::wait_for_callers(std::chrono::milliseconds limit) const {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::lock_guard lock(writer_);
  for (const auto &r : all_resources_) {
    while (r->callers() > 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      writer_.unlock();  // callers leaving need writer_ to recycle
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      writer_.lock();
    }
  }
  return true;
}

std::vector<rocl_gid_t> ResourceTable::gids() const {
  std::lock_guard lock(writer_);
  std::vector<rocl_gid_t> out;
  const Table *t = table_.load(std::memory_order_relaxed);
  for (auto &s : t->slots) {
    if (s.value.load(std::memory_order_relaxed) != nullptr) out.push_back(s.key.load());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rocl::impl
