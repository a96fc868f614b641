/* worker: the inside of kernelsmith-worker, shared by its files.
 *
 *   main.c    the request loop on fds 3 (in) and 4 (out)
 *   device.c  the device: driver, primary context, NVML, device facts;
 *             modules, launches, and what a CUDA error means
 *   buffers.c device buffers with guard zones, pristine input copies,
 *             poison patterns, canary checks
 *   fill.c    seeded inputs for every distribution and element type,
 *             and a capture file's bytes
 *   verify.c  one seed: four runs, comparisons, races, canaries, inputs;
 *             a replay of the original against what a capture recorded
 *   timing.c  interleaved timing with L2 flushes and the clock filter
 *   reference.c  the fp64 reference: widened buffers, its run, the
 *             outputs' errors against it
 *   run.c     a run request from start to end; the ceilings
 *
 * The worker is single-threaded and handles one request at a time. A CUDA
 * error that leaves the context unusable (an illegal address, a trap) sets
 * `dead`: the reply goes out and the process exits, so the main process
 * starts a fresh one. Prefix: wk_. */
#ifndef KS_WORKER_INTERNAL_H
#define KS_WORKER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_cuda.h"
#include "ks_nvml.h"
#include "ks_wire.h"
#include "ks_worker.h"

/* Bytes of guard zone on each side of every buffer. */
enum { WK_GUARD = 4096, WK_ALIGN = 256, WK_CANARY_BYTE = 0xA7 };

typedef struct wk_state {
  ks_ctx *ctx;
  int ordinal;             /* CUDA device, from --device */
  bool ready;              /* device opened */
  bool tried;              /* wk_open ran (it is not retried) */
  bool no_device;          /* why not ready: no driver or no GPU */
  char open_error[2048];  /* as long as ks_ctx.error */
  bool dead;               /* the context is unusable: exit after replying */
  ks_cuda cu;
  CUdevice dev;
  CUcontext context;
  bool have_nvml;
  ks_nvml nvml;
  ks_nvml_device nvml_dev;
  ks_device_info info;
  int smem_optin;          /* most shared memory a block may opt in to */
  CUdeviceptr flush;       /* the L2 flush buffer, kept between requests */
  size_t flush_bytes;
  struct wk_fill_cache *fills; /* generated inputs kept between requests
                                  (buffers.c): a search sends the same
                                  seeds for every candidate of a kernel */
  struct wk_pool *pool;    /* workload buffers kept between requests */
  bool profile;            /* KS_WORKER_PROFILE: phase times on stderr */
  double t_fill, t_download, t_compare; /* this request's, in seconds */
} wk_state;

/* Seconds on the monotonic clock (for the profile). */
double wk_now(void);

/* ---- device.c ---- */
/* Loads the driver, retains the primary context, reads the device facts and
 * finds it in NVML. Failure leaves the reason in open_error. */
int wk_open(wk_state *w);
void wk_close(wk_state *w);
/* Frees the inputs kept between requests (buffers.c). */
void wk_fill_cache_release(wk_state *w);

/* A loaded kernel. */
typedef struct wk_kernel {
  CUmodule module;
  CUfunction fn;
  const char *label;        /* "base" or "cand" */
  ks_launch_cfg launch;
  int registers, local_bytes, static_smem;
} wk_kernel;

/* What went wrong with a request, as the reply will say it. */
typedef struct wk_outcome {
  ks_run_status status;     /* KS_RUN_OK until something fails */
  const char *error;
  const char *kernel;       /* "base", "cand", or NULL */
} wk_outcome;

/* Records a failed driver call in `out` (first failure wins) and returns -1;
 * returns 0 for CUDA_SUCCESS. `failing` is the status for an error that
 * leaves the context usable; an error that poisons it becomes
 * KS_RUN_CRASHED and sets w->dead. */
int wk_cuda(wk_state *w, ks_arena *arena, wk_outcome *out, CUresult r, ks_run_status failing,
            const char *kernel, const char *what);
/* Loads `m`, reads its attributes, and opts in to the dynamic shared memory
 * its launch asks for. */
int wk_kernel_load(wk_state *w, ks_arena *arena, const ks_module *m, const char *label,
                   const ks_launch_cfg *launch, wk_kernel *k, wk_outcome *out);
void wk_kernel_unload(wk_state *w, wk_kernel *k);
/* Launches on the default stream; with `sync`, waits and checks the result. */
int wk_launch(wk_state *w, ks_arena *arena, wk_kernel *k, void **params, bool sync,
              wk_outcome *out);

