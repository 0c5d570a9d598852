// cpu_board.cpp - the node's board of runnable rocl threads per cpu
// (cpu_board.hpp).
#include "wait/cpu_board.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "os/process.hpp"

namespace rocl::impl::wait {

namespace {

constexpr std::uint64_t kMagic = 0x726f636c63707573ull;  // "roclcpus"
constexpr std::uint32_t kVersion = 1;
constexpr int kProcessSlots = 256;
constexpr std::size_t kLine = 64;
// The most cpus a board counts: threads on higher ids are not counted.
constexpr int kMaxCpus = 4096;
// A slot being emptied of a dead process's counts.
constexpr std::uint64_t kReclaiming = ~std::uint64_t{0};

std::size_t round_up(std::size_t n) {
  return (n + kLine - 1) / kLine * kLine;
}

// Who owns a slot: pid in the low half, the start time's low bits above.
std::uint64_t identity_of(pid_t pid, std::uint64_t start) {
  return (start << 32) ^ static_cast<std::uint32_t>(pid);
}

bool is_alive(std::uint64_t owner) {
  const auto pid = static_cast<pid_t>(owner & 0xffffffffu);
  const std::uint64_t start = os::process_start(pid);
  return start != 0 && identity_of(pid, start) == owner;
}

int node_cpus() {
  return std::clamp(::get_nprocs_conf(), 1, kMaxCpus);
}

}  // namespace

// The mapped file: a header line, a line per cpu (the node's counts), then
// a slot per process (its owner, then its own count per cpu).
struct BoardHeader {
  std::atomic<std::uint64_t> magic;  // written last by the maker: the board is ready
  std::uint32_t version;
  std::uint32_t cpus;
  std::uint32_t slots;
  std::uint32_t slot_bytes;
};

struct BoardLayout {
  BoardHeader *header;
  char *cpu_lines;
  char *slots;
  std::size_t slot_bytes;

  std::atomic<std::int32_t> &node_count(int cpu) const {
    return *reinterpret_cast<std::atomic<std::int32_t> *>(cpu_lines +
                                                          static_cast<std::size_t>(cpu) * kLine);
  }
  std::atomic<std::uint64_t> &owner(int slot) const {
    return *reinterpret_cast<std::atomic<std::uint64_t> *>(slots + static_cast<std::size_t>(slot) *
                                                                       slot_bytes);
  }
  std::atomic<std::int32_t> &own_count(int slot, int cpu) const {
    char *counts = slots + static_cast<std::size_t>(slot) * slot_bytes + kLine;
    return reinterpret_cast<std::atomic<std::int32_t> *>(counts)[cpu];
  }
};

static_assert(std::atomic<std::int32_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

namespace {

std::size_t slot_bytes_for(int cpus) {
  return kLine + round_up(static_cast<std::size_t>(cpus) * sizeof(std::int32_t));
}

std::size_t board_bytes(int cpus) {
  return kLine + static_cast<std::size_t>(cpus) * kLine + kProcessSlots * slot_bytes_for(cpus);
}

BoardLayout layout_at(void *base, int cpus) {
  auto *p = static_cast<char *>(base);
  BoardLayout l{};
  l.header = reinterpret_cast<BoardHeader *>(p);
  l.cpu_lines = p + kLine;
  l.slots = l.cpu_lines + static_cast<std::size_t>(cpus) * kLine;
  l.slot_bytes = slot_bytes_for(cpus);
  return l;
}

// Writes a fresh board's header; the magic last.
void initialise(const BoardLayout &l, int cpus) {
  l.header->version = kVersion;
  l.header->cpus = static_cast<std::uint32_t>(cpus);
  l.header->slots = kProcessSlots;
  l.header->slot_bytes = static_cast<std::uint32_t>(l.slot_bytes);
  l.header->magic.store(kMagic, std::memory_order_release);
}

// Maps the board file `name`, making it if it does not exist; nullptr
// (errno and *why set) if it cannot be used. Makers and users hold the
// file's lock while they look at it, so a board is seen only whole: one
// whose maker died half-way (no magic yet) is made anew by the next
// process, instead of leaving every later one waiting for a header that
// never comes. Its space is allocated, not only sized: on a full /dev/shm
// the maker gets an error here rather than SIGBUS at its first touch.
void *map_board(const std::string &name, int cpus, std::size_t bytes, const char **why) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = "shm_open";
    return nullptr;
  }
  // The lock is given up explicitly on every path out: a mapping keeps the
  // open file, and with it a lock that closing alone would not release.
  struct Closer {
    int fd;
    ~Closer() {
      ::flock(fd, LOCK_UN);
      ::close(fd);
    }
  } closer{fd};
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      *why = "flock";
      return nullptr;
    }
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = "fstat";
    return nullptr;
  }
  if (st.st_uid != ::geteuid()) {
    *why = "a board of another owner";
    errno = EPERM;
    return nullptr;
  }
  if (st.st_size == 0) {
    const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (rc != 0) {
      errno = rc;
      *why = "posix_fallocate";
      return nullptr;
    }
  } else if (st.st_size != static_cast<off_t>(bytes)) {
    *why = "a board of another size";
    errno = EEXIST;
    return nullptr;
  }
  void *base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *why = "mmap";
    return nullptr;
  }
  BoardLayout l = layout_at(base, cpus);
  if (l.header->magic.load(std::memory_order_acquire) != kMagic) {
    // New, or its maker died before it was whole: nobody counts on it yet
    // (nobody maps a board without magic), so it is ours to make.
    std::memset(base, 0, bytes);
    initialise(l, cpus);
    return base;
  }
  if (l.header->version != kVersion || l.header->cpus != static_cast<std::uint32_t>(cpus) ||
      l.header->slots != kProcessSlots || l.header->slot_bytes != l.slot_bytes) {
    *why = "a board of another layout";
    errno = EEXIST;
    ::munmap(base, bytes);
    return nullptr;
  }
  return base;
}

