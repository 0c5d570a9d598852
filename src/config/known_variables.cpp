// known_variables.cpp - the ROCL_* variables that are not options, and the
// closest-name search that words the warning for unknown ones
// (known_variables.hpp).
#include "config/known_variables.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace rocl::impl {
namespace {

// The layers above the core (MPI, PVM, NCS) are named here as text only:
// no code of theirs is reached from below, and one table keeps the whole
// list in one place for the docs and the check.
const VariableRow kVariables[] = {
    // The job: set for each process by roclrun (src/launch, tools/roclrun)
    // or, under another launcher, by the PMIx bootstrap (src/bootstrap).
    {"ROCL_RANK", "roclrun", "the process's rank in the job, 0..N-1"},
    {"ROCL_SIZE", "roclrun", "the number of processes of the job"},
    {"ROCL_JOB_DIR", "roclrun", "the job folder on this host (secret, sockets)"},
    {"ROCL_JOB_ID", "roclrun", "with --hosts: the job's name, the same on every host"},
    {"ROCL_LOCAL_RANK", "launchers",
     "reserved for a launcher's rank of the process on its host; rocl_spawn does not pass it "
     "on to the processes it starts"},

    // roclrun's own settings (src/launch/hosts.cpp, tools/roclrun).
    {"ROCL_SSH", "roclrun", "the ssh command and its options of --launcher ssh"},
    {"ROCL_REMOTE_ROCLRUN", "roclrun", "where roclrun is on the other hosts, if not at its path"},
    {"ROCL_NETNS_PREFIX", "roclrun, tests/netns/hosts.sh",
     "the prefix of the test hosts' network namespaces (--launcher netns)"},

    // The compiler wrappers (layers/mpi/rocl-mpicc.in, layers/pvm/rocl-pvmcc.in).
    {"ROCL_MPICC_CC", "rocl-mpicc", "another C compiler for rocl-mpicc"},
    {"ROCL_MPICXX_CXX", "rocl-mpicxx", "another C++ compiler for rocl-mpicxx"},
    {"ROCL_PVMCC_CC", "rocl-pvmcc", "another C compiler for rocl-pvmcc"},

    // The MPI layer (layers/mpi/src/spawn.cpp): MPI_Comm_spawn's children.
    {"ROCL_MPI_SPAWN", "MPI layer", "the spawn a child of MPI_Comm_spawn belongs to"},
    {"ROCL_MPI_APPNUM", "MPI layer", "the index of a spawned child's command (MPI_APPNUM)"},

    // The PVM layer (layers/pvm/src): pvm_spawn's children, and a setting.
    {"ROCL_PVM_PARENT_TID", "PVM layer", "a spawned task's parent tid (pvm_parent)"},
    {"ROCL_PVM_CONTEXT", "PVM layer", "a spawned task's message context"},
    {"ROCL_PVM_OUTPUT", "PVM layer", "where a spawned task's output goes: log or parent"},
    {"ROCL_PVM_REPORT_TO", "PVM layer", "the gid a spawned task reports its start to"},
    {"ROCL_PVM_REPORT_TAG", "PVM layer", "the tag of that report"},
    {"ROCL_PVM_SPAWN_MS", "PVM layer", "how long pvm_spawn waits for its tasks to start"},

    // The NCS layer (layers/ncs/src).
    {"ROCL_NCS_SPEED", "NCS layer", "the default mode: normal (tcp only) or high"},
    {"ROCL_NCS_STACK_KB", "NCS layer", "the stack of each NCS thread, in KiB"},

    // Scripts users run.
    {"ROCL_BUILD", "layers/mpi/tests/run_reference.sh", "the build folder whose rocl to run"},
    {"ROCL_TIDY_BUILD", "scripts/tidy.sh", "the build whose compile commands clang-tidy takes"},
    {"ROCL_TIDY_JOBS", "scripts/tidy.sh", "how many clang-tidy run at once"},
    {"ROCL_HOSTS_BENCH_ROWS", "bench/hosts/hosts_bench.sh", "where to copy the figures' rows"},
    {"ROCL_DELAYLINE", "tests/netns/hosts.sh, examples/ncs/tables.sh",
     "the delay line program of the test hosts' --delay"},

    // Tests only.
    {"ROCL_TEST_SEED", "tests", "the seed of the mailbox model test"},
    {"ROCL_FUZZ_WRITE_SEEDS", "tests", "the folder a fuzz target writes its seed corpus to"},
    {"ROCL_COMPARE_TEST", "tests", "set by rocl-bench compare's test for its child"},
    {"ROCL_COMPARE_NEW", "tests", "set by rocl-bench compare's test for its child"},
};

constexpr std::string_view kPrefix = "ROCL_";
constexpr std::size_t kMaxValueShown = 64;
constexpr std::size_t kMaxEdits = 2;

std::string upper(std::string_view s) {
  std::string u(s);
  for (char &c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

// Edits from a to b: letters added, dropped or changed, and two neighbours
// swapped (the optimal string alignment distance).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t change = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + change});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// A name cut short (ROCL_TCP_RNDV) or lengthened (ROCL_TRANSPORTS_LIST) at
// a word's end. Too short a stem (ROCL_A) names nothing in particular.
bool prefix_related(std::string_view name, std::string_view known) {
  const auto word_prefix = [](std::string_view shorter, std::string_view longer) {
    return shorter.size() >= kPrefix.size() + 3 && longer.substr(0, shorter.size()) == shorter &&
           longer.size() > shorter.size() && longer[shorter.size()] == '_';
  };
  return word_prefix(name, known) || word_prefix(known, name);
}

bool is_known(std::string_view name, std::span<const std::string_view> known) {
  return std::find(known.begin(), known.end(), name) != known.end();
}

}  // namespace

std::span<const VariableRow> non_option_variables() noexcept {
  return kVariables;
}

std::string closest_name(std::string_view name, std::span<const std::string_view> known) {
  const std::string u = upper(name);
  std::string_view best;
  std::size_t best_edits = 0;
  bool best_close = false;  // within kMaxEdits, which beats a prefix
  for (std::string_view k : known) {
    const std::size_t edits = edit_distance(u, k);
    const bool close = edits <= kMaxEdits;
    if (!close && !prefix_related(u, k)) continue;
    if (best.empty() || (close && !best_close) || (close == best_close && edits < best_edits)) {
      best = k;
      best_edits = edits;
      best_close = close;
    }
  }
  return std::string(best);
}

std::vector<std::string> unknown_variables(const char *const *environment,
                                           std::span<const std::string_view> known) {
  std::vector<std::string> unknown;
  for (const char *const *e = environment; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry = *e;
    if (entry.substr(0, kPrefix.size()) != kPrefix) continue;
    if (!is_known(entry.substr(0, entry.find('=')), known)) unknown.emplace_back(entry);
  }
  return unknown;
}

std::string unknown_variable_warning(std::string_view entry,
                                     std::span<const std::string_view> known) {
  const std::size_t eq = entry.find('=');
  const std::string_view name = entry.substr(0, eq);
  std::string value(eq == std::string_view::npos ? std::string_view{} : entry.substr(eq + 1));
  if (value.size() > kMaxValueShown) value = value.substr(0, kMaxValueShown) + "...";
  std::string line = "rocl: warning: unknown variable ";
  line.append(name).append("=").append(value).append(" ignored (");
  if (const std::string near = closest_name(name, known); !near.empty()) {
    line += "did you mean " + near + "?)";
  } else {
    line += "rocl-info lists the options; docs/options.md every ROCL_* variable)";
  }
  return line;
}

}  // namespace rocl::impl