/* ---- buffers.c ---- */
typedef struct wk_buffer {
  const ks_wbuffer *spec;
  size_t esize;             /* bytes per element */
  size_t bytes;             /* count * esize */
  CUdeviceptr alloc;        /* the whole allocation: guard, data, guard */
  CUdeviceptr ptr;          /* what the kernel gets: alloc + WK_GUARD */
  size_t after;             /* guard bytes after the data, padding included */
  CUdeviceptr pristine;     /* in/inout: the inputs, restored before runs */
  unsigned char *input;     /* in/inout: host copy of the inputs */
  unsigned char *slot[3];   /* out/inout: host copies of outputs (verify.c) */
  bool base_changes;        /* in: the original itself modifies it */
  bool filled;              /* input and pristine hold filled_seed's data,
                               or file_key's for a KS_DIST_FILE buffer */
  unsigned long long filled_seed;
  char *file_key;           /* KS_DIST_FILE: the file (identity and path)
                               and offset the inputs were read from;
                               malloc'ed, NULL when not read */
  /* The inputs of the seed before (buffers.c): a search alternates between
   * two seeds on its timed size, timing and recheck. */
  CUdeviceptr alt_pristine;
  unsigned char *alt_input;
  bool alt_filled;
  unsigned long long alt_seed;
} wk_buffer;

/* A buffer's name for reports; never NULL (NULL means "none" there). */
static inline const char *wk_name(const wk_buffer *b) {
  return b->spec->name ? b->spec->name : "?";
}

typedef struct wk_buffers {
  wk_buffer *items;
  size_t len;
  void **params;            /* kernel parameters, shared by both kernels */
  unsigned char *storage;   /* their bytes: pointers, scalars and raw
                               bytes, each at a 16-byte aligned place */
  unsigned char *scratch;   /* host room for guard and input checks */
  size_t scratch_bytes;
} wk_buffers;

/* Allocates every buffer with its guards and host copies, and the kernel
 * parameters. A failure (too little memory) is a LAUNCH_FAILED outcome. */
int wk_buffers_alloc(wk_state *w, ks_arena *arena, const ks_workload *work, wk_buffers *out,
                     wk_outcome *outcome);
void wk_buffers_free(wk_state *w, wk_buffers *b);
/* Points the buffers at `work`'s specs (same shapes as allocated) and sets
 * the kernel parameters from its arguments. */
void wk_buffers_bind(wk_buffers *out, const ks_workload *work);

/* ---- pool.c ---- */
/* Buffers for `work`, kept from an earlier request with the same buffer
 * specs when there is one (inputs of a seed already filled are not filled
 * again), else newly allocated. */
int wk_pool_acquire(wk_state *w, ks_arena *arena, const ks_workload *work, wk_buffers **out,
                    wk_outcome *outcome);
/* Hands `b` back: kept for the next request when `keep` (the request went
 * well), else freed. */
void wk_pool_release(wk_state *w, wk_buffers *b, bool keep);
/* Frees every kept set. */
void wk_pool_clear(wk_state *w);
/* Fills inputs on the host from (seed, buffer index), or from its file for
 * a KS_DIST_FILE buffer (the same for every seed), uploads them to the
 * buffer and its pristine copy. A file that cannot be read is a
 * LAUNCH_FAILED outcome naming the buffer, the file and the offset. */
int wk_buffers_fill(wk_state *w, ks_arena *arena, wk_buffers *b, unsigned long long seed,
                    wk_outcome *out);
/* Before a run: inputs back from their pristine copies, `out` buffers
 * poisoned with pattern `which` (1: NaN or 0xCD..., 2: a large negative or
 * 0xA5...; 0: left as they are), guard zones rewritten. */
int wk_buffers_prepare(wk_state *w, ks_arena *arena, wk_buffers *b, int which, wk_outcome *out);
/* in/inout buffers from their pristine copies only (timing). */
int wk_buffers_restore(wk_state *w, ks_arena *arena, wk_buffers *b, bool inout_only,
                       wk_outcome *out);
/* Copies every out/inout buffer into its host slot `slot`. */
int wk_buffers_download(wk_state *w, ks_arena *arena, wk_buffers *b, int slot, wk_outcome *out);
/* The index of the first buffer whose guard zone no longer holds the
 * canary (*before: the zone below it), -1 when all hold, -2 on an error. */
int wk_buffers_canary(wk_state *w, ks_arena *arena, wk_buffers *b, bool *before, wk_outcome *out);
/* Marks `changed[i]` for each `in` buffer that differs from its host copy. */
int wk_buffers_inputs_changed(wk_state *w, ks_arena *arena, wk_buffers *b, bool *changed,
                              wk_outcome *out);
/* The poison pattern's bytes for one element of `t` (8 bytes of room). */
void wk_poison_bytes(ks_dtype t, int which, unsigned char out[8]);

/* ---- fill.c ---- */
/* Writes b->count elements of b's distribution into `host`, deterministic
 * in (seed, index). */
void wk_fill(const ks_wbuffer *b, unsigned long long seed, size_t index, void *host);
/* Element `i` of a typed array as a double (f16 and bf16 decoded). */
double wk_elem_double(ks_dtype t, const void *data, size_t i);
/* Reads `bytes` bytes at `offset` of `path` into `dst`; NULL when done, else
 * why not (in `arena`): missing, unreadable, or shorter than that. */
const char *wk_read_file(ks_arena *arena, const char *path, unsigned long long offset, void *dst,
                         size_t bytes);
