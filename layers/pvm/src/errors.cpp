// errors.cpp - PVM's error codes: pvm_errno, their texts, pvm_perror and
// the automatic report PvmAutoErr asks for.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "pvm_impl.hpp"

int pvm_errno = PvmOk;

// Indexed by -code, PVM 3.4.6's texts.
char *pvm_errlist[] = {
    const_cast<char *>("Error 0"),
    const_cast<char *>("Error 1"),
    const_cast<char *>("Bad parameter"),
    const_cast<char *>("Parameter mismatch"),
    const_cast<char *>("Value too large"),
    const_cast<char *>("End of buffer"),
    const_cast<char *>("No such host"),
    const_cast<char *>("No such file"),
    const_cast<char *>("Permission denied"),
    const_cast<char *>("Error 9"),
    const_cast<char *>("Malloc failed"),
    const_cast<char *>("Error 11"),
    const_cast<char *>("Can't decode message"),
    const_cast<char *>("Error 13"),
    const_cast<char *>("Can't contact local daemon"),
    const_cast<char *>("No current buffer"),
    const_cast<char *>("No such buffer"),
    const_cast<char *>("Null group name"),
    const_cast<char *>("Already in group"),
    const_cast<char *>("No such group"),
    const_cast<char *>("Not in group"),
    const_cast<char *>("No such instance"),
    const_cast<char *>("Host failed"),
    const_cast<char *>("No parent task"),
    const_cast<char *>("Not implemented"),
    const_cast<char *>("Pvmd system error"),
    const_cast<char *>("Version mismatch"),
    const_cast<char *>("Out of resources"),
    const_cast<char *>("Duplicate host"),
    const_cast<char *>("Can't start pvmd"),
    const_cast<char *>("Already in progress"),
    const_cast<char *>("No such task"),
    const_cast<char *>("Not Found"),
    const_cast<char *>("Already exists"),
    const_cast<char *>("Hoster run on non-master host"),
    const_cast<char *>("Spawning parent set PvmNoSpawnParent"),
    const_cast<char *>("Master Host's IP is Loopback"),
};
int pvm_nerr = sizeof pvm_errlist / sizeof *pvm_errlist;

namespace {

const char *text_of(int code) {
  return code <= 0 && -code < pvm_nerr ? pvm_errlist[-code] : "Unknown error";
}

// "libpvm [t40001]" once enrolled, "libpvm [pid1234]" before.
void print_prefix() {
  if (rpvm::Task *t = rpvm::task_if_enrolled()) {
    std::fprintf(stderr, "libpvm [t%x]: ", unsigned(t->tid));
  } else {
    std::fprintf(stderr, "libpvm [pid%d]: ", int(getpid()));
  }
}

}  // namespace

namespace rpvm {

// A message box entry that is not there is an answer, not a failure: PVM
// reports it to the caller only.
bool is_answer(int code, const char *call) {
  return code == PvmNotFound &&
         (std::strcmp(call, "pvm_recvinfo") == 0 || std::strcmp(call, "pvm_delinfo") == 0 ||
          std::strcmp(call, "pvm_lookup") == 0 || std::strcmp(call, "pvm_delete") == 0);
}

int fail(int code, const char *call) {
  pvm_errno = code;
  Task *t = task_if_enrolled();
  if (code < 0 && !is_answer(code, call) && (t == nullptr || t->auto_error != 0)) {
    print_prefix();
    std::fprintf(stderr, "%s(): %s\n", call, text_of(code));
  }
  return code;
}

int from_rocl(int rocl_code) {
  switch (rocl_code) {
    case ROCL_OK:
      return PvmOk;
    case ROCL_EBADGID:
    case ROCL_EDELETED:
    case ROCL_EPEER:
      return PvmNoTask;
    case ROCL_ENOMEM:
      return PvmNoMem;
    case ROCL_EINVAL:
    case ROCL_ETOOBIG:
      return PvmBadParam;
    default:
      return PvmSysErr;
  }
}

}  // namespace rpvm

extern "C" int pvm_perror(char *msg) {
  print_prefix();
  std::fprintf(stderr, "%s: %s\n", msg != nullptr ? msg : "", text_of(pvm_errno));
  return PvmOk;
}

extern "C" char *pvm_strerror(void) {
  return const_cast<char *>(text_of(pvm_errno));
}
