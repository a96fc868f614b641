/* ks_eval_json: a ks_eval as JSON members and back, shared by `check --json`
 * (passes/eval_report.c, schema kernelsmith-cc.eval) and the results store,
 * so that both write the same names for the same numbers.
 *
 * The members written are those of the evaluation itself: verdict, reason,
 * compile, sizes (with every seed's output checks), max errors,
 * fp64_reference, timing, roofline, wall_seconds. The caller adds what it
 * knows around them (kernel, device, variant).
 *
 * Never written: the compile log (it can quote the user's source; it is for
 * the terminal only).
 *
 * cJSON crosses this header only as an opaque `struct cJSON *` for writers
 * that build a larger document; ks_eval_from_json takes text and hands back
 * a plain ks_eval.
 *
 * Ownership: ks_eval_json_text returns a malloc'd string (free() it);
 * ks_eval_from_json allocates every string and array in the caller's arena. */
#ifndef KS_EVAL_JSON_H
#define KS_EVAL_JSON_H

#include "ks_eval.h"

struct cJSON;

enum {
  /* The variant's numbers (median, speedup, bandwidth, ...) are written:
   * there was a candidate. Without it they are left out (a baseline). */
  KS_EVAL_JSON_VARIANT = 1u << 0,
  /* Everything, for storage: timing and roofline also when not timed (with
   * `timed` inside them), a first mismatch's values also when there is
   * none. ks_eval_from_json then gives back every field exactly. */
  KS_EVAL_JSON_COMPLETE = 1u << 1,
};

/* Adds the evaluation's members to the JSON object `obj`. */
void ks_eval_json_add(struct cJSON *obj, const ks_eval *e, unsigned flags);
/* The evaluation alone as a JSON object, unformatted; NULL only when out of
 * memory. */
char *ks_eval_json_text(const ks_eval *e, unsigned flags);
/* Parses what ks_eval_json_add wrote (members it does not find are left
 * zero; a null number is NaN). compile_log is NULL. */
int ks_eval_from_json(ks_ctx *ctx, const char *text, ks_arena *a, ks_eval *out);

/* A 64-bit unsigned value (seeds, byte counts): a JSON number when a double
 * holds it exactly (up to 2^53), else a string of its decimal digits, so
 * that a random 64-bit seed is not silently rounded. */
void ks_json_add_u64(struct cJSON *obj, const char *key, unsigned long long v);
/* The verdict whose ks_verdict_name is `name`; -1 when none. */
int ks_verdict_from_name(const char *name);

#endif
