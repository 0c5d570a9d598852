// launcher_test.cpp - the Launcher in this process: job folders, stale
// folder cleaning, and the JobServices hook (forks /bin/sh ranks).
#include "launch/launcher.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

namespace fs = std::filesystem;

class TempRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rocl-launcher-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root_;
};

unsigned mode_of(const std::string &path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(TempRoot, JobDirIsPrivateAndUnique) {
  std::string user, a, b;
  ASSERT_EQ(make_user_dir(root_, &user), ROCL_OK);
  EXPECT_EQ(user, root_ + "/rocl-" + std::to_string(::getuid()));
  EXPECT_EQ(mode_of(user), 0700u);
  ASSERT_EQ(make_job_dir(user, &a), ROCL_OK);
  ASSERT_EQ(make_job_dir(user, &b), ROCL_OK);
  EXPECT_NE(a, b);
  EXPECT_EQ(mode_of(a), 0700u);
  EXPECT_EQ(a.rfind(user + "/job-" + std::to_string(::getpid()) + "-", 0), 0u) << a;
  remove_job_dir(a);
  EXPECT_FALSE(fs::exists(a));
}

TEST_F(TempRoot, UserDirOpenToOthersIsRefused) {
  const std::string user = root_ + "/rocl-" + std::to_string(::getuid());
  ASSERT_EQ(::mkdir(user.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(user.c_str(), 0755), 0);
  std::string out;
  EXPECT_LT(make_user_dir(root_, &out), 0);
  EXPECT_NE(std::string(last_error()).find("not a private directory"), std::string::npos)
      << last_error();
}

TEST_F(TempRoot, StaleJobDirsOfDeadLaunchersAreRemoved) {
  std::string user;
  ASSERT_EQ(make_user_dir(root_, &user), ROCL_OK);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);  // its pid now names no process

  const std::string stale = user + "/job-" + std::to_string(dead) + "-abc";
  const std::string alive = user + "/job-" + std::to_string(::getpid()) + "-def";
  const std::string other = user + "/not-a-job";
  for (const std::string &d : {stale, alive, other}) ASSERT_TRUE(fs::create_directory(d));
  std::ofstream(stale + "/secret") << "x";

  EXPECT_EQ(clean_stale_job_dirs(user), 1);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(other));
}

struct FakeServices : JobServices {
  int start(const JobInfo &job) override {
    ++starts;
    info = job;
    secret_mode = mode_of(job.secret_file);
    JobSecret copy;
    secret_readable = JobSecret::read_file(job.secret_file, &copy) == ROCL_OK;
    secret_given = job.secret != nullptr;
    std::ofstream(job.directory_socket) << "stand-in for the socket";
    if (fail_start) return fail(ROCL_EINVAL, "fake service refuses");
    return ROCL_OK;
  }
  void stop() override {
    ++stops;
    dir_existed_at_stop = fs::exists(info.job_dir);
  }
  bool fail_start = false;
  int starts = 0, stops = 0;
  JobInfo info;
  unsigned secret_mode = 0;
  bool secret_readable = false, secret_given = false, dir_existed_at_stop = false;
};

TEST_F(TempRoot, ServicesRunAroundTheRanks) {
  const std::string out_path = root_ + "/out.txt";
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(out_fd, 0);
  FakeServices services;
  LaunchOptions opt;
  opt.nprocs = 2;
  opt.argv = {"/bin/sh", "-c",
              "test -e \"${ROCL_DIRECTORY#unix:}\" && echo ok $ROCL_RANK/$ROCL_SIZE"};
  opt.tmp_root = root_;
  opt.services = &services;
  opt.out_fd = out_fd;
  Launcher launcher(opt);
  EXPECT_EQ(launcher.run(), 0);
  ::close(out_fd);

  EXPECT_EQ(services.starts, 1);
  EXPECT_EQ(services.stops, 1);
  EXPECT_EQ(services.info.size, 2);
  EXPECT_EQ(services.info.secret_file, services.info.job_dir + "/secret");
  EXPECT_EQ(services.info.directory_address, "unix:" + services.info.job_dir + "/dir.sock");
  EXPECT_EQ(services.secret_mode, 0600u);
  EXPECT_TRUE(services.secret_readable);
  EXPECT_TRUE(services.secret_given);
  EXPECT_TRUE(services.dir_existed_at_stop);
  EXPECT_FALSE(fs::exists(services.info.job_dir));

  const std::string out = slurp(out_path);
  EXPECT_NE(out.find("[0] ok 0/2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("[1] ok 1/2\n"), std::string::npos) << out;
}

TEST_F(TempRoot, ServicesThatFailToStartStopTheJob) {
  const std::string marker = root_ + "/ran";
  const std::string err_path = root_ + "/err.txt";
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(err_fd, 0);
  FakeServices services;
  services.fail_start = true;
  LaunchOptions opt;
  opt.nprocs = 1;
  opt.argv = {"/bin/sh", "-c", "touch " + marker};
  opt.tmp_root = root_;
  opt.services = &services;
  opt.err_fd = err_fd;
  Launcher launcher(opt);
  EXPECT_EQ(launcher.run(), 1);
  ::close(err_fd);
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(services.stops, 0);
  EXPECT_FALSE(fs::exists(services.info.job_dir));
  EXPECT_NE(slurp(err_path).find("fake service refuses"), std::string::npos) << slurp(err_path);
}

}  // namespace
}  // namespace rocl::impl
