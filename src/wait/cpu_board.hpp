// cpu_board.hpp - which cpus of this node rocl's threads are runnable on,
// as they tell each other: the waiting policy's view of who else needs a
// waiter's cpu (wait_policy.hpp).
//
// Why a board of our own: the kernel tells how many threads are runnable
// on the whole machine (/proc/loadavg) but not cheaply per cpu, and a
// waiter must know whether the thread it waits for may be queued behind it
// on its own cpu. rocl's threads seat themselves on the cpu they run on
// when they wait and count as runnable there until they sleep in the
// kernel or exit; a thread that is not rocl's (a compute loop) is not on
// the board, and a waiter that shares a cpu with one only spins as before.
//
// Where: one board per node, user and pid namespace, in shared memory
// ("/dev/shm/rocl-cpus-<uid>-<pid ns inode>", a few KiB, made by the first
// rocl process that needs it and kept: it holds no data, only counts), so
// that threads of different processes on one cpu see each other. Each
// process has a slot on it holding its own counts per cpu; a process that
// attaches takes away what dead processes left (a process killed while its
// threads were counted), and a process leaves at exit. A board has 256
// process slots: a process beyond them sees the others but is not counted.
// The file is made and checked under its lock, so a board whose maker died
// half-way is made anew by the next process. Should the file be unusable
// (no /dev/shm, /dev/shm full, a board of another layout or owner), the
// process keeps a board of its own: it then sees only its own threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sys/types.h>

namespace rocl::impl::wait {

struct BoardLayout;

class CpuBoard {
 public:
  // The node's board, attached on first use (and this process's slot on
  // it taken, dead processes' counts taken away). Never detached.
  static CpuBoard &node() noexcept;

  // A board at `path` (shm_open name) of `cpus` cpus, or one private to
  // the caller if path is empty; for tests. Throws std::runtime_error if
  // path is given and cannot be used.
  static std::unique_ptr<CpuBoard> open(const std::string &path, int cpus);

  CpuBoard(const CpuBoard &) = delete;
  CpuBoard &operator=(const CpuBoard &) = delete;
  ~CpuBoard();

  // cpus the board counts (ids 0 .. cpus()-1; a thread on a higher cpu id
  // is not counted).
  int cpus() const noexcept { return cpus_; }
  // Whether this board is shared with other processes (else private).
  bool shared() const noexcept { return shared_; }
  // rocl threads of the node counted runnable on `cpu` (0 for an id out of
  // range).
  int runnable(int cpu) const noexcept;
  // Counts `delta` more threads of this process runnable on `cpu`; no
  // effect for an id out of range or without a slot.
  void add(int cpu, int delta) noexcept;
  // This process's own count on `cpu`.
  int own(int cpu) const noexcept;
  // Takes away the counts of processes that died while counted; how many
  // such processes it found.
  int reclaim_dead() noexcept;
  // Takes away this process's counts and frees its slot (at exit); later
  // add()s count nothing.
  void leave() noexcept;

 private:
  CpuBoard(void *base, std::size_t bytes, int cpus, bool shared);
  void take_slot() noexcept;

  void *base_;
  std::size_t bytes_;
  int cpus_;
  bool shared_;
  BoardLayout *layout_;
  // Ours, or -1 if none was free (or we left); read by every thread.
  std::atomic<int> slot_{-1};
  pid_t pid_ = 0;  // the process that took the slot (a forked child is not it)
};

// The calling thread's seat on the node's board.
class Seat {
 public:
  // Seats the thread on the cpu it runs on now (moving it from the one it
  // sat on, if it moved); the rocl threads runnable there, itself
  // included, and that cpu in *cpu if given. Cheap when it has not moved:
  // a getcpu and a load.
  static int sit(int *cpu = nullptr) noexcept;
  // Before a sleep in the kernel: the thread no longer counts anywhere
  // until it sits again.
  static void stand() noexcept;
  // rocl threads runnable on the cpu this thread runs on now, itself not
  // included (a thread not seated: all of them).
  static int others_here() noexcept;
};

}  // namespace rocl::impl::wait
