/* kernelsmith-cc spec: a kernel's spec as the tool reads it, and each of
 * its size sets resolved to the numbers the GPU worker would get (buffer
 * counts and bytes, scalar values, the launch). For users writing specs:
 * every mistake shows up here, with its file and line, before any GPU run. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_cli.h"
#include "ks_source_args.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_specs.h"
#include "ks_target.h"

static const char usage[] =
    "usage: kernelsmith-cc spec [options] KERNEL [PATH...]\n"
    "\n"
    "Scans each PATH (default: the current directory), finds KERNEL (a plain or\n"
    "qualified name, or a signature such as 'fill(float *, float, int)' to pick\n"
    "an overload), reads its spec (an annotation comment above the kernel or one\n"
    "of its launch sites, or a .kspec sidecar; syntax in docs/spec.md), prints it,\n"
    "and resolves every size set: buffers with element counts and bytes, scalar\n"
    "values, the launch configuration, the bytes the kernel must move.\n"
    "\n"
    "options:\n"
    KS_SOURCE_HELP
    "      --json           machine-readable output\n"
    "      --from-capture FILE  draft a spec for KERNEL from its launches in a\n"
    "                       capture file (profile --capture): sizes, scalars,\n"
    "                       buffers and their value ranges as the application\n"
    "                       ran them, as a comment to paste above the kernel\n"
    "  -h, --help           show this help\n"
    "\n"
    "The exit status is 1 when the kernel has no spec, the spec is malformed, or\n"
    "a size set does not resolve.\n";

const ks_command ks_cmd_spec;

static const char *const role_names[] = {"in", "out", "inout"};
static const char *const dist_names[] = {"uniform",     "normal", "int",        "iota",
                                         "permutation", "const",  "sorted_int", "file"};

/* Resolves size set `size` with the first launch site whose configuration
 * evaluates (or none, when the spec has a launch line); the first site's
 * failure is the one reported. */
static int resolve(ks_ctx *ctx, const ks_scan *scan, const ks_spec *spec, const ks_kernel *k,
                   size_t size, ks_arena *arena, ks_workload *out, const ks_launch **site) {
  char first_error[sizeof ctx->error] = "";
  *site = NULL;
  if (spec->grid || !k->launches.len)
    return ks_spec_resolve(ctx, spec, k, NULL, size, arena, out);
  for (size_t i = 0; i < k->launches.len; i++) {
    const ks_launch *l = &scan->launches.items[k->launches.items[i]];
    if (!ks_spec_resolve(ctx, spec, k, l, size, arena, out)) {
      *site = l;
      return 0;
    }
    if (!i)
      snprintf(first_error, sizeof first_error, "%s", ctx->error);
  }
  return ks_fail(ctx, "%s", first_error);
}

static void dist_text(ks_buf *b, ks_dist d) {
  ks_buf_adds(b, dist_names[d.kind]);
  if (d.a)
    ks_buf_addf(b, "(%s%s%s)", d.a, d.b ? ", " : "", d.b ? d.b : "");
}

/* ---- text ------------------------------------------------------------- */

static void print_spec(const ks_spec *spec, const char *instance) {
  printf("spec %s:%u\n", spec->file, spec->line);
  for (size_t i = 0; i < spec->sizes.len; i++) {
    const ks_size_set *s = &spec->sizes.items[i];
    printf("  size %s:", s->name);
    for (size_t j = 0; j < s->vars.len; j++)
      printf("%s %s = %s", j ? "," : "", s->vars.items[j].name, s->vars.items[j].value);
    putchar('\n');
  }
  for (size_t i = 0; i < spec->scalars.len; i++)
    printf("  scalar %s = %s\n", spec->scalars.items[i].name, spec->scalars.items[i].value);
  for (size_t i = 0; i < spec->buffers.len; i++) {
    const ks_spec_buffer *b = &spec->buffers.items[i];
    ks_buf line = KS_BUF_INIT;
    ks_buf_addf(&line, "  %s %s", role_names[b->role], b->param);
    if (b->dtype != KS_DT_NONE)
      ks_buf_addf(&line, ": %s", ks_dtype_name(b->dtype));
    ks_buf_addf(&line, "[%s]", b->length);
    if (b->role != KS_ROLE_OUT) {
      ks_buf_addc(&line, ' ');
      dist_text(&line, b->dist);
    }
    if (b->atol >= 0 || b->rtol >= 0) {
      ks_buf_adds(&line, " tol(");
      if (b->atol >= 0)
        ks_buf_addf(&line, "atol=%g%s", b->atol, b->rtol >= 0 ? ", " : "");
      if (b->rtol >= 0)
        ks_buf_addf(&line, "rtol=%g", b->rtol);
      ks_buf_addc(&line, ')');
    }
    puts(line.data);
    ks_buf_release(&line);
  }
  if (spec->grid)
    printf("  launch grid = %s, block = %s%s%s\n", spec->grid, spec->block,
           spec->smem ? ", smem = " : "", spec->smem ? spec->smem : "");
  if (spec->atol >= 0 || spec->rtol >= 0) {
    printf("  tolerance");
    if (spec->atol >= 0)
      printf(" atol = %g%s", spec->atol, spec->rtol >= 0 ? "," : "");
    if (spec->rtol >= 0)
      printf(" rtol = %g", spec->rtol);
    putchar('\n');
  }
  if (spec->fp64_reference)
    printf("  reference fp64\n");
  if (spec->seeds)
    printf("  seeds %u\n", spec->seeds);
  if (instance)
    printf("  instance %s%s\n", instance, spec->instance ? "" : "   (from the launch sites)");
  if (spec->flops)
    printf("  flops %s\n", spec->flops);
}

