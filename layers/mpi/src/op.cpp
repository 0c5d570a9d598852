// op.cpp - reduction operations: the predefined ones for every basic type
// they are defined on (MPI 3.1 section 5.9.2), and user functions.
#include <cwchar>

#include "mpi_impl.hpp"

enum Builtin { kMax, kMin, kSum, kProd, kLand, kBand, kLor, kBor, kLxor, kBxor, kMaxloc, kMinloc };

struct rocl_mpi_op rocl_mpi_op_max {
  rocl_mpi_op::kMagic, kMax
}, rocl_mpi_op_min{rocl_mpi_op::kMagic, kMin}, rocl_mpi_op_sum{rocl_mpi_op::kMagic, kSum},
    rocl_mpi_op_prod{rocl_mpi_op::kMagic, kProd}, rocl_mpi_op_land{rocl_mpi_op::kMagic, kLand},
    rocl_mpi_op_band{rocl_mpi_op::kMagic, kBand}, rocl_mpi_op_lor{rocl_mpi_op::kMagic, kLor},
    rocl_mpi_op_bor{rocl_mpi_op::kMagic, kBor}, rocl_mpi_op_lxor{rocl_mpi_op::kMagic, kLxor},
    rocl_mpi_op_bxor{rocl_mpi_op::kMagic, kBxor}, rocl_mpi_op_maxloc{rocl_mpi_op::kMagic, kMaxloc},
    rocl_mpi_op_minloc{rocl_mpi_op::kMagic, kMinloc};

