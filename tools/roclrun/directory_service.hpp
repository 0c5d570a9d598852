// directory_service.hpp - the node directory server that roclrun embeds for
// its job, so that the processes find each other without a rocld daemon.
#pragma once

#include <cstdlib>
#include <memory>

#include "directory/directory_server.hpp"
#include "launch/launcher.hpp"
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
