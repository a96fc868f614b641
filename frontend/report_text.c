/* The scan as text: a table by default, the long form with --long. The long
 * form carries no timings, so golden tests can diff it. */
#include <string.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_report.h"

/* Paths below the scan's root are shown relative to it. */
static const char *rel(const ks_scan *scan, const char *path) {
  if (!path)
    return "?";
  return *scan->root ? ks_path_below(path, scan->root) : path;
}

static const char *kind_name(ks_param_kind k) {
  switch (k) {
  case KS_PARAM_SCALAR:
    return "scalar";
  case KS_PARAM_POINTER:
    return "pointer";
  case KS_PARAM_RECORD:
    return "struct";
  default:
    return "dependent";
  }
}

static void template_args(ks_buf *b, const ks_template_args *args) {
  ks_buf_addc(b, '<');
  for (size_t i = 0; i < args->len; i++)
    ks_buf_addf(b, "%s%s", i ? ", " : "", args->items[i].value);
  ks_buf_addc(b, '>');
}

static const char *kernel_label(ks_buf *b, const ks_kernel *k) {
  ks_buf_reset(b);
  ks_buf_adds(b, k->qualified_name);
  if (k->is_template) {
    ks_buf_addc(b, '<');
    for (size_t i = 0; i < k->tparams.len; i++)
      ks_buf_addf(b, "%s%s", i ? ", " : "", k->tparams.items[i].name);
    ks_buf_addc(b, '>');
  }
  return b->data;
}

static void config(ks_buf *b, const ks_launch *l) {
  ks_buf_addf(b, "<<<%s, %s", l->grid ? l->grid : "?", l->block ? l->block : "?");
  if (l->smem || l->stream)
    ks_buf_addf(b, ", %s", l->smem ? l->smem : "0");
  if (l->stream)
    ks_buf_addf(b, ", %s", l->stream);
  ks_buf_adds(b, ">>>");
}

static void launch_line(ks_buf *b, const ks_scan *scan, const ks_launch *l) {
  if (l->api) {
    ks_buf_addf(b, "%s:%u:%u  %s(%s, %s, %s", rel(scan, l->loc.file), l->loc.line, l->loc.col,
                l->api, l->callee ? l->callee : "?", l->grid ? l->grid : "?",
                l->block ? l->block : "?");
    for (size_t i = 0; i < l->args.len; i++)
      ks_buf_addf(b, ", %s", l->args.items[i]);
    ks_buf_addf(b, ", %s, %s)", l->smem ? l->smem : "0", l->stream ? l->stream : "0");
    return;
  }
  ks_buf_addf(b, "%s:%u:%u  %s", rel(scan, l->loc.file), l->loc.line, l->loc.col,
              l->callee ? l->callee : "?");
  config(b, l);
  ks_buf_addc(b, '(');
  for (size_t i = 0; i < l->args.len; i++)
    ks_buf_addf(b, "%s%s", i ? ", " : "", l->args.items[i]);
  ks_buf_addc(b, ')');
}

