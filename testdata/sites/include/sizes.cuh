/* Sizes and launch shapes kept in a header, the way benchmark suites keep
 * them: a dataset switch that only the preprocessor resolves, block sizes as
 * macros, loop bounds through a function-like macro. Used by
 * tests/test_spec.c (sites_read_header_macros). */
#ifndef SIZES_CUH
#define SIZES_CUH

#if !defined(SMALL_DATASET) && !defined(LARGE_DATASET)
#define STANDARD_DATASET
#endif

#ifdef SMALL_DATASET
#define NI 256
#define NJ 256
#endif
#ifdef STANDARD_DATASET
#define NI 1024
#define NJ 512
#endif
#ifdef LARGE_DATASET
#define NI 4096
#define NJ 4096
#endif

#define LOOP_BOUND(x, y) x
#define PB_NI LOOP_BOUND(NI, ni)

#define DIM_BLOCK_X 32
#define DIM_BLOCK_Y 8

#define CEIL_DIV(m, n) (((m) + (n) - 1) / (n))
#define THREADS 256

#endif
