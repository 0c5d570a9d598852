// notify.cpp - pvm_notify. Without a pvmd to report exits, one thread per
// process watches the directory: a task's entry leaves it when the task
// calls pvm_exit or its process ends (rocl deletes a dead context's
// resources), and the watcher then sends the notification, a message
// holding the exited tid, to the task that asked.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <vector>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

class ExitWatcher {
 public:
  struct Watch {
    rocl_gid_t receiver;  // the asking task's resource
    std::uint32_t context;
    int msgtag;
    int tid;
  };

  void add(const Watch &w) {
    std::lock_guard guard(lock_);
    watches_.push_back(w);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    wake_.notify_one();
  }

  // Cancels the watches of (tid, msgtag) that receiver asked for.
  void cancel(rocl_gid_t receiver, int tid, int msgtag) {
    std::lock_guard guard(lock_);
    std::erase_if(watches_, [&](const Watch &w) {
      return w.receiver == receiver && w.tid == tid && w.msgtag == msgtag;
    });
  }

  void stop() {
    {
      std::lock_guard guard(lock_);
      stopping_ = true;
      watches_.clear();
      wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    stopping_ = false;
  }

 private:
  void run() {
    std::unique_lock guard(lock_);
    while (!stopping_) {
      std::vector<Watch> now = watches_;
      guard.unlock();
      std::vector<Watch> fired;
      for (const Watch &w : now) {
        if (!task_entry(w.tid)) fired.push_back(w);
      }
      for (const Watch &w : fired) notify(w);
      guard.lock();
      std::erase_if(watches_, [&](const Watch &w) {
        return std::any_of(fired.begin(), fired.end(), [&](const Watch &f) {
          return f.receiver == w.receiver && f.tid == w.tid && f.msgtag == w.msgtag;
        });
      });
      wake_.wait_for(guard, kPollInterval, [&] { return stopping_; });
    }
  }

  static void notify(const Watch &w) {
    int tid = w.tid;
    rocl_sendx(w.receiver, w.receiver, w.msgtag, w.context, PvmDataRaw, &tid, sizeof tid);
  }

  std::mutex lock_;
  std::condition_variable wake_;
  std::vector<Watch> watches_;
  std::thread thread_;
  bool stopping_ = false;
};

// Never destroyed: a program may return from main without pvm_exit, and
// the exit handler that stops the thread (pvm_exit's) runs after the
// destructors of statics made later than the task.
ExitWatcher &watcher() {
  static ExitWatcher *w = new ExitWatcher;
  return *w;
}

}  // namespace

void stop_watching() {
  watcher().stop();
}

}  // namespace rpvm

extern "C" int pvm_notify(int what, int msgtag, int cnt, int *tids) {
  return rpvm::call_locked("pvm_notify", [&](rpvm::Task &t) {
    const bool cancel = (what & PvmNotifyCancel) != 0;
    const int kind = what & ~PvmNotifyCancel;
    if (msgtag < 0) return PvmBadParam;
    if (kind == PvmHostAdd || kind == PvmHostDelete) return PvmOk;  // hosts never come or go
    if (kind != PvmTaskExit || cnt < 0 || (tids == nullptr && cnt > 0)) return PvmBadParam;
    for (int i = 0; i < cnt; ++i) {
      if (tids[i] <= 0) return PvmBadParam;
      if (cancel) {
        rpvm::watcher().cancel(t.gid, tids[i], msgtag);
      } else {
        rpvm::watcher().add({t.gid, std::uint32_t(t.context), msgtag, tids[i]});
      }
    }
    return PvmOk;
  });
}
