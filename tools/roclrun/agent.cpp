// agent.cpp - roclrun's agent on each host of a job that spans several
// (roclrun --hosts): `roclrun --agent directory|rank ...`, started by the
// launcher through ssh or `ip netns exec` with its stdin a pipe from the
// launcher. Not for users: the launcher writes its command line.
//
//   directory: reads the job secret (64 hex digits) from the first line of
//     stdin, makes the host's job folder /tmp/rocl-<uid>/<job>-<host>
//     (0700) with the secret file (0600) and serves the job's directory
//     there (dir.sock), joined to the other hosts' servers on the peer port
//     (broadcast on the host network); it spawns processes for rocl_spawn
//     (their output goes where the agent's does). Stops when stdin closes
//     or on SIGTERM/SIGINT (stopping the processes it spawned), and removes
//     the folder.
//   rank: waits (up to 15 s) for the host's directory, then runs the
//     program with ROCL_RANK, ROCL_SIZE, ROCL_JOB_DIR, ROCL_SECRET_FILE,
//     ROCL_DIRECTORY, ROCL_HOST_NAME and the forwarded ROCL_* options
//     (ROCL_TCP_BIND=auto unless one was given: the ranks of other hosts
//     must reach it) in a process group of its own; ends with the
//     program's status (128+S if killed by signal S). When stdin closes (the
//     launcher or the connection is gone) or on SIGTERM/SIGINT/SIGHUP, it
//     stops the program's group: SIGTERM, then SIGKILL after 1 s.
#include "agent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "directory/directory_server.hpp"
#include "launch/launcher.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"

extern char **environ;

namespace rocl::impl {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_stop = 0;
void on_stop(int) {
  g_stop = 1;
}

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // Whatever started us may have left SIGCHLD ignored, and then the
  // program's exit could not be waited for.
  ::signal(SIGCHLD, SIG_DFL);
}

int agent_fail(const char *fmt, const std::string &what) {
  std::fprintf(stderr, "roclrun agent: ");
  std::fprintf(stderr, fmt, what.c_str());
  std::fprintf(stderr, "\n");
  return 1;
}

struct Args {
  std::string role, job, host;
  long server_id = 1, peer_port = 0, rank = -1, size = 0;
  GidWidth width = GidWidth::kWide;
  std::vector<std::string> env, argv;
};

bool parse(int argc, char **argv, Args *a) {
  int i = 2;  // after "--agent"
  if (i >= argc) return false;
  a->role = argv[i++];
  for (; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--") {
      for (++i; i < argc; ++i) a->argv.emplace_back(argv[i]);
      break;
    }
    if (i + 1 >= argc) return false;
    const char *v = argv[++i];
    if (k == "--job") {
      a->job = v;
    } else if (k == "--host") {
      a->host = v;
    } else if (k == "--server-id") {
      a->server_id = std::atol(v);
    } else if (k == "--peer-port") {
      a->peer_port = std::atol(v);
    } else if (k == "--rank") {
      a->rank = std::atol(v);
    } else if (k == "--size") {
      a->size = std::atol(v);
    } else if (k == "--gid-bits") {
      if (!parse_gid_bits(v, &a->width)) return false;
    } else if (k == "--env") {
      a->env.emplace_back(v);
    } else {
      return false;
    }
  }
  const bool named = !a->job.empty() && a->job.find('/') == std::string::npos && !a->host.empty() &&
                     a->host.find('/') == std::string::npos;
  if (a->role == "directory") {
    return named && a->server_id >= 1 && a->server_id <= max_server_id(a->width) &&
           a->peer_port > 0 && a->peer_port < 65536;
  }
  return a->role == "rank" && named && a->rank >= 0 && a->size > a->rank && !a->argv.empty();
}

std::string host_folder(const Args &a) {
  std::string user_dir;
  if (make_user_dir("/tmp", &user_dir) != ROCL_OK) return {};
  return user_dir + "/" + a.job + "-" + a.host;
}

// Whether to stop: a stop signal came, or stdin closed (the launcher, or
// the connection to it, is gone). Waits up to wait_ms for either.
bool told_to_stop(int wait_ms) {
  if (g_stop) return true;
  pollfd p{0, POLLIN, 0};
  if (::poll(&p, 1, wait_ms) <= 0) return g_stop != 0;
  char buf[256];
  const ssize_t n = ::read(0, buf, sizeof buf);
  return g_stop != 0 || n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
}

// Blocks until stdin closes or a stop signal comes.
void wait_for_end() {
  while (!told_to_stop(200)) {
  }
}

