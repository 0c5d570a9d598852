// cases_process.cpp - cases that need real processes: a peer killed with
// SIGKILL, and a third process with a wrong job secret.
//
// Why helper processes: roclrun treats a rank killed by a signal as the
// job's failure (exit status 128+9) and stops the other ranks at once, so
// rank 1 cannot be the process that dies. Instead rank 1 starts a third
// process of the same job (this executable with --victim: it inherits
// ROCL_DIRECTORY, ROCL_SECRET_FILE and ROCL_TRANSPORTS, so it is a full
// member of the job), reaps it and tells rank 0 when it died. The same
// way, --intruder runs a process with a wrong ROCL_SECRET_FILE.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "cases.hpp"

namespace conf {

// ---- 10. killed peer ----------------------------------------------------------------------

namespace {
constexpr int kHelloTag = 1, kAckTag = 2;

struct DeathReport {
  double died_ms;  // steady clock of rank 1 (CLOCK_MONOTONIC: the same on this machine)
  int status;      // wait status of the victim
};
}  // namespace

// The victim: registers, says hello to the watcher (rank 0), waits for its
// ack (so the hello has surely arrived), then SIGKILLs itself.
int victim_main(int argc, char **argv) {
  if (argc < 3) return 20;
  const rocl_gid_t watcher = std::strtoull(argv[2], nullptr, 0);
  if (rocl_init() <= 0) {
    std::fprintf(stderr, "victim: rocl_init: %s\n", rocl_last_error());
    return 21;
  }
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "conf", 4);
  rocl_add_attr(a, "case", "killed_peer", 11);
  rocl_add_attr(a, "name", "victim", 6);
  const std::int64_t v = rocl_register(a);
  rocl_kill_attrl(a);
  if (v <= 0) {
    std::fprintf(stderr, "victim: rocl_register: %s\n", rocl_last_error());
    return 22;
  }
  rocl_gid_t me = static_cast<rocl_gid_t>(v);
  if (rocl_send(me, watcher, kHelloTag, &me, sizeof me) != ROCL_OK) {
    std::fprintf(stderr, "victim: hello to %#llx: %s\n", static_cast<unsigned long long>(watcher),
                 rocl_last_error());
    return 23;
  }
  void *p = nullptr;
  if (rocl_recv(me, watcher, kAckTag, &p, nullptr, nullptr, nullptr, kLongMs) != ROCL_OK) {
    std::fprintf(stderr, "victim: no ack: %s\n", rocl_last_error());
    return 24;
  }
  std::printf("victim %#llx (pid %d): acknowledged; SIGKILL to myself\n",
              static_cast<unsigned long long>(me), static_cast<int>(::getpid()));
  std::fflush(stdout);
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();
}

void case_killed_peer(Rank &r) {
  long check_ms = 500;  // ROCL_PEER_CHECK_MS default (docs/options.md)
  if (const char *c = std::getenv("ROCL_PEER_CHECK_MS")) check_ms = std::atol(c);
  CHECK(check_ms > 0, "ROCL_PEER_CHECK_MS=0 turns the check off; this case needs it");
  if (r.rank == 1) {
    const rocl_gid_t w = ctl_recv_value<rocl_gid_t>(1);
    step("victim runs");
    const int pid = spawn_self({"--victim", hex(w)}, {});
    // Blocks until the victim is dead (its own receives have timeouts).
    int status = 0;
    CHECK(::waitpid(pid, &status, 0) == pid, "waitpid: %s", std::strerror(errno));
    const DeathReport rep{now_ms(), status};
    ctl_send_value(2, rep);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the victim %s",
          describe_status(status).c_str());
  } else {
    const rocl_gid_t w = reg("watcher");
    ctl_send_value(1, w);
    step("waiting for the victim's hello");
    Msg hello = recv_msg(w, ROCL_ANY_GID, kHelloTag);
    rocl_gid_t v = 0;
    CHECK(hello.data.size() == sizeof v, "hello of %zu bytes", hello.data.size());
    std::memcpy(&v, hello.data.data(), sizeof v);
    CHECK(v == hello.origin, "hello names %s but came from %s", hex(v).c_str(),
          hex(hello.origin).c_str());
    send_text(w, v, kAckTag, "ack");
    step("receiving from the victim");
    const double t0 = now_ms();
    void *p = nullptr;
    const int rc = rocl_recv(w, v, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, kLongMs);
    const double t1 = now_ms();
    const std::string why = rocl_last_error();
    CHECK(rc == ROCL_EPEER, "rocl_recv from the killed %s returned %s after %.0f ms",
          hex(v).c_str(), rc_text(rc).c_str(), t1 - t0);
    CHECK(contains(why, hex(v)), "the sentence does not name %s: \"%s\"", hex(v).c_str(),
          why.c_str());
    const DeathReport rep = ctl_recv_value<DeathReport>(2);
    const double after_death = t1 - rep.died_ms;
    note(
        "ROCL_EPEER %.0f ms after the victim died (%.0f ms into the receive; "
        "ROCL_PEER_CHECK_MS=%ld): \"%s\"",
        after_death, t1 - t0, check_ms, why.c_str());
    // One check period to notice, a quarter more of grace for what was in
    // flight, and a generous margin for a busy machine.
    CHECK(after_death < check_ms + 2000,
          "ROCL_EPEER came %.0f ms after the death (ROCL_PEER_CHECK_MS=%ld, margin 2000 ms)",
          after_death, check_ms);
    // The gid is gone: sends to it fail; this process carries on.
    EXPECT_RC(rocl_send(w, v, 3, nullptr, 0), ROCL_EBADGID);
    // A small pool buffer handed over (rocl_bftoret) whose send fails stays
    // the caller's: it can be returned.
    void *handed = rocl_bfget(8);
    CHECK(handed != nullptr, "rocl_bfget(8)");
    CHECK_RC(rocl_bftoret(handed), ROCL_OK);
    const int send_rc = rocl_send(w, v, 3, handed, 8);
    CHECK(send_rc == ROCL_EBADGID || send_rc == ROCL_EPEER,
          "a handed-over buffer's send to the killed %s returned %s", hex(v).c_str(),
          rc_text(send_rc).c_str());
    EXPECT_RC(rocl_bfret(handed), ROCL_OK);
    send_text(w, w, 4, "still alive");
    Msg self = recv_msg(w, w, 4, kLongMs);
    CHECK(self.data == "still alive", "self message \"%s\"", self.data.c_str());
  }
  barrier("done");
}

