/* jpeg_st - JPEG compression and decompression, single-threaded message
 * passing: one user thread per process (the paper's p4 program).
 *
 *   roclrun -n 4 jpeg_st [width [height]]
 */
#include "jpeg_pipeline.h"

int main(int argc, char **argv) {
  return jpeg_pipeline_main("jpeg_st", 1, argc, argv);
}
