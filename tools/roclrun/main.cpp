// roclrun: starts the N processes of a rocl job on this machine.
//   roclrun [options] -n N prog [args...]
// This file only reads the command line; launch/launcher.hpp does the work.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include "directory_service.hpp"

#include "launch/launcher.hpp"

namespace {

const char kUsage[] =
    "usage: roclrun [options] -n N prog [args...]\n"
    "Starts N processes of prog on this machine, as one rocl job.\n"
    "\n"
    "  -n N            number of processes (1 to 1024), required\n"
    "  --no-prefix     leave the output alone (processes inherit stdout and\n"
    "                  stderr) instead of putting \"[rank] \" before each line\n"
    "  --bind-to core  pin rank i to the (i mod n)-th cpu this process may use\n"
    "                  (benchmarks: a waiting rank keeps its cpu warm)\n"
    "  --grace-ms MS   after SIGTERM, wait MS milliseconds before SIGKILL\n"
    "                  (default 2000)\n"
    "  --timeout S     stop everything after S seconds (exit status 124)\n"
    "  --help          this text\n"
    "\n"
    "Each process gets ROCL_RANK, ROCL_SIZE, ROCL_JOB_DIR, ROCL_SECRET_FILE\n"
    "and ROCL_DIRECTORY. Exit status: 0 if all exit 0, else the first failure\n"
    "(128+S for a process killed by signal S; the others are then stopped),\n"
    "124 on timeout, 127 if prog cannot be found, 130/143 on SIGINT/SIGTERM.\n";

int usage_error(const char *fmt, const char *arg) {
  std::fprintf(stderr, "roclrun: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\nTry 'roclrun --help'.\n");
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
  rocl::impl::LaunchOptions opt;
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
      if (!need_value() || value != "core") {
        return usage_error("--bind-to takes 'core' (rank i on the i-th allowed cpu), not '%s'",
                           has_value || i < argc ? value.c_str() : "");
      }
      opt.bind_to_core = true;
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
    } else {
      return usage_error("unknown option '%s'", argv[i]);
    }
  }
  if (opt.nprocs == 0) return usage_error("%s", "how many processes? -n N is required");
  if (i >= argc) return usage_error("%s", "no program to run");
  for (; i < argc; ++i) opt.argv.emplace_back(argv[i]);

  // The job's node directory: the ranks find each other through it.
  rocl::impl::DirectoryService directory;
  opt.services = &directory;
  rocl::impl::Launcher launcher(std::move(opt));
  return launcher.run();
}
