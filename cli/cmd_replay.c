/* kernelsmith-cc replay: captured launches run again in isolation.
 *
 * Each launch a capture file holds is mapped to its kernel in the sources,
 * the kernel is compiled as the judge compiles it, and the original runs
 * alone on the captured inputs with the captured launch configuration; its
 * outputs are compared with the snapshots taken after the launch in the
 * application, bit for bit. This is the check optimize makes before a
 * captured launch serves as a test input, as a command of its own: a
 * launch the original does not reproduce missed something its kernel
 * reads. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_capture.h"
#include "ks_cli.h"
#include "ks_profile.h"
#include "ks_source_args.h"
#include "ks_specs.h"
#include "ks_target.h"

static const char usage[] =
    "usage: kernelsmith-cc replay CAPTURE [options] [PATH...]\n"
    "\n"
    "Runs every launch in CAPTURE (written by profile --capture) again, alone:\n"
    "the kernel from the sources under PATH (default: the current directory),\n"
    "compiled as the judge compiles it, on the captured inputs with the\n"
    "captured grid, block and shared memory. Each output is compared with what\n"
    "the application's launch left in it, bit for bit; differences within the\n"
    "output type's tolerance (float atomics add in another order) are told\n"
    "apart from real ones.\n"
    "\n"
    "options:\n"
    "  -k, --kernel NAME    only this kernel's launches (repeat for more)\n"
    KS_SOURCE_HELP
    "      --device N       CUDA device (default 0)\n"
    "      --cache-dir DIR  compiled cubins (default .kernelsmith/cache)\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 when every launch was reproduced (within tolerance), 1 when\n"
    "one was not or could not run, 2 on a usage error.\n";

const ks_command ks_cmd_replay;

static bool wanted(const ks_strings *names, const ks_kernel *k) {
  if (!names->len)
    return true;
  for (size_t i = 0; i < names->len; i++)
    if (ks_spec_names_kernel(names->items[i], k))
      return true;
  return false;
}

static void print_output(const ks_workload *w, const ks_output_check *o) {
  if (!o->has_capture) {
    printf("    %-14s no snapshot after the launch to compare with\n", o->buffer);
    return;
  }
  size_t es = 1;
  for (size_t b = 0; b < w->buffers.len; b++)
    if (!strcmp(w->buffers.items[b].name, o->buffer))
      es = ks_dtype_size(w->buffers.items[b].dtype);
  double mib = (double)o->count * (double)es / (1 << 20);
  if (!o->capture_bit_diffs)
    printf("    %-14s bit for bit (%llu elements, %.2f MiB)\n", o->buffer, o->count, mib);
  else if (!o->capture_mismatches)
    printf("    %-14s within tolerance: %llu of %llu elements differ in their bits (first at "
           "%lld: %.9g captured, %.9g replayed)\n",
           o->buffer, o->capture_bit_diffs, o->count, o->capture_first_diff, o->capture_expected,
           o->capture_got);
  else
    printf("    %-14s DIFFERS at %llu of %llu elements (first at %lld: %.9g captured, %.9g "
           "replayed)\n",
           o->buffer, o->capture_mismatches, o->count, o->capture_first_diff, o->capture_expected,
           o->capture_got);
}

/* Replays every captured launch of one instance of `k`; counts into
 * *replayed and *failed. -1 only when the tool cannot go on. */
static int replay_target(ks_ctx *ctx, ks_source_args *src, const ks_scan *scan,
                         const ks_kernel *k, ks_capture *cap, const char *instance,
                         const ks_judge_options *jo, ks_judge *judge, bool *judge_open,
                         ks_arena *arena, size_t *replayed, size_t *failed) {
  ks_target t;
  const char *label = instance ? ks_arena_printf(arena, "%s<%s>", k->qualified_name, instance)
                               : k->qualified_name;
  if (ks_target_open_capture_instance(ctx, &src->scan, scan, k, cap, instance, arena, &t)) {
    ks_error(ctx, "%s: %s", label, ctx->error);
    (*failed)++;
    return 0;
  }
  int rc = 0;
  if (!*judge_open) {
    if (ks_judge_open(ctx, judge, jo)) {
      ks_target_close(&t);
      return -1;
    }
    *judge_open = true;
  }
  if (ks_judge_prepare(ctx, judge, &t.subject, arena)) {
    ks_error(ctx, "%s: %s", label, ctx->error);
    (*failed)++;
    ks_target_close(&t);
    return 0;
  }
  for (size_t w = 0; w < t.nworkloads; w++) {
    const ks_workload *wl = &t.workloads[w];
    ks_replay r;
    if (ks_judge_replay(ctx, judge, &t.subject, w, arena, &r)) {
      rc = -1;
      break;
    }
    const ks_launch_cfg *lc = &wl->launch;
    const char *verdict = r.status != KS_RUN_OK ? "FAILED"
                          : !r.compared         ? "nothing to compare"
                          : r.bit_for_bit       ? "reproduced bit for bit"
                          : r.within_tolerance  ? "reproduced within tolerance"
                                                : "NOT REPRODUCED";
    printf("%s %s: grid (%u, %u, %u) block (%u, %u, %u) smem %llu: %s\n", label, wl->size_name,
           lc->grid[0], lc->grid[1], lc->grid[2], lc->block[0], lc->block[1], lc->block[2],
           lc->smem, verdict);
    if (r.status != KS_RUN_OK)
      printf("    %s\n", r.error ? r.error : "the run failed");
    for (size_t o = 0; o < r.outputs.len; o++)
      print_output(wl, &r.outputs.items[o]);
    if ((r.status != KS_RUN_OK || !r.within_tolerance) && wl->windowed)
      printf("   %s\n", ks_capture_window_hint(wl));
    (*replayed)++;
    *failed += r.status != KS_RUN_OK || !r.within_tolerance;
  }
  ks_target_close(&t);
  return rc;
}

