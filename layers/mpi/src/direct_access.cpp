// direct_access.cpp - one-sided operations on a window whose memory every
// rank has mapped (win.hpp): the origin applies them itself. Each target
// has, at the front of the segment, a reader-writer lock word for
// MPI_Win_lock and a guard that makes accumulates on it atomic.
#include <sched.h>

#include <atomic>
#include <cstring>

#include "reductions.hpp"
#include "win.hpp"

namespace rmpi {
namespace {

constexpr std::uint32_t kWriter = 0x80000000u;

// A target's words, a cache line of their own.
struct alignas(64) TargetWords {
  std::atomic<std::uint32_t> lock;   // kWriter, or the number of readers
  std::atomic<std::uint32_t> guard;  // 1 while an accumulate runs
};
static_assert(sizeof(TargetWords) == 64);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free,
              "the words are shared between processes");

// Waits that stay cheap when the holder shares our core: spin a little,
// then give the core away.
class Backoff {
 public:
  void pause() {
    if (++spins_ < 64) {
      __builtin_ia32_pause();
    } else {
      sched_yield();
    }
  }

 private:
  int spins_ = 0;
};

class Guard {
 public:
  explicit Guard(std::atomic<std::uint32_t> &w) : w_(w) {
    Backoff b;
    for (;;) {
      std::uint32_t free = 0;
      if (w_.compare_exchange_weak(free, 1, std::memory_order_acquire)) return;
      b.pause();
    }
  }
  ~Guard() { w_.store(0, std::memory_order_release); }
  Guard(const Guard &) = delete;
  Guard &operator=(const Guard &) = delete;

 private:
  std::atomic<std::uint32_t> &w_;
};

class DirectAccess final : public Access {
 public:
  DirectAccess(MPI_Win win, char *words)
      : win_(win), words_(reinterpret_cast<TargetWords *>(words)) {}

  int put(int target, MPI_Aint offset, int count, const Layout &l, const char *data) override {
    write_elements(at(target, offset), count, l, data);
    return MPI_SUCCESS;
  }
  int get(int target, MPI_Aint offset, int count, const Layout &l, Result r) override {
    read_elements(at(target, offset), count, l, r.into);
    if (r.done) r.done();
    return MPI_SUCCESS;
  }
  int accumulate(int target, MPI_Aint offset, int count, const Layout &l, int builtin,
                 MPI_Datatype basic, const char *data, Result r) override {
    {
      Guard g(words_[target].guard);
      accumulate_elements(at(target, offset), count, l, builtin, basic, data, r.into);
    }
    if (r.done) r.done();
    return MPI_SUCCESS;
  }
  int compare_and_swap(int target, MPI_Aint offset, MPI_Datatype t, const char *data,
                       const char *compare, Result r) override {
    char *p = at(target, offset) + t->first();
    {
      Guard g(words_[target].guard);
      std::memcpy(r.into, p, t->packed);
      if (std::memcmp(p, compare, t->packed) == 0) std::memcpy(p, data, t->packed);
    }
    if (r.done) r.done();
    return MPI_SUCCESS;
  }
  int lock(int target, bool exclusive) override {
    std::atomic<std::uint32_t> &w = words_[target].lock;
    Backoff b;
    for (;;) {
      std::uint32_t v = w.load(std::memory_order_relaxed);
      const bool free = exclusive ? v == 0 : (v & kWriter) == 0;
      if (free &&
          w.compare_exchange_weak(v, exclusive ? kWriter : v + 1, std::memory_order_acquire)) {
        return MPI_SUCCESS;
      }
      b.pause();
    }
  }
  int unlock(int target) override {
    std::atomic<std::uint32_t> &w = words_[target].lock;
    if (w.load(std::memory_order_relaxed) == kWriter) {
      w.store(0, std::memory_order_release);
    } else {
      w.fetch_sub(1, std::memory_order_release);
    }
    return MPI_SUCCESS;
  }
  // The origin's own copies are done when the call returns; ordering them
  // before whatever the origin does next (a store, a message that lets the
  // target look) is all a flush must add. MPI_Win_sync keeps the full fence.
  int flush(int) override {
    std::atomic_thread_fence(std::memory_order_acq_rel);
    return MPI_SUCCESS;
  }
  int flush_all() override { return flush(0); }
  int sync_local() override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return MPI_SUCCESS;
  }
  int attach(void *, MPI_Aint) override {
    return fail(win_->comm, MPI_ERR_RMA_FLAVOR, "MPI_Win_attach",
                "the window was not made by MPI_Win_create_dynamic");
  }
  int detach(const void *) override {
    return fail(win_->comm, MPI_ERR_RMA_FLAVOR, "MPI_Win_detach",
                "the window was not made by MPI_Win_create_dynamic");
  }

 private:
  char *at(int target, MPI_Aint offset) const { return win_->shared[std::size_t(target)] + offset; }

  MPI_Win win_;
  TargetWords *words_;
};

}  // namespace

bool direct_fetch_and_op(MPI_Win win, int target, MPI_Aint offset, MPI_Datatype t, int builtin,
                         const void *in, void *old) {
  auto *words = reinterpret_cast<TargetWords *>(win->segment);
  char *p = win->shared[std::size_t(target)] + offset;
  const Fn fn = builtin < kReplace ? t->reducer(builtin) : nullptr;
  if (builtin < kReplace && fn == nullptr) return false;
  Guard g(words[target].guard);
  std::memcpy(old, p, t->packed);
  if (builtin == kReplace) {
    std::memcpy(p, in, t->packed);
  } else if (fn != nullptr) {
    fn(in, p, 1);
  }
  return true;
}

std::size_t direct_header_bytes(int ranks) {
  return std::size_t(ranks) * sizeof(TargetWords);
}

std::unique_ptr<Access> direct_access(MPI_Win win, char *locks) {
  return std::make_unique<DirectAccess>(win, locks);
}

}  // namespace rmpi
