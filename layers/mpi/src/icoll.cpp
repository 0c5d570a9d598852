// icoll.cpp - non-blocking collectives (MPI 3.1 section 5.12) and the
// thread that runs them (offload.hpp). A request of one completes when its
// collective has returned on the communicator's thread; the caller's
// Wait/Test see it (request.cpp).
#include <algorithm>
#include <chrono>
#include <set>
#include <utility>
#include <vector>

#include "mpi_impl.hpp"
#include "offload.hpp"

namespace rmpi {

void Job::wait() {
  if (done.load(std::memory_order_acquire)) return;
  if (owner->run_here(this)) return;
  for (int i = 0; i < 2000; ++i) {
    if (done.load(std::memory_order_acquire)) return;
  }
  owner->wait_for(this);
}

// A mutex and condition variable rather than the atomic's wait(): this
// library's std::atomic<bool>::wait may sleep milliseconds past its notify.
void Offload::wait_for(const Job *job) {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [job] { return job->done.load(std::memory_order_acquire); });
}

// How long a collective waits for its caller before this thread runs it.
constexpr std::chrono::microseconds kGrace{100};
// An idle thread looks for work this often at first, then ever less often
// (doubling up to kLongestNap): when the callers have been running their
// collectives themselves, a post does not wake the thread (a wake-up costs
// a system call and, on a full machine, a core), and this is how the
// thread still finds a collective its caller computes through.
constexpr std::chrono::microseconds kFirstNap{100};
constexpr std::chrono::microseconds kLongestNap{20000};

Offload::Offload(MPI_Comm shadow) : shadow_(shadow), thread_([this] { loop(); }) {}

Offload::~Offload() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  MPI_Comm_free(&shadow_);
}

std::shared_ptr<Job> Offload::post(std::function<int(MPI_Comm)> run) {
  auto job = std::make_shared<Job>();
  job->run = std::move(run);
  job->owner = this;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(job);
  }
  if (wake_on_post_.load(std::memory_order_relaxed)) cv_.notify_one();
  return job;
}

void Offload::finish(Job &job) {
  {
    std::lock_guard lock(mu_);
    job.done.store(true, std::memory_order_release);
  }
  done_cv_.notify_all();
}

bool Offload::run_here(Job *job) {
  std::shared_ptr<Job> mine;
  {
    std::lock_guard lock(mu_);
    if (busy_ || queue_.empty() || queue_.front().get() != job) return false;
    mine = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
  }
  wake_on_post_.store(false, std::memory_order_relaxed);  // callers come: let them
  mine->error = mine->run(shadow_);
  bool more;
  {
    std::lock_guard lock(mu_);
    busy_ = false;
    more = !queue_.empty();
  }
  if (more) cv_.notify_one();  // the thread may go on with the next
  finish(*mine);
  return true;
}

void Offload::loop() {
  auto nap = kFirstNap;
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, nap, [this] { return !busy_ && (stop_ || !queue_.empty()); })) {
        nap = std::min(nap * 2, kLongestNap);
        continue;
      }
      nap = kFirstNap;
      if (queue_.empty()) return;  // stopping, and nothing left
      // A caller that waits at once runs it itself (run_here), cheaper
      // than handing it over: give it the time to come.
      const Job *next = queue_.front().get();
      cv_.wait_for(lock, kGrace, [this, next] {
        return stop_ || busy_ || queue_.empty() || queue_.front().get() != next;
      });
      if (busy_ || queue_.empty()) continue;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    // Its caller computes through it: wake this thread for the next at once.
    wake_on_post_.store(true, std::memory_order_relaxed);
    job->error = job->run(shadow_);
    {
      std::lock_guard lock(mu_);
      busy_ = false;
    }
    finish(*job);
  }
}

namespace {
std::mutex g_offloads_lock;
std::set<MPI_Comm> g_with_offload;
}  // namespace

Offload *offload_of(MPI_Comm comm, int *rc) {
  if (comm->offload) return comm->offload.get();
  MPI_Comm shadow = MPI_COMM_NULL;
  *rc = MPI_Comm_dup(comm, &shadow);
  if (*rc != MPI_SUCCESS) return nullptr;
  // Its failures are the request's, reported by Wait/Test, not an abort
  // on the offload's thread.
  shadow->errhandler = MPI_ERRORS_RETURN;
  comm->offload = std::make_unique<Offload>(shadow);
  std::lock_guard lock(g_offloads_lock);
  g_with_offload.insert(comm);
  return comm->offload.get();
}

