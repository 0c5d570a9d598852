// scheduler.hpp - NCS_MTS: user threads on Boost.Context fibers, run by one
// kernel thread, 16 priority levels (highest first), round robin within a
// level, each thread runnable, running, blocked or finished.
#pragma once

#include <array>
#include <boost/context/fiber.hpp>
#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "fiber_annotations.hpp"
#include "mailbox.hpp"

namespace ncs {

inline constexpr int kPriorityLevels = 16;

enum class ThreadState { kRunnable, kRunning, kBlocked, kFinished };
// Why a blocked thread waits, so that only its event wakes it.
enum class BlockReason { kNone, kMessage, kCredit, kParked };

struct UserThread {
  int id = 0;
  int priority = 0;
  void (*fn)(void *) = nullptr;
  void *arg = nullptr;
  ThreadState state = ThreadState::kRunnable;
  BlockReason reason = BlockReason::kNone;
  Pattern waiting_for;       // kMessage: what would wake it
  bool wake_permit = false;  // an NCS_unblock that came before its NCS_block
  bool deadlocked = false;   // woken because nothing else could wake it
  boost::context::fiber fiber;
  AnnotatedStack stack;
};

// What the scheduler calls to take in messages: between threads, and when
// every thread is blocked.
class Progress {
 public:
  virtual ~Progress() = default;
  // Takes in what arrived, waiting up to timeout_ms (0: only looks).
  virtual void progress(int timeout_ms) = 0;
  // Whether anything outside this process could still wake a thread.
  virtual bool others_can_wake() const = 0;
};

class Scheduler {
 public:
  explicit Scheduler(std::size_t stack_bytes) : stack_bytes_(stack_bytes) {}
  Scheduler(const Scheduler &) = delete;
  Scheduler &operator=(const Scheduler &) = delete;

  // A new runnable thread; its id, or -1 without memory for its stack.
  int create(void (*fn)(void *), void *arg, int priority);
  // The running user thread, nullptr on the kernel thread itself.
  UserThread *current() const { return current_; }
  // Thread `id`, or nullptr if there is none.
  UserThread *find(int id) const;
  bool running() const { return running_; }

  // Runs the threads until every one has finished.
  void run(Progress &progress);

  // Called by the running thread: to the back of its level, then waits for
  // its turn.
  void yield();
  // Called by the running thread: blocked until make_runnable.
  void block(BlockReason reason);
  // Blocked -> runnable at the back of its level; no-op in another state.
  void make_runnable(UserThread *t);
  // If a thread of a higher level than the running one is runnable, the
  // running one steps aside (to the front of its level) and it runs.
  void run_higher_first();

 private:
  UserThread *next_runnable();
  void run_one(UserThread *t);
  void switch_to_scheduler();
  void thread_body(UserThread *t);
  void wake_deadlocked();
  bool higher_runnable(int priority) const;

  std::size_t stack_bytes_;
  std::vector<std::unique_ptr<UserThread>> threads_;
  std::array<std::deque<UserThread *>, kPriorityLevels> runnable_;
  int unfinished_ = 0;
  UserThread *current_ = nullptr;
  bool running_ = false;
  boost::context::fiber scheduler_;  // where run() continues
  AnnotatedStack scheduler_stack_;
};

}  // namespace ncs
