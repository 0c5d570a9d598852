/* jpeg_mt - JPEG compression and decompression, multithreaded NCS: two user
 * threads per process, each on its half of every part (figures 16-18).
 *
 *   roclrun -n 4 jpeg_mt [width [height]]
 */
#include "jpeg_pipeline.h"

int main(int argc, char **argv) {
  return jpeg_pipeline_main("jpeg_mt", 2, argc, argv);
}