static int run(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_DEVICE = 256, OPT_CACHE };
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"kernel", required_argument, NULL, 'k'},
      {"device", required_argument, NULL, OPT_DEVICE},
      {"cache-dir", required_argument, NULL, OPT_CACHE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ks_source_args src;
  ks_source_args_init(&src, argc);
  ks_judge_options jo = {.cache_dir = ".kernelsmith/cache", .no_time = true};
  ks_strings names = {0};
  ks_arena arena = KS_ARENA_INIT;
  ks_scan scan = {0};
  ks_capture cap;
  ks_judge judge;
  bool have_scan = false, have_cap = false, judge_open = false;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "k:h", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    long n;
    switch (c) {
    case 'k':
      *ks_array_push(&arena, &names) = optarg;
      break;
    case OPT_DEVICE:
      if ((n = ks_parse_count(optarg)) < 0) {
        rc = ks_usage_error(ctx, &ks_cmd_replay, "--device takes a device number, not '%s'",
                            optarg);
        goto out;
      }
      jo.device = (int)n;
      break;
    case OPT_CACHE:
      jo.cache_dir = optarg;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_replay);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_replay, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_replay, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind >= argc) {
    rc = ks_usage_error(ctx, &ks_cmd_replay, "which capture file? (profile --capture writes one)");
    goto out;
  }
  char *abs = realpath(argv[optind], NULL);
  int orc = ks_capture_open(ctx, abs ? abs : argv[optind], &cap);
  free(abs);
  if (orc)
    goto fail;
  have_cap = true;
  ks_source_args_paths(&src, argc, argv, optind + 1);
  if (ks_scan_run(ctx, &src.scan, &scan))
    goto fail;
  have_scan = true;

  ks_capture_warn_unmatched(ctx, &cap, &scan, &arena);
  size_t replayed = 0, failed = 0;
  for (size_t i = 0; i < scan.kernels.len; i++) {
    const ks_kernel *k = &scan.kernels.items[i];
    if (!wanted(&names, k))
      continue;
    /* Each template instance captured is a target of its own. */
    ks_strings instances = {0};
    for (size_t l = 0; l < cap.launches.len; l++) {
      const char *targs = NULL;
      if (ks_profile_match(&arena, cap.launches.items[l].kernel, NULL, &scan.kernels, &targs) !=
          (long)i)
        continue;
      bool seen = false;
      for (size_t j = 0; j < instances.len && !seen; j++)
        seen = !strcmp(instances.items[j] ? instances.items[j] : "", targs ? targs : "");
      if (!seen)
        *ks_array_push(&arena, &instances) = targs;
    }
    for (size_t in = 0; in < instances.len; in++)
      if (replay_target(ctx, &src, &scan, k, &cap, instances.items[in], &jo, &judge, &judge_open,
                        &arena, &replayed, &failed))
        goto fail;
  }
  if (!replayed && !failed) {
    ks_fail(ctx, "%s: no captured launch of a kernel under the paths scanned%s", cap.path,
            names.len ? " (and named with -k)" : "");
    goto fail;
  }
  rc = failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  if (judge_open)
    ks_judge_close(&judge);
  if (have_scan)
    ks_scan_release(&scan);
  if (have_cap)
    ks_capture_close(&cap);
  ks_arena_release(&arena);
  ks_source_args_release(&src);
  return rc;
}

const ks_command ks_cmd_replay = {
    "replay", "run captured launches again alone and compare their outputs bit for bit", usage,
    run};
