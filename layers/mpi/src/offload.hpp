// offload.hpp - where rocl's MPI runs non-blocking collectives: one thread
// per communicator that has had one, running them in the order they were
// called (every rank calls a communicator's collectives in one order, so
// the threads of all ranks meet in it) on a shadow communicator of its own
// (a dup made by the first one: its traffic never meets the blocking
// collectives' or point-to-point's), while the caller goes on computing.
// Each is the blocking collective; its request completes when it returns.
// A caller that waits for a collective the thread has not started yet runs
// it itself (when it is the next in line and the thread is idle), and the
// thread leaves a new collective to its caller for a moment (kGrace) before
// it runs it: a collective waited for at once then costs what the blocking
// one costs, with no hand-over between threads; one the caller computes
// through is run by the thread meanwhile. While callers run their own, a
// post does not even wake the thread: it finds work on its naps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "mpi.h"

namespace rmpi {

// One collective handed to the thread, and its outcome.
class Offload;

struct Job {
  std::function<int(MPI_Comm)> run;  // on the shadow communicator
  std::atomic<bool> done{false};
  int error = MPI_SUCCESS;
  Offload *owner = nullptr;
  // Blocks until done: runs it here if it is next and the thread idle,
  // else spins briefly, then sleeps.
  void wait();
};

class Offload {
 public:
  explicit Offload(MPI_Comm shadow);
  // Runs what is queued, stops the thread and frees the shadow.
  ~Offload();
  Offload(const Offload &) = delete;
  Offload &operator=(const Offload &) = delete;
  std::shared_ptr<Job> post(std::function<int(MPI_Comm)> run);
  // Runs job on the calling thread if it is the next in line and the
  // thread is idle; false if not (then the thread runs it, or has).
  bool run_here(Job *job);
  // Sleeps until job is done.
  void wait_for(const Job *job);

 private:
  void loop();
  void finish(Job &job);

  MPI_Comm shadow_;
  std::mutex mu_;
  std::condition_variable cv_;       // the thread waits for work on it
  std::condition_variable done_cv_;  // callers wait for their jobs on it
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  bool busy_ = false;  // a collective is running (on the thread or a caller)
  // Whether post wakes the thread: yes once it had to run one, no once a
  // caller ran one itself (the thread then finds work on its naps).
  std::atomic<bool> wake_on_post_{true};
  std::thread thread_;
};

// The offload of comm, made (collectively: inside the first non-blocking
// collective every rank calls) when it has none. nullptr + the error code
// in *rc if the shadow could not be made.
Offload *offload_of(MPI_Comm comm, int *rc);
// Ends comm's offload (MPI_Comm_free), and every one left (MPI_Finalize).
void end_offload(MPI_Comm comm);
void end_all_offloads();

}  // namespace rmpi