namespace rmpi {
namespace {

using Fn = void (*)(const void *in, void *inout, std::size_t n);

// inout[i] = in[i] op inout[i] for each element.
template <class T, class F>
void each(const void *in, void *inout, std::size_t n) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (std::size_t i = 0; i < n; ++i) b[i] = T(F{}(a[i], b[i]));
}
struct Max {
  template <class T>
  T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
struct Sum {
  template <class T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct Prod {
  template <class T>
  T operator()(T a, T b) const {
    return a * b;
  }
};
struct Land {
  template <class T>
  T operator()(T a, T b) const {
    return a && b;
  }
};
struct Lor {
  template <class T>
  T operator()(T a, T b) const {
    return a || b;
  }
};
struct Lxor {
  template <class T>
  T operator()(T a, T b) const {
    return !a != !b;
  }
};
struct Band {
  template <class T>
  T operator()(T a, T b) const {
    return a & b;
  }
};
struct Bor {
  template <class T>
  T operator()(T a, T b) const {
    return a | b;
  }
};
struct Bxor {
  template <class T>
  T operator()(T a, T b) const {
    return a ^ b;
  }
};

template <class V, class I>
struct Pair {
  V v;
  I i;
};
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

template <class T>
Fn arithmetic(int op) {
  switch (op) {
    case kMax:
      return each<T, Max>;
    case kMin:
      return each<T, Min>;
    case kSum:
      return each<T, Sum>;
    case kProd:
      return each<T, Prod>;
    default:
      return nullptr;
  }
}
template <class T>
Fn integer(int op) {
  switch (op) {
    case kLand:
      return each<T, Land>;
    case kLor:
      return each<T, Lor>;
    case kLxor:
      return each<T, Lxor>;
    case kBand:
      return each<T, Band>;
    case kBor:
      return each<T, Bor>;
    case kBxor:
      return each<T, Bxor>;
    default:
      return arithmetic<T>(op);
  }
}
template <class V, class I>
Fn pair(int op) {
  return op == kMaxloc ? loc<V, I, true> : op == kMinloc ? loc<V, I, false> : nullptr;
}

Fn function_for(int op, int basic) {
  switch (basic) {
    case kChar:
      return integer<char>(op);
    case kSChar:
      return integer<signed char>(op);
    case kUChar:
      return integer<unsigned char>(op);
    case kByte:
      return op == kBand || op == kBor || op == kBxor ? integer<unsigned char>(op) : nullptr;
    case kShort:
      return integer<short>(op);
    case kUShort:
      return integer<unsigned short>(op);
    case kInt:
      return integer<int>(op);
    case kUInt:
      return integer<unsigned>(op);
    case kLong:
      return integer<long>(op);
    case kULong:
      return integer<unsigned long>(op);
    case kLLong:
      return integer<long long>(op);
    case kULLong:
      return integer<unsigned long long>(op);
    case kFloat:
      return arithmetic<float>(op);
    case kDouble:
      return arithmetic<double>(op);
    case kLDouble:
      return arithmetic<long double>(op);
    case kBool:
      return op == kLand   ? each<bool, Land>
             : op == kLor  ? each<bool, Lor>
             : op == kLxor ? each<bool, Lxor>
                           : nullptr;
    case kI8:
      return integer<std::int8_t>(op);
    case kU8:
      return integer<std::uint8_t>(op);
    case kI16:
      return integer<std::int16_t>(op);
    case kU16:
      return integer<std::uint16_t>(op);
    case kI32:
      return integer<std::int32_t>(op);
    case kU32:
      return integer<std::uint32_t>(op);
    case kI64:
      return integer<std::int64_t>(op);
    case kU64:
      return integer<std::uint64_t>(op);
    case kFloatInt:
      return pair<float, int>(op);
    case kDoubleInt:
      return pair<double, int>(op);
    case kLongInt:
      return pair<long, int>(op);
    case k2Int:
      return pair<int, int>(op);
    case kShortInt:
      return pair<short, int>(op);
    case kLDoubleInt:
      return pair<long double, int>(op);
    default:
      return nullptr;
  }
}

const char *const kOpName[] = {"MPI_MAX",  "MPI_MIN",  "MPI_SUM",    "MPI_PROD",
                               "MPI_LAND", "MPI_BAND", "MPI_LOR",    "MPI_BOR",
                               "MPI_LXOR", "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC"};

}  // namespace

int check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype t, const char *who) {
  if (op == MPI_OP_NULL || op->magic != rocl_mpi_op::kMagic) {
    return fail(comm, MPI_ERR_OP, who, "not a reduction operation");
  }
  if (op->user == nullptr && function_for(op->builtin, t->basic) == nullptr) {
    return fail(comm, MPI_ERR_OP, who, "%s is not defined on this datatype", kOpName[op->builtin]);
  }
  if (op->user == nullptr && !t->dense) {
    return fail(comm, MPI_ERR_TYPE, who, "reductions need a datatype without gaps");
  }
  return MPI_SUCCESS;
}

int reduce_local(MPI_Comm comm, MPI_Op op, MPI_Datatype t, const void *in, void *inout, int count,
                 const char *who) {
  if (int rc = check_op(comm, op, t, who)) return rc;
  if (op->user != nullptr) {
    op->user(const_cast<void *>(in), inout, &count, &t);
  } else {
    function_for(op->builtin, t->basic)(in, inout, std::size_t(count) * t->basic_count);
  }
  return MPI_SUCCESS;
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op) {
  if (user_fn == nullptr)
    return fail(nullptr, MPI_ERR_ARG, "MPI_Op_create", "the function is NULL");
  *op = new rocl_mpi_op{rocl_mpi_op::kMagic, -1, user_fn, commute != 0};
  return MPI_SUCCESS;
}

int MPI_Op_free(MPI_Op *op) {
  if (*op == MPI_OP_NULL || (*op)->magic != rocl_mpi_op::kMagic || (*op)->user == nullptr) {
    return fail(nullptr, MPI_ERR_OP, "MPI_Op_free", "not a user-defined operation");
  }
  (*op)->magic = 0;
  delete *op;
  *op = MPI_OP_NULL;
  return MPI_SUCCESS;
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op) {
  if (int rc = check_type(nullptr, datatype, "MPI_Reduce_local")) return rc;
  return reduce_local(nullptr, op, datatype, inbuf, inoutbuf, count, "MPI_Reduce_local");
}

}  // extern "C"