static void print_long_kernel(FILE *out, const ks_scan *scan, const ks_kernel *k) {
  ks_buf b = KS_BUF_INIT;
  fprintf(out, "kernel %s\n", k->signature);
  fprintf(out, "  at %s:%u:%u (lines %u-%u)%s%s%s%s%s\n", rel(scan, k->loc.file), k->loc.line,
          k->loc.col, k->extent.begin.line, k->extent.end.line, k->is_extern_c ? " extern \"C\"" : "",
          k->is_static ? " static" : "", k->in_header ? " in-header" : "",
          k->macro ? " macro " : "", k->macro ? k->macro : "");
  for (size_t i = 0; i < k->params.len; i++) {
    const ks_param *p = &k->params.items[i];
    fprintf(out, "  param %s: %s [%s", *p->name ? p->name : "(unnamed)", p->type, kind_name(p->kind));
    if (p->pointee)
      fprintf(out, " of %s%s", p->pointee_const ? "const " : "", p->pointee);
    fprintf(out, "%s%s%s]\n", p->is_const ? " const" : "", p->is_restrict ? " restrict" : "",
            p->grid_constant ? " grid_constant" : "");
  }
  for (size_t i = 0; i < k->tparams.len; i++) {
    const ks_tparam *t = &k->tparams.items[i];
    fprintf(out, "  template-param %s%s%s%s%s%s\n", t->type ? t->type : (t->kind == KS_TPARAM_TYPE ? "typename" : "template"),
            t->is_pack ? "..." : "", " ", t->name, t->default_arg ? " = " : "",
            t->default_arg ? t->default_arg : "");
  }
  for (size_t i = 0; i < k->attributes.len; i++)
    fprintf(out, "  attribute %s\n", k->attributes.items[i]);
  if (k->max_threads)
    fprintf(out, "  launch-bounds max-threads %s%s%s\n", k->max_threads,
            k->min_blocks ? " min-blocks " : "", k->min_blocks ? k->min_blocks : "");
  for (size_t i = 0; i < k->shared.len; i++) {
    const ks_shared_var *s = &k->shared.items[i];
    fprintf(out, "  shared %s%s %s in %s", s->is_extern ? "extern " : "", s->type, s->name, s->function);
    if (s->bytes >= 0)
      fprintf(out, " (%lld bytes)", s->bytes);
    fputc('\n', out);
  }
  if (k->static_smem < 0)
    fprintf(out, "  static-shared depends on template arguments\n");
  else
    fprintf(out, "  static-shared %lld bytes%s\n", k->static_smem, k->dynamic_smem ? ", plus dynamic" : "");
  for (size_t i = 0; i < k->callees.len; i++)
    fprintf(out, "  calls %s (%s:%u, depth %u)\n", k->callees.items[i].name,
            rel(scan, k->callees.items[i].loc.file), k->callees.items[i].loc.line,
            k->callees.items[i].depth);
  if (k->builtins.len) {
    fprintf(out, "  builtins");
    for (size_t i = 0; i < k->builtins.len; i++)
      fprintf(out, " %s", k->builtins.items[i]);
    fputc('\n', out);
  }
  for (size_t i = 0; i < k->instantiations.len; i++) {
    ks_buf_reset(&b);
    template_args(&b, &k->instantiations.items[i]);
    fprintf(out, "  instantiated %s\n", b.data);
  }
  for (size_t i = 0; i < k->launches.len; i++) {
    ks_buf_reset(&b);
    launch_line(&b, scan, &scan->launches.items[k->launches.items[i]]);
    fprintf(out, "  launched %s\n", b.data);
  }
  ks_buf_release(&b);
}

static const char *resolution_name(ks_resolution r) {
  return r == KS_RESOLVED ? "resolved" : r == KS_RESOLVED_POINTER ? "function-pointer" : "unresolved";
}

static void print_long_launch(FILE *out, const ks_scan *scan, const ks_launch *l) {
  ks_buf b = KS_BUF_INIT;
  launch_line(&b, scan, l);
  fprintf(out, "launch %s\n", b.data);
  fprintf(out, "  in %s%s%s%s", l->enclosing ? l->enclosing : "?", l->in_lambda ? " (lambda)" : "",
          l->in_template ? " (template)" : "", l->device_side ? " (device side)" : "");
  if (l->macro)
    fprintf(out, " via macro %s", l->macro);
  if (l->api)
    fprintf(out, " via %s", l->api);
  fputc('\n', out);
  fprintf(out, "  %s %s", resolution_name(l->resolution), l->kernel_name ? l->kernel_name : "-");
  if (l->template_args.len) {
    ks_buf_reset(&b);
    template_args(&b, &l->template_args);
    fprintf(out, " %s%s", b.data, l->template_dependent ? " (dependent)" : "");
  }
  fputc('\n', out);
  for (size_t i = 0; i < l->via_instantiations.len; i++) {
    ks_buf_reset(&b);
    template_args(&b, &l->via_instantiations.items[i]);
    fprintf(out, "  instantiated-as %s\n", b.data);
  }
  for (size_t i = 0; i < l->candidates.len; i++) {
    const ks_launch_candidate *c = &l->candidates.items[i];
    ks_buf_reset(&b);
    if (c->template_args.len)
      template_args(&b, &c->template_args);
    fprintf(out, "  candidate %s%s (%s:%u)\n", c->kernel_name, b.data, rel(scan, c->loc.file), c->loc.line);
  }
  if (l->note)
    fprintf(out, "  note %s\n", l->note);
  ks_buf_release(&b);
}

