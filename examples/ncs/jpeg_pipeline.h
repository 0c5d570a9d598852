/* jpeg_pipeline.h - the paper's distributed JPEG compression and
 * decompression (section 5.2, figures 15-18), shared by its single- and
 * multithreaded programs: half the processes compress a part of the image
 * each, send it to a partner in the other half, which decompresses it and
 * sends it to the master (process 0), which combines the parts. */
#ifndef NCS_EXAMPLE_JPEG_PIPELINE_H
#define NCS_EXAMPLE_JPEG_PIPELINE_H

/* Runs the pipeline with `threads` user threads per process (1: plain
 * message passing) on a width x height test image read from argv
 * ([width [height]], default 1200 x 800), checks the master's combined
 * image against the same parts compressed and decompressed serially, and
 * returns the exit status. Prints "<name>: OK ..." or "<name>: FAILED". */
int jpeg_pipeline_main(const char *name, int threads, int argc, char **argv);

#endif
