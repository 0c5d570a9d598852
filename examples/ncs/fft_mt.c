/* fft_mt - the DIF FFT, multithreaded NCS: two user threads per process,
 * each with its own rows of butterflies (figures 20 and 21); the last
 * exchange is between the two threads of a process.
 *
 *   roclrun -n 4 fft_mt [M [sets]]
 */
#include "fft_dif.h"

int main(int argc, char **argv) {
  return fft_dif_main("fft_mt", 2, argc, argv);
}