int serve_directory(const Args &a) {
  std::string line;
  for (char c; ::read(0, &c, 1) == 1 && c != '\n';) line += c;
  const std::string folder = host_folder(a);
  if (folder.empty()) return agent_fail("%s", last_error());
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    return agent_fail("cannot make %s", folder + ": " + std::strerror(errno));
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() { remove_job_dir(dir); }
  } cleanup{folder};
  const std::string secret_file = folder + "/secret";
  {
    const int fd = ::open(secret_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return agent_fail("cannot write %s", secret_file);
    const std::string text = line + "\n";
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) return agent_fail("cannot write %s", secret_file);
  }
  JobSecret secret;
  if (JobSecret::read_file(secret_file, &secret) != ROCL_OK) {
    return agent_fail("no job secret on stdin: %s", last_error());
  }
  DirectoryServer server(folder + "/dir.sock", secret, static_cast<std::uint16_t>(a.server_id));
  server.set_gid_width(a.width);
  PeerConfig peers;
  peers.port = static_cast<std::uint16_t>(a.peer_port);
  peers.bind = "auto";
  server.set_peers(peers);
  SpawnConfig spawn;
  spawn.host_name = a.host;
  spawn.environment = {"ROCL_JOB_DIR=" + folder, "ROCL_SECRET_FILE=" + secret_file,
                       "ROCL_DIRECTORY=unix:" + folder + "/dir.sock", "ROCL_HOST_NAME=" + a.host,
                       "ROCL_TCP_BIND=auto"};
  server.enable_spawn(std::move(spawn));
  if (server.start() != ROCL_OK) return agent_fail("%s", last_error());
  wait_for_end();
  server.stop();
  return 0;
}

int run_rank(const Args &a) {
  const std::string folder = host_folder(a);
  if (folder.empty()) return agent_fail("%s", last_error());
  const std::string socket = folder + "/dir.sock";
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  struct stat st {};
  ::fcntl(0, F_SETFL, ::fcntl(0, F_GETFL) | O_NONBLOCK);
  while (::stat(socket.c_str(), &st) != 0) {
    if (told_to_stop(10)) return 128 + SIGTERM;  // stopped before the program started
    if (Clock::now() > deadline) {
      return agent_fail("the job's directory on this host (%s) did not start within 15 s", socket);
    }
  }
  std::vector<std::string> env;
  static const char *const kOwn[] = {"ROCL_"};
  for (char **e = environ; e && *e; ++e) {
    if (std::strncmp(*e, kOwn[0], 5) != 0) env.emplace_back(*e);
  }
  bool bind_given = false;
  for (const std::string &e : a.env) {
    static const char *const kJob[] = {
        "ROCL_RANK=",        "ROCL_SIZE=",      "ROCL_JOB_DIR=",  "ROCL_JOB_ID=",
        "ROCL_SECRET_FILE=", "ROCL_DIRECTORY=", "ROCL_HOST_NAME="};
    bool job = false;
    for (const char *k : kJob) job = job || e.rfind(k, 0) == 0;
    if (job) continue;
    bind_given = bind_given || e.rfind("ROCL_TCP_BIND=", 0) == 0;
    env.push_back(e);
  }
  if (!bind_given) env.emplace_back("ROCL_TCP_BIND=auto");
  env.push_back("ROCL_RANK=" + std::to_string(a.rank));
  env.push_back("ROCL_SIZE=" + std::to_string(a.size));
  env.push_back("ROCL_JOB_DIR=" + folder);
  env.push_back("ROCL_JOB_ID=" + a.job);  // the same on every host, unlike the folder
  env.push_back("ROCL_SECRET_FILE=" + folder + "/secret");
  env.push_back("ROCL_DIRECTORY=unix:" + socket);
  env.push_back("ROCL_HOST_NAME=" + a.host);
  std::vector<char *> envp, argv;
  std::vector<std::string> env_store = env, argv_store = a.argv;
  for (std::string &s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (std::string &s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);

  // A stop signal that comes while the program's group is being made waits
  // until it exists, so that it reaches the group.
  sigset_t stops, old;
  sigemptyset(&stops);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stops, sig);
  ::sigprocmask(SIG_BLOCK, &stops, &old);
  const pid_t pid = ::fork();
  if (pid < 0) return agent_fail("fork: %s", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::sigaction(sig, &sa, nullptr);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "roclrun agent: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(errno == ENOENT ? 127 : 126);
  }
  ::setpgid(pid, pid);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  std::optional<Clock::time_point> kill_at;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done < 0 && errno == ECHILD) return 1;  // reaped by someone else: nothing to wait for
    if (done == pid) {
      if (kill_at) ::kill(-pid, SIGKILL);  // what it started goes with it
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    if (!kill_at) {
      if (told_to_stop(20)) {
        ::kill(-pid, SIGTERM);
        // Before the launcher's own SIGKILL (after its grace, 2 s by
        // default) can take this agent away from the program.
        kill_at = Clock::now() + std::chrono::milliseconds(1000);
      }
    } else {
      if (Clock::now() >= *kill_at) ::kill(-pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace

int run_agent(int argc, char **argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "roclrun --agent: a bad agent command line (roclrun writes it; the roclrun "
                 "on this host may be another version)\n");
    return 2;
  }
  catch_stop_signals();
  return a.role == "directory" ? serve_directory(a) : run_rank(a);
}

}  // namespace rocl::impl
