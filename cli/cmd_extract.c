/* kernelsmith-cc extract: one kernel as a standalone unit for NVRTC. */
#include <cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"
#include "ks_footprint.h"
#include "ks_source_args.h"
#include "ks_report.h"
#include "ks_scan.h"
#include "ks_slice.h"

static const char usage[] =
    "usage: kernelsmith-cc extract [options] KERNEL [PATH...]\n"
    "\n"
    "Prints KERNEL as a standalone compilation unit for NVRTC: the kernel and every\n"
    "device function, type, __constant__ variable, macro and template it needs, in\n"
    "the order the compiler reads them, each inside its namespaces, with the CUDA\n"
    "headers it uses as #include lines and no host code. KERNEL is a name (\"k\",\n"
    "\"ns::k\") or, for an overloaded kernel, a signature (\"fill(float *, float, int)\").\n"
    "The files under each PATH (default: the current directory) are scanned first,\n"
    "as by 'scan'. A template kernel comes with the template arguments it is\n"
    "launched with, as NVRTC name expressions (printed as comments, or in --json).\n"
    "\n"
    "options:\n"
    KS_SOURCE_HELP
    "      --instance ARGS  template arguments to instantiate, e.g. \"float, 256\"\n"
    "                       (default: those seen at the launch sites)\n"
    "      --json           the unit and its name expressions, includes,\n"
    "                       dependencies and device variables as JSON\n"
    "      --footprints     instead of the unit: for each pointer parameter, how\n"
    "                       many elements the kernel can reach through it, as\n"
    "                       its own bounds and indices prove (what apply's\n"
    "                       disjoint() guards use where no spec gives a length),\n"
    "                       or why that is not proved\n"
    "  -h, --help           show this help\n"
    "\n"
    "A kernel that cannot be sliced (it calls host code, or a device function whose\n"
    "definition is not in the scanned files) is reported in one line; exit status 1.\n";

const ks_command ks_cmd_extract;

static cJSON *strings_json(const ks_strings *list) {
  cJSON *array = cJSON_CreateArray();
  for (size_t i = 0; i < list->len; i++)
    cJSON_AddItemToArray(array, cJSON_CreateString(list->items[i]));
  return array;
}

static int print_json(const ks_slice *slice) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.slice");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "kernel", slice->kernel);
  cJSON_AddStringToObject(root, "file", slice->file);
  cJSON_AddItemToObject(root, "name_expressions", strings_json(&slice->name_expressions));
  cJSON_AddItemToObject(root, "includes", strings_json(&slice->includes));
  cJSON_AddItemToObject(root, "dependencies", strings_json(&slice->dependencies));
  cJSON_AddItemToObject(root, "variables", strings_json(&slice->variables));
  cJSON_AddItemToObject(root, "options", strings_json(&slice->options));
  cJSON_AddItemToObject(root, "codegen", strings_json(&slice->codegen));
  cJSON_AddStringToObject(root, "source", slice->source);
  char *text = cJSON_Print(root);
  int rc = text && puts(text) >= 0 ? 0 : -1;
  free(text);
  cJSON_Delete(root);
  return rc;
}

static void print_unit(const ks_slice *slice) {
  fputs(slice->source, stdout);
  /* How to compile it, as comments: the unit stays valid input for NVRTC. */
  for (size_t i = 0; i < slice->name_expressions.len; i++)
    printf("// name expression: %s\n", slice->name_expressions.items[i]);
  for (size_t i = 0; i < slice->options.len; i++)
    printf("// NVRTC option: %s\n", slice->options.items[i]);
  for (size_t i = 0; i < slice->codegen.len; i++)
    printf("// NVRTC option (from the compile command): %s\n", slice->codegen.items[i]);
}

/* Each pointer parameter's footprint, one line each. */
static int print_footprints(ks_ctx *ctx, const ks_slice *slice, ks_arena *a) {
  ks_footprints fp = {0};
  if (ks_footprints_from_unit(ctx, ks_arena_printf(a, "%s (slice)", slice->file), slice->source,
                              slice->kernel, a, &fp))
    return -1;
  for (size_t i = 0; i < fp.len; i++) {
    const ks_footprint *f = &fp.items[i];
    if (f->why && !strcmp(f->why, "not a pointer"))
      continue;
    printf("%-16s %-10s %s%s\n", f->param,
           f->read && f->written ? "read+write" : f->written ? "write" : f->read ? "read" : "unused",
           f->extent ? f->extent : "not proved: ", f->extent ? "" : f->why ? f->why : "?");
  }
  return 0;
}

static int run_extract(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_JSON = 256, OPT_INSTANCE, OPT_FOOTPRINTS };
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"json", no_argument, NULL, OPT_JSON},
      {"footprints", no_argument, NULL, OPT_FOOTPRINTS},
      {"instance", required_argument, NULL, OPT_INSTANCE}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ks_source_args src;
  ks_source_args_init(&src, argc);
  bool json = false, have_scan = false, footprints = false;
  const char *instance = NULL;
  ks_scan scan;
  ks_arena arena = KS_ARENA_INIT;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "h", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    switch (c) {
    case OPT_INSTANCE:
      instance = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case OPT_FOOTPRINTS:
      footprints = true;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_extract);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_extract, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_extract, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind >= argc) {
    rc = ks_usage_error(ctx, &ks_cmd_extract, "which kernel? (give its name)");
    goto out;
  }
  const char *name = argv[optind++];
  ks_source_args_paths(&src, argc, argv, optind);

  rc = ks_scan_run(ctx, &src.scan, &scan);
  have_scan = true;
  if (rc) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  ks_report_diagnostics(ctx, &scan);
  const ks_kernel *k = NULL;
  ks_slice slice;
  if (ks_scan_lookup(ctx, &scan, name, &k)) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  if (ks_slice_kernel(ctx, &src.scan, &scan, k, instance, &arena, &slice)) {
    ks_error(ctx, "cannot slice '%s': %s", k->qualified_name, ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  if (k->is_template && !slice.name_expressions.len)
    ks_warn(ctx, "'%s' is a template that is never launched with known arguments: no name "
                 "expression (give one with --instance)",
            k->qualified_name);
  if (footprints) {
    if (print_footprints(ctx, &slice, &arena)) {
      ks_error(ctx, "%s", ctx->error);
      rc = KS_EXIT_FAILURE;
    }
  } else if (json ? print_json(&slice) : (print_unit(&slice), 0)) {
    ks_error(ctx, "cannot write the output");
    rc = KS_EXIT_FAILURE;
  }
out:
  if (have_scan)
    ks_scan_release(&scan);
  ks_arena_release(&arena);
  ks_source_args_release(&src);
  return rc;
}

const ks_command ks_cmd_extract = {"extract",
                                   "print a kernel as a standalone unit for NVRTC", usage,
                                   run_extract};
