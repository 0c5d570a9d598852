// job_bootstrap.hpp - how a process joins its job when it was started by
// another launcher than roclrun: a PMIx server (Open MPI's mpirun, Slurm's
// srun --mpi=pmix).
//
// roclrun gives each process its job through the environment (ROCL_RANK,
// ROCL_SIZE, ROCL_DIRECTORY, ROCL_SECRET_FILE, ROCL_HOST_NAME, ...) and
// runs a directory server per host. Under PMIx the job makes the same
// itself, before the context reads its options:
//   - rank and size are PMIx's; rank 0 draws the job secret and hands it
//     to the others through PMIx (a fence), each writing it to a file of
//     its own (0600) in the job's folder /tmp/rocl-<uid>/pmix-<namespace>;
//   - the first local rank of every host hosts the host's directory
//     server in a thread of its own (server id = PMIx node id + 1, so no
//     two hosts issue the same gid); with several hosts it binds an
//     ephemeral UDP port first and publishes host address and port, and
//     every server is told every other's by unicast (no broadcast);
//   - a second fence once the servers listen; then the ROCL_* variables
//     are set as roclrun sets them (ROCL_TCP_BIND=auto when the job spans
//     several hosts and none was given).
// rocl_exit is then collective: every rank waits at a fence for the others
// before the host's server stops (it serves them all), then PMIx ends.
#pragma once

#include <memory>

namespace rocl::impl::bootstrap {

// What keeps the job's services (the hosted directory server, PMIx) alive
// until the context ends; destroying it ends them as said above.
class Job {
 public:
  virtual ~Job() = default;
};

// When this process was started by a PMIx server and no ROCL_DIRECTORY is
// set: joins the job as described above and returns it. Otherwise nullptr,
// and nothing is changed (a process on its own, or under roclrun). A job
// that cannot be joined throws std::invalid_argument with a sentence
// naming the step that failed. Built without PMIx, a process started by a
// PMIx server says so once on stderr and runs on its own.
std::unique_ptr<Job> join_launchers_job();

}  // namespace rocl::impl::bootstrap
