/* ks_profile: what `kernelsmith-cc profile` measured, kernel by kernel.
 *
 * The injection library (runtime/inject/) appends one JSON line per kernel
 * execution to a file (docs/profile-format.md). This module reads those
 * lines, adds them up per kernel (mangled name), demangles the names
 * (libiberty), maps each to the kernel of the scan it came from, and writes
 * and reads the aggregated profile (schema `kernelsmith-cc.profile`,
 * version 1; docs/profile.md). It knows nothing of processes or CUPTI.
 *
 * Ownership: a ks_profile owns everything inside it (its arena);
 * ks_profile_release frees it all. The scan kernels passed to ks_profile_map
 * are borrowed only during the call: what the profile keeps of them is
 * copied. */
#ifndef KS_PROFILE_H
#define KS_PROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_model.h"

#define KS_PROFILE_SCHEMA "kernelsmith-cc.profile"
#define KS_PROFILE_VERSION 1
/* The line format this reader understands (the start line's "version"). */
#define KS_PROFILE_LINES_VERSION 1
/* Launch configurations kept per kernel, most launches first; the launches
 * of the others are only counted. */
#define KS_PROFILE_CONFIGS 4

/* One launch configuration of a kernel and how often it ran. */
typedef struct ks_profile_config {
  unsigned grid[3];
  unsigned block[3];
  unsigned long long smem_dynamic; /* bytes */
  unsigned long long launches;
  double total_ms;
} ks_profile_config;
typedef KS_ARRAY(ks_profile_config) ks_profile_configs;

/* The kernel of the user's sources a profiled name maps to. */
typedef struct ks_profile_source {
  const char *qualified_name; /* "ns::k" */
  const char *signature;      /* the scan's: "ns::k(const T *, int)" */
  const char *file;           /* absolute */
  unsigned line;
} ks_profile_source;

typedef struct ks_profile_kernel {
  const char *mangled;   /* as the driver names it */
  const char *demangled; /* full C++ name, or the mangled name when it is
                            not a C++ one (extern "C") */
  const ks_profile_source *source; /* NULL: not in the sources (a library's) */
  unsigned long long launches;
  unsigned long long untimed;   /* launches CUPTI could not time (start and
                                   end 0): counted, left out of the times */
  double total_ms, mean_ms, min_ms, max_ms; /* of the timed launches */
  double share;          /* of the run's total kernel time, 0..1 */
  unsigned long long smem_static; /* bytes, the largest seen */
  ks_profile_configs configs;     /* most launches first, at most
                                     KS_PROFILE_CONFIGS */
  unsigned long long other_launches; /* launches in configurations not kept */
  unsigned distinct_configs;      /* how many configurations were seen (at
                                     least configs.len; counting stops at 64) */
  /* Sampled profiles (sample_percent): the launches CUPTI timed; the
   * others were counted only, and total_ms (and the share) is their mean
   * times every timed-or-not launch. 0 when every launch was timed. */
  unsigned long long sampled_launches;
  /* Launches whose record came right after a record of the same kernel:
   * back to back, its data likely still in the L2 cache (verify's "warm
   * cache"). Read from the lines only; not in the JSON. */
  unsigned long long back_to_back;
} ks_profile_kernel;
typedef KS_ARRAY(ks_profile_kernel) ks_profile_kernels;

typedef struct ks_profile {
  ks_arena arena;           /* owns everything below */
  ks_strings command;       /* the profiled command line; may be empty */
  int exit_status;          /* the application's, -1 when unknown */
  int signal;               /* the signal that ended it, or 0 */
  bool ended_normally;      /* every process that started the injection
                               library also wrote its end line */
  unsigned processes;       /* start lines seen */
  unsigned long long dropped;   /* records CUPTI dropped (buffers full) */
  unsigned truncated_lines; /* a last line cut off mid-write (0 or 1) */
  unsigned long long launches;  /* kernel executions */
  unsigned sample_percent;      /* 0: every kernel timed; else the percent
                                   of the time kernels were timed
                                   (profile --sample) */
  unsigned sample_after_ms;     /* sampled: every launch timed this long first */
  double total_ms;          /* kernel time, all kernels */
  ks_profile_kernels kernels;   /* most total time first */
} ks_profile;

void ks_profile_init(ks_profile *p);
void ks_profile_release(ks_profile *p);

/* Reads the injection library's JSON lines from `path` and adds them up
 * into `out` (initialized here). A line that is not what the format says
 * fails with "PATH:LINE: ..."; a last line without its newline that does not
 * parse (the process was killed while writing it) is counted in
 * truncated_lines instead. An empty file is a profile with no kernels.
 * On failure `out` is still released with ks_profile_release. */
int ks_profile_read_lines(ks_ctx *ctx, const char *path, ks_profile *out);

/* The demangled C++ name (libiberty), in `a`; NULL when `mangled` is not a
 * C++ mangled name. */
const char *ks_profile_demangle(ks_arena *a, const char *mangled);

/* Sets each kernel's `source` to the scan kernel it is: same qualified
 * name, and for overloads and templates the parameter types and template
 * arguments decide. Kernels with no match keep NULL. Returns how many were
 * mapped. */
size_t ks_profile_map(ks_profile *p, const ks_kernels *kernels);
/* The index in `kernels` of the kernel a driver name is, by the same rules
 * (demangled: NULL to demangle `mangled` here), or -1. With `targs`, the
 * template arguments the name carries ("float, 128"; NULL when it carries
 * none), in `a`. */
long ks_profile_match(ks_arena *a, const char *mangled, const char *demangled,
                      const ks_kernels *kernels, const char **targs);

/* The qualified name a demangled name is of, without its return type,
 * template arguments and parameters: "void ns::k<float, 4>(float*, int)" is
 * "ns::k" (in `a`); a name that is not C++ comes back as it is. */
const char *ks_profile_base_name(ks_arena *a, const char *demangled);

/* The aggregated profile as JSON (docs/profile.md), and back. */
int ks_profile_write_json(ks_ctx *ctx, FILE *out, const ks_profile *p);
/* Writes to `path` through a temporary file and a rename. */
int ks_profile_save(ks_ctx *ctx, const char *path, const ks_profile *p);
int ks_profile_load(ks_ctx *ctx, const char *path, ks_profile *out);

typedef struct ks_profile_print_options {
  bool color;
  const char *relative_to; /* files below it are printed relative; NULL: as is */
  size_t max_rows;         /* 0: every kernel */
} ks_profile_print_options;

/* The table: rank, kernel, launches, total and mean ms, share, file:line
 * (or "(not in the sources)"), with notes on dropped records, a truncated
 * line and a run that did not end normally. */
void ks_profile_print(FILE *out, const ks_profile *p, const ks_profile_print_options *o);

/* One scan kernel chosen to search, with the profiled kernels mapped to it
 * added up (a template's instantiations count as one kernel). */
typedef struct ks_profile_pick {
  const ks_profile_source *source; /* NULL: the hot kernel is not in the sources */
  const char *name;                /* demangled, for messages */
  double share;                    /* 0..1 */
  double total_ms;
} ks_profile_pick;
typedef KS_ARRAY(ks_profile_pick) ks_profile_picks;

/* The hot kernels: the `top` kernels with the most total time (0: no limit),
 * keeping those with at least `min_share_percent` of the kernel time.
 * Kernels not in the sources are picked too (source NULL) so that the caller
 * can say so; they do not count towards `top`. Picks go into `a`. */
void ks_profile_select(const ks_profile *p, unsigned top, double min_share_percent, ks_arena *a,
                       ks_profile_picks *out);

#endif
