// ncs_suite.cpp - see ncs_suite.hpp: the command line, the two runs of
// ncs_speed, the table, and the paper's tables handed to tables.sh.
#include "ncs_suite.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "child_process.hpp"
#include "compare.hpp"
#include "output_parse.hpp"
#include "process_bench.hpp"
#include "programs.hpp"
#include "report.hpp"
#include "results.hpp"
#include "text_table.hpp"

namespace rocl_bench::compare {

const char kNcsUsage[] =
    "usage: rocl-bench ncs [OPTIONS] [--tables [TABLES_ARGS...]]\n"
    "The speed of NCS's user threads (layers/ncs/bench/ncs_speed), each figure\n"
    "judged against its goal and set beside an anchor of the same run:\n"
    "  user-thread switch: two user threads yielding in turn (goal < 100 ns), beside\n"
    "    the futex hand-off of two kernel threads on one cpu\n"
    "  wake-up in a process: 8 B NCS_send to a thread blocked in NCS_recv, round\n"
    "    trip / 2 (goal < 1 us), beside the same futex hand-off\n"
    "  wake-up across processes: the same between two processes on two cpus (goal\n"
    "    < 1 us), beside plain rocl between them: the difference is NCS's own\n"
    "\n"
    "  --reps N        repetitions of each figure; the table shows the median [5]\n"
    "  --time S        seconds per repetition [0.2]\n"
    "  --quick         1 repetition of 0.02 s: does it run? (says nothing about speed)\n"
    "  --transport T   shm or tcp, between the two processes [shm]\n"
    "  --out DIR       ncs.csv and logs/ [rocl-bench-ncs]\n"
    "  --program PATH  ncs_speed [next to rocl-bench, ../../layers/ncs/bench/ from it,\n"
    "                  PATH]\n"
    "  --roclrun PATH  [as rocl-bench --transport finds it]\n"
    "  --tables [ARGS] then the NCS paper's tables 1-3: examples/ncs/tables.sh --build\n"
    "                  BUILD ARGS (as root; the rest of the line is its; tables.sh\n"
    "                  --help lists them)\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 (also when a goal is missed); 1 when a run failed or left a\n"
    "figure out, or the tables failed; 2 for a bad command line; 130 when\n"
    "interrupted.\n";

namespace {

// A figure of the table: ncs_speed's row, its goal, and its anchor's row.
struct NcsFigure {
  const char *row;
  const char *label;
  double goal_us;
  const char *goal;
  bool in_ns;  // shown in ns
  const char *anchor_row;
  const char *anchor_label;
};

const NcsFigure kFigures[] = {
    {"ncs/switch", "user-thread switch (NCS_yield)", 0.1, "< 100 ns", true, "futex/handoff-onecpu",
     "futex hand-off, 2 kernel threads on 1 cpu"},
    {"ncs/wake-local", "wake-up on a message in a process (8 B)", 1.0, "< 1 us", false,
     "futex/handoff-onecpu", "futex hand-off, 2 kernel threads on 1 cpu"},
    {"ncs/wake-remote", "wake-up on a message across processes (8 B)", 1.0, "< 1 us", false,
     "rocl/pingpong", "rocl ping-pong, the same processes and calls"},
};

std::string folder_of(const std::string &path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// ncs_speed: --program, else next to rocl-bench, else where the build tree
// has it (<build>/bench/rocl-bench/ to <build>/layers/ncs/bench/), else PATH.
Program locate_ncs_speed(const NcsOptions &o, const Programs &p) {
  if (!o.program.empty()) {
    if (!find_program(o.program).empty()) return {o.program, ""};
    return {"", "--program " + o.program + ": not an executable"};
  }
  const std::string dir = folder_of(p.self);
  for (const std::string &path : {dir + "/ncs_speed", dir + "/../../layers/ncs/bench/ncs_speed"}) {
    std::error_code ec;
    const auto shown = std::filesystem::weakly_canonical(path, ec);
    if (!find_program(path).empty()) return {ec ? path : shown.string(), ""};
  }
  if (const std::string path = find_program("ncs_speed"); !path.empty()) return {path, ""};
  return {"",
          "cannot find ncs_speed (looked next to rocl-bench, in ../../layers/ncs/bench/ from it "
          "and in PATH): build it (ninja ncs_speed; it needs Boost.Context, as NCS does), or "
          "give --program PATH"};
}

// ---- the runs -------------------------------------------------------------------

struct Run {
  std::vector<CsvRow> rows;
  std::string failure;  // "" when it ran
};

Run run_speed(const Invocation &inv) {
  const ChildResult c = run_child(inv);
  const std::string log = read_file(inv.log);
  Run run{parse_rows(log), ""};
  if (!c.ok()) {
    const std::string line = c.started && !c.interrupted ? failure_line(log) : "";
    run.failure = c.describe() + (line.empty() ? "" : ": " + line) + " (log: " + inv.log + ")";
  }
  return run;
}

std::vector<std::string> speed_args(const NcsOptions &o, const char *mode) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", o.seconds);
  return {mode, "--reps", std::to_string(o.reps), "--time", seconds};
}

double time_limit(const NcsOptions &o, int figures) {
  return 60 + 2.0 * figures * o.reps * o.seconds;
}

// Alone (it pins itself to its first cpu): the switch, the wake-up in a
// process and the futex hand-off.
Run run_local(const NcsOptions &o, const Program &speed, const std::string &logs) {
  Invocation inv;
  inv.argv = {speed.path};
  for (auto &a : speed_args(o, "local")) inv.argv.push_back(std::move(a));
  inv.log = logs + "/local.log";
  inv.timeout_seconds = time_limit(o, 3);
  return run_speed(inv);
}

// Two processes on two cpus: the wake-up across them and plain rocl's.
Run run_remote(const NcsOptions &o, const Program &speed, const Program &roclrun,
               const std::string &logs) {
  Invocation inv;
  inv.argv = {roclrun.path, "--bind-to", "core", "-n", "2", speed.path};
  for (auto &a : speed_args(o, "remote")) inv.argv.push_back(std::move(a));
  inv.env = {{"ROCL_TRANSPORTS", o.transport}};
  inv.log = logs + "/remote.log";
  inv.timeout_seconds = time_limit(o, 2);
  return run_speed(inv);
}

// ---- the table --------------------------------------------------------------------

const CsvRow *find_row(const std::vector<CsvRow> &rows, const char *name) {
  for (const auto &r : rows) {
    if (r.benchmark == name) return &r;
  }
  return nullptr;
}

std::string with_unit(double us, bool in_ns) {
  return in_ns ? format_figure(us * 1000) + " ns" : format_figure(us) + " us";
}

std::string spread(const CsvRow &r, bool in_ns) {
  const double scale = in_ns ? 1000 : 1;
  return format_figure(r.min * scale) + "-" + format_figure(r.max * scale);
}

std::vector<std::string> table_row(const NcsFigure &f, const std::vector<CsvRow> &rows) {
  const CsvRow *mine = find_row(rows, f.row);
  const CsvRow *anchor = find_row(rows, f.anchor_row);
  if (mine == nullptr) return {f.label, "-", "", f.goal, "not measured", f.anchor_label, "", ""};
  const bool met = mine->median < f.goal_us;
  return {f.label,
          with_unit(mine->median, f.in_ns),
          spread(*mine, f.in_ns),
          f.goal,
          met ? "met" : "MISSED",
          f.anchor_label,
          anchor ? with_unit(anchor->median, f.in_ns) : "-",
          anchor && anchor->median > 0 ? format_figure(mine->median / anchor->median) : "-"};
}

void print_table(const NcsOptions &o, const std::vector<CsvRow> &rows) {
  TextTable table({"figure", "median", "min-max", "goal", "verdict", "anchor", "anchor median",
                   "figure/anchor"});
  for (const auto &f : kFigures) table.add(table_row(f, rows));
  std::printf("\nNCS user threads: median of %d repetition(s) of %g s; %s between the processes\n",
              o.reps, o.seconds, o.transport.c_str());
  table.print(stdout);
  const CsvRow *wake = find_row(rows, "ncs/wake-remote");
  const CsvRow *rocl = find_row(rows, "rocl/pingpong");
  if (wake != nullptr && rocl != nullptr) {
    std::printf("NCS's own part of the wake-up across processes: %s us (NCS %s - rocl %s)\n",
                format_figure(wake->median - rocl->median).c_str(),
                format_figure(wake->median).c_str(), format_figure(rocl->median).c_str());
  }
  if (o.quick)
    std::printf("(--quick: one short repetition: the verdicts say nothing about speed)\n");
}

bool write_csv(const std::string &path, const std::vector<CsvRow> &rows) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "benchmark,size_bytes,pairs,median,min,max,unit\n");
  for (const auto &r : rows) {
    std::fprintf(f, "%s,%zu,%d,%.9g,%.9g,%.9g,%s\n", r.benchmark.c_str(), r.size, r.pairs, r.median,
                 r.min, r.max, r.unit.c_str());
  }
  return std::fclose(f) == 0;
}