void ks_report_table(FILE *out, const ks_scan *scan, const ks_report_options *opts) {
  if (opts->long_form) {
    for (size_t i = 0; i < scan->kernels.len; i++) {
      print_long_kernel(out, scan, &scan->kernels.items[i]);
      fputc('\n', out);
    }
    for (size_t i = 0; i < scan->launches.len; i++) {
      print_long_launch(out, scan, &scan->launches.items[i]);
      fputc('\n', out);
    }
    return;
  }
  const char *bold = opts->color ? "\033[1m" : "", *reset = opts->color ? "\033[0m" : "";
  ks_buf label = KS_BUF_INIT, loc = KS_BUF_INIT;
  size_t wname = 6, wloc = 8;
  for (size_t i = 0; i < scan->kernels.len; i++) {
    const ks_kernel *k = &scan->kernels.items[i];
    size_t n = strlen(kernel_label(&label, k));
    if (n > wname)
      wname = n;
    ks_buf_reset(&loc);
    ks_buf_addf(&loc, "%s:%u", rel(scan, k->loc.file), k->loc.line);
    if (loc.len > wloc)
      wloc = loc.len;
  }
  if (wname > 48)
    wname = 48;
  fprintf(out, "%s%-*s  %-*s  %6s  %8s  %8s%s\n", bold, (int)wname, "KERNEL", (int)wloc, "LOCATION",
          "PARAMS", "SMEM", "LAUNCHES", reset);
  for (size_t i = 0; i < scan->kernels.len; i++) {
    const ks_kernel *k = &scan->kernels.items[i];
    ks_buf_reset(&loc);
    ks_buf_addf(&loc, "%s:%u", rel(scan, k->loc.file), k->loc.line);
    char smem[32];
    if (k->static_smem < 0)
      snprintf(smem, sizeof smem, "T-dep%s", k->dynamic_smem ? "+dyn" : "");
    else
      snprintf(smem, sizeof smem, "%lld%s", k->static_smem, k->dynamic_smem ? "+dyn" : "");
    fprintf(out, "%-*s  %-*s  %6zu  %8s  %8zu\n", (int)wname, kernel_label(&label, k), (int)wloc,
            loc.data, k->params.len, smem, k->launches.len);
  }
  if (scan->launches.len) {
    fprintf(out, "\n%sLAUNCH SITES%s\n", bold, reset);
    for (size_t i = 0; i < scan->launches.len; i++) {
      const ks_launch *l = &scan->launches.items[i];
      ks_buf_reset(&label);
      launch_line(&label, scan, l);
      fprintf(out, "%s", label.data);
      if (l->resolution != KS_RESOLVED)
        fprintf(out, "  [%s]", resolution_name(l->resolution));
      fprintf(out, "  in %s\n", l->enclosing ? l->enclosing : "?");
    }
  }
  ks_buf_release(&label);
  ks_buf_release(&loc);
}

void ks_report_diagnostics(ks_ctx *ctx, const ks_scan *scan) {
  /* One line per file by default; every error with -v. */
  bool all = ctx->verbosity >= KS_LOG_INFO;
  for (size_t i = 0; i < scan->files.len; i++) {
    const ks_scanned_file *f = &scan->files.items[i];
    size_t shown = all ? f->diags.len : (f->diags.len ? 1 : 0);
    for (size_t d = 0; d < shown; d++) {
      const ks_diag *g = &f->diags.items[d];
      if (!all && f->errors > 1)
        ks_warn(ctx, "%s:%u:%u: %s (and %u more error%s in %s; -v lists them)",
                rel(scan, g->loc.file), g->loc.line, g->loc.col, g->message, f->errors - 1,
                f->errors == 2 ? "" : "s", rel(scan, f->path));
      else
        ks_warn(ctx, "%s:%u:%u: %s", rel(scan, g->loc.file), g->loc.line, g->loc.col, g->message);
    }
    if (all && f->errors > f->diags.len)
      ks_warn(ctx, "%s: %u more errors", rel(scan, f->path), f->errors - (unsigned)f->diags.len);
    if (f->system_errors)
      ks_info(ctx, "%s: %u errors inside system headers (kernels of your own files are still "
                   "reported), first: %s",
              rel(scan, f->path), f->system_errors, f->first_system_error);
  }
}

void ks_report_summary(ks_ctx *ctx, const ks_scan *scan) {
  if (ctx->verbosity < KS_LOG_WARN)
    return; /* --quiet */
  size_t bad = 0;
  for (size_t i = 0; i < scan->files.len; i++)
    bad += scan->files.items[i].status != KS_FILE_OK;
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "%zu kernel%s, %zu launch site%s in %zu file%s", scan->kernels.len,
              scan->kernels.len == 1 ? "" : "s", scan->launches.len,
              scan->launches.len == 1 ? "" : "s", scan->files.len, scan->files.len == 1 ? "" : "s");
  if (bad)
    ks_buf_addf(&b, " (%zu with errors)", bad);
  ks_buf_addf(&b, ", %.2f s", scan->wall_ms / 1000.0);
  if (scan->compile_db)
    ks_buf_addf(&b, ", flags from %s", scan->compile_db);
  /* A summary is a message, so it goes to stderr with the others. */
  pthread_mutex_lock(&ctx->lock);
  fprintf(ctx->diag, "%s\n", b.data);
  pthread_mutex_unlock(&ctx->lock);
  ks_buf_release(&b);
}
