// stripe_sender.cpp - a long message cut into fragments over every rail to
// its peer (stripe_sender.hpp).
#include "core/stripe_sender.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "core/stripe_wire.hpp"
#include "status/status.hpp"
#include "transport/transport.hpp"

namespace rocl::impl {
namespace {

// What one rail may hold of a message that it has not sent yet, in
// fragments: enough to keep it busy between two looks of the sender,
// little enough that a slow rail does not hold back the message's end.
constexpr std::uint64_t kWindowFragments = 4;

struct Fragment {
  BlockHeader *block = nullptr;
  std::size_t length = 0;  // header and bytes
  std::size_t rail = 0;
  std::uint64_t index = 0;
};

// The sender's state for one message.
class Striping {
 public:
  Striping(BufferPool *pool, const RailSet &rails, std::size_t fragment_bytes)
      : pool_(pool),
        rails_(rails),
        window_(kWindowFragments * fragment_bytes),
        queued_(rails.rails.size(), 0),
        up_(rails.rails.size(), true),
        finished_on_(rails.rails.size()) {}

  // Finished fragments: sent ones back to the pool, failed ones to send
  // again elsewhere (their rail is down).
  void reap() {
    std::erase_if(flight_, [this](const Fragment &f) {
      const SendStatus s = f.block->send_status.load(std::memory_order_acquire);
      if (s == SendStatus::kPending) return false;
      queued_[f.rail] -= f.length;
      if (s == SendStatus::kSent) {
        end_message(f.block);
        pool_->release(f.block, BlockState::kLibrary);
        // Sent on a rail that broke meanwhile: maybe lost in its socket.
        if (up_[f.rail]) {
          finished_on_[f.rail].push_back(f.index);
        } else {
          redo_.push_back(f.index);
        }
      } else {
        retry_.push_back(f);
        rail_down(f.rail);
      }
      return true;
    });
  }

  // Rail r broke: what it finished of the message may have died with its
  // connection (a transport finishes a fragment once it is on its way), so
  // those fragments go again over the others; the receiver drops repeats.
  void rail_down(std::size_t r) {
    if (!up_[r]) return;
    up_[r] = false;
    redo_.insert(redo_.end(), finished_on_[r].begin(), finished_on_[r].end());
    finished_on_[r].clear();
  }
  void put_back(std::uint64_t index) { redo_.push_back(index); }
  // A fragment to send again whose block is gone: its index.
  bool take_redo(std::uint64_t *index) {
    if (redo_.empty()) return false;
    *index = redo_.back();
    redo_.pop_back();
    return true;
  }

  // The rail for the next fragment: the primary for the head while it is
  // up; else the rail up with the fewest bytes queued, if it has room.
  // -1: every rail up is full; -2: no rail is up.
  int pick(bool head) const {
    const unsigned primary = rails_.primary.load(std::memory_order_acquire);
    if (head && up_[primary]) return static_cast<int>(primary);
    int best = -2;
    for (std::size_t r = 0; r < up_.size(); ++r) {
      if (!up_[r]) continue;
      if (best == -2) best = -1;
      if (queued_[r] >= window_) continue;
      if (best < 0 || queued_[r] < queued_[static_cast<std::size_t>(best)])
        best = static_cast<int>(r);
    }
    return best;
  }

  // Hands f to rail r: ROCL_OK (in flight), or the send's failure (the
  // rail is down; f is still the caller's).
  int post(rocl_gid_t peer, Fragment f, std::size_t r) {
    Message *msg = message_in(f.block);
    FragmentHeader h;
    std::memcpy(&h, payload_of(f.block), sizeof h);
    msg->header = CoreHeader{h.header.source, 0, 0};
    msg->data = payload_of(f.block);
    msg->length = f.length;
    f.block->send_status.store(SendStatus::kPending, std::memory_order_relaxed);
    const Rail &rail = rails_.rails[r];
    const int rc = rail.transport->send(peer, rail.address, peer, msg);
    if (rc != ROCL_OK) {
      rail_down(r);
      return rc;
    }
    f.rail = r;
    flight_.push_back(f);
    queued_[r] += f.length;
    return ROCL_OK;
  }

  bool take_retry(Fragment *f) {
    if (retry_.empty()) return false;
    *f = retry_.back();
    retry_.pop_back();
    return true;
  }
  bool idle() const noexcept { return flight_.empty(); }
  // Waits for what is in flight to finish (reaping it), with its blocks
  // then back in the pool: the end of a failed send.
  void drain() {
    while (!flight_.empty()) {
      reap();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    for (Fragment &f : retry_) {
      end_message(f.block);
      pool_->release(f.block, BlockState::kLibrary);
    }
    retry_.clear();
  }
  // The rails that failed, for a sentence: "tcp, tcp.2".
  std::string names() const {
    std::string s;
    for (const Rail &rail : rails_.rails) {
      s += (s.empty() ? "" : ", ") + std::string(rail.transport->name());
    }
    return s;
  }

 private:
  BufferPool *pool_;
  const RailSet &rails_;
  std::uint64_t window_;
  std::vector<std::uint64_t> queued_;  // per rail: bytes handed over, not finished
  std::vector<bool> up_;
  std::vector<Fragment> flight_;
  std::vector<Fragment> retry_;                          // failed, their blocks kept
  std::vector<std::vector<std::uint64_t>> finished_on_;  // per rail: indices it finished
  std::vector<std::uint64_t> redo_;                      // indices to make again
};

// Between two looks at fragments in flight: a yield first (a rail whose
// thread shares our cpu gets it), a short sleep once that went on a while.
void pause_for_rails(unsigned *rounds) {
  if (++*rounds < 64) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(*rounds < 1024 ? 20 : 200));
  }
}
}  // namespace

