/* Sampled profiling (KERNELSMITH_PROFILE_SAMPLE=P, docs/profile.md): CUPTI
 * times kernels only P% of each period, which cuts the cost it adds to
 * every kernel on the GPU, while every launch is still counted by name
 * from the launch callbacks; the reader estimates each kernel's total from
 * its timed launches' mean and its count. Periods start at the first
 * launch, and a kernel's first launches end an untimed phase early, so
 * that every kernel gets timed launches however briefly it runs.
 *
 *   sample.c   the count table (lock-free, keyed by CUPTI's symbol name
 *              pointer) and the thread that turns kernel activity on and off
 *
 * Like the rest of the library it links nothing of ours and fails quietly. */
#ifndef KSRT_SAMPLE_H
#define KSRT_SAMPLE_H

#include <stdint.h>

#include "inject_json.h"

/* Reads KERNELSMITH_PROFILE_SAMPLE (1..99; anything else: no sampling),
 * KERNELSMITH_PROFILE_SAMPLE_PERIOD_MS (default 500) and
 * KERNELSMITH_PROFILE_SAMPLE_AFTER_MS (every launch timed for this long
 * from the first; default 0). Returns the percent, 0 when not sampling. */
unsigned ksrt_sample_init(void);
unsigned ksrt_sample_period_ms(void);
unsigned ksrt_sample_after_ms(void);
/* One launch of the kernel CUPTI names `symbol` (the callback's
 * symbolName; NULL is not counted); called before the launch. Safe from
 * any thread. */
void ksrt_sample_count(const char *symbol);
/* Starts the thread that switches kernel activity off and on; activity is
 * on when it is called. */
void ksrt_sample_start(void);
/* Stops it, leaving kernel activity on; at exit. */
void ksrt_sample_stop(void);
/* Appends one "count" line per kernel counted so far; -1 out of memory. */
int ksrt_sample_lines(ksrt_jbuf *b, long pid);

#endif
