// job.cpp - joining the job: each process registers
// {type=ncs, ncs.job=JOB, ncs.generation=N, ncs.process=ID} and looks the others up.
#include "job.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "ncs.h"

namespace ncs {
namespace {

constexpr int kJoinTimeoutMs = 60000;
constexpr int kLeaveTimeoutMs = 60000;
// A leaving process's word to process 0, and its answer once all have said
// it, in a rocl domain of their own: the user threads' receives (domain 0)
// never take them.
constexpr std::uint32_t kLeavingDomain = 1;
constexpr int kLeavingTag = 0;
constexpr int kAllLeavingTag = 1;
// The empty messages of the meeting at join, in a domain of their own too.
constexpr std::uint32_t kMeetingDomain = 2;
constexpr int kMeetingTag = 0;

int env_int(const char *name, int otherwise) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : otherwise;
}

// The job's name: roclrun's job folder, shared by its processes; a process
// started alone is a job of its own.
std::string job_name() {
  // roclrun --hosts: ROCL_JOB_ID names the job on every host, whose job
  // folders (ROCL_JOB_DIR) differ.
  if (const char *id = std::getenv("ROCL_JOB_ID"); id != nullptr && *id != '\0') return id;
  const char *dir = std::getenv("ROCL_JOB_DIR");
  return dir != nullptr ? dir : "single-" + std::to_string(getpid());
}

struct AttrlDeleter {
  void operator()(rocl_attrl_t *a) const { rocl_kill_attrl(a); }
};
using Attrl = std::unique_ptr<rocl_attrl_t, AttrlDeleter>;

// How many times this process has joined: a job that calls NCS_init again
// after NCS_finalize finds its processes' new resources, not the old ones
// a slower process has not deleted yet.
int g_generation = 0;

Attrl job_pattern() {
  Attrl a(rocl_new_attrl(1024));
  const std::string job = job_name(), generation = std::to_string(g_generation);
  rocl_add_attr(a.get(), "type", "ncs", 3);
  rocl_add_attr(a.get(), "ncs.job", job.data(), static_cast<int>(job.size()));
  rocl_add_attr(a.get(), "ncs.generation", generation.data(), static_cast<int>(generation.size()));
  return a;
}

}  // namespace

int Job::join() {
  const int size = env_int("ROCL_SIZE", 1);
  process_ = env_int("ROCL_RANK", 0);
  if (size < 1 || process_ < 0 || process_ >= size) return NCS_ECOMM;
  gids_.assign(size, ROCL_NULL_GID);
  ++g_generation;
  Attrl mine = job_pattern();
  const std::string id = std::to_string(process_);
  rocl_add_attr(mine.get(), "ncs.process", id.data(), static_cast<int>(id.size()));
  const std::int64_t gid = rocl_register(mine.get());
  if (gid <= 0) return NCS_ECOMM;
  gids_[process_] = static_cast<rocl_gid_t>(gid);
  if (size == 1) return NCS_OK;
  const int rc = find_others();
  return rc == NCS_OK ? meet_everyone() : rc;
}

// The first message between two processes pays for their connection: the
// transport's address from the directory and, over tcp, the connection and
// the proof of the job secret, several round trips on a long network. As
// p4 and MPI do when they start, NCS pays it here, before the user threads
// run, instead of in their first messages.
int Job::meet_everyone() {
  for (int p = 0; p < processes(); ++p) {
    if (p != process_ &&
        rocl_sendx(self(), gid_of(p), kMeetingTag, kMeetingDomain, 0, nullptr, 0) != ROCL_OK) {
      return NCS_ECOMM;
    }
  }
  rocl_status_t status;
  char nothing = 0;
  for (int i = 1; i < processes(); ++i) {
    if (rocl_recvx(self(), ROCL_ANY_GID, kMeetingTag, kMeetingDomain, &nothing, 0, &status,
                   kJoinTimeoutMs) != ROCL_OK) {
      return NCS_ECOMM;
    }
  }
  return NCS_OK;
}

int Job::find_others() {
  Attrl pattern = job_pattern();
  if (rocl_query_wait(pattern.get(), processes(), kJoinTimeoutMs) < 0) return NCS_ECOMM;
  rocl_handler_t *h = rocl_query_start(pattern.get());
  if (h == nullptr) return NCS_ECOMM;
  for (;;) {
    Attrl answer = job_pattern();  // a fresh list per answer: the query fills it
    rocl_add_attr(answer.get(), "ncs.process", nullptr, 16);
    const std::int64_t gid = rocl_query_next(h, answer.get());
    if (gid <= 0) break;
    int len = 0;
    const char *v = static_cast<const char *>(rocl_get_attr(answer.get(), "ncs.process", &len));
    if (v == nullptr) continue;
    const int p = std::atoi(std::string(v, len).c_str());
    if (p >= 0 && p < processes()) gids_[p] = static_cast<rocl_gid_t>(gid);
  }
  rocl_query_stop(h);
  for (rocl_gid_t g : gids_) {
    if (g == ROCL_NULL_GID) return NCS_ECOMM;
  }
  return NCS_OK;
}

void Job::leave() {
  if (gids_.empty()) return;
  if (processes() > 1) wait_for_everyone_leaving();
  drop();
}

void Job::drop() {
  if (!gids_.empty() && self() != ROCL_NULL_GID) rocl_delete(self());
  gids_.clear();
}

void Job::wait_for_everyone_leaving() {
  rocl_status_t status;
  char nothing = 0;  // a buffer of 0 bytes: the message's goes back to the pool
  if (process_ != 0) {
    rocl_sendx(self(), gid_of(0), kLeavingTag, kLeavingDomain, 0, nullptr, 0);
    rocl_recvx(self(), gid_of(0), kAllLeavingTag, kLeavingDomain, &nothing, 0, &status,
               kLeaveTimeoutMs);
    return;
  }
  for (int i = 1; i < processes(); ++i) {
    if (rocl_recvx(self(), ROCL_ANY_GID, kLeavingTag, kLeavingDomain, &nothing, 0, &status,
                   kLeaveTimeoutMs) != ROCL_OK) {
      break;  // a process died: leave without it
    }
  }
  for (int p = 1; p < processes(); ++p) {
    rocl_sendx(self(), gid_of(p), kAllLeavingTag, kLeavingDomain, 0, nullptr, 0);
  }
}

}  // namespace ncs
