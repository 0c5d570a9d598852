// job.cpp - the processes of the job: each main thread is a resource too,
// {type=demo-main, rank=R, ...}; the main threads find each other with a
// multi-answer query and keep the processes in step with small messages
// (a barrier, a gather to rank 0, a last word).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "demo.hpp"

namespace demo {

namespace {

constexpr int kTagArrive = 10;  // rank R -> rank 0: at the barrier
constexpr int kTagGo = 11;      // rank 0 -> rank R: everybody is
constexpr int kTagGather = 12;  // rank R -> rank 0: its text
constexpr int kTagFinish = 13;  // rank 0 -> rank R: you may exit
constexpr int kFindSeconds = 10;

rocl::Attributes main_attributes(int rank) {
  return rocl::Attributes{{"type", "demo-main"},
                          {"rank", std::to_string(rank)},
                          {"pid", std::to_string(static_cast<long>(getpid()))},
                          {"transports", enabled_transports()}};
}

std::string text_of(const rocl::Message &m) {
  return std::string(m.buffer.view());
}

}  // namespace

Job::Job(int rank, int size)
    : rank_(rank), size_(size), who_("the main thread"), me_(main_attributes(rank)) {
  // Every process registered its main thread; ask until all of them are
  // there (the others may still be starting).
  const auto pattern = rocl::Attributes{{"type", "demo-main"}}
                           .ask("rank", 16)
                           .ask("pid", 24)
                           .ask("transports", 128)
                           .ask("context", sizeof(rocl::gid_t));
  const auto start = Clock::now();
  std::vector<rocl::Found> found;
  try {
    found = rocl::query_wait(pattern, size_, std::chrono::seconds(kFindSeconds));
  } catch (const rocl::Error &e) {
    fail(who_, std::string(e.what()) + " (the job's " + std::to_string(size_) +
                   " processes in the directory)" +
                   (std::getenv("ROCL_DIRECTORY") == nullptr
                        ? " (ROCL_DIRECTORY is not set: start the demo with roclrun)"
                        : ""));
  }
  discovery_seconds_ = seconds_since(start);
  processes_.resize(static_cast<std::size_t>(size_));
  std::vector<bool> seen(processes_.size(), false);
  for (const rocl::Found &f : found) {
    Process p;
    p.main = f.gid;
    p.rank = std::atoi(f.attributes.get("rank").value_or("-1").c_str());
    p.pid = std::atol(f.attributes.get("pid").value_or("0").c_str());
    p.transports = f.attributes.get("transports").value_or("?");
    const std::string context = f.attributes.get("context").value_or("");
    if (context.size() == sizeof p.context)
      std::memcpy(&p.context, context.data(), sizeof p.context);
    if (p.rank < 0 || p.rank >= size_ || seen[static_cast<std::size_t>(p.rank)]) {
      fail(who_, "the directory holds an unexpected {type=demo-main, rank=" +
                     f.attributes.get("rank").value_or("?") + "} (" + hex(f.gid) +
                     "): is another demo running in this job?");
    }
    seen[static_cast<std::size_t>(p.rank)] = true;
    processes_[static_cast<std::size_t>(p.rank)] = p;
  }
}

void Job::barrier() {
  if (size_ == 1) return;
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) {
      receive(me_, processes_[static_cast<std::size_t>(r)].main, kTagArrive, kControlTimeout, who_,
              "barrier arrival of rank " + std::to_string(r));
    }
    for (int r = 1; r < size_; ++r) {
      me_.send(processes_[static_cast<std::size_t>(r)].main, kTagGo, std::string_view());
    }
  } else {
    me_.send(processes_[0].main, kTagArrive, std::string_view());
    receive(me_, processes_[0].main, kTagGo, kControlTimeout, who_, "barrier release");
  }
}

std::vector<std::string> Job::gather(const std::string &text) {
  if (rank_ != 0) {
    me_.send(processes_[0].main, kTagGather, std::string_view(text));
    return {};
  }
  std::vector<std::string> all{text};
  for (int r = 1; r < size_; ++r) {
    all.push_back(text_of(receive(me_, processes_[static_cast<std::size_t>(r)].main, kTagGather,
                                  kControlTimeout, who_, "report of rank " + std::to_string(r))));
  }
  return all;
}

void Job::finish() {
  if (size_ == 1) return;
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) {
      me_.send(processes_[static_cast<std::size_t>(r)].main, kTagFinish, std::string_view());
    }
  } else {
    // Rank 0 prints the table meanwhile: the wait can be longer.
    receive(me_, processes_[0].main, kTagFinish, 2 * kControlTimeout, who_, "last word");
  }
}

}  // namespace demo
