/* mpi_receiver.c - the receiving side of an MPI_Irecv/MPI_Waitall stream,
 * made countable: rank 1 posts a window of receives (post_window), sleeps
 * until every message has arrived, then completes them (wait_window), so
 * that an instruction count of either function (callgrind's
 * --toggle-collect) is the same from run to run: no spinning for messages
 * still on their way. Rank 0 sends the windows and waits for an ack after
 * each. Run by scripts/count-mpi-receiver.sh. With --sender it counts rank
 * 0 instead: send_window (64 MPI_Isend of 1 byte, each copied into the ring
 * at once) and wait_sends (their MPI_Waitall, every send already done). */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

enum { kWindow = 64, kRounds = 200, kTagData = 7, kTagAck = 8 };

__attribute__((noinline)) void post_window(char bufs[kWindow][8], MPI_Request *reqs) {
  for (int k = 0; k < kWindow; ++k) {
    MPI_Irecv(bufs[k], 1, MPI_CHAR, 0, kTagData, MPI_COMM_WORLD, &reqs[k]);
  }
}

__attribute__((noinline)) void wait_window(MPI_Request *reqs) {
  MPI_Waitall(kWindow, reqs, MPI_STATUSES_IGNORE);
}

__attribute__((noinline)) void send_window(const char *one, MPI_Request *reqs) {
  for (int k = 0; k < kWindow; ++k) {
    MPI_Isend(one, 1, MPI_CHAR, 1, kTagData, MPI_COMM_WORLD, &reqs[k]);
  }
}

__attribute__((noinline)) void wait_sends(MPI_Request *reqs) {
  MPI_Waitall(kWindow, reqs, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv) {
  int rank = 0;
  char bufs[kWindow][8];
  char one = 1;
  MPI_Request reqs[kWindow];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int r = 0; r < kRounds; ++r) {
    if (rank == 0) {
      send_window(&one, reqs);
      wait_sends(reqs);
      MPI_Recv(&one, 1, MPI_CHAR, 1, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      post_window(bufs, reqs);
      usleep(3000); /* long enough under valgrind for the window to arrive */
      wait_window(reqs);
      MPI_Send(&one, 1, MPI_CHAR, 0, kTagAck, MPI_COMM_WORLD);
    }
  }
  printf("messages %d\n", kWindow * kRounds);
  MPI_Finalize();
  return 0;
}