int StripeSender::send(rocl_gid_t peer, const RailSet &rails, rocl_gid_t dgid,
                       const CoreHeader &header, const std::byte *data,
                       std::size_t length) noexcept {
  const std::uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  try {
    std::lock_guard lock(acks_mutex_);
    waiting_.emplace(id, false);
  } catch (const std::bad_alloc &) {
    return fail(ROCL_ENOMEM, "rocl_send: out of memory striping a message to %#llx",
                static_cast<unsigned long long>(dgid));
  }
  int rc = ROCL_OK;
  for (int sends = 1; sends <= kSends; ++sends) {
    rc = send_once(peer, rails, dgid, header, data, length, id);
    if (rc != ROCL_OK) break;
    if (wait_for_ack(id)) return ROCL_OK;
    rc = fail(ROCL_EPEER,
              "rocl_send: a striped message of %zu bytes to %#llx (context %#llx) was not "
              "acknowledged within %u ms of its last fragment, %d times (ROCL_STRIPE_RESEND_MS)",
              length, static_cast<unsigned long long>(dgid), static_cast<unsigned long long>(peer),
              resend_ms_, sends);
  }
  std::lock_guard lock(acks_mutex_);
  waiting_.erase(id);
  return rc;
}

void StripeSender::acknowledged(std::uint64_t message_id) noexcept {
  std::lock_guard lock(acks_mutex_);
  if (auto it = waiting_.find(message_id); it != waiting_.end()) it->second = true;
}

// Whether message id's ack came within resend_ms_ (it is forgotten then).
bool StripeSender::wait_for_ack(std::uint64_t id) noexcept {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(resend_ms_);
  unsigned rounds = 0;
  for (;;) {
    {
      std::lock_guard lock(acks_mutex_);
      auto it = waiting_.find(id);
      if (it->second) {
        waiting_.erase(it);
        return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    pause_for_rails(&rounds);
  }
}

// One send of the whole message: every fragment handed to a rail and
// finished by it.
int StripeSender::send_once(rocl_gid_t peer, const RailSet &rails, rocl_gid_t dgid,
                            const CoreHeader &header, const std::byte *data, std::size_t length,
                            std::uint64_t id) noexcept {
  const auto fb = static_cast<std::uint32_t>(fragment_bytes_);
  const std::uint64_t count = fragment_count(length, fb);
  try {
    Striping s(pool_, rails, fragment_bytes_);
    std::uint64_t next = 0;
    Fragment ready;  // made, not yet handed to a rail
    bool head = true;
    int last_failure = ROCL_OK;
    unsigned rounds = 0;
    for (;;) {
      s.reap();
      std::uint64_t index = 0;
      if (ready.block == nullptr && !s.take_retry(&ready) &&
          (s.take_redo(&index) || (next < count && (index = next++, true)))) {
        const std::uint64_t offset = index * fb;
        const std::size_t chunk = std::min<std::uint64_t>(fb, length - offset);
        ready.block = pool_->allocate(sizeof(FragmentHeader) + chunk);
        if (ready.block == nullptr) {
          if (s.idle()) {
            return fail(ROCL_ENOMEM,
                        "rocl_send: no pool block for a fragment of a striped message to %#llx",
                        static_cast<unsigned long long>(dgid));
          }
          s.put_back(index);         // made again on the next turn
          pause_for_rails(&rounds);  // fragments in flight give theirs back
          continue;
        }
        FragmentHeader h;
        h.fragment_bytes = fb;
        h.destination = dgid;
        h.header = header;
        h.message_id = id;
        h.offset = offset;
        h.total = length;
        std::memcpy(payload_of(ready.block), &h, sizeof h);
        std::memcpy(payload_of(ready.block) + sizeof h, data + offset, chunk);
        ready.block->state.store(BlockState::kLibrary, std::memory_order_relaxed);
        ready.block->return_after_send = false;
        ready.length = sizeof h + chunk;
        ready.index = index;
      }
      if (ready.block == nullptr) {
        if (s.idle()) return ROCL_OK;  // every fragment sent
        pause_for_rails(&rounds);
        continue;
      }
      const int r = s.pick(head && ready.index == 0);
      if (r == -2) {
        end_message(ready.block);
        pool_->release(ready.block, BlockState::kLibrary);
        s.drain();
        return fail(last_failure == ROCL_OK ? ROCL_EPEER : last_failure,
                    "rocl_send: a striped message of %zu bytes to %#llx (context %#llx) failed: "
                    "every rail to it failed (%s)",
                    length, static_cast<unsigned long long>(dgid),
                    static_cast<unsigned long long>(peer), s.names().c_str());
      }
      if (r == -1) {
        pause_for_rails(&rounds);
        continue;
      }
      if (const int rc = s.post(peer, ready, static_cast<std::size_t>(r)); rc != ROCL_OK) {
        last_failure = rc;
        continue;  // ready goes over another rail
      }
      ready = Fragment{};
      head = false;
      rounds = 0;
    }
  } catch (const std::bad_alloc &) {
    return fail(ROCL_ENOMEM, "rocl_send: out of memory striping a message to %#llx",
                static_cast<unsigned long long>(dgid));
  }
}

}  // namespace rocl::impl
