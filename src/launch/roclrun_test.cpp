// roclrun_test.cpp - end-to-end tests of the roclrun binary on /bin/sh
// snippets: output prefixes, exit status, stopping a job, the secret file,
// cleaning up, errors.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef ROCLRUN_PATH
#error "ROCLRUN_PATH must name the roclrun binary"
#endif

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Is any live (not zombie) process in process group pgid?
bool group_alive(pid_t pgid) {
  DIR *d = ::opendir("/proc");
  if (d == nullptr) return false;
  bool alive = false;
  while (dirent *e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string stat = slurp(std::string("/proc/") + e->d_name + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    long ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != 'Z' && state != 'X') alive = true;
  }
  ::closedir(d);
  return alive;
}

bool eventually(const std::function<bool()> &cond, int ms = 3000) {
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

class Roclrun : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/roclrun-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // Starts roclrun with args; its stdout/stderr go to files in tmp_.
  pid_t start(const std::vector<std::string> &args) {
    const std::string out = tmp_ + "/stdout", err = tmp_ + "/stderr";
    std::vector<char *> argv;
    std::string path = ROCLRUN_PATH;
    argv.push_back(path.data());
    std::vector<std::string> copy = args;
    for (std::string &a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(o, 1);
      ::dup2(e, 2);
      ::execv(argv[0], argv.data());
      ::_exit(99);
    }
    started_ = Clock::now();
    return pid;
  }

  // Waits (at most 20 s, then kills) and returns the shell-style status.
  int finish(pid_t pid) {
    int status = 0;
    const auto end = Clock::now() + std::chrono::seconds(20);
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "roclrun did not finish in 20 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    seconds_ = std::chrono::duration<double>(Clock::now() - started_).count();
    out_ = slurp(tmp_ + "/stdout");
    err_ = slurp(tmp_ + "/stderr");
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }

  int run(const std::vector<std::string> &args) { return finish(start(args)); }

  std::string tmp_, out_, err_;
  double seconds_ = 0;
  Clock::time_point started_;
};

TEST_F(Roclrun, EveryLineCarriesItsRank) {
  ASSERT_EQ(run({"-n", "3", "sh", "-c", "echo hi $ROCL_RANK"}), 0) << err_;
  std::vector<std::string> lines = lines_of(out_);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"[0] hi 0", "[1] hi 1", "[2] hi 2"})) << out_;
}

TEST_F(Roclrun, StderrIsPrefixedAndPartialLinesFlushed) {
  ASSERT_EQ(run({"-n", "2", "sh", "-c", "echo oops $ROCL_SIZE >&2; printf partial"}), 0);
  std::vector<std::string> err = lines_of(err_), out = lines_of(out_);
  std::sort(err.begin(), err.end());
  EXPECT_EQ(err, (std::vector<std::string>{"[0] oops 2", "[1] oops 2"})) << err_;
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<std::string>{"[0] partial", "[1] partial"})) << out_;
}

TEST_F(Roclrun, NoPrefixPassesOutputThrough) {
  ASSERT_EQ(run({"--no-prefix", "-n", "2", "sh", "-c", "echo plain"}), 0);
  EXPECT_EQ(out_, "plain\nplain\n");
}

TEST_F(Roclrun, FailureIsPropagated) {
  const int code = run({"-n", "3", "sh", "-c", "exit $ROCL_RANK"});
  EXPECT_TRUE(code == 1 || code == 2) << code;
  EXPECT_NE(err_.find("exited with status"), std::string::npos) << err_;
}

TEST_F(Roclrun, FirstFailureStopsTheOthers) {
  const std::string script = "echo $$ > " + tmp_ +
                             "/pid.$ROCL_RANK; "
                             "if [ $ROCL_RANK = 2 ]; then sleep 0.3; exit 7; fi; "
                             "sleep 30; echo never";
  ASSERT_EQ(run({"-n", "3", "sh", "-c", script}), 7) << err_;
  EXPECT_LT(seconds_, 5.0);
  EXPECT_NE(err_.find("roclrun: rank 2 (pid "), std::string::npos) << err_;
  EXPECT_NE(err_.find(") exited with status 7; stopping the others"), std::string::npos) << err_;
  EXPECT_EQ(out_.find("never"), std::string::npos);
  for (int r = 0; r < 2; ++r) {  // the sleepers and their sh are gone
    const pid_t pgid = std::stoi(slurp(tmp_ + "/pid." + std::to_string(r)));
    EXPECT_TRUE(eventually([&] { return !group_alive(pgid); })) << "rank " << r;
  }
}

TEST_F(Roclrun, DeathBySignalCountsAs128PlusSignal) {
  EXPECT_EQ(run({"-n", "1", "sh", "-c", "kill -9 $$"}), 137);
  EXPECT_NE(err_.find("rank 0 (pid "), std::string::npos) << err_;
  EXPECT_NE(err_.find("was killed by signal 9"), std::string::npos) << err_;
}

