// unsupported.cpp - PVM calls that have no meaning without a pvmd (adding
// or deleting hosts, halting the machine) or that rocl's PVM does not
// offer yet (message handlers, packed messages in messages): each reports
// PvmNotImpl, so that programs using them build and learn it at run time.
#include "pvm_impl.hpp"

namespace {

int not_implemented(const char *call) {
  return rpvm::fail(PvmNotImpl, call);
}

}  // namespace

extern "C" int pvm_addhosts(char **, int, int *) {
  return not_implemented("pvm_addhosts");
}
extern "C" int pvm_delhosts(char **, int, int *) {
  return not_implemented("pvm_delhosts");
}
extern "C" int pvm_halt(void) {
  return not_implemented("pvm_halt");
}
extern "C" int pvm_start_pvmd(int, char **, int) {
  return not_implemented("pvm_start_pvmd");
}
extern "C" int pvm_sendsig(int, int) {
  return not_implemented("pvm_sendsig");
}
extern "C" int pvm_getfds(int **) {
  return not_implemented("pvm_getfds");
}
extern "C" int pvm_addmhf(int, int, int, int (*)(int)) {
  return not_implemented("pvm_addmhf");
}
extern "C" int pvm_delmhf(int) {
  return not_implemented("pvm_delmhf");
}
extern "C" int pvm_pkmesg(int) {
  return not_implemented("pvm_pkmesg");
}
extern "C" int pvm_pkmesgbody(int) {
  return not_implemented("pvm_pkmesgbody");
}
extern "C" int pvm_upkmesg(void) {
  return not_implemented("pvm_upkmesg");
}
extern "C" int (*pvm_recvf(int (*)(int, int, int)))(int, int, int) {
  rpvm::fail(PvmNotImpl, "pvm_recvf");
  return nullptr;
}