// Every figure of the table and its anchor, each a positive number.
std::string missing_figure(const std::vector<CsvRow> &rows) {
  for (const auto &f : kFigures) {
    for (const char *name : {f.row, f.anchor_row}) {
      const CsvRow *r = find_row(rows, name);
      if (r == nullptr || !(r->median > 0)) return name;
    }
  }
  return "";
}

// ---- tables 1-3 -------------------------------------------------------------------

// Runs argv with this process's stdout and stderr (tables.sh prints its
// progress and the tables); its exit status, or -1 if it did not run.
int run_in_foreground(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  args.reserve(argv.size() + 1);
  for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "rocl-bench ncs: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// examples/ncs/tables.sh of the source tree this rocl-bench was built from,
// on this build tree. False when it failed.
bool run_tables(const NcsOptions &o) {
  const std::string script = std::string(NCS_TABLES_SOURCE_DIR) + "/examples/ncs/tables.sh";
  std::printf("\ntables 1-3: %s\n", script.c_str());
  if (::geteuid() != 0) {
    std::printf(
        "  skipped: they need root (the test hosts are network namespaces); run "
        "rocl-bench ncs --tables as root\n");
    return true;
  }
  if (::access(script.c_str(), R_OK) != 0) {
    std::printf("  skipped: %s is not there (it is in rocl's source tree)\n", script.c_str());
    return true;
  }
  std::vector<std::string> argv = {"bash", script, "--build", NCS_TABLES_BUILD_DIR};
  argv.insert(argv.end(), o.tables_args.begin(), o.tables_args.end());
  const int status = run_in_foreground(argv);
  if (status == 0) return true;
  std::fprintf(stderr, "rocl-bench ncs: tables.sh failed (status %d)\n", status);
  return false;
}

void print_header(const NcsOptions &o, const Programs &machine, const Program &speed) {
  std::printf("rocl-bench ncs: the speed of NCS's user threads (%s)\n", speed.path.c_str());
  print_machine(stdout, machine);
  std::printf(
      "settings: %d rep(s) of %g s per figure%s; alone on the first usable cpu, then "
      "roclrun --bind-to core -n 2 with ROCL_TRANSPORTS=%s\n",
      o.reps, o.seconds, o.quick ? " (--quick)" : "", o.transport.c_str());
  if (machine.cpus.size() < 2) std::printf("note: one usable cpu: the two processes share it\n");
  std::fflush(stdout);
}

// Both runs' rows; why a run failed goes to `failures`.
std::vector<CsvRow> measure(const NcsOptions &o, const Program &speed, const Program &roclrun,
                            const std::string &logs, std::vector<std::string> &failures) {
  Run local = run_local(o, speed, logs);
  std::vector<CsvRow> rows = local.rows;
  if (!local.failure.empty()) failures.push_back(local.failure);
  if (interrupted()) return rows;
  Run remote = run_remote(o, speed, roclrun, logs);
  rows.insert(rows.end(), remote.rows.begin(), remote.rows.end());
  if (!remote.failure.empty()) failures.push_back(remote.failure);
  return rows;
}

// Prints why the figures are incomplete, if they are; whether they are not.
bool complete(const std::vector<CsvRow> &rows, const std::vector<std::string> &failures) {
  for (const auto &why : failures) {
    std::fprintf(stderr, "rocl-bench ncs: a run failed: %s\n", why.c_str());
  }
  const std::string missing = missing_figure(rows);
  if (failures.empty() && !missing.empty()) {
    std::fprintf(stderr, "rocl-bench ncs: ncs_speed printed no figure %s\n", missing.c_str());
  }
  return failures.empty() && missing.empty();
}

int run_ncs(const NcsOptions &o) {
  catch_interrupts();
  CompareOptions co;  // what locate_programs reads of it
  co.roclrun = o.roclrun;
  const Programs programs = locate_programs(co);
  const Program speed = locate_ncs_speed(o, programs), &roclrun = programs.roclrun;
  for (const Program *p : {&speed, &roclrun}) {
    if (!p->found()) {
      std::fprintf(stderr, "rocl-bench ncs: %s\n", p->missing.c_str());
      return 1;
    }
  }
  const std::string logs = o.out + "/logs";
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) {
    std::fprintf(stderr, "rocl-bench ncs: cannot make %s: %s\n", logs.c_str(),
                 ec.message().c_str());
    return 1;
  }
  print_header(o, programs, speed);
  std::vector<std::string> failures;
  const std::vector<CsvRow> rows = measure(o, speed, roclrun, logs, failures);
  print_table(o, rows);
  const std::string csv = o.out + "/ncs.csv";
  if (!write_csv(csv, rows)) {
    std::fprintf(stderr, "rocl-bench ncs: cannot write %s: %s\n", csv.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::printf("CSV: %s; logs: %s\n", csv.c_str(), logs.c_str());
  if (interrupted()) {
    std::fprintf(stderr, "rocl-bench ncs: interrupted\n");
    return 130;
  }
  const bool ok = complete(rows, failures);
  const bool tables_ok = !o.tables || run_tables(o);
  return ok && tables_ok ? 0 : 1;
}

std::optional<int> positive_int(const std::string &text, int most) {
  char *end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1 || v > most) return std::nullopt;
  return static_cast<int>(v);
}

bool takes_value(const std::string &name) {
  for (const char *n : {"--reps", "--time", "--transport", "--out", "--program", "--roclrun"}) {
    if (name == n) return true;
  }
  return false;
}

// An option that takes a value (takes_value); "" or what is wrong.
std::string set_value(const std::string &name, const std::string &v, NcsOptions &o) {
  if (name == "--reps") {
    const auto n = positive_int(v, 1000);
    if (!n) return "--reps wants a number from 1 to 1000, not '" + v + "'";
    o.reps = *n;
  } else if (name == "--time") {
    char *end = nullptr;
    const double s = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(s > 0) || s > 3600) {
      return "--time wants seconds > 0 (at most 3600), not '" + v + "'";
    }
    o.seconds = s;
  } else if (name == "--transport") {
    if (v != "shm" && v != "tcp") return "--transport takes shm or tcp, not '" + v + "'";
    o.transport = v;
  } else {
    if (v.empty()) return name + " wants a value";
    (name == "--out" ? o.out : name == "--program" ? o.program : o.roclrun) = v;
  }
  return "";
}

}  // namespace