void end_offload(MPI_Comm comm) {
  if (!comm->offload) return;
  comm->offload.reset();
  std::lock_guard lock(g_offloads_lock);
  g_with_offload.erase(comm);
}

void end_all_offloads() {
  std::set<MPI_Comm> all;
  {
    std::lock_guard lock(g_offloads_lock);
    all.swap(g_with_offload);
  }
  for (MPI_Comm c : all) c->offload.reset();
}

namespace {

// Posts run for comm and makes the request that completes with it.
int post(MPI_Comm comm, const char *who, MPI_Request *request, std::function<int(MPI_Comm)> run) {
  if (int rc = check_comm(comm, who)) return rc;
  int rc = MPI_SUCCESS;
  Offload *o = offload_of(comm, &rc);
  if (o == nullptr) return rc;
  *request = job_request(comm, o->post(std::move(run)));
  return MPI_SUCCESS;
}

// How many counts and displacements a rooted v-collective's root gives:
// one per rank (the remote group's on an intercommunicator, where the root
// says MPI_ROOT); none elsewhere.
int root_counts(MPI_Comm comm, int root) {
  if (comm == MPI_COMM_NULL || comm->magic != rocl_mpi_comm::kMagic) return 0;
  const bool at_root = comm->inter_local != nullptr ? root == MPI_ROOT : comm->rank == root;
  return at_root ? comm->size : 0;
}

std::vector<int> copy_of(const int *a, int n) {
  return a == nullptr ? std::vector<int>() : std::vector<int>(a, a + n);
}

}  // namespace

int post_collective(MPI_Comm comm, const char *who, MPI_Request *request,
                    std::function<int(MPI_Comm)> run) {
  return post(comm, who, request, std::move(run));
}
}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Ibarrier", request, [](MPI_Comm c) { return MPI_Barrier(c); });
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request) {
  return post(comm, "MPI_Ibcast", request,
              [=](MPI_Comm c) { return MPI_Bcast(buffer, count, datatype, root, c); });
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Ireduce", request, [=](MPI_Comm c) {
    return MPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, c);
  });
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Iallreduce", request,
              [=](MPI_Comm c) { return MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, c); });
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request) {
  return post(comm, "MPI_Igather", request, [=](MPI_Comm c) {
    return MPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c);
  });
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request) {
  const int n = root_counts(comm, root);
  return post(comm, "MPI_Igatherv", request,
              [=, counts = copy_of(recvcounts, n), at = copy_of(displs, n)](MPI_Comm c) {
                return MPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(), at.data(),
                                   recvtype, root, c);
              });
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  return post(comm, "MPI_Iscatter", request, [=](MPI_Comm c) {
    return MPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c);
  });
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request) {
  const int n = root_counts(comm, root);
  return post(comm, "MPI_Iscatterv", request,
              [=, counts = copy_of(sendcounts, n), at = copy_of(displs, n)](MPI_Comm c) {
                return MPI_Scatterv(sendbuf, counts.data(), at.data(), sendtype, recvbuf, recvcount,
                                    recvtype, root, c);
              });
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Iallgather", request, [=](MPI_Comm c) {
    return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c);
  });
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request) {
  const int n = comm != MPI_COMM_NULL && comm->magic == rocl_mpi_comm::kMagic ? comm->size : 0;
  return post(comm, "MPI_Iallgatherv", request,
              [=, counts = copy_of(recvcounts, n), at = copy_of(displs, n)](MPI_Comm c) {
                return MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(),
                                      at.data(), recvtype, c);
              });
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Ialltoall", request, [=](MPI_Comm c) {
    return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c);
  });
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  const int n = comm != MPI_COMM_NULL && comm->magic == rocl_mpi_comm::kMagic ? comm->size : 0;
  return post(comm, "MPI_Ialltoallv", request,
              [=, sc = copy_of(sendcounts, n), sd = copy_of(sdispls, n),
               rc = copy_of(recvcounts, n), rd = copy_of(rdispls, n)](MPI_Comm c) {
                return MPI_Alltoallv(sendbuf, sc.data(), sd.data(), sendtype, recvbuf, rc.data(),
                                     rd.data(), recvtype, c);
              });
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request) {
  return post(comm, "MPI_Ireduce_scatter_block", request, [=](MPI_Comm c) {
    return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, c);
  });
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Iscan", request,
              [=](MPI_Comm c) { return MPI_Scan(sendbuf, recvbuf, count, datatype, op, c); });
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request *request) {
  return post(comm, "MPI_Iexscan", request,
              [=](MPI_Comm c) { return MPI_Exscan(sendbuf, recvbuf, count, datatype, op, c); });
}

}  // extern "C"
