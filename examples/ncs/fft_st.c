/* fft_st - the DIF FFT, single-threaded message passing: one user thread
 * per process (the paper's p4 program, figure 19).
 *
 *   roclrun -n 4 fft_st [M [sets]]
 */
#include "fft_dif.h"

int main(int argc, char **argv) {
  return fft_dif_main("fft_st", 1, argc, argv);
}
