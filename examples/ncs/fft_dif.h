/* fft_dif.h - the paper's distributed decimation-in-frequency FFT (section
 * 5.3, figures 19-21), shared by its single- and multithreaded programs. */
#ifndef NCS_EXAMPLE_FFT_DIF_H
#define NCS_EXAMPLE_FFT_DIF_H

/* Runs `sets` FFTs of M points (argv: [M [sets]], default 16384 and 8; M a
 * power of two) over every user thread of the job, `threads` per process
 * (1: plain message passing; the workers must be a power of two and at
 * most M), checks each result against FFTW and returns the exit status.
 * Prints "<name>: OK ..." or "<name>: FAILED ...". */
int fft_dif_main(const char *name, int threads, int argc, char **argv);

#endif
