/* init_env: environment functions.
 * Initialized/Finalized before and after, Init_thread levels, Query_thread,
 * Is_thread_main, Wtime/Wtick, Get_processor_name, Get_version (also before
 * Init and after Finalize), MPI_TAG_UB, MPI_COMM_SELF basics. */
#include "mpi_check.h"

int main(int argc, char **argv) {
  int flag = -1;
  CHECK_MPI(MPI_Initialized(&flag));
  CHECK(flag == 0, "Initialized before Init gave %d", flag);
  flag = -1;
  CHECK_MPI(MPI_Finalized(&flag));
  CHECK(flag == 0, "Finalized before Init gave %d", flag);

  /* MPI_Get_version may be called before MPI_Init (MPI 3.1 8.7). */
  int ver0 = -1, sub0 = -1;
  CHECK_MPI(MPI_Get_version(&ver0, &sub0));

  int provided = -1;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  int rank, size;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size >= 1 && rank >= 0 && rank < size, "rank %d size %d", rank, size);

  /* Thread levels: the four constants are ordered; provided is one. */
  CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
            MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
        "thread level constants not monotonic");
  CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
            provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
        "provided level %d is not one of the four", provided);
  int queried = -1;
  CHECK_MPI(MPI_Query_thread(&queried));
  CHECK(queried == provided, "Query_thread %d != provided %d", queried, provided);
  flag = -1;
  CHECK_MPI(MPI_Is_thread_main(&flag));
  CHECK(flag != 0 && flag != -1, "Is_thread_main in main thread gave %d", flag);

  flag = -1;
  CHECK_MPI(MPI_Initialized(&flag));
  CHECK(flag != 0, "Initialized after Init gave 0");
  flag = -1;
  CHECK_MPI(MPI_Finalized(&flag));
  CHECK(flag == 0, "Finalized after Init gave %d", flag);

  /* Wtime is monotonic and advances; Wtick is a sane resolution. */
  double tick = MPI_Wtick();
  CHECK(tick > 0.0 && tick < 1.0, "Wtick %g", tick);
  double t0 = MPI_Wtime(), prev = t0;
  for (int i = 0; i < 10000; i++) {
    double t = MPI_Wtime();
    CHECK(t >= prev, "Wtime went backwards: %.9f < %.9f", t, prev);
    prev = t;
  }
  sleep_ms(30);
  double t1 = MPI_Wtime();
  CHECK(t1 - t0 >= 0.025 && t1 - t0 < 10.0, "Wtime measured %.6f s around a 30 ms sleep", t1 - t0);

  /* Processor name. */
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = -1;
  memset(name, 'x', sizeof name);
  CHECK_MPI(MPI_Get_processor_name(name, &len));
  CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
  CHECK((int)strnlen(name, MPI_MAX_PROCESSOR_NAME) == len,
        "processor name not NUL-terminated at len %d", len);

  /* Version. */
  int ver = -1, sub = -1;
  CHECK_MPI(MPI_Get_version(&ver, &sub));
  CHECK(ver == ver0 && sub == sub0, "Get_version before Init %d.%d, after %d.%d", ver0, sub0, ver,
        sub);
  CHECK(ver == MPI_VERSION && sub == MPI_SUBVERSION,
        "Get_version %d.%d != MPI_VERSION.MPI_SUBVERSION %d.%d", ver, sub, MPI_VERSION,
        MPI_SUBVERSION);
#ifdef ROCL_MPI
  CHECK(ver >= 3, "rocl MPI version %d.%d < 3", ver, sub);
#else
  CHECK(ver >= 2, "MPI version %d.%d < 2", ver, sub);
#endif
  CHECK(sub >= 0, "subversion %d", sub);

  /* MPI_TAG_UB attribute: at least 32767, and usable as a tag. */
  void *attr = NULL;
  flag = 0;
  CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag));
  CHECK(flag != 0 && attr != NULL, "MPI_TAG_UB attribute missing");
  int tag_ub = *(int *)attr;
  CHECK(tag_ub >= 32767, "MPI_TAG_UB %d < 32767", tag_ub);
  int v = rank + 1000, w = -1;
  MPI_Status st;
  CHECK_MPI(MPI_Sendrecv(&v, 1, MPI_INT, rank, tag_ub, &w, 1, MPI_INT, rank, tag_ub, MPI_COMM_WORLD,
                         &st));
  CHECK(w == v && st.MPI_TAG == tag_ub && st.MPI_SOURCE == rank,
        "self Sendrecv with tag MPI_TAG_UB: got %d tag %d src %d", w, st.MPI_TAG, st.MPI_SOURCE);

  /* MPI_COMM_SELF. */
  int srank = -1, ssize = -1;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &srank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &ssize));
  CHECK(srank == 0 && ssize == 1, "COMM_SELF rank %d size %d", srank, ssize);

  /* Every rank agrees on the size. */
  int sizes[2] = {size, -size}, red[2];
  CHECK_MPI(MPI_Allreduce(sizes, red, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  CHECK(red[0] == size && red[1] == -size, "ranks disagree on the size");

  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  CHECK_MPI(MPI_Finalize());

  flag = -1;
  CHECK_MPI(MPI_Finalized(&flag));
  CHECK(flag != 0, "Finalized after Finalize gave 0");
  flag = -1;
  CHECK_MPI(MPI_Initialized(&flag));
  CHECK(flag != 0, "Initialized after Finalize gave 0");
  ver = sub = -1;
  CHECK_MPI(MPI_Get_version(&ver, &sub));
  CHECK(ver == ver0 && sub == sub0, "Get_version after Finalize %d.%d", ver, sub);

  if (rank == 0)
    printf("init_env: OK (provided thread level %d, MPI %d.%d, %d ranks)\n", provided, ver, sub,
           size);
  return 0;
}
