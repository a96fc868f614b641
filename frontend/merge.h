/* merge: many translation units' findings into one scan.
 *
 * A kernel or launch site seen by several units (a header, a .cu included by
 * another) is kept once, at its real location. Launches are linked to their
 * kernels by USR, dependent template arguments are resolved through the
 * calls of the enclosing template that any unit saw, and each kernel gets the
 * distinct template arguments it is launched with. */
#ifndef KS_MERGE_H
#define KS_MERGE_H

#include "ks_scan.h"
#include "tu.h"

void ks_merge(ks_scan *scan, ks_tu_result **results, size_t n);

#endif
