// offload.hpp - where rocl's MPI runs non-blocking collectives: one thread
// per communicator that has had one, running them in the order they were
// called (every rank calls a communicator's collectives in one order, so
// the threads of all ranks meet in it) on a shadow communicator of its own
// (a dup made by the first one: its traffic never meets the blocking
// collectives' or point-to-point's), while the caller goes on computing.
// Each is the blocking collective; its request completes when it returns.
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
struct Job {
  std::function<int(MPI_Comm)> run;  // on the shadow communicator
  std::atomic<bool> done{false};
  int error = MPI_SUCCESS;
  // Blocks until done (spinning briefly, then sleeping).
  void wait() const;
};

class Offload {
 public:
  explicit Offload(MPI_Comm shadow);
  // Runs what is queued, stops the thread and frees the shadow.
  ~Offload();
  Offload(const Offload &) = delete;
  Offload &operator=(const Offload &) = delete;
  std::shared_ptr<Job> post(std::function<int(MPI_Comm)> run);

 private:
  void loop();

  MPI_Comm shadow_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
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
