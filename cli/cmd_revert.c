/* kernelsmith-cc revert: undoes apply --write, byte for byte, from the
 * record apply kept (applied.h), confined to the project root. A file changed
 * since apply wrote it is left alone and named: reverting it would lose the
 * user's edit. A record that points outside the project is refused, in one
 * line, and never followed. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "applied.h"
#include "ks_cli.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_safe_write.h"
#include "ks_store.h"

static const char usage[] =
    "usage: kernelsmith-cc revert [--store DIR]\n"
    "\n"
    "Restores every file 'apply --write' changed to what it was before, byte for\n"
    "byte, newest change first, and removes the files apply created (the\n"
    "dispatch header). A file that changed since apply wrote it is left as it is\n"
    "and named (exit status 1): reverting it would lose that change. An apply\n"
    "that was interrupted is undone as far as it got. Only files inside the\n"
    "project (the directory holding the store) are touched: a record that\n"
    "points elsewhere is refused and named (exit status 1).\n"
    "\n"
    "options:\n"
    "      --store DIR  the results store (default: .kernelsmith in the project\n"
    "                   root, as for optimize)\n"
    "  -h, --help       show this help\n";

const ks_command ks_cmd_revert;

static int run_revert(ks_ctx *ctx, int argc, char **argv) {
  static const struct option opts[] = {{"store", required_argument, NULL, 's'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  ks_arena a = KS_ARENA_INIT;
  const char *dir = NULL;
  ks_applied_log log = {.lock = -1};
  int c, rc = KS_EXIT_OK;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 's':
      dir = optarg;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_revert);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_revert, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_revert, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind < argc) {
    rc = ks_usage_error(ctx, &ks_cmd_revert, "unexpected argument '%s'", argv[optind]);
    goto out;
  }
  if (!dir)
    dir = ks_store_default_dir(&a);
  if (ks_applied_open(ctx, dir, false, &a, &log))
    goto fail;
  if (!log.items.len) {
    ks_applied_prune(&log); /* what an apply killed before its first record left */
    ks_info(ctx, "nothing to revert: apply --write has not changed anything here");
    goto out;
  }
  ks_applieds all = log.items;
  bool *kept = ks_arena_alloc(&a, all.len * sizeof *kept);
  memset(kept, 0, all.len * sizeof *kept);
  unsigned restored = 0, left = 0;
  int failed = 0;
  for (size_t n = all.len; n-- > 0 && !failed;) {
    const ks_applied *ch = &all.items[n];
    if (ch->refused) {
      ks_warn(ctx, "%s", ch->refused);
      kept[n] = true;
      left++;
      continue;
    }
    const char *path = ks_applied_abs(&a, &log, ch);
    ks_safe_write_clean(path); /* what a killed apply left beside it */
    char now[KS_HASH_HEX];
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && ks_file_sha256(ctx, path, now)) {
      failed = -1;
      for (size_t i = 0; i <= n; i++)
        kept[i] = true;
      break;
    }
    if (!exists) {
      if (ch->orig_sha) {
        ks_warn(ctx, "%s: missing; not restored", ch->path);
        kept[n] = true;
        left++;
      }
      continue; /* a created file that is gone (or never came: a pending record) */
    }
    if (ch->orig_sha && !strcmp(now, ch->orig_sha))
      continue; /* already what it was (a pending record: the kill came first) */
    if (strcmp(now, ch->new_sha)) {
      ks_warn(ctx, "%s: changed since apply wrote it; left as it is", ch->path);
      kept[n] = true;
      left++;
      continue;
    }
    const char *text;
    size_t len;
    if (!ch->orig_sha)
      failed = ks_safe_remove_within(ctx, log.root, path, ch->new_sha);
    else
      failed = ks_applied_original(ctx, &log, ch, &a, &text, &len) ||
               ks_safe_write_within(ctx, log.root, path, ch->new_sha, text, len);
    if (failed) {
      kept[n] = true; /* this one and those not reached stay recorded */
      for (size_t i = 0; i < n; i++)
        kept[i] = true;
    } else {
      restored++;
    }
  }
  if (failed) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
  }
  ks_applieds keep = {0};
  for (size_t i = 0; i < all.len; i++)
    if (kept[i])
      *ks_array_push(&a, &keep) = all.items[i];
  log.items = keep;
  if (ks_applied_save(ctx, &log))
    goto fail;
  ks_applied_prune(&log);
  printf("reverted %u file%s%s\n", restored, restored == 1 ? "" : "s",
         left ? ks_arena_printf(&a, "; %u left as they are (see above)", left) : "");
  if (left || failed)
    rc = KS_EXIT_FAILURE;
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  ks_applied_close(&log);
  ks_arena_release(&a);
  return rc;
}

const ks_command ks_cmd_revert = {"revert", "undo apply --write, byte for byte", usage,
                                  run_revert};
