// removal_epoch.cpp - the removal epoch page (see removal_epoch.hpp).
#include "directory/removal_epoch.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "directory/dir_protocol.hpp"

namespace rocl::impl {
namespace {

using dirproto::kEpochCounterOffset;
using dirproto::kEpochPageBytes;
using dirproto::kEpochPageMagic;

static_assert(kEpochCounterOffset % 64 == 0 && kEpochCounterOffset + 64 <= kEpochPageBytes);

std::string errno_text(const char *call) {
  return std::string(call) + ": " + std::strerror(errno);
}

}  // namespace

EpochPage::EpochPage(void *base, int fd, bool write_sealed)
    : base_(base),
      counter_(reinterpret_cast<std::atomic<std::uint64_t> *>(static_cast<char *>(base) +
                                                              kEpochCounterOffset)),
      fd_(fd),
      write_sealed_(write_sealed) {}

EpochPage::~EpochPage() {
  ::munmap(base_, kEpochPageBytes);
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::unique_ptr<EpochPage> EpochPage::create(std::string *why) {
  const int fd = ::memfd_create("rocl-dir-epoch", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *why = errno_text("memfd_create");
    return nullptr;
  }
  if (::ftruncate(fd, static_cast<off_t>(kEpochPageBytes)) != 0) {
    *why = errno_text("ftruncate");
    ::close(fd);
    return nullptr;
  }
  void *base = ::mmap(nullptr, kEpochPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *why = errno_text("mmap");
    ::close(fd);
    return nullptr;
  }
  const std::uint64_t magic = kEpochPageMagic;
  std::memcpy(base, &magic, sizeof magic);
  new (static_cast<char *>(base) + kEpochCounterOffset) std::atomic<std::uint64_t>(0);
  // After our own writable mapping exists: F_SEAL_FUTURE_WRITE keeps every
  // other mapping (the clients') read-only. Kernels before 5.1 lack it.
  const int fixed = F_SEAL_SHRINK | F_SEAL_GROW;
  bool write_sealed = true;
  if (::fcntl(fd, F_ADD_SEALS, fixed | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    write_sealed = false;
    if (::fcntl(fd, F_ADD_SEALS, fixed | F_SEAL_SEAL) != 0) {
      *why = errno_text("fcntl(F_ADD_SEALS)");
      ::munmap(base, kEpochPageBytes);
      ::close(fd);
      return nullptr;
    }
  }
  return std::unique_ptr<EpochPage>(new EpochPage(base, fd, write_sealed));
}

std::unique_ptr<EpochPage> EpochPage::open(int fd, std::string *why) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *why = errno_text("fstat");
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(kEpochPageBytes)) {
    *why = "the descriptor is not a file of " + std::to_string(kEpochPageBytes) + " bytes";
    ::close(fd);
    return nullptr;
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  const int needed = F_SEAL_SHRINK | F_SEAL_GROW;
  if (seals < 0 || (seals & needed) != needed) {
    *why = "the page is not sealed against shrinking and growing";
    ::close(fd);
    return nullptr;
  }
  void *base = ::mmap(nullptr, kEpochPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  const std::string mmap_error = base == MAP_FAILED ? errno_text("mmap") : std::string();
  ::close(fd);  // the mapping keeps the page
  if (base == MAP_FAILED) {
    *why = mmap_error;
    return nullptr;
  }
  std::uint64_t magic = 0;
  std::memcpy(&magic, base, sizeof magic);
  if (magic != kEpochPageMagic) {
    *why = "the page does not start with the epoch page magic";
    ::munmap(base, kEpochPageBytes);
    return nullptr;
  }
  return std::unique_ptr<EpochPage>(new EpochPage(base, -1, false));
}

}  // namespace rocl::impl