static void print_workload(const ks_workload *w, const ks_kernel *k, const ks_launch *site) {
  const ks_launch_cfg *l = &w->launch;
  printf("  launch    grid (%u, %u, %u)  block (%u, %u, %u)  smem %llu", l->grid[0], l->grid[1],
         l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
  if (site) {
    const char *slash = strrchr(site->loc.file, '/');
    printf("   (launch site %s:%u)\n", slash ? slash + 1 : site->loc.file, site->loc.line);
  } else {
    printf("   (spec)\n");
  }
  for (size_t i = 0; i < w->args.len && i < k->params.len; i++) {
    const ks_warg *a = &w->args.items[i];
    const char *name = k->params.items[i].name;
    if (a->kind == KS_ARG_SCALAR) {
      if (a->value.is_int)
        printf("  %-9s %-5s %lld\n", name, ks_dtype_name(a->dtype), a->value.i);
      else
        printf("  %-9s %-5s %.9g\n", name, ks_dtype_name(a->dtype), a->value.f);
      continue;
    }
    const ks_wbuffer *b = &w->buffers.items[a->buffer];
    ks_buf line = KS_BUF_INIT;
    ks_buf_addf(&line, "  %-9s %-5s %s[%llu]  %llu bytes", name, role_names[b->role],
                ks_dtype_name(b->dtype), b->count, b->count * ks_dtype_size(b->dtype));
    if (b->role != KS_ROLE_OUT) {
      ks_buf_addf(&line, "  %s", dist_names[b->dist]);
      if (b->dist != KS_DIST_PERMUTATION)
        ks_buf_addf(&line,
                    b->dist == KS_DIST_IOTA || b->dist == KS_DIST_CONSTANT ? "(%.10g)"
                                                                           : "(%.10g, %.10g)",
                    b->a, b->b);
    }
    if (b->role != KS_ROLE_IN)
      ks_buf_addf(&line, "  atol %g rtol %g", b->atol, b->rtol);
    puts(line.data);
    ks_buf_release(&line);
  }
  printf("  bytes_min %llu", w->bytes_min);
  if (w->flops > 0)
    printf("  flops %.17g", w->flops);
  putchar('\n');
}

/* ---- JSON ------------------------------------------------------------- */

static cJSON *spec_json(const ks_spec *spec, const char *instance) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "file", spec->file);
  cJSON_AddNumberToObject(o, "line", spec->line);
  cJSON *sizes = cJSON_AddArrayToObject(o, "sizes");
  for (size_t i = 0; i < spec->sizes.len; i++) {
    const ks_size_set *s = &spec->sizes.items[i];
    cJSON *so = cJSON_CreateObject();
    cJSON_AddStringToObject(so, "name", s->name);
    cJSON_AddBoolToObject(so, "timed", s->timed);
    cJSON *vars = cJSON_AddObjectToObject(so, "vars");
    for (size_t j = 0; j < s->vars.len; j++)
      cJSON_AddStringToObject(vars, s->vars.items[j].name, s->vars.items[j].value);
    cJSON_AddItemToArray(sizes, so);
  }
  cJSON *scalars = cJSON_AddObjectToObject(o, "scalars");
  for (size_t i = 0; i < spec->scalars.len; i++)
    cJSON_AddStringToObject(scalars, spec->scalars.items[i].name, spec->scalars.items[i].value);
  cJSON *buffers = cJSON_AddArrayToObject(o, "buffers");
  for (size_t i = 0; i < spec->buffers.len; i++) {
    const ks_spec_buffer *b = &spec->buffers.items[i];
    cJSON *bo = cJSON_CreateObject();
    cJSON_AddStringToObject(bo, "param", b->param);
    cJSON_AddStringToObject(bo, "role", role_names[b->role]);
    if (b->dtype != KS_DT_NONE)
      cJSON_AddStringToObject(bo, "dtype", ks_dtype_name(b->dtype));
    else
      cJSON_AddNullToObject(bo, "dtype");
    cJSON_AddStringToObject(bo, "length", b->length);
    if (b->role != KS_ROLE_OUT) {
      ks_buf d = KS_BUF_INIT;
      dist_text(&d, b->dist);
      cJSON_AddStringToObject(bo, "distribution", d.data);
      ks_buf_release(&d);
    }
    if (b->atol >= 0)
      cJSON_AddNumberToObject(bo, "atol", b->atol);
    if (b->rtol >= 0)
      cJSON_AddNumberToObject(bo, "rtol", b->rtol);
    cJSON_AddNumberToObject(bo, "line", b->line);
    cJSON_AddItemToArray(buffers, bo);
  }
  if (spec->grid) {
    cJSON *l = cJSON_AddObjectToObject(o, "launch");
    cJSON_AddStringToObject(l, "grid", spec->grid);
    cJSON_AddStringToObject(l, "block", spec->block);
    if (spec->smem)
      cJSON_AddStringToObject(l, "smem", spec->smem);
  } else {
    cJSON_AddNullToObject(o, "launch");
  }
  if (spec->atol >= 0)
    cJSON_AddNumberToObject(o, "atol", spec->atol);
  if (spec->rtol >= 0)
    cJSON_AddNumberToObject(o, "rtol", spec->rtol);
  cJSON_AddStringToObject(o, "reference", spec->fp64_reference ? "fp64" : "native");
  cJSON_AddNumberToObject(o, "seeds", spec->seeds ? spec->seeds : 3);
  if (instance)
    cJSON_AddStringToObject(o, "instance", instance);
  if (spec->flops)
    cJSON_AddStringToObject(o, "flops", spec->flops);
  return o;
}

