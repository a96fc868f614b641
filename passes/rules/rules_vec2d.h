/* rules_vec2d: what the two files of `vectorize_2d` share.
 *
 * rules_vec2d_index.c reads the straight-line work of one element (the
 * statements after the edge branches): every access p[E] to a pointer
 * parameter becomes a site, its index expanded into x + k + terms that are
 * multiples of 4 (under `P % 4 == 0` guards); anything else refuses with
 * the reason. rules_vectorize_2d.c finds the lane region, emits the
 * rewrite from the sites and adds the guards.
 *
 * Internal to passes/. Everything lives in the arena of the state. */
#ifndef KS_RULES_VEC2D_H
#define KS_RULES_VEC2D_H

#include <stdbool.h>
#include <stddef.h>

#include "rules_shape.h"

#define KS_V2_LANES 4

/* A pointer parameter the straight-line work accesses. */
typedef struct ks_v2_buf {
  const ks_anode *param;
  const char *elem;        /* element type without const: float, int, unsigned */
  const char *vec;         /* its 4-lane vector type: float4, int4, uint4 */
  bool read, written;      /* in the straight-line work */
} ks_v2_buf;

/* A distinct start B of a 16-byte block: an index at lane 0 without its
 * constant (in[idx - 1] and in[idx + 1] share the one at idx). */
typedef struct ks_v2_base {
  const char *key;         /* its terms, sorted: equal keys are one base */
  const char *text;        /* B in C, x written as the lane-0 index */
  const char *type;        /* the index's type */
  ks_strings params;       /* the scalar parameters it is a multiple of */
  const char *name;        /* ks_at<n>, once emitted */
} ks_v2_base;

/* An access p[E] of the straight-line work: lane j reads or writes
 * element B + k + j. */
typedef struct ks_v2_site {
  const ks_anode *node;    /* what a lane value replaces: p[E] or __ldg(&p[E]) */
  size_t buf, base;
  long long k;
  bool write;
} ks_v2_site;

typedef struct ks_v2 {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_anode *body;
  const ks_anode *x;           /* the x index's VAR */
  const char *x0;              /* the name of the lane-0 index (ks_x0) */
  ks_node_list hoisted;        /* VARs computed once per thread */
  ks_node_list lane_vars;      /* VARs declared per element (top level) */
  KS_ARRAY(ks_v2_buf) bufs;
  KS_ARRAY(ks_v2_base) bases;
  KS_ARRAY(ks_v2_site) sites;
  const ks_anode *stmt;        /* the statement being read */
  const char *why;             /* the first reason to refuse, or NULL */
} ks_v2;

/* Sets s->why (printf-style) unless a reason is already there. */
void ks_v2_refuse(ks_v2 *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether `n` is in the list. */
bool ks_v2_listed(const ks_node_list *l, const ks_anode *n);
/* Reads one statement of the straight-line work (a declaration or an
 * assignment), adding its sites; refuses anything else. */
void ks_v2_scan_statement(ks_v2 *s, const ks_anode *stmt);
/* Whether the kernel writes nowhere through `param` (its reads may then
 * go through the read-only cache). */
bool ks_v2_only_read(const ks_v2 *s, const ks_anode *param);

#endif
