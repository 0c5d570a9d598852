// packing.cpp - pvm_pk* and pvm_upk*: items of one type, with a stride,
// into the active send buffer and out of the active receive buffer (the
// bytes: message_buffer.cpp).
#include "pvm_impl.hpp"

namespace rpvm {
namespace {

// Runs body(buffer) on the task's active send (or receive) buffer.
template <class Body>
int with_active(const char *call, bool sending, Body body) {
  return call_locked(call, [&](Task &t) {
    const int id = sending ? t.buffers.active_send : t.buffers.active_receive;
    MessageBuffer *b = id != 0 ? t.buffers.find(id) : nullptr;
    return b != nullptr ? body(*b) : PvmNoBuf;
  });
}

}  // namespace

// Packs count items of size bytes each, stride items apart.
int pack_items(const char *call, const void *items, int count, int stride, std::size_t size) {
  if (count < 0 || stride < 1 || (items == nullptr && count > 0)) return fail(PvmBadParam, call);
  return with_active(call, true, [&](MessageBuffer &b) {
    b.put_items(items, count, stride, size);
    return PvmOk;
  });
}

int unpack_items(const char *call, void *items, int count, int stride, std::size_t size) {
  if (count < 0 || stride < 1 || (items == nullptr && count > 0)) return fail(PvmBadParam, call);
  return with_active(call, false,
                     [&](MessageBuffer &b) { return b.take_items(items, count, stride, size); });
}

int pack_string(const char *call, const char *s) {
  if (s == nullptr) return fail(PvmBadParam, call);
  return with_active(call, true, [&](MessageBuffer &b) { return b.put_string(s); });
}

int unpack_string(const char *call, char *s) {
  if (s == nullptr) return fail(PvmBadParam, call);
  return with_active(call, false, [&](MessageBuffer &b) { return b.take_string(s); });
}

}  // namespace rpvm

// `type` names the parameter's type, where parentheses cannot go.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ROCL_PVM_PACKING(suffix, type)                                        \
  extern "C" int pvm_pk##suffix(type *p, int n, int stride) {                 \
    return rpvm::pack_items("pvm_pk" #suffix, p, n, stride, sizeof(type));    \
  }                                                                           \
  extern "C" int pvm_upk##suffix(type *p, int n, int stride) {                \
    return rpvm::unpack_items("pvm_upk" #suffix, p, n, stride, sizeof(type)); \
  }
// NOLINTEND(bugprone-macro-parentheses)

ROCL_PVM_PACKING(byte, char)
ROCL_PVM_PACKING(short, short)
ROCL_PVM_PACKING(ushort, unsigned short)
ROCL_PVM_PACKING(int, int)
ROCL_PVM_PACKING(uint, unsigned int)
ROCL_PVM_PACKING(long, long)
ROCL_PVM_PACKING(ulong, unsigned long)
ROCL_PVM_PACKING(float, float)
ROCL_PVM_PACKING(double, double)

// A complex is two floats (two doubles) side by side: the stride counts
// complex numbers.
extern "C" int pvm_pkcplx(float *p, int n, int stride) {
  return rpvm::pack_items("pvm_pkcplx", p, n, stride, 2 * sizeof(float));
}
extern "C" int pvm_upkcplx(float *p, int n, int stride) {
  return rpvm::unpack_items("pvm_upkcplx", p, n, stride, 2 * sizeof(float));
}
extern "C" int pvm_pkdcplx(double *p, int n, int stride) {
  return rpvm::pack_items("pvm_pkdcplx", p, n, stride, 2 * sizeof(double));
}
extern "C" int pvm_upkdcplx(double *p, int n, int stride) {
  return rpvm::unpack_items("pvm_upkdcplx", p, n, stride, 2 * sizeof(double));
}

extern "C" int pvm_pkstr(char *s) {
  return rpvm::pack_string("pvm_pkstr", s);
}
extern "C" int pvm_upkstr(char *s) {
  return rpvm::unpack_string("pvm_upkstr", s);
}
