// job.hpp - the processes of the job as NCS sees them: this process's id
// and count (ROCL_RANK and ROCL_SIZE, which roclrun gives each process), its
// rocl resource, and the resources of the others, found in the directory.
#pragma once

#include <vector>

#include "rocl/rocl.h"

namespace ncs {

class Job {
 public:
  // Registers this process's resource, waits (up to 60 s) for every
  // process's, then exchanges an empty message with each of them, so that
  // every pair is connected before the user threads run. Returns an NCS
  // code.
  int join();
  // Waits (up to 60 s) until every process is leaving, so that no message
  // of the job still comes (credits returned late, say), then deletes this
  // process's resource.
  void leave();
  // Deletes this process's resource at once (a join that failed).
  void drop();

  int process() const { return process_; }
  int processes() const { return static_cast<int>(gids_.size()); }
  rocl_gid_t self() const { return gids_[process_]; }
  rocl_gid_t gid_of(int process) const { return gids_[process]; }

 private:
  int find_others();
  int meet_everyone();
  void wait_for_everyone_leaving();

  int process_ = 0;
  std::vector<rocl_gid_t> gids_;
};

}  // namespace ncs
