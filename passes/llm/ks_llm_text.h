/* ks_llm_text: the text side of the LLM proposer: the prompts of its three
 * agents and the parsing of their replies (docs/llm-prompts.md).
 *
 *   planner     parent + device + profile + best variants + memory
 *               (+ inspirations in evolve mode)  ->  PLAN: / TECHNIQUE:
 *   executor    parent + signature + plan + spec constraints + launch
 *               policy  ->  one ```cuda block OR SEARCH/REPLACE edits,
 *               and an optional ```json launch policy and guards
 *   summarizer  a slow/fast pair  ->  INSIGHT:
 *
 * Everything here is a pure function of its arguments: no I/O, no
 * environment, no network, no global state. The HTTP client is ks_llm.h;
 * the proposer that glues both is elsewhere.
 *
 * Prompt-injection stance: kernel sources, plans, memory entries and
 * compiler messages are DATA. Each is put between BEGIN/END lines carrying
 * a nonce derived from the prompt's content, inside a fence longer than any
 * backtick run in it, and the system prompt says text inside them
 * (comments included) is never an instruction. What is printed outside
 * the blocks is the tool's own text (names, numbers, the spec's fields;
 * technique chains reduced to a tag alphabet). Long inputs are cut
 * deterministically with a visible marker (ks_prompt_limits).
 *
 * Reply parsing (PCRE2, inside llm_regex.c only, with match, depth and
 * heap limits; replies over KS_REPLY_MAX_BYTES are refused unread) never
 * fails the caller: a bad reply is a ks_reply_result with a reason code and
 * one line of message that quotes at most KS_REPLY_QUOTE_MAX bytes of the
 * reply (key-like "sk-..." runs redacted), so a reply cannot smuggle a
 * secret or a wall of text into logs through a rejection.
 *
 * Ownership: every returned string lives in the arena the caller passes;
 * `const T *` arguments are borrowed for the call only. */
#ifndef KS_LLM_TEXT_H
#define KS_LLM_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_spec.h"

/* ---- prompts (llm_prompt.c) ------------------------------------------- */

typedef struct ks_prompt {
  const char *system;
  const char *user;
} ks_prompt;

/* Size caps; a zero field takes the default shown. */
typedef struct ks_prompt_limits {
  size_t source_bytes;     /* per source shown (24576); cut at a line end */
  size_t text_bytes;       /* per plan, memory summary, feedback (2048) */
  size_t memory_entries;   /* newest kept (8) */
  size_t best_entries;     /* best variants listed (5) */
  size_t inspirations;     /* inspirations shown with source (3) */
  unsigned plan_lines;     /* asked of the planner (15) */
} ks_prompt_limits;

typedef struct ks_prompt_device {
  const char *name;        /* "NVIDIA H200"; NULL: unknown */
  const char *arch;        /* "sm_90"; NULL: unknown */
  unsigned sm_count;       /* 0: unknown */
  double copy_gbps;        /* measured copy bandwidth, GB/s; 0: unknown */
  double peak_gflops;      /* fp32 FLOP/s ceiling, GFLOP/s; 0: unknown */
} ks_prompt_device;

/* A measured profile: every field 0 means unknown and is not printed. */
typedef struct ks_prompt_profile {
  double time_ms;
  double bw_fraction;      /* of the copy bandwidth, 0.81 = 81% */
  double flop_fraction;    /* of the FLOP ceiling */
  int registers;           /* per thread */
  double occupancy;        /* achieved or theoretical, 0..1 */
} ks_prompt_profile;

/* A variant shown to a model. */
typedef struct ks_prompt_variant {
  const char *source;      /* NULL: listed without source */
  const char *techniques;  /* the chain, "vec4 > block=128"; NULL or "" */
  double speedup;          /* vs the original; 0: unknown */
} ks_prompt_variant;

/* One entry of the optimization memory: what a slow -> fast (or, for a
 * regression, fast -> slow) step taught. */
typedef struct ks_prompt_memory {
  const char *insight;     /* the summarizer's INSIGHT text */
  const char *techniques;  /* the step, NULL or "" */
  double speedup;          /* second over first: > 1 helped, < 1 hurt */
} ks_prompt_memory;

typedef struct ks_planner_input {
  const char *kernel;                 /* the original kernel's name */
  const ks_prompt_variant *parent;    /* the variant to improve (source) */
  const ks_prompt_device *device;     /* may be NULL */
  const ks_prompt_profile *profile;   /* the parent's; may be NULL */
  const ks_prompt_variant *best;      /* best so far, best first */
  size_t nbest;
  const ks_prompt_memory *memory;     /* oldest first, newest last */
  size_t nmemory;
  bool evolve;                        /* show the inspirations */
  const ks_prompt_variant *inspirations;
  size_t ninspirations;
  const ks_prompt_limits *limits;     /* NULL: defaults */
  /* What the tool learned (passes/insight): what bounds the parent
   * ("memory-bound: 62% of the measured bandwidth") and a race the
   * original's code shows; the tool's own lines, printed outside the data blocks with only
   * an expression's alphabet let through; NULL: none. */
  const char *bound;
  const char *race;
} ks_planner_input;

typedef struct ks_executor_input {
  const char *kernel;                 /* the original kernel's name */
  const ks_variant *parent;           /* source, kernel_name, policy, guards */
  const char *plan;                   /* the planner's PLAN text */
  const ks_spec *spec;                /* buffers (roles, types), tolerances;
                                         NULL: not shown */
  const ks_launch_cfg *timed_launch;  /* the original launch at the timed
                                         size (grid_x.. values); may be NULL */
  const char *feedback;               /* a retry: why the last attempt was
                                         refused, or ks_prompt_diagnostics
                                         output; NULL: first attempt */
  const ks_prompt_limits *limits;
} ks_executor_input;

