// roclrun: starts the N processes of a rocl job on this machine or on
// several hosts.
//   roclrun [options] -n N prog [args...]
// This file only reads the command line; launch/launcher.hpp does the work.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "agent.hpp"
#include "directory_service.hpp"
#include "launch/hosts.hpp"
#include "launch/launcher.hpp"
#include "status/status.hpp"

namespace {

const char kUsage[] =
    "usage: roclrun [options] -n N prog [args...]\n"
    "Starts N processes of prog on this machine, or on several hosts, as one\n"
    "rocl job.\n"
    "\n"
    "  -n N            number of processes (1 to 1024), required (also -np N,\n"
    "                  --np N)\n"
    "  --no-prefix     leave the output alone (processes inherit stdout and\n"
    "                  stderr) instead of putting \"[rank] \" before each line\n"
    "  --bind-to core  pin rank i to the (i mod n)-th cpu this process may use\n"
    "                  (benchmarks: a waiting rank keeps its cpu warm);\n"
    "                  --bind-to none: no pinning (the default)\n"
    "  --grace-ms MS   after SIGTERM, wait MS milliseconds before SIGKILL\n"
    "                  (default 2000)\n"
    "  --timeout S     stop everything after S seconds (exit status 124)\n"
    "  --hosts LIST    run on these hosts: h1,h2:4,... (slots after a colon;\n"
    "                  without, the ranks are spread evenly in blocks)\n"
    "  --hostfile F    the hosts from a file: a line per host, \"name\",\n"
    "                  \"name:N\" or \"name slots=N\"; # comments\n"
    "  --launcher L    how hosts are reached: ssh (default; ROCL_SSH is the ssh\n"
    "                  command, roclrun must be at the same path there), netns\n"
    "                  (the test hosts: ip netns exec ROCL_NETNS_PREFIX-HOST)\n"
    "                  or local (every host is this machine)\n"
    "  --peer-port P   UDP port of the job's directory servers (default: one\n"
    "                  picked from the job's name, 40000..59999)\n"
    "  --help          this text\n"
    "\n"
    "Each process gets ROCL_RANK, ROCL_SIZE, ROCL_JOB_DIR, ROCL_SECRET_FILE\n"
    "and ROCL_DIRECTORY; on several hosts also ROCL_HOST_NAME, ROCL_JOB_ID, the ROCL_*\n"
    "options of roclrun's environment and ROCL_TCP_BIND=auto (unless set);\n"
    "each host runs the job's own directory server, output lines start with\n"
    "[host:rank] and no process gets roclrun's stdin. Exit status: 0 if all exit 0, else the first "
    "failure\n"
    "(128+S for a process killed by signal S; the others are then stopped),\n"
    "124 on timeout, 127 if prog cannot be found, 130/143 on SIGINT/SIGTERM.\n";

int usage_error(const char *fmt, const char *arg) {
  std::fprintf(stderr, "roclrun: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, " (see roclrun --help)\n");
  return 2;
}

bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_seconds(const char *s, double *out) {
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > 1e7) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--agent") return rocl::impl::run_agent(argc, argv);
  rocl::impl::LaunchOptions opt;
  std::string launcher_kind = "ssh";
  int i = 1;
  // Options come before the program; the first other word is the program.
  // "--opt value" and "--opt=value" both work, and "-nN" as well as "-n N".
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    std::string name(a), value;
    bool has_value = false;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      name = std::string(a.substr(0, eq));
      value = std::string(a.substr(eq + 1));
      has_value = true;
    } else if (a == "-np") {  // mpirun's spelling
      name = "--np";
    } else if (a.size() > 2 && a.rfind("-n", 0) == 0 && a[1] == 'n') {
      name = "-n";
      value = std::string(a.substr(2));
      has_value = true;
    }
    auto need_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    if (name == "--help" || name == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (name == "--no-prefix") {
      opt.prefix_output = false;
    } else if (name == "--bind-to") {
      if (!need_value() || (value != "core" && value != "none")) {
        return usage_error(
            "--bind-to takes 'core' (rank i on the i-th allowed cpu) or 'none', not '%s'",
            has_value || i < argc ? value.c_str() : "");
      }
      opt.bind_to_core = value == "core";
    } else if (name == "-n" || name == "--np") {
      long n = 0;
      if (!need_value()) return usage_error("%s needs a number", name.c_str());
      if (!parse_long(value.c_str(), 1, rocl::impl::LaunchOptions::kMaxProcs, &n)) {
        return usage_error("-n takes a number of processes from 1 to 1024, not '%s'",
                           value.c_str());
      }
      opt.nprocs = static_cast<int>(n);
    } else if (name == "--grace-ms") {
      long ms = 0;
      if (!need_value()) return usage_error("%s needs a number of milliseconds", name.c_str());
      if (!parse_long(value.c_str(), 0, 3'600'000, &ms)) {
        return usage_error("--grace-ms takes milliseconds from 0 to 3600000, not '%s'",
                           value.c_str());
      }
      opt.grace_ms = static_cast<int>(ms);
    } else if (name == "--timeout") {
      if (!need_value()) return usage_error("%s needs a number of seconds", name.c_str());
      if (!parse_seconds(value.c_str(), &opt.timeout_s)) {
        return usage_error("--timeout takes a number of seconds > 0, not '%s'", value.c_str());
      }
    } else if (name == "--hosts" || name == "--hostfile") {
      if (!need_value()) return usage_error("%s needs a value", name.c_str());
      const int rc = name == "--hosts" ? rocl::impl::parse_host_list(value, &opt.hosts)
                                       : rocl::impl::parse_hostfile(value, &opt.hosts);
      if (rc != ROCL_OK) return usage_error("%s", rocl::impl::last_error());
    } else if (name == "--launcher") {
      if (!need_value()) return usage_error("%s needs ssh, netns or local", name.c_str());
      if (value != "ssh" && value != "netns" && value != "local") {
        return usage_error("--launcher takes ssh, netns or local, not '%s'", value.c_str());
      }
      launcher_kind = value;
    } else if (name == "--peer-port") {
      long port = 0;
      if (!need_value() || !parse_long(value.c_str(), 1, 65535, &port)) {
        return usage_error("--peer-port takes a port from 1 to 65535, not '%s'", value.c_str());
      }
      opt.peer_port = static_cast<std::uint16_t>(port);
    } else {
      return usage_error("unknown option '%s'", argv[i]);
    }
  }
  if (opt.nprocs == 0) return usage_error("%s", "how many processes? -n N is required");
  if (i >= argc) return usage_error("%s", "no program to run");
  for (; i < argc; ++i) opt.argv.emplace_back(argv[i]);

  std::unique_ptr<rocl::impl::RemoteShell> shell;
  rocl::impl::DirectoryService directory;
  if (!opt.hosts.empty()) {
    shell = rocl::impl::make_remote_shell(launcher_kind);
    if (!shell) return usage_error("%s", rocl::impl::last_error());
    opt.shell = shell.get();
    // The agent is this roclrun, at the same path on every host.
    char self[PATH_MAX] = {};
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    opt.agent = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(argv[0]);
    if (const char *remote = std::getenv("ROCL_REMOTE_ROCLRUN"); remote && *remote) {
      opt.agent = remote;
    }
  } else {
    // The job's node directory: the ranks find each other through it.
    opt.services = &directory;
  }
  rocl::impl::Launcher launcher(std::move(opt));
  return launcher.run();
}
