// no_pmix_bootstrap.cpp - join_launchers_job() in a build without PMIx
// (job_bootstrap.hpp).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bootstrap/job_bootstrap.hpp"

namespace rocl::impl::bootstrap {

std::unique_ptr<Job> join_launchers_job() {
  const char *directory = std::getenv("ROCL_DIRECTORY");
  if (std::getenv("PMIX_NAMESPACE") != nullptr && (directory == nullptr || *directory == '\0')) {
    static bool said = false;
    if (!said) {
      std::fprintf(stderr,
                   "rocl: started by a PMIx server, but this rocl was built without PMIx "
                   "(libpmix-dev): running as a process on its own\n");
    }
    said = true;
  }
  return nullptr;
}

}  // namespace rocl::impl::bootstrap
