// stripe_reassembly.cpp - fragments gathered into their message, messages
// of a pair kept in order (stripe_reassembly.hpp).
#include "core/stripe_reassembly.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

#include "transport/transport.hpp"

namespace rocl::impl {

StripeReassembly::StripeReassembly(BufferPool &pool, Deliver deliver, Log log, Ack ack)
    : pool_(pool), deliver_(std::move(deliver)), log_(std::move(log)), ack_(std::move(ack)) {}

void StripeReassembly::note_completed(const AssemblyKey &key) {
  if (recent_.size() == kRecentCompleted) {
    recent_set_.erase(recent_.front());
    recent_.pop_front();
  }
  recent_.push_back(key);
  recent_set_.insert(key);
  if (ack_) ack_(key.first, key.second);
}

StripeReassembly::~StripeReassembly() {
  std::lock_guard lock(mutex_);
  for (auto &[pair, slots] : pairs_) {
    for (Slot &slot : slots) {
      if (slot.held != nullptr) drop(slot.held);
    }
  }
  for (auto &[key, a] : assemblies_) {
    if (a->block != nullptr) pool_.release(a->block, BlockState::kLibrary);
  }
}

void StripeReassembly::log_line(const std::string &line) noexcept {
  try {
    log_(line);
  } catch (...) {  // a log that fails must not lose the message's fate
  }
}

void StripeReassembly::drop(Message *msg) noexcept {
  BlockHeader *b = block_of(msg);
  end_message(b);
  pool_.release(b, BlockState::kLibrary);
}

// Under mutex_: the message h belongs to, made on its first fragment (a
// block of its whole length; without one the message is still tracked, so
// that its pair's order goes on once all of it has passed).
StripeReassembly::Assembly *StripeReassembly::assembly_for(const FragmentHeader &h) {
  const AssemblyKey key{h.header.source, h.message_id};
  auto it = assemblies_.find(key);
  if (it != assemblies_.end()) return it->second.get();
  auto a = std::make_unique<Assembly>();
  a->destination = h.destination;
  a->header = h.header;
  a->total = h.total;
  a->fragment_bytes = h.fragment_bytes;
  a->have.assign(fragment_count(h.total, h.fragment_bytes), false);
  a->block = pool_.allocate(h.total);
  if (a->block != nullptr) {
    a->block->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  } else {
    char line[256];
    std::snprintf(line, sizeof line,
                  "striped message of %" PRIu64 " bytes from 0x%016" PRIx64 " for 0x%016" PRIx64
                  " dropped: the buffer pool has no block for it (ROCL_POOL_MAX)",
                  h.total, h.header.source, h.destination);
    log_line(line);
  }
  return assemblies_.emplace(key, std::move(a)).first->second.get();
}

void StripeReassembly::take_fragment(Message *fragment) noexcept {
  FragmentHeader h;
  const char *bad = parse_fragment(fragment->data, fragment->length, &h);
  const auto *bytes = static_cast<const std::byte *>(fragment->data) + sizeof h;
  std::unique_lock lock(mutex_);
  if (bad == nullptr) {
    try {
      if (completed_lately(AssemblyKey{h.header.source, h.message_id})) {
        ++counts_.repeats;
        if (ack_) ack_(h.header.source, h.message_id);  // its ack may have been lost
        lock.unlock();
        drop(fragment);
        return;
      }
      Assembly *a = assembly_for(h);
      const std::uint64_t index = h.offset / h.fragment_bytes;
      const std::size_t n = fragment->length - sizeof h;
      // The same fragment size too: fragments cut at another size would
      // overlap or leave gaps, and their bytes could add up to the total
      // with some of the block never written.
      if (a->destination != h.destination || a->total != h.total ||
          a->fragment_bytes != h.fragment_bytes || index >= a->have.size()) {
        bad = "does not match the earlier fragments of its message";
      } else if (a->have[index]) {
        ++counts_.repeats;  // a resend's, or a rail's that failed late: dropped quietly
        lock.unlock();
        drop(fragment);
        return;
      } else {
        a->have[index] = true;
        a->received += n;
        if (a->block != nullptr) {
          std::memcpy(payload_of(a->block) + h.offset, bytes, n);
          ++counts_.fragments;
        } else {
          ++counts_.dropped;
        }
        if (h.offset == 0) {  // the head: its place in the pair's order
          auto [pair, added] = pairs_.try_emplace(PairKey{h.header.source, h.destination});
          pair->second.push_back(Slot{AssemblyKey{h.header.source, h.message_id}, nullptr});
          if (added) open_pairs_.fetch_add(1, std::memory_order_release);
        }
        if (a->received == a->total) {
          // Not one the pool had no block for: a resend may find one.
          if (a->block != nullptr) note_completed(AssemblyKey{h.header.source, h.message_id});
          release_ready(PairKey{h.header.source, h.destination});
        }
      }
    } catch (const std::bad_alloc &) {
      bad = "no memory to track its message";
    }
  }
  if (bad != nullptr) {
    ++counts_.dropped;
    char line[256];
    std::snprintf(line, sizeof line,
                  "fragment of %zu bytes dropped: %s (message %" PRIu64 " from 0x%016" PRIx64
                  " for 0x%016" PRIx64 ", offset %" PRIu64 ")",
                  static_cast<std::size_t>(fragment->length), bad, h.message_id, h.header.source,
                  h.destination, h.offset);
    lock.unlock();
    log_line(line);
  }
  drop(fragment);
}

// Under mutex_: hands on the messages at the front of pair's queue that
// may go (held ones, complete striped ones) until one that may not.
void StripeReassembly::release_ready(const PairKey &pair) {
  auto it = pairs_.find(pair);
  if (it == pairs_.end()) return;
  std::deque<Slot> &slots = it->second;
  while (!slots.empty()) {
    Slot &front = slots.front();
    if (front.held != nullptr) {
      hand_on(pair.second, front.held);
    } else {
      auto a = assemblies_.find(front.assembly);
      if (a->second->received != a->second->total) break;
      if (BlockHeader *b = a->second->block; b != nullptr) {
        Message *msg = message_in(b);
        msg->header = a->second->header;
        msg->data = payload_of(b);
        msg->length = a->second->total;
        ++counts_.messages;
        hand_on(pair.second, msg);
      }
      assemblies_.erase(a);
    }
    slots.pop_front();
  }
  if (slots.empty()) {
    pairs_.erase(it);
    open_pairs_.fetch_sub(1, std::memory_order_release);
  }
}

void StripeReassembly::hand_on(rocl_gid_t destination, Message *msg) {
  const int rc = deliver_(destination, msg);
  if (rc == ROCL_OK) return;
  char line[192];
  std::snprintf(
      line, sizeof line,
      "message of %" PRIu64 " bytes from 0x%016" PRIx64 " for %s 0x%016" PRIx64 " dropped",
      static_cast<std::uint64_t>(msg->length), msg->header.source, refusal(rc), destination);
  drop(msg);
  log_line(line);
}

bool StripeReassembly::hold(rocl_gid_t destination, Message *msg) noexcept {
  std::lock_guard lock(mutex_);
  auto it = pairs_.find(PairKey{msg->header.source, destination});
  if (it == pairs_.end()) return false;
  try {
    it->second.push_back(Slot{AssemblyKey{}, msg});
  } catch (const std::bad_alloc &) {
    return false;  // delivered at once: out of order rather than lost
  }
  ++counts_.held;
  return true;
}

bool StripeReassembly::holds(rocl_gid_t source, rocl_gid_t destination) noexcept {
  std::lock_guard lock(mutex_);
  return pairs_.contains(PairKey{source, destination});
}

StripeReassembly::Counts StripeReassembly::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::size_t StripeReassembly::in_progress() const {
  std::lock_guard lock(mutex_);
  return assemblies_.size();
}

}  // namespace rocl::impl
