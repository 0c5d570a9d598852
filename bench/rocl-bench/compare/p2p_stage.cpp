// p2p_stage.cpp - the point-to-point stage: one-way latency, bandwidth and
// message rate per size for rocl and every anchor (see stages.hpp).
#include <algorithm>

#include "limits.hpp"
#include "report.hpp"
#include "stages.hpp"
#include "ucx_perftest_run.hpp"

namespace rocl_bench::compare {
namespace {

std::size_t p2p_points(const CompareOptions &o) {
  return 2 * o.sizes.size();
}

// rocl-bench latency bandwidth, between threads (transport "inproc") or
// between two processes under roclrun; with `no_acks` the stream alone,
// next to without acks (--window 0).
RunOutcome run_rocl_bench(const RunRequest &r, const std::string &system,
                          const std::string &transport, bool no_acks = false,
                          std::vector<std::pair<std::string, std::string>> env = {}) {
  const CompareOptions &o = r.options;
  Invocation inv;
  inv.env = std::move(env);
  inv.argv = {r.programs.self};
  if (!no_acks) inv.argv.emplace_back("latency");
  for (const std::string &a :
       {std::string("bandwidth"), std::string("--sizes"), join_sizes(o.sizes),
        std::string("--bandwidth-sizes"), join_sizes(o.sizes), std::string("--reps"),
        std::to_string(o.reps), std::string("--time"), std::to_string(o.seconds),
        std::string("--csv"), r.scratch + ".csv"}) {
    inv.argv.push_back(a);
  }
  if (no_acks) {
    inv.argv.emplace_back("--window");
    inv.argv.emplace_back("0");
  }
  if (transport != "inproc") {
    for (const char *a :
         {"--transport", transport.c_str(), "--roclrun", r.programs.roclrun.path.c_str()}) {
      inv.argv.emplace_back(a);
    }
  }
  inv.log = r.log;
  inv.timeout_seconds = run_timeout(o, p2p_points(o), o.seconds);
  return run_and_collect(inv, r.scratch + ".csv", [&](const std::vector<CsvRow> &rows) {
    return p2p_samples(rows, system, r.round);
  });
}

// An anchor program printing rocl-bench's rows on stdout (mpi_pingpong
// under a launcher, zmq_pingpong, nng_pingpong), `env` set on top of ours.
RunOutcome run_anchor(const RunRequest &r, const std::string &system, std::vector<std::string> argv,
                      std::vector<std::pair<std::string, std::string>> env = {}) {
  const CompareOptions &o = r.options;
  for (const std::string &a :
       {std::string("--sizes"), join_sizes(o.sizes), std::string("--bw-sizes"), join_sizes(o.sizes),
        std::string("--reps"), std::to_string(o.reps), std::string("--time"),
        std::to_string(o.seconds)}) {
    argv.push_back(a);
  }
  Invocation inv{std::move(argv), std::move(env), r.log, run_timeout(o, p2p_points(o), o.seconds)};
  return run_and_collect(
      inv, "", [&](const std::vector<CsvRow> &rows) { return p2p_samples(rows, system, r.round); });
}

std::string cpu_pair(const Programs &p) {
  return std::to_string(p.cpus[0]) + "," + std::to_string(p.cpus[1]);
}

}  // namespace

const std::vector<P2pClass> &p2p_classes() {
  static const std::vector<P2pClass> classes = {
      {"inproc", "rocl-inproc", "between two threads of one process"},
      {"shm", "rocl-shm",
       "between two processes of one machine (shared memory; ipc = Unix sockets)"},
      {"tcp", "rocl-tcp", "between two processes over TCP on 127.0.0.1"},
  };
  return classes;
}

std::vector<std::pair<std::string, std::string>> not_measured() {
  return {};
}

std::vector<Config> p2p_configs(const CompareOptions &o, const Programs &p) {
  std::vector<Config> all;
  const std::string needs_two_cpus =
      p.cpus.size() < 2 ? "needs 2 usable cpus, " + std::to_string(p.cpus.size()) + " here" : "";
  auto rocl = [&](const char *name, const char *cls, const char *transport, const char *about) {
    std::string why = std::string(transport) == "inproc" ? "" : first_missing({&p.roclrun});
    all.push_back({name, cls, about, why,
                   [name = std::string(name), t = std::string(transport)](const RunRequest &r) {
                     return run_rocl_bench(r, name, t);
                   }});
  };
  rocl("rocl-inproc", "inproc", "inproc",
       "rocl-bench latency bandwidth: two threads pinned to cpu 0 and 1, buffers handed over");
  rocl("rocl-shm", "shm", "shm", "rocl-bench --transport shm: roclrun -n 2, ROCL_TRANSPORTS=shm");
  rocl("rocl-tcp", "tcp", "tcp", "rocl-bench --transport tcp: roclrun -n 2, ROCL_TRANSPORTS=tcp");
  // The same stream next to without acks, set beside ucx_perftest's
  // (which has none) rather than beside the OSU-style anchors'.
  auto rocl_no_acks = [&](const char *name, const char *transport) {
    all.push_back({name, transport,
                   std::string("rocl-bench bandwidth --window 0 --transport ") + transport +
                       ": the stream next to without acks, as ucx_perftest's",
                   first_missing({&p.roclrun}),
                   [name = std::string(name), t = std::string(transport)](const RunRequest &r) {
                     return run_rocl_bench(r, name, t, true);
                   }});
    all.back().stream_acks = false;
    all.back().stream_only = true;
  };
  rocl_no_acks("rocl-shm-noack", "shm");
  rocl_no_acks("rocl-tcp-noack", "tcp");
  // rocl over its ucx transport, with UCX limited to the transports
  // ucx_perftest's rows use (UCX_TLS), beside them: its ping-pong, and its
  // stream without acks as theirs.
  auto rocl_ucx = [&](const char *name, const char *cls, const char *tls, bool no_acks) {
    std::string why = first_missing({&p.roclrun});
    if (why.empty() && !p.has_ucx_transport) why = "this rocl was built without UCX";
    all.push_back(
        {name, cls,
         std::string("rocl-bench ") + (no_acks ? "bandwidth --window 0 " : "") +
             "--transport ucx: roclrun -n 2, ROCL_TRANSPORTS=ucx, UCX_TLS=" + tls,
         why, [name = std::string(name), tls = std::string(tls), no_acks](const RunRequest &r) {
           return run_rocl_bench(r, name, "ucx", no_acks, {{"UCX_TLS", tls}});
         }});
    if (no_acks) {
      all.back().stream_acks = false;
      all.back().stream_only = true;
    }
  };
  rocl_ucx("rocl-ucx-shm", "shm", "sm", false);
  rocl_ucx("rocl-ucx-shm-noack", "shm", "sm", true);
  rocl_ucx("rocl-ucx-tcp", "tcp", "tcp", false);
  rocl_ucx("rocl-ucx-tcp-noack", "tcp", "tcp", true);
  // rocl's MPI runs the MPI anchors' own program, built against it: the
  // same loops, buffers and windows as Open MPI and MPICH, launched and
  // pinned the way they are (one core per rank).
  auto rocl_mpi = [&](const char *name, const char *transport) {  // the class is the transport
    const std::string about = std::string("mpi_pingpong with rocl's MPI: roclrun --bind-to core ") +
                              "-n 2, ROCL_TRANSPORTS=" + transport;
    all.push_back({name, transport, about, first_missing({&p.roclrun, &p.mpi_pingpong_rocl}),
                   [name = std::string(name), t = std::string(transport)](const RunRequest &r) {
                     const Programs &ps = r.programs;
                     return run_anchor(r, name,
                                       {ps.roclrun.path, "--bind-to", "core", "-n", "2",
                                        ps.mpi_pingpong_rocl.path},
                                       {{"ROCL_TRANSPORTS", t}});
                   }});
  };
  rocl_mpi("rocl-mpi-shm", "shm");
  rocl_mpi("rocl-mpi-tcp", "tcp");

  auto openmpi = [&](const char *name, const char *cls, const char *mca, const char *about) {
    const std::string why = first_missing({&p.mpirun_openmpi, &p.mpi_pingpong_openmpi});
    all.push_back({name, cls, about, why,
                   [name = std::string(name), mca = std::string(mca)](const RunRequest &r) {
                     auto argv = openmpi_launch(r.programs, openmpi_mca(mca));
                     argv.push_back(r.programs.mpi_pingpong_openmpi.path);
                     return run_anchor(r, name, argv);
                   }});
  };
  openmpi("ompi-vader", "shm", "vader", "mpi_pingpong, Open MPI pml ob1 + btl vader");
  openmpi("ompi-ucx", "shm", "ucx", "mpi_pingpong, Open MPI pml ucx (UCX shared memory)");
  all.push_back({"mpich", "shm", "mpi_pingpong, MPICH ch4:ucx (mpiexec -bind-to core)",
                 first_missing({&p.mpiexec_mpich, &p.mpi_pingpong_mpich}), [](const RunRequest &r) {
                   auto argv = mpich_launch(r.programs);
                   argv.push_back(r.programs.mpi_pingpong_mpich.path);
                   return run_anchor(r, "mpich", argv);
                 }});
  auto ucx = [&](const char *name, const char *cls, const char *tls, const char *about) {
    std::string why = first_missing({&p.ucx_perftest});
    if (why.empty()) why = needs_two_cpus;
    all.push_back({name, cls, about, why,
                   [name = std::string(name), tls = std::string(tls)](const RunRequest &r) {
                     return run_ucx_perftest(r, name, tls);
                   }});
    all.back().stream_acks = false;
  };
  ucx("ucx-shm", "shm", "sm",
      "ucx_perftest tag_lat/tag_bw (a stream without acks), UCX_TLS=sm, taskset cpu 0 / 1");
  auto library = [&](const char *name, const char *cls, const Program &program,
                     const char *transport, const char *about) {
    std::string why = first_missing({&program});
    if (why.empty()) why = needs_two_cpus;
    all.push_back({name, cls, about, why,
                   [name = std::string(name), t = std::string(transport),
                    zmq = &program == &p.zmq_pingpong](const RunRequest &r) {
                     const Programs &ps = r.programs;
                     return run_anchor(r, name,
                                       {zmq ? ps.zmq_pingpong.path : ps.nng_pingpong.path,
                                        "--transport", t, "--cpus", cpu_pair(ps)});
                   }});
  };
  library("zmq-ipc", "shm", p.zmq_pingpong, "ipc", "zmq_pingpong, ZMQ_PAIR over ipc://");
  library("nng-ipc", "shm", p.nng_pingpong, "ipc", "nng_pingpong, pair1 over ipc://");
  openmpi("ompi-tcp", "tcp", "tcp", "mpi_pingpong, Open MPI pml ob1 + btl tcp over lo");
  ucx("ucx-tcp", "tcp", "tcp",
      "ucx_perftest tag_lat/tag_bw (a stream without acks), UCX_TLS=tcp over lo");
  library("zmq-tcp", "tcp", p.zmq_pingpong, "tcp", "zmq_pingpong, ZMQ_PAIR over tcp://127.0.0.1");
  library("nng-tcp", "tcp", p.nng_pingpong, "tcp", "nng_pingpong, pair1 over tcp://127.0.0.1");
  library("zmq-inproc", "inproc", p.zmq_pingpong, "inproc",
          "zmq_pingpong, ZMQ_PAIR over inproc://, two threads");
  library("nng-inproc", "inproc", p.nng_pingpong, "inproc",
          "nng_pingpong, pair1 over inproc://, two threads");
  all.push_back({"limits", "limit",
                 "memcpy of each size on cpu 0; cache-line ping-pong between cpu 0 and 1", "",
                 [](const RunRequest &r) { return run_limits(r); }});

  for (auto &c : all) {
    c.expected = c.name == "limits" ? 2 * o.sizes.size() + (p.cpus.size() >= 2 ? 1 : 0)
                 : c.stream_only    ? 2 * o.sizes.size()  // bandwidth, rate
                                    : 3 * o.sizes.size();    // latency, bandwidth, rate
  }
  return keep_selected(o, std::move(all));
}

}  // namespace rocl_bench::compare