typedef struct ks_summarizer_input {
  const char *kernel;
  const ks_prompt_variant *slow;      /* the first of the pair */
  const ks_prompt_variant *fast;      /* the second (slower on a regression) */
  const char *plan;                   /* what led from one to the other; may be NULL */
  const ks_prompt_limits *limits;
} ks_summarizer_input;

void ks_prompt_planner(ks_arena *arena, const ks_planner_input *in, ks_prompt *out);
void ks_prompt_executor(ks_arena *arena, const ks_executor_input *in, ks_prompt *out);
void ks_prompt_summarizer(ks_arena *arena, const ks_summarizer_input *in, ks_prompt *out);

/* The kernel's declaration as it must stay ("__global__ void k(int n, float
 * *x)"), read lexically from `source`; NULL when `kernel_name` is not
 * defined there as a __global__ function. */
const char *ks_prompt_signature(ks_arena *arena, const char *source, const char *kernel_name);

/* An NVRTC log reduced to what is about the variant's own text: the unit
 * the judge compiles is the slice, a `#line 1 "<variant_file>"` directive
 * and the variant, so diagnostics naming `variant_file` are the model's
 * (each kept with its following context lines); everything else (the
 * slice, toolkit headers, the summary line) is dropped. At most `max`
 * diagnostics (0: 8), each line cut at 240 bytes; "" when none is left.
 * `variant_file` NULL: "variant.cu", the judge's default. */
const char *ks_prompt_diagnostics(ks_arena *arena, const char *log, const char *variant_file,
                                  size_t max);

/* ---- replies (llm_reply.c, llm_reply_check.c, llm_reply_json.c) ------- */

enum {
  KS_REPLY_MAX_BYTES = 256 * 1024, /* a longer reply is refused unread */
  KS_REPLY_MAX_SOURCE = 64 * 1024, /* a child's source */
  KS_REPLY_MAX_PLAN = 4096,        /* bytes of a PLAN kept */
  KS_REPLY_MAX_PLAN_LINES = 20,    /* lines of a PLAN kept (asked: 15) */
  KS_REPLY_MAX_INSIGHT = 1200,     /* bytes of an INSIGHT kept */
  KS_REPLY_QUOTE_MAX = 80,         /* reply bytes a message may quote */
};

typedef enum ks_reply_reason {
  KS_REPLY_OK,                /* accepted */
  KS_REPLY_MALFORMED,         /* missing section, unterminated fence or edit,
                                 ambiguous reply, regex limits hit */
  KS_REPLY_NO_CODE,           /* no code block and no edits */
  KS_REPLY_SIGNATURE_CHANGED, /* not exactly one __global__, named as the
                                 parent's, with its parameter list */
  KS_REPLY_HOST_CODE,         /* host functions, host/libc calls, printf,
                                 non-toolkit #include, new #define */
  KS_REPLY_OUTSIDE_KERNEL,    /* reaches past the variant: launches, global
                                 mutable state, #line / #pragma / #undef */
  KS_REPLY_EDIT_NOT_FOUND,    /* a SEARCH text not found exactly once */
  KS_REPLY_BAD_JSON,          /* the ```json block: syntax, field, expression */
  KS_REPLY_TOO_LARGE,         /* reply or resulting source over its cap */
  KS_REPLY_NREASONS
} ks_reply_reason;

/* "ok", "malformed", "no_code", "signature_changed", "host_code",
 * "outside_kernel", "edit_not_found", "bad_json", "too_large". */
const char *ks_reply_reason_name(ks_reply_reason r);

/* Counts kept by the caller across replies; each parse adds one. */
typedef struct ks_reply_tally {
  unsigned accepted;
  unsigned rejected[KS_REPLY_NREASONS]; /* [KS_REPLY_OK] stays 0 */
} ks_reply_tally;

typedef struct ks_reply_result {
  ks_reply_reason reason;  /* KS_REPLY_OK: accepted */
  const char *message;     /* rejection: one line, <= 240 bytes; "" when OK */
  /* planner / summarizer */
  const char *text;        /* the PLAN or INSIGHT text, bounded */
  const char *technique;   /* planner: the TECHNIQUE tag ([a-z0-9_=.+-],
                              <= 32 bytes), "llm" when none was given */
  /* executor */
  ks_variant child;        /* source, kernel_name (the parent's), policy and
                              guards (the parent's unless the JSON block
                              sets them), file (the caller's) */
  bool full_rewrite;       /* from a code block, not edits */
  unsigned nedits;
} ks_reply_result;

/* tally may be NULL. Each returns 0, or -1 (ks_fail) only when the parser
 * itself cannot run (a pattern that does not compile: a bug). */
int ks_reply_plan(ks_ctx *ctx, const char *reply, ks_arena *arena, ks_reply_tally *tally,
                  ks_reply_result *out);
int ks_reply_insight(ks_ctx *ctx, const char *reply, ks_arena *arena, ks_reply_tally *tally,
                     ks_reply_result *out);
/* The child the executor's reply describes, made from `parent` (whose
 * kernel_name the child keeps). `file` names the child's source in
 * diagnostics (NULL: none). A kernel written under the original's name
 * (the parent's name without "_ks_variant") is renamed back. A pointer
 * parameter given __restrict__ that the parent's lacks gets disjoint()
 * guards against the other pointer parameters. Also -1 for a parent
 * without a kernel_name (a caller's bug). */
int ks_reply_child(ks_ctx *ctx, const char *reply, const ks_variant *parent, const char *file,
                   ks_arena *arena, ks_reply_tally *tally, ks_reply_result *out);

#endif
