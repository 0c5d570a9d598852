// stages.hpp - the configurations of each stage of a comparison, in the
// order of their table columns. Each list is the one place that says which
// systems a stage measures, how, and why one cannot run here.
//
//   p2p      rocl-inproc, rocl-shm, rocl-tcp (rocl-bench), rocl-mpi-shm and
//            rocl-mpi-tcp (mpi_pingpong built against rocl's MPI), Open MPI
//            (vader, tcp, ucx) and MPICH (mpi_pingpong), UCX (ucx_perftest, shared
//            memory and tcp), ZeroMQ and NNG (inproc, ipc, tcp), and the
//            limits (memcpy per size, cache-line ping-pong)
//   threads  rocl-shm (rocl-bench rate --pairs) against MPI_THREAD_MULTIPLE
//            in Open MPI (vader, ucx) and MPICH (mpi_bench mt_rate)
//   ports    rocl-shm, rocl-tcp: message rate to 1..64 destination resources
//   sustain  rocl-{shm,tcp}-{poll,thread} and Open MPI (vader, tcp)
//   oversub  limits (futex, yield), rocl-inproc, rocl-shm, and rocl-mpi,
//            ompi-vader, mpich (mpi_bench coll): see oversub.hpp
#pragma once

#include <string>
#include <vector>

#include "stage.hpp"

namespace rocl_bench::compare {

// p2p classes: rocl's row of a class is compared with the class's anchors.
struct P2pClass {
  const char *name;     // inproc, shm, tcp
  const char *subject;  // rocl-inproc, ...
  const char *title;
};
const std::vector<P2pClass> &p2p_classes();

std::vector<Config> p2p_configs(const CompareOptions &o, const Programs &p);
std::vector<Config> thread_configs(const CompareOptions &o, const Programs &p);
std::vector<Config> port_configs(const CompareOptions &o, const Programs &p);
std::vector<Config> sustain_configs(const CompareOptions &o, const Programs &p);
std::vector<Config> oversub_configs(const CompareOptions &o, const Programs &p);

// Systems that are not measured at all, with the reason (rocl-ucx).
std::vector<std::pair<std::string, std::string>> not_measured();

}  // namespace rocl_bench::compare