static cJSON *dims_json(const unsigned d[3]) {
  int v[3] = {(int)d[0], (int)d[1], (int)d[2]};
  return cJSON_CreateIntArray(v, 3);
}

static cJSON *workload_json(const ks_workload *w, const ks_kernel *k, const ks_launch *site) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "size", w->size_name);
  cJSON_AddBoolToObject(o, "timed", w->timed);
  cJSON *l = cJSON_AddObjectToObject(o, "launch");
  cJSON_AddItemToObject(l, "grid", dims_json(w->launch.grid));
  cJSON_AddItemToObject(l, "block", dims_json(w->launch.block));
  cJSON_AddNumberToObject(l, "smem", (double)w->launch.smem);
  cJSON_AddStringToObject(l, "from", site ? "launch site" : "spec");
  cJSON *args = cJSON_AddArrayToObject(o, "args");
  for (size_t i = 0; i < w->args.len && i < k->params.len; i++) {
    const ks_warg *a = &w->args.items[i];
    cJSON *ao = cJSON_CreateObject();
    cJSON_AddStringToObject(ao, "name", k->params.items[i].name);
    if (a->kind == KS_ARG_SCALAR) {
      cJSON_AddStringToObject(ao, "kind", "scalar");
      cJSON_AddStringToObject(ao, "dtype", ks_dtype_name(a->dtype));
      cJSON_AddNumberToObject(ao, "value", ks_value_as_double(a->value));
    } else {
      const ks_wbuffer *b = &w->buffers.items[a->buffer];
      cJSON_AddStringToObject(ao, "kind", "buffer");
      cJSON_AddStringToObject(ao, "role", role_names[b->role]);
      cJSON_AddStringToObject(ao, "dtype", ks_dtype_name(b->dtype));
      cJSON_AddNumberToObject(ao, "count", (double)b->count);
      cJSON_AddNumberToObject(ao, "bytes", (double)(b->count * ks_dtype_size(b->dtype)));
      if (b->role != KS_ROLE_OUT) {
        cJSON *d = cJSON_AddObjectToObject(ao, "distribution");
        cJSON_AddStringToObject(d, "kind", dist_names[b->dist]);
        cJSON_AddNumberToObject(d, "a", b->a);
        cJSON_AddNumberToObject(d, "b", b->b);
      }
      if (b->role != KS_ROLE_IN) {
        cJSON_AddNumberToObject(ao, "atol", b->atol);
        cJSON_AddNumberToObject(ao, "rtol", b->rtol);
      }
    }
    cJSON_AddItemToArray(args, ao);
  }
  cJSON_AddNumberToObject(o, "bytes_min", (double)w->bytes_min);
  cJSON_AddNumberToObject(o, "flops", w->flops);
  return o;
}

