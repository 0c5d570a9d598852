/* errors: error classes returned under MPI_ERRORS_RETURN (rocl-specific).
 * Invalid communicator, rank, tag, count, datatype, root, op and request
 * arguments give the right error classes, Error_string describes them, the
 * communicator keeps working afterwards, and windows made with a negative
 * size or a displacement unit of 0, or freed twice, are refused.
 *
 * The checks of invalid arguments are required of rocl only: the standard
 * leaves argument checking to the implementation. Other MPIs print
 * "errors: skipped (rocl-specific)". Compile with -DERRORS_TEST_ANY_MPI to
 * run the portable part anyway (that is how it was validated against Open MPI
 * and MPICH). */
#include "mpi_check.h"

#if defined(ROCL_MPI) || defined(ERRORS_TEST_ANY_MPI)

static int rank, size;

static void expect_class(int rc, int want, const char *what, const char *want_name) {
  CHECK(rc != MPI_SUCCESS, "%s: returned MPI_SUCCESS, want %s", what, want_name);
  int cls = -1;
  CHECK_MPI(MPI_Error_class(rc, &cls));
  char msg[MPI_MAX_ERROR_STRING];
  int len = -1;
  CHECK_MPI(MPI_Error_string(rc, msg, &len));
  CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(msg) == len,
        "%s: Error_string length %d", what, len);
  CHECK(cls == want, "%s: error class %d (\"%s\"), want %s (%d)", what, cls, msg, want_name, want);
}

#define EXPECT(call, cls) expect_class((call), (cls), #call, #cls)

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Errhandler eh;
  CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
  CHECK(eh == MPI_ERRORS_RETURN, "errhandler of WORLD is not ERRORS_RETURN");

  int buf[4] = {0, 0, 0, 0};
  void *attr;
  int flag = 0;
  CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag));
  int tag_ub = *(int *)attr;
  MPI_Request rq = MPI_REQUEST_NULL;

  /* communicator (the error is raised on MPI_COMM_WORLD's handler when
   * there is no valid communicator to take one from) */
  EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
  EXPECT(MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, MPI_STATUS_IGNORE), MPI_ERR_COMM);
  EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
  int r = 0;
  EXPECT(MPI_Comm_rank(MPI_COMM_NULL, &r), MPI_ERR_COMM);
  /* rank */
  EXPECT(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
  EXPECT(MPI_Send(buf, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
  EXPECT(MPI_Isend(buf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &rq), MPI_ERR_RANK);
  EXPECT(MPI_Recv(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
  /* tag */
  EXPECT(MPI_Send(buf, 1, MPI_INT, rank, -1, MPI_COMM_WORLD), MPI_ERR_TAG);
  EXPECT(MPI_Send(buf, 1, MPI_INT, rank, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
  if (tag_ub < 0x7fffffff)
    EXPECT(MPI_Send(buf, 1, MPI_INT, rank, tag_ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG);
  EXPECT(MPI_Recv(buf, 1, MPI_INT, rank, -7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG);
  /* count */
  EXPECT(MPI_Send(buf, -1, MPI_INT, rank, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
  EXPECT(MPI_Recv(buf, -1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
  EXPECT(MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
  /* datatype */
  EXPECT(MPI_Send(buf, 1, MPI_DATATYPE_NULL, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
  MPI_Datatype unc;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &unc)); /* never committed */
  EXPECT(MPI_Send(buf, 1, unc, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
  CHECK_MPI(MPI_Type_free(&unc));
  int sz;
  EXPECT(MPI_Type_size(MPI_DATATYPE_NULL, &sz), MPI_ERR_TYPE);
  /* root and op */
  EXPECT(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
  EXPECT(MPI_Reduce(buf, buf + 1, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
  EXPECT(MPI_Allreduce(buf, buf + 1, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
  /* predefined ops only on the types MPI defines them for (MPI 3.1 5.9.2) */
  float f[2] = {1, 2};
  EXPECT(MPI_Allreduce(f, f + 1, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
#ifndef OPEN_MPI /* Open MPI 4.1.4 sums bytes (an extension of the standard) */
  EXPECT(MPI_Allreduce(buf, buf + 1, 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
#endif
  EXPECT(MPI_Allreduce(buf, buf + 1, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD), MPI_ERR_OP);
  /* request */
  MPI_Request none = MPI_REQUEST_NULL;
  EXPECT(MPI_Start(&none), MPI_ERR_REQUEST);
  /* Error codes may be any int (MPICH's exceed MPI_ERR_LASTCODE); their
   * classes may not. */
  int cls = -1;
  CHECK_MPI(MPI_Error_class(MPI_ERR_RANK, &cls));
  CHECK(cls == MPI_ERR_RANK && MPI_ERR_RANK <= MPI_ERR_LASTCODE, "class of MPI_ERR_RANK");

  /* Everything still works. */
  int x = rank, y = -1;
  CHECK_MPI(MPI_Sendrecv(&x, 1, MPI_INT, (rank + 1) % size, 1, &y, 1, MPI_INT,
                         (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(y == (rank + size - 1) % size, "Sendrecv after the errors got %d", y);

#ifdef ROCL_MPI
  /* Windows: a negative size, a displacement unit of 0, a freed window. */
  {
    char winbuf[64];
    MPI_Win win = MPI_WIN_NULL;
    EXPECT(MPI_Win_create(winbuf, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE);
    EXPECT(MPI_Win_create(winbuf, sizeof winbuf, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win),
           MPI_ERR_DISP);
    EXPECT(MPI_Win_free(&win), MPI_ERR_WIN);
  }
#endif

  test_done("errors");
  return 0;
}

#else

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (world_rank() == 0) printf("errors: skipped (rocl-specific)\n");
  MPI_Finalize();
  return 0;
}

#endif