std::string parse_ncs_options(const std::vector<std::string> &args, NcsOptions &out) {
  NcsOptions o;
  bool reps_given = false, time_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    if (name == "--tables") {
      o.tables = true;
      o.tables_args.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (name == "--quick") {
      o.quick = true;
      continue;
    }
    std::optional<std::string> value;
    if (const std::size_t eq = name.find('='); name.starts_with("--") && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (!takes_value(name)) return "unknown argument '" + args[i] + "'";
    if (!value && i + 1 >= args.size()) return name + " needs a value";
    if (!value) value = args[++i];
    if (std::string why = set_value(name, *value, o); !why.empty()) return why;
    reps_given = reps_given || name == "--reps";
    time_given = time_given || name == "--time";
  }
  if (o.quick && !reps_given) o.reps = 1;
  if (o.quick && !time_given) o.seconds = 0.02;
  out = std::move(o);
  return "";
}

int ncs_main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto &a : args) {
    if (a == "--tables") break;
    if (a == "--help" || a == "-h") {
      std::fputs(kNcsUsage, stdout);
      return 0;
    }
  }
  NcsOptions o;
  const std::string error = parse_ncs_options(args, o);
  if (!error.empty()) {
    std::fprintf(stderr, "rocl-bench ncs: %s (rocl-bench ncs --help lists the options)\n",
                 error.c_str());
    return 2;
  }
  return run_ncs(o);
}

}  // namespace rocl_bench::compare