/* A scalar argument's bytes as the kernel expects them. */
void wk_scalar_bytes(ks_dtype t, ks_value v, unsigned char out[8]);
/* IEEE half and bfloat16 from a float, round to nearest even. */
unsigned short wk_f32_to_f16(float f);
unsigned short wk_f32_to_bf16(float f);
float wk_f16_to_f32(unsigned short h);
float wk_bf16_to_f32(unsigned short h);

/* ---- verify.c ---- */
/* The effective tolerance of an output (defaults by type for < 0). */
void wk_tolerance(const ks_wbuffer *b, double *atol, double *rtol);
/* Whether `got` is an acceptable value where `want` was expected (NaN
 * matches only NaN); the errors are set for pairs of finite values. */
bool wk_element_ok(double want, double got, double atol, double rtol, double *abs_err,
                   double *rel_err);
/* Compares the candidate's outputs (slot `got`) with the original's (slot
 * `want`); `second`, if >= 0, is the candidate's run with pattern 2, used to
 * tell unwritten elements. */
void wk_compare_outputs(ks_arena *arena, const wk_buffers *b, int want, int got, int second,
                        ks_output_checks *out);
/* The capture fields of `c` (has_capture and capture_*): `got` (the
 * original's output) against `want` (what the capture recorded), b->count
 * elements each. Elements whose bytes differ are bit diffs; of those,
 * mismatches are the integers, and the floats beyond b's tolerance (two
 * NaNs match, equal values such as -0 and +0 match). */
void wk_compare_capture(const ks_wbuffer *b, const void *want, const void *got,
                        ks_output_check *c);
/* The fp64 reference of a request: the original's twin and its buffers. */
typedef struct wk_reference {
  wk_kernel kernel;         /* label "ref" */
  wk_buffers bufs;          /* the workload with f32 widened to f64 */
  bool allocated;           /* bufs is allocated (the recheck allocates
                               them only when a mismatch needs them) */
} wk_reference;

/* One seed of verification; appends to res->seeds. `ref` (NULL: none) runs
 * on the seed's inputs widened, and the outputs are measured against it. */
int wk_verify_seed(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *base, wk_kernel *cand,
                   wk_reference *ref, unsigned long long seed, ks_run_result *res,
                   wk_outcome *out);

/* One seed of a replay: the original alone, outputs poisoned with pattern
 * 1, guard zones checked; each out/inout buffer with an expect_file
 * compared with it (slot 1 holds the expected bytes). Appends one seed
 * check, one output check per out/inout buffer. */
int wk_replay_seed(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *base,
                   unsigned long long seed, ks_run_result *res, wk_outcome *out);

/* ---- reference.c ---- */
/* Why the fp64 reference cannot run on `work`, or NULL: raw-byte arguments
 * not marked ref_same and pointers into the middle of a float have no
 * widened twin. Captured (file) inputs are widened like generated ones. */
const char *wk_ref_refusal(const ks_workload *work);
/* `count` elements of type `t` at `src` as doubles at `dst`, exactly: f16,
 * bf16 and f32 bit for bit (subnormals normalized, infinities, NaNs with
 * their sign and payload, signalling ones too), whatever the FPU's
 * denormal mode; f64 copied; integers converted. */
void wk_widen_f64(ks_dtype t, const void *src, size_t count, void *dst);
/* The twin's workload: f32 buffers and f32 scalars as f64 (a scalar through
 * the float the original receives); everything else as it was. */
const ks_workload *wk_ref_workload(ks_arena *arena, const ks_workload *work);
/* The original's launch, with room for doubles where it had floats: the
 * dynamic shared memory doubled. */
ks_launch_cfg wk_ref_launch(const ks_launch_cfg *original);
/* Widens the inputs now in `b` into the reference's buffers, runs it
 * (outputs poisoned with pattern 1) and downloads its outputs into their
 * slot 0. A failure is the reference's (kernel "ref"). */
int wk_ref_run(wk_state *w, ks_arena *arena, const wk_buffers *b, wk_reference *ref,
               wk_outcome *out);
/* The tolerance against the reference: the tighter of the buffer's and its
 * type's default. */
void wk_ref_tolerance(const ks_wbuffer *b, double *atol, double *rtol);
/* Fills the ref_ fields of `checks` (one per output of `b`, in order, as
 * wk_compare_outputs made them) from slots `base` and `cand` of `b` and the
 * reference's slot 0; floating-point outputs only. */
void wk_ref_compare(const wk_buffers *b, int base, int cand, const wk_buffers *ref,
                    ks_output_checks *checks);

/* ---- timing.c ---- */
void wk_timing_defaults(ks_timing_options *t);
/* Interleaved timing of base and (if non-NULL) cand on the inputs in `b`. */
int wk_time(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *base, wk_kernel *cand,
            const ks_timing_options *opts, ks_timing *out, wk_outcome *outcome);

/* Median of `x` (sorted in place). */
double wk_median(double *x, size_t n);

/* ---- run.c ---- */
void wk_run(wk_state *w, ks_arena *arena, const ks_run_request *req, ks_run_result *res);
int wk_ceilings(wk_state *w, ks_arena *arena, const ks_module *copy, const ks_module *fma,
                int fma_flops_per_iter, ks_ceilings *out, wk_outcome *outcome);

#endif