TEST_F(Roclrun, SecretFileIsPrivateAndNeverInArgv) {
  const std::string script =
      "echo \"file $ROCL_SECRET_FILE\"; "
      "echo \"dir $ROCL_JOB_DIR\"; "
      "echo \"where $ROCL_DIRECTORY\"; "
      "echo \"mode $(stat -c %a \"$ROCL_SECRET_FILE\")\"; "
      "echo \"secret $(cat \"$ROCL_SECRET_FILE\")\"; "
      "echo \"argv $(tr '\\0' ' ' < /proc/$$/cmdline)\"; "
      "echo \"env $(tr '\\0' ' ' < /proc/$$/environ)\"";
  ASSERT_EQ(run({"-n", "2", "sh", "-c", script}), 0) << err_;
  for (const std::string rank : {"[0] ", "[1] "}) {
    std::map<std::string, std::string> kv;
    for (const std::string &l : lines_of(out_)) {
      if (l.rfind(rank, 0) != 0) continue;
      const std::string rest = l.substr(rank.size());
      const auto sp = rest.find(' ');
      kv[rest.substr(0, sp)] = sp == std::string::npos ? "" : rest.substr(sp + 1);
    }
    const std::string dir = kv["dir"];
    ASSERT_FALSE(dir.empty()) << out_;
    EXPECT_EQ(dir.rfind("/tmp/rocl-" + std::to_string(::getuid()) + "/job-", 0), 0u) << dir;
    EXPECT_EQ(kv["file"], dir + "/secret");
    EXPECT_EQ(kv["where"], "unix:" + dir + "/dir.sock");
    EXPECT_EQ(kv["mode"], "600");
    const std::string secret = kv["secret"];
    EXPECT_EQ(secret.size(), 64u) << secret;
    EXPECT_EQ(kv["argv"].find(secret), std::string::npos) << kv["argv"];
    EXPECT_EQ(kv["env"].find(secret), std::string::npos);
    EXPECT_FALSE(fs::exists(dir)) << "job folder left behind: " << dir;
  }
}

TEST_F(Roclrun, SignalsStopTheJobAndRemoveTheFolder) {
  for (const int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(sig);
    const std::string mark = tmp_ + "/dir." + std::to_string(sig);
    const pid_t pid =
        start({"-n", "2", "sh", "-c", "echo $$ $ROCL_JOB_DIR > " + mark + ".$ROCL_RANK; sleep 30"});
    std::string seen;
    ASSERT_TRUE(eventually([&] {
      seen = slurp(mark + ".1");
      return !seen.empty() && seen.back() == '\n' && !slurp(mark + ".0").empty();
    }));
    std::istringstream in(seen);
    pid_t pgid = 0;
    std::string dir;
    in >> pgid >> dir;
    EXPECT_TRUE(fs::exists(dir + "/secret"));
    ::kill(pid, sig);
    EXPECT_EQ(finish(pid), 128 + sig) << err_;
    EXPECT_LT(seconds_, 5.0);
    EXPECT_FALSE(fs::exists(dir)) << dir;
    EXPECT_TRUE(eventually([&] { return !group_alive(pgid); }));
    EXPECT_NE(err_.find("stopping all ranks"), std::string::npos) << err_;
  }
}

TEST_F(Roclrun, GraceEndsInSigkill) {
  // The ranks ignore SIGTERM: only SIGKILL after --grace-ms ends them.
  const pid_t pid = start({"--grace-ms", "200", "--timeout", "0.3", "-n", "2", "sh", "-c",
                           "trap '' TERM; while :; do sleep 0.05; done"});
  EXPECT_EQ(finish(pid), 124) << err_;
  EXPECT_GE(seconds_, 0.45);  // timeout + grace
  EXPECT_LT(seconds_, 4.0);
}

TEST_F(Roclrun, MissingProgramIs127) {
  EXPECT_EQ(run({"-n", "2", "/nonexistent/rocl-no-such-prog"}), 127);
  EXPECT_NE(err_.find("roclrun: cannot run '/nonexistent/rocl-no-such-prog': No such file or "
                      "directory"),
            std::string::npos)
      << err_;
  EXPECT_EQ(run({"-n", "1", "rocl-no-such-prog-in-path"}), 127);
  EXPECT_NE(err_.find("cannot run 'rocl-no-such-prog-in-path'"), std::string::npos) << err_;
}

TEST_F(Roclrun, TimeoutIs124) {
  EXPECT_EQ(run({"--timeout", "0.5", "-n", "2", "sleep", "30"}), 124);
  EXPECT_LT(seconds_, 4.0);
  EXPECT_NE(err_.find("roclrun: timeout after 0.5 s"), std::string::npos) << err_;
}

TEST_F(Roclrun, UsageErrors) {
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_NE(out_.find("usage: roclrun"), std::string::npos);
  EXPECT_EQ(run({"sh", "-c", "true"}), 2);
  EXPECT_NE(err_.find("-n N is required"), std::string::npos) << err_;
  EXPECT_EQ(run({"-n", "0", "true"}), 2);
  EXPECT_EQ(run({"-n", "1025", "true"}), 2);
  EXPECT_EQ(run({"-n", "2"}), 2);
  EXPECT_NE(err_.find("no program"), std::string::npos) << err_;
  EXPECT_EQ(run({"--bogus", "-n", "1", "true"}), 2);
  EXPECT_EQ(run({"-n2", "--grace-ms=10", "true"}), 0) << err_;
}

}  // namespace
