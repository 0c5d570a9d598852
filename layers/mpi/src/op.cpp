// op.cpp - reduction operations: the predefined ones for every basic type
// they are defined on (MPI 3.1 section 5.9.2), and user functions.
#include <cwchar>

#include "mpi_impl.hpp"
#include "reductions.hpp"

using namespace rmpi;  // the Builtin ops

struct rocl_mpi_op rocl_mpi_op_max {
  rocl_mpi_op::kMagic, kMax
}, rocl_mpi_op_min{rocl_mpi_op::kMagic, kMin}, rocl_mpi_op_sum{rocl_mpi_op::kMagic, kSum},
    rocl_mpi_op_prod{rocl_mpi_op::kMagic, kProd}, rocl_mpi_op_land{rocl_mpi_op::kMagic, kLand},
    rocl_mpi_op_band{rocl_mpi_op::kMagic, kBand}, rocl_mpi_op_lor{rocl_mpi_op::kMagic, kLor},
    rocl_mpi_op_bor{rocl_mpi_op::kMagic, kBor}, rocl_mpi_op_lxor{rocl_mpi_op::kMagic, kLxor},
    rocl_mpi_op_bxor{rocl_mpi_op::kMagic, kBxor}, rocl_mpi_op_maxloc{rocl_mpi_op::kMagic, kMaxloc},
    rocl_mpi_op_minloc{rocl_mpi_op::kMagic, kMinloc},
    rocl_mpi_op_replace{rocl_mpi_op::kMagic, kReplace},
    rocl_mpi_op_no_op{rocl_mpi_op::kMagic, kNoOp};

namespace rmpi {
namespace {

// The function of a predefined op on a type, or nullptr where MPI does not
// define it (the type's reducer: reductions.hpp).
Fn function_for(int op, MPI_Datatype t) {
  return t->reducer != nullptr ? t->reducer(op) : nullptr;
}

const char *const kOpName[] = {"MPI_MAX",    "MPI_MIN",    "MPI_SUM",     "MPI_PROD", "MPI_LAND",
                               "MPI_BAND",   "MPI_LOR",    "MPI_BOR",     "MPI_LXOR", "MPI_BXOR",
                               "MPI_MAXLOC", "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP"};

}  // namespace

const char *op_name(int builtin) {
  return builtin >= 0 && builtin < kBuiltins ? kOpName[builtin] : "a user-defined operation";
}

int check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype t, const char *who) {
  if (op == MPI_OP_NULL || op->magic != rocl_mpi_op::kMagic) {
    return fail(comm, MPI_ERR_OP, who, "not a reduction operation");
  }
  if (op->builtin >= kReplace) {
    return fail(comm, MPI_ERR_OP, who, "%s is for one-sided accumulates only",
                kOpName[op->builtin]);
  }
  if (op->user == nullptr && function_for(op->builtin, t) == nullptr) {
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
    function_for(op->builtin, t)(in, inout, std::size_t(count) * t->basic_count);
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
