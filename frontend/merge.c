/* Merging per-unit results; see merge.h. */
#include "merge.h"

#include <stdlib.h>
#include <string.h>

#include "ks_ctext.h"

static int cmp_loc(const ks_loc *a, const ks_loc *b) {
  int c = strcmp(a->file ? a->file : "", b->file ? b->file : "");
  if (c)
    return c;
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int cmp_kernel(const void *a, const void *b) {
  const ks_kernel *x = a, *y = b;
  int c = cmp_loc(&x->extent.begin, &y->extent.begin);
  return c ? c : strcmp(x->usr, y->usr);
}

static int cmp_launch(const void *a, const void *b) {
  return cmp_loc(&((const ks_launch *)a)->extent.begin, &((const ks_launch *)b)->extent.begin);
}

static bool same_args(const ks_template_args *a, const ks_template_args *b) {
  if (a->len != b->len)
    return false;
  for (size_t i = 0; i < a->len; i++)
    if (strcmp(a->items[i].value, b->items[i].value))
      return false;
  return true;
}

static void add_distinct(ks_arena *arena, ks_template_arg_lists *lists, const ks_template_args *args) {
  for (size_t i = 0; i < lists->len; i++)
    if (same_args(&lists->items[i], args))
      return;
  *ks_array_push(arena, lists) = *args;
}

/* Replaces each identifier of `text` that names a parameter bound in `call`
 * with its value: "BLOCK / 2" under BLOCK=256 becomes "256 / 2". */
static const char *substitute(ks_arena *arena, const char *text, const ks_template_args *call) {
  const char **names = ks_arena_alloc(arena, (call->len + 1) * sizeof *names);
  const char **values = ks_arena_alloc(arena, (call->len + 1) * sizeof *values);
  for (size_t i = 0; i < call->len; i++) {
    names[i] = call->items[i].param;
    values[i] = call->items[i].value;
  }
  return ks_ctext_substitute(arena, text, names, values, call->len);
}

static const ks_kernel *kernel_by_usr(const ks_scan *scan, const char *usr) {
  for (size_t i = 0; usr && i < scan->kernels.len; i++)
    if (!strcmp(scan->kernels.items[i].usr, usr))
      return &scan->kernels.items[i];
  return NULL;
}

static void name_params(ks_template_args *args, const ks_kernel *k) {
  for (size_t i = 0; k && i < args->len && i < k->tparams.len; i++)
    if (!args->items[i].param)
      args->items[i].param = k->tparams.items[i].name;
}

/* A kernel's template arguments are complete only when every template
 * parameter has one (defaults included). */
static void resolve_dependent(ks_scan *scan, ks_launch *l, ks_tu_result **results, size_t n) {
  const ks_kernel *k = kernel_by_usr(scan, l->kernel_usr);
  name_params(&l->template_args, k);
  if (!l->enclosing_usr)
    return;
  for (size_t r = 0; r < n; r++) {
    const ks_template_calls *calls = &results[r]->template_calls;
    for (size_t c = 0; c < calls->len; c++) {
      if (strcmp(calls->items[c].template_usr, l->enclosing_usr))
        continue;
      ks_template_args args = {0};
      for (size_t i = 0; i < l->template_args.len; i++) {
        ks_template_arg *a = ks_array_push(&scan->arena, &args);
        a->param = l->template_args.items[i].param;
        a->value = substitute(&scan->arena, l->template_args.items[i].value, &calls->items[c].args);
      }
      /* Defaults the launch did not spell out. */
      for (size_t i = args.len; k && i < k->tparams.len; i++) {
        if (!k->tparams.items[i].default_arg)
          break;
        ks_template_arg *a = ks_array_push(&scan->arena, &args);
        a->param = k->tparams.items[i].name;
        a->value = k->tparams.items[i].default_arg;
      }
      /* Arguments deduced from the call (`kern<<<g, b>>>(p, n)` in a
       * template host function) are not known here: no instance rather
       * than an empty one (`<>`), which names none. */
      if (!args.len && k && k->tparams.len)
        continue;
      /* An argument nobody could read ("?") names no instance either. */
      bool unknown = false;
      for (size_t i = 0; i < args.len; i++)
        unknown |= args.items[i].value && !strcmp(args.items[i].value, "?");
      if (unknown)
        continue;
      add_distinct(&scan->arena, &l->via_instantiations, &args);
    }
  }
}

static void link_kernel(ks_scan *scan, const char *usr, size_t launch) {
  for (size_t i = 0; usr && i < scan->kernels.len; i++) {
    ks_kernel *k = &scan->kernels.items[i];
    if (strcmp(k->usr, usr))
      continue;
    if (k->launches.len && k->launches.items[k->launches.len - 1] == launch)
      continue;
    *ks_array_push(&scan->arena, &k->launches) = launch;
  }
}

static void collect_instantiations(ks_scan *scan) {
  for (size_t li = 0; li < scan->launches.len; li++) {
    ks_launch *l = &scan->launches.items[li];
    ks_kernel *k = (ks_kernel *)kernel_by_usr(scan, l->kernel_usr);
    if (k && k->is_template) {
      if (!l->template_dependent && l->template_args.len)
        add_distinct(&scan->arena, &k->instantiations, &l->template_args);
      for (size_t i = 0; i < l->via_instantiations.len; i++)
        add_distinct(&scan->arena, &k->instantiations, &l->via_instantiations.items[i]);
    }
    for (size_t c = 0; c < l->candidates.len; c++) {
      ks_kernel *ck = (ks_kernel *)kernel_by_usr(scan, l->candidates.items[c].kernel_usr);
      if (ck && ck->is_template && l->candidates.items[c].template_args.len)
        add_distinct(&scan->arena, &ck->instantiations, &l->candidates.items[c].template_args);
    }
  }
}

void ks_merge(ks_scan *scan, ks_tu_result **results, size_t n) {
  for (size_t r = 0; r < n; r++) {
    ks_tu_result *res = results[r];
    *ks_array_push(&scan->arena, &scan->files) = res->file;
    for (size_t i = 0; i < res->kernels.len; i++)
      *ks_array_push(&scan->arena, &scan->kernels) = res->kernels.items[i];
    for (size_t i = 0; i < res->launches.len; i++)
      *ks_array_push(&scan->arena, &scan->launches) = res->launches.items[i];
  }
  /* Sort, then drop what several units saw at the same place. */
  if (scan->kernels.len)
    qsort(scan->kernels.items, scan->kernels.len, sizeof *scan->kernels.items, cmp_kernel);
  if (scan->launches.len)
    qsort(scan->launches.items, scan->launches.len, sizeof *scan->launches.items, cmp_launch);
  size_t w = 0;
  for (size_t i = 0; i < scan->kernels.len; i++)
    if (!w || cmp_kernel(&scan->kernels.items[w - 1], &scan->kernels.items[i]))
      scan->kernels.items[w++] = scan->kernels.items[i];
  scan->kernels.len = w;
  w = 0;
  for (size_t i = 0; i < scan->launches.len; i++)
    if (!w || cmp_launch(&scan->launches.items[w - 1], &scan->launches.items[i]))
      scan->launches.items[w++] = scan->launches.items[i];
  scan->launches.len = w;

  for (size_t li = 0; li < scan->launches.len; li++) {
    ks_launch *l = &scan->launches.items[li];
    if (l->template_dependent)
      resolve_dependent(scan, l, results, n);
    else
      name_params(&l->template_args, kernel_by_usr(scan, l->kernel_usr));
    link_kernel(scan, l->kernel_usr, li);
    for (size_t c = 0; c < l->candidates.len; c++)
      link_kernel(scan, l->candidates.items[c].kernel_usr, li);
  }
  collect_instantiations(scan);
}