std::string node_board_name() {
  return "/rocl-cpus-" + std::to_string(::geteuid()) + "-" + std::to_string(os::pid_namespace());
}

}  // namespace

CpuBoard::CpuBoard(void *base, std::size_t bytes, int cpus, bool shared)
    : base_(base), bytes_(bytes), cpus_(cpus), shared_(shared), layout_(new BoardLayout) {
  *layout_ = layout_at(base, cpus);
  if (!shared) initialise(*layout_, cpus);
  take_slot();
}

CpuBoard::~CpuBoard() {
  leave();
  ::munmap(base_, bytes_);
  delete layout_;
}

void CpuBoard::leave() noexcept {
  if (::getpid() != pid_) return;  // a forked child: the slot is its parent's
  const int slot = slot_.exchange(-1, std::memory_order_relaxed);
  if (slot < 0) return;  // later add()s (threads' seats given up after this) count nothing
  // What our threads still count goes with us.
  for (int c = 0; c < cpus_; ++c) {
    const int n = layout_->own_count(slot, c).exchange(0, std::memory_order_relaxed);
    if (n != 0) layout_->node_count(c).fetch_sub(n, std::memory_order_relaxed);
  }
  layout_->owner(slot).store(0, std::memory_order_release);
}

std::unique_ptr<CpuBoard> CpuBoard::open(const std::string &path, int cpus) {
  cpus = std::clamp(cpus, 1, kMaxCpus);
  const std::size_t bytes = board_bytes(cpus);
  if (path.empty()) {
    void *base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("cpu board: mmap failed");
    return std::unique_ptr<CpuBoard>(new CpuBoard(base, bytes, cpus, false));
  }
  const char *why = "";
  void *base = map_board(path, cpus, bytes, &why);
  if (base == nullptr) {
    throw std::runtime_error("cpu board " + path + ": " + why + " failed (" + std::strerror(errno) +
                             ")");
  }
  return std::unique_ptr<CpuBoard>(new CpuBoard(base, bytes, cpus, true));
}

