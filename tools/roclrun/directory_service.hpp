// directory_service.hpp - the node directory server that roclrun embeds for
// its job, so that the processes find each other without a rocld daemon.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "directory/directory_server.hpp"
#include "launch/launcher.hpp"
#include "os/host.hpp"
#include "status/status.hpp"

namespace rocl::impl {

class DirectoryService final : public JobServices {
 public:
  // Serves on the job's socket from its own thread; the socket exists when
  // this returns, so ranks can connect at once.
  int start(const JobInfo &job) override {
    server_ = std::make_unique<DirectoryServer>(job.directory_socket, *job.secret);
    GidWidth width = GidWidth::kWide;
    if (!parse_gid_bits(std::getenv("ROCL_GID_BITS"), &width)) {
      return fail(ROCL_EINVAL, "ROCL_GID_BITS='%s' is neither 63 nor 31",
                  std::getenv("ROCL_GID_BITS"));
    }
    server_->set_gid_width(width);
    server_->set_log(
        [](const std::string &line) { std::fprintf(stderr, "roclrun: %s\n", line.c_str()); });
    // The job's processes may spawn more on this machine; those still
    // running when the ranks are done are stopped with the job.
    SpawnConfig spawn;
    spawn.host_name = os::host_name();
    if (const char *name = std::getenv("ROCL_HOST_NAME"); name != nullptr && *name != '\0') {
      spawn.host_name = name;
    }
    spawn.environment = {"ROCL_JOB_DIR=" + job.job_dir, "ROCL_SECRET_FILE=" + job.secret_file,
                         "ROCL_DIRECTORY=" + job.directory_address};
    spawn.grace = std::chrono::milliseconds(job.grace_ms);
    server_->enable_spawn(std::move(spawn));
    return server_->start();
  }
  void stop() override {
    if (server_) server_->stop();
    server_.reset();
  }

 private:
  std::unique_ptr<DirectoryServer> server_;
};

}  // namespace rocl::impl
