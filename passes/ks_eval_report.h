/* ks_eval_report: an evaluation for people (a short block of text) and for
 * machines (JSON, schema "kernelsmith-cc.eval" version 1, docs/judge.md),
 * with the device, driver, clocks and ceilings it was measured under. */
#ifndef KS_EVAL_REPORT_H
#define KS_EVAL_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_judge.h"
#include "ks_target.h"

void ks_eval_print(FILE *out, const ks_judge *j, const ks_target *t, const ks_candidate *c,
                   const ks_eval *e, bool color);
int ks_eval_json(ks_ctx *ctx, FILE *out, const ks_judge *j, const ks_target *t,
                 const ks_candidate *c, const ks_eval *e);

#endif