CpuBoard &CpuBoard::node() noexcept {
  // Leaked on purpose: threads stand up from it in their thread-local
  // destructors, which may run after static destructors.
  static CpuBoard *board = [] {
    const int cpus = node_cpus();
    try {
      CpuBoard *shared = open(node_board_name(), cpus).release();
      // At exit the process's counts go (threads still running then never
      // give up their seats), and its slot is free at once.
      std::atexit([] { node().leave(); });
      return shared;
    } catch (const std::exception &e) {
      std::fprintf(stderr,
                   "rocl: %s; waiting threads see only this process's threads on their cpus\n",
                   e.what());
    }
    try {
      return open("", cpus).release();
    } catch (const std::exception &) {
      std::abort();  // an anonymous mapping of a few KiB failed: no memory at start-up
    }
  }();
  return *board;
}

void CpuBoard::take_slot() noexcept {
  if (shared_) reclaim_dead();
  const std::uint64_t me = identity_of(::getpid(), shared_ ? os::process_start(::getpid()) : 0);
  for (int s = 0; s < kProcessSlots; ++s) {
    std::uint64_t expected = 0;
    if (layout_->owner(s).compare_exchange_strong(expected, me, std::memory_order_acq_rel)) {
      slot_.store(s, std::memory_order_relaxed);
      pid_ = ::getpid();
      return;
    }
  }
}

int CpuBoard::reclaim_dead() noexcept {
  int found = 0;
  for (int s = 0; s < kProcessSlots; ++s) {
    std::uint64_t owner = layout_->owner(s).load(std::memory_order_acquire);
    if (owner == 0 || owner == kReclaiming || s == slot_.load(std::memory_order_relaxed) ||
        is_alive(owner)) {
      continue;
    }
    if (!layout_->owner(s).compare_exchange_strong(owner, kReclaiming, std::memory_order_acq_rel)) {
      continue;  // another process reclaims it
    }
    for (int c = 0; c < cpus_; ++c) {
      const int n = layout_->own_count(s, c).exchange(0, std::memory_order_relaxed);
      if (n != 0) layout_->node_count(c).fetch_sub(n, std::memory_order_relaxed);
    }
    layout_->owner(s).store(0, std::memory_order_release);
    ++found;
  }
  return found;
}

int CpuBoard::runnable(int cpu) const noexcept {
  if (cpu < 0 || cpu >= cpus_) return 0;
  return layout_->node_count(cpu).load(std::memory_order_relaxed);
}

int CpuBoard::own(int cpu) const noexcept {
  const int slot = slot_.load(std::memory_order_relaxed);
  if (cpu < 0 || cpu >= cpus_ || slot < 0) return 0;
  return layout_->own_count(slot, cpu).load(std::memory_order_relaxed);
}

void CpuBoard::add(int cpu, int delta) noexcept {
  const int slot = slot_.load(std::memory_order_relaxed);
  if (cpu < 0 || cpu >= cpus_ || slot < 0) return;
  // Own count first: a reclaimer that finds us dead between the two takes
  // away at most what is also on the node's line.
  layout_->own_count(slot, cpu).fetch_add(delta, std::memory_order_relaxed);
  layout_->node_count(cpu).fetch_add(delta, std::memory_order_relaxed);
}

// ---- Seat --------------------------------------------------------------

namespace {

// The thread's seat: the cpu it counts on, or -1; given up when the
// thread exits.
struct SeatState {
  int cpu = -1;
  ~SeatState() {
    if (cpu >= 0) CpuBoard::node().add(cpu, -1);
  }
};

SeatState &seat_state() noexcept {
  thread_local SeatState state;
  return state;
}

}  // namespace

int Seat::sit(int *cpu) noexcept {
  SeatState &s = seat_state();
  const int here = ::sched_getcpu();
  if (cpu != nullptr) *cpu = here;
  CpuBoard &board = CpuBoard::node();
  if (here != s.cpu) {
    if (s.cpu >= 0) board.add(s.cpu, -1);
    board.add(here, 1);
    s.cpu = here;
  }
  return board.runnable(here);
}

void Seat::stand() noexcept {
  SeatState &s = seat_state();
  if (s.cpu < 0) return;
  CpuBoard::node().add(s.cpu, -1);
  s.cpu = -1;
}

int Seat::others_here() noexcept {
  const int here = ::sched_getcpu();
  const int n = CpuBoard::node().runnable(here);
  return seat_state().cpu == here ? n - 1 : n;
}

}  // namespace rocl::impl::wait
