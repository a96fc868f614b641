/* kernelsmith-cc revert: undoes apply --write, byte for byte, from the
 * record apply kept (applied.h). A file changed since apply wrote it is left
 * alone and named: reverting it would lose the user's edit. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    "and named (exit status 1): reverting it would lose that change.\n"
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
  ks_applieds all;
  if (ks_applied_read(ctx, dir, &a, &all))
    goto fail;
  if (!all.len) {
    ks_info(ctx, "nothing to revert: apply --write has not changed anything here");
    goto out;
  }
  ks_applieds keep = {0};
  bool *kept = ks_arena_alloc(&a, all.len * sizeof *kept);
  unsigned restored = 0, left = 0;
  for (size_t n = all.len; n-- > 0;) {
    const ks_applied *ch = &all.items[n];
    char now[KS_HASH_HEX];
    bool exists = ks_is_file(ch->path);
    if (exists && ks_file_sha256(ctx, ch->path, now))
      goto fail;
    if (!exists) {
      if (ch->orig_sha) {
        ks_warn(ctx, "%s: missing; not restored", ch->path);
        kept[n] = true;
        left++;
      }
      continue;
    }
    if (ch->orig_sha && !strcmp(now, ch->orig_sha))
      continue; /* already what it was */
    if (strcmp(now, ch->new_sha)) {
      ks_warn(ctx, "%s: changed since apply wrote it; left as it is", ch->path);
      kept[n] = true;
      left++;
      continue;
    }
    if (!ch->orig_sha) {
      if (unlink(ch->path)) {
        ks_fail(ctx, "cannot remove %s", ch->path);
        goto fail;
      }
    } else {
      const char *text;
      size_t len;
      if (ks_applied_original(ctx, dir, ch, &a, &text, &len) ||
          ks_safe_write(ctx, ch->path, ch->new_sha, text, len))
        goto fail;
    }
    restored++;
  }
  for (size_t i = 0; i < all.len; i++)
    if (kept[i])
      *ks_array_push(&a, &keep) = all.items[i];
  if (ks_applied_write(ctx, dir, &keep))
    goto fail;
  printf("reverted %u file%s%s\n", restored, restored == 1 ? "" : "s",
         left ? ks_arena_printf(&a, "; %u left as they are (see above)", left) : "");
  rc = left ? KS_EXIT_FAILURE : KS_EXIT_OK;
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  ks_arena_release(&a);
  return rc;
}

const ks_command ks_cmd_revert = {"revert", "undo apply --write, byte for byte", usage,
                                  run_revert};