// ---- 11. wrong secret ---------------------------------------------------------------------

// The intruder: a process of the job's machine pointing at the job's
// directory with a wrong (or missing) secret. Exit 0: rocl_init refused it
// with a sentence about the secret. 4: refused without saying why. 5:
// accepted, but its send failed. 6: accepted and its send went through.
int intruder_main(int argc, char **argv) {
  if (argc < 4) return 20;
  const char *label = argv[2];
  const rocl_gid_t target = std::strtoull(argv[3], nullptr, 0);
  const std::int64_t ctx = rocl_init();
  if (ctx <= 0) {
    const std::string why = rocl_last_error();
    std::printf("intruder (%s): rocl_init returned %s: \"%s\"\n", label, rc_text(ctx).c_str(),
                why.c_str());
    std::fflush(stdout);
    return contains(why, "secret") ? 0 : 4;
  }
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "intruder", 8);
  const std::int64_t me = rocl_register(a);
  rocl_kill_attrl(a);
  const int rc = me > 0 ? rocl_send(static_cast<rocl_gid_t>(me), target, 99,
                                    const_cast<char *>("intrusion"), 9)
                        : static_cast<int>(me);
  std::printf("intruder (%s): ACCEPTED by rocl_init (context %#llx); send to %#llx: %s \"%s\"\n",
              label, static_cast<unsigned long long>(ctx), static_cast<unsigned long long>(target),
              rc_text(rc).c_str(), rocl_last_error());
  std::fflush(stdout);
  usleep(200000);
  rocl_exit();
  return rc == ROCL_OK ? 6 : 5;
}

void case_wrong_secret(Rank &r) {
  if (r.rank == 0) {
    const rocl_gid_t t = reg("T");
    ctl_send_value(1, t);
    ctl_recv(2);
    // Nothing from an intruder arrived.
    void *p = nullptr;
    rocl_gid_t from = 0;
    const int rc = rocl_recv(t, ROCL_ANY_GID, ROCL_ANY_TAG, &p, &from, nullptr, nullptr, 300);
    CHECK(rc == ROCL_ETIMEDOUT, "a message from %s reached the target (%s)", hex(from).c_str(),
          rc_text(rc).c_str());
  } else {
    const rocl_gid_t t = ctl_recv_value<rocl_gid_t>(1);
    const char *job = std::getenv("ROCL_JOB_DIR");
    const std::string dir = job != nullptr ? job : "/tmp";
    const std::string wrong = dir + "/conformance-wrong-secret-" + std::to_string(::getpid());
    {
      std::random_device rd;
      std::string digits;
      for (int i = 0; i < 64; ++i) digits += "0123456789abcdef"[rd() % 16];
      digits += "\n";
      ::unlink(wrong.c_str());
      const int fd = ::open(wrong.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      CHECK(fd >= 0, "cannot create %s: %s", wrong.c_str(), std::strerror(errno));
      CHECK(::write(fd, digits.data(), digits.size()) == static_cast<ssize_t>(digits.size()),
            "write %s", wrong.c_str());
      ::close(fd);
    }
    struct Try {
      const char *label;
      std::string file;
    } tries[] = {{"wrong secret", wrong}, {"missing secret file", dir + "/no-such-secret"}};
    for (const Try &x : tries) {
      step("intruder: %s", x.label);
      const int pid = spawn_self({"--intruder", x.label, hex(t)}, {"ROCL_SECRET_FILE=" + x.file});
      const int status = wait_child(pid, kLongMs);
      EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "a process with a %s: %s (0: refused with a sentence about the secret; 4: refused "
             "without a clear sentence; 5: accepted; 6: accepted and its message sent)",
             x.label, describe_status(status).c_str());
    }
    ::unlink(wrong.c_str());
    ctl_send(2, "done", 4);
  }
  barrier("done");
}

}  // namespace conf