/* ---- the command ------------------------------------------------------ */

static int show(ks_ctx *ctx, const ks_scan *scan, const char *name, bool json) {
  ks_arena arena = KS_ARENA_INIT;
  const ks_kernel *k;
  ks_spec spec;
  cJSON *root = NULL;
  int rc = KS_EXIT_OK;
  if (ks_scan_lookup(ctx, scan, name, &k)) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  int found = ks_spec_find(ctx, scan, k, &arena, &spec);
  if (found) {
    if (found > 0)
      ks_error(ctx, "kernel %s has no spec: write one above it or in a .kspec file "
                    "(docs/spec.md), or draft one from a capture with --from-capture",
               k->signature);
    else
      ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  if (ks_spec_check(ctx, &spec, k)) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  const char *instance = k->tparams.len ? ks_spec_instance(ctx, &spec, k, &arena) : NULL;
  cJSON *works = NULL;
  if (json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.spec");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "kernel", k->qualified_name);
    cJSON_AddStringToObject(root, "signature", k->signature);
    cJSON_AddItemToObject(root, "spec", spec_json(&spec, instance));
    works = cJSON_AddArrayToObject(root, "workloads");
  } else {
    printf("kernel %s\n", k->signature);
    print_spec(&spec, instance);
  }
  for (size_t i = 0; i < spec.sizes.len; i++) {
    ks_workload w;
    const ks_launch *site;
    int r = resolve(ctx, scan, &spec, k, i, &arena, &w, &site);
    if (r) {
      rc = KS_EXIT_FAILURE;
      ks_error(ctx, "%s", ctx->error);
      if (json) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "size", spec.sizes.items[i].name);
        cJSON_AddStringToObject(e, "error", ctx->error);
        cJSON_AddItemToArray(works, e);
      }
      continue;
    }
    if (json) {
      cJSON_AddItemToArray(works, workload_json(&w, k, site));
    } else {
      printf("\nsize %s%s\n", w.size_name, w.timed ? " (timed)" : "");
      print_workload(&w, k, site);
    }
  }
  if (json) {
    char *text = cJSON_Print(root);
    puts(text);
    free(text);
  }
out:
  cJSON_Delete(root);
  ks_arena_release(&arena);
  return rc;
}

/* spec --from-capture: the draft on stdout. */
static int draft(ks_ctx *ctx, const ks_scan *scan, const char *name, const char *path) {
  ks_arena arena = KS_ARENA_INIT;
  const ks_kernel *k;
  ks_capture cap;
  const char *text;
  int rc = KS_EXIT_FAILURE;
  char *abs = realpath(path, NULL);
  int orc = ks_capture_open(ctx, abs ? abs : path, &cap);
  free(abs);
  if (orc) {
    ks_error(ctx, "%s", ctx->error);
    ks_arena_release(&arena);
    return rc;
  }
  if (ks_scan_lookup(ctx, scan, name, &k) ||
      ks_capture_spec_text(ctx, &cap, scan, k, &arena, &text)) {
    ks_error(ctx, "%s", ctx->error);
  } else {
    printf("%s", text);
    rc = KS_EXIT_OK;
  }
  ks_capture_close(&cap);
  ks_arena_release(&arena);
  return rc;
}

static int run_spec(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_JSON = 256, OPT_FROM_CAPTURE };
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"json", no_argument, NULL, OPT_JSON},
      {"from-capture", required_argument, NULL, OPT_FROM_CAPTURE},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  ks_source_args src;
  ks_source_args_init(&src, argc);
  bool json = false;
  const char *capture = NULL;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "h", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    switch (c) {
    case OPT_JSON:
      json = true;
      break;
    case OPT_FROM_CAPTURE:
      capture = optarg;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_spec);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_spec, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_spec, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind >= argc) {
    rc = ks_usage_error(ctx, &ks_cmd_spec, "which kernel? (a name or a signature)");
    goto out;
  }
  const char *name = argv[optind++];
  ks_source_args_paths(&src, argc, argv, optind);
  ks_scan scan;
  if (ks_scan_run(ctx, &src.scan, &scan)) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
  } else if (capture && json) {
    rc = ks_usage_error(ctx, &ks_cmd_spec, "--from-capture prints a comment, not JSON");
  } else {
    rc = capture ? draft(ctx, &scan, name, capture) : show(ctx, &scan, name, json);
  }
  ks_scan_release(&scan);
out:
  ks_source_args_release(&src);
  return rc;
}

const ks_command ks_cmd_spec = {"spec", "show a kernel's input spec and resolve its size sets",
                                usage, run_spec};
