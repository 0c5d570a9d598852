// scheduler.cpp - the run loop and the switches. Every switch goes through
// the scheduler's own context (run()): a thread gives control back with
// switch_to_scheduler, and run() picks the next one. Arrivals are taken in
// every kPollEvery switches, and at once when nothing is runnable.
#include "scheduler.hpp"

#include <boost/context/protected_fixedsize_stack.hpp>
#include <new>

namespace ncs {
namespace ctx = boost::context;

namespace {

// Boost's guarded stack, whose bounds the sanitizers are told of.
class RecordedStack {
 public:
  RecordedStack(std::size_t bytes, AnnotatedStack *record) : inner_(bytes), record_(record) {}
  ctx::stack_context allocate() {
    ctx::stack_context sc = inner_.allocate();
    record_->bottom = static_cast<char *>(sc.sp) - sc.size;
    record_->size = sc.size;
    return sc;
  }
  void deallocate(ctx::stack_context &sc) noexcept { inner_.deallocate(sc); }

 private:
  ctx::protected_fixedsize_stack inner_;
  AnnotatedStack *record_;
};

// Switches between looks at rocl while threads are runnable: a look costs
// about as much as a few switches, and a message waits at most this many.
constexpr int kPollEvery = 8;
// How long an idle process waits in rocl before it looks again.
constexpr int kIdleWaitMs = 50;
}  // namespace

int Scheduler::create(void (*fn)(void *), void *arg, int priority) {
  auto t = std::make_unique<UserThread>();
  t->id = static_cast<int>(threads_.size());
  t->priority = priority;
  t->fn = fn;
  t->arg = arg;
  UserThread *raw = t.get();
  try {
    t->fiber = ctx::fiber(std::allocator_arg, RecordedStack(stack_bytes_, &t->stack),
                          [this, raw](ctx::fiber &&scheduler) {
                            scheduler_ = std::move(scheduler);
                            thread_body(raw);
                            return std::move(scheduler_);
                          });
  } catch (const std::bad_alloc &) {
    return -1;
  } catch (const std::system_error &) {
    return -1;
  }
  annotate_new_stack(t->stack);
  threads_.push_back(std::move(t));
  runnable_[priority].push_back(raw);
  ++unfinished_;
  return raw->id;
}

UserThread *Scheduler::find(int id) const {
  return id >= 0 && id < static_cast<int>(threads_.size()) ? threads_[id].get() : nullptr;
}

void Scheduler::thread_body(UserThread *t) {
  after_switch(t->stack, &scheduler_stack_);
  t->fn(t->arg);
  t->state = ThreadState::kFinished;
  before_switch(t->stack, scheduler_stack_, true);
}

void Scheduler::run(Progress &progress) {
  running_ = true;
  annotate_current_stack(scheduler_stack_);
  int since_poll = 0;
  while (unfinished_ > 0) {
    if (++since_poll >= kPollEvery) {
      progress.progress(0);
      since_poll = 0;
    }
    UserThread *t = next_runnable();
    if (t == nullptr) {
      progress.progress(0);
      t = next_runnable();
    }
    if (t == nullptr) {
      if (progress.others_can_wake()) {
        progress.progress(kIdleWaitMs);
      } else {
        wake_deadlocked();
      }
      continue;
    }
    run_one(t);
  }
  running_ = false;
}

void Scheduler::run_one(UserThread *t) {
  current_ = t;
  t->state = ThreadState::kRunning;
  before_switch(scheduler_stack_, t->stack, false);
  t->fiber = std::move(t->fiber).resume();
  after_switch(scheduler_stack_, nullptr);
  current_ = nullptr;
  if (t->state == ThreadState::kFinished) {
    forget_stack(t->stack);
    --unfinished_;
  }
}

void Scheduler::switch_to_scheduler() {
  UserThread *t = current_;
  before_switch(t->stack, scheduler_stack_, false);
  scheduler_ = std::move(scheduler_).resume();
  after_switch(t->stack, &scheduler_stack_);
}

UserThread *Scheduler::next_runnable() {
  for (int level = kPriorityLevels - 1; level >= 0; --level) {
    auto &queue = runnable_[level];
    if (!queue.empty()) {
      UserThread *t = queue.front();
      queue.pop_front();
      return t;
    }
  }
  return nullptr;
}

bool Scheduler::higher_runnable(int priority) const {
  for (int level = kPriorityLevels - 1; level > priority; --level) {
    if (!runnable_[level].empty()) return true;
  }
  return false;
}

void Scheduler::yield() {
  UserThread *t = current_;
  t->state = ThreadState::kRunnable;
  runnable_[t->priority].push_back(t);
  switch_to_scheduler();
}

void Scheduler::block(BlockReason reason) {
  UserThread *t = current_;
  t->state = ThreadState::kBlocked;
  t->reason = reason;
  switch_to_scheduler();
}

void Scheduler::make_runnable(UserThread *t) {
  if (t->state != ThreadState::kBlocked) return;
  t->state = ThreadState::kRunnable;
  t->reason = BlockReason::kNone;
  runnable_[t->priority].push_back(t);
}

void Scheduler::run_higher_first() {
  UserThread *t = current_;
  if (t == nullptr || !higher_runnable(t->priority)) return;
  t->state = ThreadState::kRunnable;
  runnable_[t->priority].push_front(t);
  switch_to_scheduler();
}

// Nothing is runnable and nothing from outside can come: every blocked
// thread's call fails with NCS_EDEADLOCK instead of waiting forever.
void Scheduler::wake_deadlocked() {
  for (auto &t : threads_) {
    if (t->state == ThreadState::kBlocked) {
      t->deadlocked = true;
      make_runnable(t.get());
    }
  }
}

}  // namespace ncs
