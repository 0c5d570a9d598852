// options.cpp - pvm_setopt/pvm_getopt and the message contexts
// (pvm_newcontext, pvm_setcontext, pvm_getcontext, pvm_freecontext).
// Routes: every rocl message goes the direct way (shm on one host, tcp
// between hosts), so PvmRoute is remembered and reported, and changes
// nothing (docs/pvm.md, "Routes").
#include <algorithm>

#include "pvm_impl.hpp"

using rpvm::Task;

namespace {

int set_option(Task &t, int what, int val) {
  int old = 0;
  switch (what) {
    case PvmRoute:
      if (val != PvmDontRoute && val != PvmAllowDirect && val != PvmRouteDirect) {
        return PvmBadParam;
      }
      old = t.route;
      t.route = val;
      return old;
    case PvmAutoErr:
      return t.auto_error.exchange(val);
    case PvmShowTids:
      old = t.show_tids;
      t.show_tids = val;
      return old;
    case PvmDebugMask:
    case PvmFragSize:
    case PvmResvTids:
    case PvmPollType:
    case PvmPollTime:
    case PvmNoReset:
      return 0;  // accepted: nothing here depends on them
    default:
      return what >= PvmOutputTid && what <= PvmSelfTraceContext ? 0 : PvmBadParam;
  }
}

int get_option(Task &t, int what) {
  switch (what) {
    case PvmRoute:
      return t.route;
    case PvmAutoErr:
      return t.auto_error.load();
    case PvmShowTids:
      return t.show_tids;
    case PvmFragSize:
      return 4096;
    case PvmPollType:
      return PvmPollConstant;
    default:
      return what >= PvmDebugMask && what <= PvmNoReset ? 0 : PvmBadParam;
  }
}

}  // namespace

extern "C" int pvm_setopt(int what, int val) {
  return rpvm::call_locked("pvm_setopt", [&](Task &t) { return set_option(t, what, val); });
}

extern "C" int pvm_getopt(int what) {
  return rpvm::call_locked("pvm_getopt", [&](Task &t) { return get_option(t, what); });
}

extern "C" int pvm_newcontext(void) {
  return rpvm::call_locked("pvm_newcontext", [](Task &t) {
    const std::int64_t gid = rpvm::register_entry({{"type", "pvm-context"}});
    if (gid <= 0) return PvmSysErr;
    t.contexts.push_back(rocl_gid_t(gid));
    return rpvm::context_of(rocl_gid_t(gid));
  });
}

extern "C" int pvm_setcontext(int ctx) {
  return rpvm::call_locked("pvm_setcontext", [&](Task &t) {
    if (ctx < 0 || std::uint32_t(ctx) >= rpvm::kSystemDomains) return PvmBadParam;
    return std::exchange(t.context, ctx);
  });
}

extern "C" int pvm_getcontext(void) {
  return rpvm::call_locked("pvm_getcontext", [](Task &t) { return t.context; });
}

extern "C" int pvm_freecontext(int ctx) {
  return rpvm::call_locked("pvm_freecontext", [&](Task &t) {
    const auto mine = std::find_if(t.contexts.begin(), t.contexts.end(),
                                   [&](rocl_gid_t g) { return rpvm::context_of(g) == ctx; });
    if (mine == t.contexts.end()) return PvmBadParam;
    rocl_delete(*mine);
    t.contexts.erase(mine);
    return PvmOk;
  });
}

extern "C" char *pvm_version(void) {
  return const_cast<char *>(PVM_VER);
}
