// programs.cpp - see programs.hpp.
#include "programs.hpp"

#include <climits>
#include <cstdlib>

#include <unistd.h>

#include "child_process.hpp"
#include "process_bench.hpp"
#include "threads.hpp"

namespace rocl_bench::compare {
namespace {

std::string self_path() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "rocl-bench";
  path[n] = '\0';
  return path;
}

std::string folder_of(const std::string &path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// An anchor built with rocl; `package` says what its build needed.
Program anchor(const std::string &folder, const std::string &name, const std::string &package) {
  const std::string path = folder + "/" + name;
  if (!find_program(path).empty()) return {path, ""};
  return {"", name + " not in " + folder + " (built when CMake finds " + package +
                  ": scripts/setup.sh installs it; then re-run cmake and ninja)"};
}

Program tool(const std::string &name, const std::string &package) {
  const std::string path = find_program(name);
  if (!path.empty()) return {path, ""};
  return {"", name + " not installed (package " + package + ")"};
}

}  // namespace

Programs locate_programs(const CompareOptions &o) {
  Programs p;
  p.self = self_path();
  if (!o.roclrun.empty()) {
    p.roclrun = find_program(o.roclrun).empty()
                    ? Program{"", "--roclrun " + o.roclrun + ": not an executable"}
                    : Program{o.roclrun, ""};
  } else {
    const std::string path = locate_roclrun();  // the search rocl-bench --transport makes
    p.roclrun = path.empty() ? Program{"", roclrun_not_found()} : Program{path, ""};
  }
#ifdef ROCL_BENCH_HAS_UCX
  p.has_ucx_transport = true;
#endif
  p.anchors = o.anchors.empty() ? folder_of(p.self) + "/compare/anchors" : o.anchors;
  p.zmq_pingpong = anchor(p.anchors, "zmq_pingpong", "libzmq3-dev");
  p.nng_pingpong = anchor(p.anchors, "nng_pingpong", "libnng-dev");
  p.mpi_pingpong_openmpi = anchor(p.anchors, "mpi_pingpong.openmpi", "libopenmpi-dev");
  p.mpi_pingpong_mpich = anchor(p.anchors, "mpi_pingpong.mpich", "libmpich-dev");
  for (auto [program, name] : {std::pair{&p.mpi_pingpong_rocl, "mpi_pingpong"},
                               std::pair{&p.mpi_bench_rocl, "mpi_bench"}}) {
    *program = anchor(p.anchors, std::string(name) + ".rocl", "");
    if (!program->found()) {
      program->missing = std::string(name) + ".rocl not in " + p.anchors +
                         " (built with rocl's MPI by the target " + name + "_rocl: ninja)";
    }
  }
  p.mpi_bench_openmpi = anchor(p.anchors, "mpi_bench.openmpi", "libopenmpi-dev");
  p.mpi_bench_mpich = anchor(p.anchors, "mpi_bench.mpich", "libmpich-dev");
  p.mpi_sustain_openmpi = anchor(p.anchors, "mpi_sustain.openmpi", "libopenmpi-dev");
  p.oversub_limits = anchor(p.anchors, "oversub_limits", "");
  if (!p.oversub_limits.found()) {
    p.oversub_limits.missing =
        "oversub_limits not in " + p.anchors + " (built with rocl-bench: ninja rocl-bench)";
  }
  p.mpirun_openmpi = tool("mpirun.openmpi", "openmpi-bin");
  p.mpiexec_mpich = tool("mpiexec.mpich", "mpich");
  p.ucx_perftest = tool("ucx_perftest", "ucx-utils");
  p.gnuplot = tool("gnuplot", "gnuplot-nox");
  p.cpus = usable_cpus();
  return p;
}

std::string first_missing(std::initializer_list<const Program *> needed) {
  for (const Program *program : needed) {
    if (!program->found()) return program->missing;
  }
  return "";
}

std::vector<std::string> openmpi_launch(const Programs &p, const std::vector<std::string> &mca,
                                        int ranks) {
  const bool overload = ranks > static_cast<int>(p.cpus.size());
  std::vector<std::string> argv = {p.mpirun_openmpi.path,
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "-np",
                                   std::to_string(ranks),
                                   "--bind-to",
                                   overload ? "core:overload-allowed" : "core"};
  argv.insert(argv.end(), mca.begin(), mca.end());
  return argv;
}

std::vector<std::string> mpich_launch(const Programs &p, int ranks) {
  return {p.mpiexec_mpich.path, "-n",  std::to_string(ranks), "-bind-to", "core",
          "-launcher",          "fork"};
}

std::vector<std::string> openmpi_mca(const std::string &config) {
  if (config == "vader") return {"--mca", "pml", "ob1", "--mca", "btl", "self,vader"};
  if (config == "tcp") {
    return {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"};
  }
  return {"--mca",
          "pml",
          "ucx",
          "--mca",
          "pml_ucx_tls",
          "any",
          "--mca",
          "pml_ucx_devices",
          "any",
          "-x",
          "UCX_NET_DEVICES=lo"};
}

}  // namespace rocl_bench::compare
