/* ks_report: a scan as text for people (a table, or the long form golden
 * tests diff) and as versioned JSON for machines (docs/scan-json.md).
 * Paths are shown relative to the scan's root when they lie below it. */
#ifndef KS_REPORT_H
#define KS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_ctx.h"
#include "ks_scan.h"

enum { KS_SCAN_SCHEMA_VERSION = 1 };

typedef struct ks_report_options {
  bool color; /* bold headers; only on a terminal */
  bool long_form;
} ks_report_options;

void ks_report_table(FILE *out, const ks_scan *scan, const ks_report_options *opts);
/* Returns -1 with ks_fail when the JSON cannot be produced. */
int ks_report_json(ks_ctx *ctx, FILE *out, const ks_scan *scan);
/* Diagnostics of files with errors, as "file:line:col: error: message". */
void ks_report_diagnostics(ks_ctx *ctx, const ks_scan *scan);
/* One line: "12 kernels, 15 launch sites in 9 files (0.8 s)". */
void ks_report_summary(ks_ctx *ctx, const ks_scan *scan);

#endif
