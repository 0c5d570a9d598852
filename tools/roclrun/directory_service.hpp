// directory_service.hpp - the node directory server that roclrun embeds for
// its job, so that the processes find each other without a rocld daemon.
#pragma once

#include <memory>

#include "directory/directory_server.hpp"
#include "launch/launcher.hpp"

namespace rocl::impl {

class DirectoryService final : public JobServices {
 public:
  // Serves on the job's socket from its own thread; the socket exists when
  // this returns, so ranks can connect at once.
  int start(const JobInfo &job) override {
    server_ = std::make_unique<DirectoryServer>(job.directory_socket, *job.secret);
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
