// reductions.hpp - the predefined reduction operations as functions on
// arrays of one C type, and each predefined datatype's chooser of them
// (rocl_mpi_datatype::reducer): op.cpp applies them, datatype.cpp picks a
// chooser per type. Internal to rocl's MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mpi_impl.hpp"

namespace rmpi {

// kReplace and kNoOp are defined for one-sided accumulates only: no
// chooser returns a function for them.
enum Builtin {
  kMax,
  kMin,
  kSum,
  kProd,
  kLand,
  kBand,
  kLor,
  kBor,
  kLxor,
  kBxor,
  kMaxloc,
  kMinloc,
  kReplace,
  kNoOp,
  kBuiltins
};

// inout[i] = in[i] op inout[i] for each element; F is one of the lambdas
// below (captureless, so default-constructible).
template <class T, class F>
void each(const void *in, void *inout, std::size_t n) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (std::size_t i = 0; i < n; ++i) b[i] = T(F{}(a[i], b[i]));
}
inline constexpr auto kMaxF = [](auto a, auto b) { return a > b ? a : b; };
inline constexpr auto kMinF = [](auto a, auto b) { return a < b ? a : b; };
inline constexpr auto kSumF = [](auto a, auto b) { return a + b; };
inline constexpr auto kProdF = [](auto a, auto b) { return a * b; };
inline constexpr auto kLandF = [](auto a, auto b) { return a && b; };
inline constexpr auto kBandF = [](auto a, auto b) { return a & b; };
inline constexpr auto kLorF = [](auto a, auto b) { return a || b; };
inline constexpr auto kBorF = [](auto a, auto b) { return a | b; };
inline constexpr auto kLxorF = [](auto a, auto b) { return !a != !b; };
inline constexpr auto kBxorF = [](auto a, auto b) { return a ^ b; };
template <class T, const auto &F>
constexpr Fn kEach = each<T, std::remove_cvref_t<decltype(F)>>;

// MAXLOC/MINLOC: the better value; on a tie the smaller index.
template <class V, class I, bool kMaxWanted>
void loc(const void *in, void *inout, std::size_t n) {
  const auto *a = static_cast<const Pair<V, I> *>(in);
  auto *b = static_cast<Pair<V, I> *>(inout);
  for (std::size_t k = 0; k < n; ++k) {
    const bool better = kMaxWanted ? a[k].v > b[k].v : a[k].v < b[k].v;
    if (better || (a[k].v == b[k].v && a[k].i < b[k].i)) b[k] = a[k];
  }
}

// The function of op (a Builtin) on T, or nullptr: by kind of type.
template <class T>
Fn arithmetic(int op) {
  constexpr Fn kByOp[] = {kEach<T, kMaxF>, kEach<T, kMinF>, kEach<T, kSumF>, kEach<T, kProdF>};
  return op <= kProd ? kByOp[op] : nullptr;
}
template <class T>
Fn integer(int op) {
  constexpr Fn kByOp[] = {kEach<T, kMaxF>,  kEach<T, kMinF>,  kEach<T, kSumF>, kEach<T, kProdF>,
                          kEach<T, kLandF>, kEach<T, kBandF>, kEach<T, kLorF>, kEach<T, kBorF>,
                          kEach<T, kLxorF>, kEach<T, kBxorF>};
  return op <= kBxor ? kByOp[op] : nullptr;
}
template <class V, class I>
Fn pair(int op) {
  return op == kMaxloc ? loc<V, I, true> : op == kMinloc ? loc<V, I, false> : nullptr;
}
inline Fn bytes(int op) {  // MPI_BYTE: bitwise only
  return op == kBand || op == kBor || op == kBxor ? integer<unsigned char>(op) : nullptr;
}
inline Fn logical(int op) {  // C++ bool: logical only
  return op == kLand || op == kLor || op == kLxor ? integer<bool>(op) : nullptr;
}

// A basic C type's chooser: MPI defines the arithmetic ops on every number,
// the logical and bitwise ones on integers only, and only logical ones on bool.
template <class T>
constexpr Chooser reducer_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return logical;
  } else if constexpr (std::is_integral_v<T>) {
    return integer<T>;
  } else if constexpr (std::is_floating_point_v<T>) {
    return arithmetic<T>;
  } else {
    return nullptr;
  }
}

}  // namespace rmpi
