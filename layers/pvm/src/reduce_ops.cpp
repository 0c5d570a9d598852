// reduce_ops.cpp - PVM's predefined pvm_reduce functions (PvmSum,
// PvmProduct, PvmMax, PvmMin) and the sizes of PVM's data types.
#include <algorithm>
#include <complex>

#include "pvm_impl.hpp"

namespace rpvm {

std::size_t type_size(int datatype) {
  switch (datatype) {
    case PVM_BYTE:
      return 1;
    case PVM_SHORT:
    case PVM_USHORT:
      return sizeof(short);
    case PVM_INT:
    case PVM_UINT:
      return sizeof(int);
    case PVM_FLOAT:
      return sizeof(float);
    case PVM_CPLX:
      return 2 * sizeof(float);
    case PVM_DOUBLE:
      return sizeof(double);
    case PVM_DCPLX:
      return 2 * sizeof(double);
    case PVM_LONG:
    case PVM_ULONG:
      return sizeof(long);
    default:
      return 0;
  }
}

}  // namespace rpvm

namespace {

// x[i] = op(x[i], y[i]) for n items of type T.
template <class T, class Op>
void combine(void *x, const void *y, int n, Op op) {
  T *a = static_cast<T *>(x);
  const T *b = static_cast<const T *>(y);
  for (int i = 0; i < n; ++i) a[i] = op(a[i], b[i]);
}

// Applies op to the type datatype names; false if op cannot take it.
template <class Op>
bool combine_real(int datatype, void *x, const void *y, int n, Op op) {
  switch (datatype) {
    case PVM_BYTE:
      combine<char>(x, y, n, op);
      return true;
    case PVM_SHORT:
      combine<short>(x, y, n, op);
      return true;
    case PVM_USHORT:
      combine<unsigned short>(x, y, n, op);
      return true;
    case PVM_INT:
      combine<int>(x, y, n, op);
      return true;
    case PVM_UINT:
      combine<unsigned>(x, y, n, op);
      return true;
    case PVM_LONG:
      combine<long>(x, y, n, op);
      return true;
    case PVM_ULONG:
      combine<unsigned long>(x, y, n, op);
      return true;
    case PVM_FLOAT:
      combine<float>(x, y, n, op);
      return true;
    case PVM_DOUBLE:
      combine<double>(x, y, n, op);
      return true;
    default:
      return false;
  }
}

template <class Op>
bool combine_any(int datatype, void *x, const void *y, int n, Op op) {
  if (datatype == PVM_CPLX) {
    combine<std::complex<float>>(x, y, n, op);
    return true;
  }
  if (datatype == PVM_DCPLX) {
    combine<std::complex<double>>(x, y, n, op);
    return true;
  }
  return combine_real(datatype, x, y, n, op);
}

void report(bool ok, int *info) {
  if (info != nullptr) *info = ok ? PvmOk : PvmBadParam;
}

}  // namespace

extern "C" void PvmSum(int *datatype, void *x, void *y, int *num, int *info) {
  report(combine_any(*datatype, x, y, *num, [](auto a, auto b) { return decltype(a)(a + b); }),
         info);
}

extern "C" void PvmProduct(int *datatype, void *x, void *y, int *num, int *info) {
  report(combine_any(*datatype, x, y, *num, [](auto a, auto b) { return decltype(a)(a * b); }),
         info);
}

extern "C" void PvmMax(int *datatype, void *x, void *y, int *num, int *info) {
  report(combine_real(*datatype, x, y, *num, [](auto a, auto b) { return std::max(a, b); }), info);
}

extern "C" void PvmMin(int *datatype, void *x, void *y, int *num, int *info) {
  report(combine_real(*datatype, x, y, *num, [](auto a, auto b) { return std::min(a, b); }), info);
}
