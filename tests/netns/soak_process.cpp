// soak_process.cpp - what the soak watches in its own process: resident
// memory, sampled every second by a thread and judged once the traffic is
// over, and the file descriptors and threads open before rocl_init and
// after rocl_exit.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "soak.hpp"

namespace soak {

namespace {

// The entries of a /proc folder, without "." and "..".
std::vector<std::string> entries(const char *folder) {
  std::vector<std::string> names;
  DIR *d = opendir(folder);
  if (d == nullptr) return names;
  const std::string own = std::to_string(dirfd(d));
  while (const dirent *e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (std::strcmp(folder, "/proc/self/fd") == 0 && name == own) continue;
    names.push_back(name);
  }
  closedir(d);
  return names;
}

double mib(long kib) {
  return static_cast<double>(kib) / 1024;
}

std::string first_line(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

Census take_census() {
  Census c;
  for (const std::string &fd : entries("/proc/self/fd")) {
    char target[512];
    const std::string link = "/proc/self/fd/" + fd;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    c.fds[std::atoi(fd.c_str())] = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
  }
  for (const std::string &tid : entries("/proc/self/task")) {
    c.threads.push_back(first_line("/proc/self/task/" + tid + "/comm"));
  }
  std::sort(c.threads.begin(), c.threads.end());
  return c;
}

Links take_links() {
  std::set<ino_t> own, mapped;
  std::set<std::string> sockets;
  for (const auto &[fd, what] : take_census().fds) {
    struct stat st {};
    if (what.rfind("/memfd:rocl-pool", 0) == 0 &&
        stat(("/proc/self/fd/" + std::to_string(fd)).c_str(), &st) == 0)
      own.insert(st.st_ino);
    if (what.rfind("socket:[", 0) == 0) sockets.insert(what.substr(8, what.size() - 9));
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("memfd:rocl-pool") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string range, perms, offset, device;
    ino_t inode = 0;
    fields >> range >> perms >> offset >> device >> inode;
    if (own.count(inode) == 0) mapped.insert(inode);
  }
  Links links;
  links.shm_pools = static_cast<int>(mapped.size());
  for (const char *table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::getline(in, line);  // the titles
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "01" && sockets.count(inode) != 0) ++links.tcp;  // 01: ESTABLISHED
    }
  }
  return links;
}

std::string compare_census(const Census &before, const Census &after) {
  std::ostringstream left;
  for (const auto &[fd, what] : after.fds) {
    const auto was = before.fds.find(fd);
    if (was == before.fds.end() || was->second != what) left << " fd " << fd << " (" << what << ")";
  }
  for (const auto &[fd, what] : before.fds) {
    if (after.fds.count(fd) == 0) left << " fd " << fd << " (" << what << ") closed";
  }
  if (after.threads.size() != before.threads.size()) {
    left << " threads " << before.threads.size() << " -> " << after.threads.size() << ":";
    for (const std::string &t : after.threads) left << " " << t;
  }
  return left.str();
}

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

namespace {

// Resident KiB of the mappings of rocl's buffer pools (/proc/self/smaps).
long pools_kib() {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool pool = false;
  long kib = 0;
  while (std::getline(in, line)) {
    if (line.rfind("Rss:", 0) == 0) {
      if (pool) kib += std::atol(line.c_str() + 4);
    } else if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
               line.find('-') != std::string::npos && line.find(' ') > line.find('-')) {
      pool = line.find("memfd:rocl-pool") != std::string::npos;
    }
  }
  return kib;
}

Memory sample_memory() {
  Memory m;
  m.rss = rss_kib();
  m.pools = pools_kib();
  rocl_pool_stats_t pool{};
  rocl_pool_stats(&pool);
  m.reserved = static_cast<long>(pool.reserved_bytes >> 10);
  m.in_use = static_cast<long>(pool.in_use_bytes >> 10);
  return m;
}

RssMonitor::Trend trend(const Config &config, long reference, long last) {
  const double bound = static_cast<double>(reference) * (1 + config.rss_ratio) +
                       static_cast<double>(config.rss_slack >> 10);
  return RssMonitor::Trend{reference, last, static_cast<double>(last) <= bound};
}

}  // namespace

double RssMonitor::now() const {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count() - started_;
}

void RssMonitor::start() {
  started_ = 0;
  started_ = now();
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void RssMonitor::stop() {
  if (!running_.exchange(false)) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void RssMonitor::traffic_started() {
  std::lock_guard lock(mutex_);
  traffic_start_ = now();
}

// With a sample of its own: the traffic's last moment is in the judgement.
void RssMonitor::traffic_ended() {
  const Memory m = sample_memory();
  std::lock_guard lock(mutex_);
  traffic_end_ = now();
  samples_.push_back(Sample{traffic_end_, m});
}

void RssMonitor::run() {
  std::unique_lock lock(mutex_);
  for (int second = 1; !stop_; ++second) {
    if (wake_.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::milliseconds(1000),
                         [this] { return stop_; }))
      break;
    const Sample s{now(), sample_memory()};
    samples_.push_back(s);
    std::printf(
        "soak rank %d: rss %d s: %.1f MiB, %.1f outside the pools; pool %.1f MiB "
        "reserved, %.1f in use\n",
        rank_, second, mib(s.m.rss), mib(s.m.outside()), mib(s.m.reserved), mib(s.m.in_use));
    std::fflush(stdout);
  }
}

RssMonitor::Verdict RssMonitor::judge(const Config &config) const {
  std::lock_guard lock(mutex_);
  Verdict v;
  const double length = traffic_end_ - traffic_start_;
  // [0]: from 20 % to 80 % of the traffic, the reference; [1]: the rest.
  long outside[2] = {0, 0}, reserved[2] = {0, 0};
  int counted[2] = {0, 0};
  for (const Sample &s : samples_) {
    if (s.t < traffic_start_ || s.t > traffic_end_) continue;
    ++v.samples;
    v.peak_rss_kib = std::max(v.peak_rss_kib, s.m.rss);
    const double at = (s.t - traffic_start_) / length;
    if (at < 0.2) continue;
    const int k = at < 0.8 ? 0 : 1;
    ++counted[k];
    outside[k] = std::max(outside[k], s.m.outside());
    reserved[k] = std::max(reserved[k], s.m.reserved);
  }
  v.judged = length >= 10 && counted[0] > 0 && counted[1] > 0;
  v.outside = trend(config, outside[0], outside[1]);
  v.reserved = trend(config, reserved[0], reserved[1]);
  return v;
}

}  // namespace soak
