// unsupported.cpp - functions common programs reference but rarely call
// (one-sided windows): they link, and each call returns
// MPI_ERR_UNSUPPORTED_OPERATION through the communicator's error handler, naming itself.
#include "mpi_impl.hpp"

namespace {
int unsupported(MPI_Comm comm, const char *who) {
  return rmpi::fail(comm, MPI_ERR_UNSUPPORTED_OPERATION, who,
                    "not supported by rocl's MPI (see docs/mpi.md for what is)");
}
}  // namespace

extern "C" {

int MPI_Win_create(void *, MPI_Aint, int, MPI_Info, MPI_Comm comm, MPI_Win *) {
  return unsupported(comm, "MPI_Win_create");
}
int MPI_Win_allocate(MPI_Aint, int, MPI_Info, MPI_Comm comm, void *, MPI_Win *) {
  return unsupported(comm, "MPI_Win_allocate");
}
int MPI_Win_free(MPI_Win *) {
  return unsupported(nullptr, "MPI_Win_free");
}
int MPI_Win_fence(int, MPI_Win) {
  return unsupported(nullptr, "MPI_Win_fence");
}
int MPI_Win_lock(int, int, int, MPI_Win) {
  return unsupported(nullptr, "MPI_Win_lock");
}
int MPI_Win_unlock(int, MPI_Win) {
  return unsupported(nullptr, "MPI_Win_unlock");
}
int MPI_Put(const void *, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win) {
  return unsupported(nullptr, "MPI_Put");
}
int MPI_Get(void *, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win) {
  return unsupported(nullptr, "MPI_Get");
}
int MPI_Accumulate(const void *, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Op,
                   MPI_Win) {
  return unsupported(nullptr, "MPI_Accumulate");
}

}  // extern "C"
