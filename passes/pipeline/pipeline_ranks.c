/* pipeline_ranks: this process's part in optimize --mpi. The cluster (the
 * MPI transport, cluster/) made into the search's exchange (ks_search_ranks),
 * and the run's inputs carried from rank 0 to ranks that have no copy of
 * the project (ks_mirror): nothing is assumed of the other hosts' file
 * systems but the CUDA toolkit and kernelsmith-cc itself. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_cluster.h"
#include "ks_mirror.h"
#include "pipeline_int.h"

struct ks_pipeline_ranks {
  ks_cluster *cluster;
  ks_search_ranks search;
  ks_mirror mirror;
  bool have_mirror;
  bool sent_argv, sent_inputs; /* rank 0: the others wait for both */
};

enum { TAG_INPUTS = 1, TAG_ARGV = 2 }; /* the searches' tags start at 1 << 16 */

int ks_pipeline_ranks_argv(ks_pipeline_ranks *r, ks_ctx *ctx, const char *mine, ks_arena *a,
                           const char **out) {
  ks_blob b = {mine, mine ? strlen(mine) + 1 : 0};
  if (r->search.rank == 0)
    r->sent_argv = true;
  int rc = ks_cluster_bcast(r->cluster, ctx, TAG_ARGV, &b, a);
  if (rc)
    return rc < 0 ? -1 : ks_fail(ctx, "--mpi: rank 0 is lost before it sent its command line");
  if (r->search.rank > 0 && (!b.len || !memchr(b.data, '\0', b.len)))
    return ks_fail(ctx, "--mpi: rank 0 stopped before the search (its messages say why)");
  *out = b.data;
  return 0;
}

static int do_gather(void *self, ks_ctx *ctx, unsigned tag, const void *data, size_t len,
                     ks_arena *arena, const void **datas, size_t *lens) {
  ks_cluster *c = self;
  int n = ks_cluster_size(c);
  ks_blob *all = ks_cluster_rank(c) == 0 ? ks_arena_alloc(arena, (size_t)n * sizeof *all) : NULL;
  if (ks_cluster_gather(c, ctx, tag, (ks_blob){data, len}, arena, all))
    return -1;
  for (int i = 0; all && i < n; i++) {
    datas[i] = all[i].data;
    lens[i] = all[i].len;
  }
  return 0;
}

static int do_bcast(void *self, ks_ctx *ctx, unsigned tag, const void **data, size_t *len,
                    ks_arena *arena) {
  ks_blob b = {*data, *len};
  int rc = ks_cluster_bcast(self, ctx, tag, &b, arena);
  *data = b.data;
  *len = b.len;
  return rc;
}

static size_t do_take_lost(void *self, int *out) { return ks_cluster_take_lost(self, out); }

static const char *do_host(void *self, int rank) { return ks_cluster_host(self, rank); }

int ks_pipeline_ranks_open(ks_ctx *ctx, double timeout_s, ks_pipeline_ranks **out) {
  ks_pipeline_ranks *r = ks_xmalloc(sizeof *r);
  memset(r, 0, sizeof *r);
  ks_cluster_options o = {.timeout_s = timeout_s};
  if (ks_cluster_open(ctx, NULL, NULL, &o, &r->cluster)) {
    free(r);
    return -1;
  }
  r->search = (ks_search_ranks){.self = r->cluster, .rank = ks_cluster_rank(r->cluster),
                                .size = ks_cluster_size(r->cluster), .gather = do_gather,
                                .bcast = do_bcast, .take_lost = do_take_lost, .host = do_host,
                                .arena = KS_ARENA_INIT};
  *out = r;
  return 0;
}

int ks_pipeline_ranks_rank(const ks_pipeline_ranks *r) { return r->search.rank; }
int ks_pipeline_ranks_size(const ks_pipeline_ranks *r) { return r->search.size; }
const char *ks_pipeline_ranks_host(const ks_pipeline_ranks *r, int rank) {
  return ks_cluster_host(r->cluster, rank);
}

ks_search_ranks *ks_pipeline_ranks_search(ks_pipeline_ranks *r) { return &r->search; }

/* The deepest directory holding `path` and everything in *root so far. */
static void widen(char *root, const char *path) {
  char real[PATH_MAX];
  if (!realpath(path, real))
    return;
  struct stat st;
  if (!stat(real, &st) && !S_ISDIR(st.st_mode)) {
    char *slash = strrchr(real, '/');
    if (slash)
      *(slash == real ? slash + 1 : slash) = '\0';
  }
  if (!*root) {
    strcpy(root, real);
    return;
  }
  size_t n = 0;
  while (root[n] && root[n] == real[n])
    n++;
  if (!(root[n] == '\0' && (real[n] == '/' || real[n] == '\0'))) {
    while (n > 0 && root[n - 1] != '/')
      n--; /* back to a whole component */
    if (n > 1)
      n--;
  }
  root[n ? n : 1] = '\0';
}

static bool has_compdb(ks_arena *a, const char *dir) {
  return !access(ks_arena_printf(a, "%s/compile_commands.json", dir), R_OK);
}

/* Where compile_commands.json is, as the scan would look for it: the build
 * directory, else beside or above the first path. */
static const char *compdb_dir(ks_arena *a, const ks_scan_options *scan) {
  if (scan->no_compdb)
    return NULL;
  if (scan->build_dir)
    return has_compdb(a, scan->build_dir) ? scan->build_dir : NULL;
  char dir[PATH_MAX];
  if (!scan->npaths || !realpath(scan->paths[0], dir))
    return NULL;
  struct stat st;
  if (!stat(dir, &st) && !S_ISDIR(st.st_mode))
    *strrchr(dir, '/') = '\0';
  for (;;) {
    if (has_compdb(a, *dir ? dir : "/"))
      return ks_arena_strdup(a, *dir ? dir : "/");
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
      return NULL;
    *slash = '\0';
  }
}

int ks_pipeline_ranks_inputs(ks_pipeline_ranks *r, ks_ctx *ctx, ks_scan_options *scan,
                             ks_strings *captures, ks_arena *a) {
  ks_blob blob = {0};
  if (r->search.rank == 0) {
    char root[PATH_MAX] = "";
    for (size_t i = 0; i < scan->npaths; i++)
      widen(root, scan->paths[i]);
    for (size_t i = 0; i < captures->len; i++)
      widen(root, captures->items[i]);
    const char *compdb = compdb_dir(a, scan);
    if (compdb)
      widen(root, compdb);
    if (!*root)
      widen(root, ".");
    ks_buf b = KS_BUF_INIT;
    int rc = ks_mirror_pack(ctx, root, scan->paths, scan->npaths, compdb, captures->items,
                            captures->len, &b);
    if (rc) {
      /* The others wait for the files: an empty blob tells them to stop. */
      ks_blob none = {"", 0};
      ks_ctx quiet;
      ks_ctx_init(&quiet, ctx->prog);
      r->sent_inputs = true;
      ks_cluster_bcast(r->cluster, &quiet, TAG_INPUTS, &none, a);
      ks_ctx_release(&quiet);
      ks_buf_release(&b);
      return ks_fail(ctx, "--mpi: the files to send to the other ranks: %s", ctx->error);
    }
    blob = (ks_blob){b.data, b.len};
    r->sent_inputs = true;
    rc = ks_cluster_bcast(r->cluster, ctx, TAG_INPUTS, &blob, a);
    ks_info(ctx, "--mpi: %d ranks; the project's files under %s (%zu bytes) sent to the others",
            r->search.size, root, b.len);
    ks_buf_release(&b);
    return rc ? -1 : 0;
  }
  int rc = ks_cluster_bcast(r->cluster, ctx, TAG_INPUTS, &blob, a);
  if (rc)
    return rc < 0 ? -1 : ks_fail(ctx, "--mpi: rank 0 is lost before it sent the project's files");
  if (!blob.len)
    return ks_fail(ctx, "--mpi: rank 0 stopped before the search (its messages say why)");
  /* The mirror outlives the caller's arena: it is removed at close. */
  if (ks_mirror_unpack(ctx, blob.data, blob.len, &r->search.arena, &r->mirror))
    return -1;
  r->have_mirror = true;
  /* Rank 0's paths as they are here. */
  const char **paths = ks_arena_alloc(a, (scan->npaths + 1) * sizeof *paths);
  for (size_t i = 0; i < scan->npaths; i++)
    if (!(paths[i] = ks_mirror_map(ctx, &r->mirror, scan->paths[i], a)))
      return -1;
  scan->paths = paths;
  if (scan->build_dir && !(scan->build_dir = ks_mirror_map(ctx, &r->mirror, scan->build_dir, a)))
    return -1;
  const char **extra = ks_arena_alloc(a, (scan->nextra + 1) * sizeof *extra);
  for (size_t i = 0; i < scan->nextra; i++) {
    const char *arg = scan->extra_args[i];
    extra[i] = arg;
    /* -I/abs/in/the/project: the copy's include directory. */
    if (!strncmp(arg, "-I", 2) && arg[2] == '/') {
      ks_ctx quiet;
      ks_ctx_init(&quiet, ctx->prog);
      const char *m = ks_mirror_map(&quiet, &r->mirror, arg + 2, a);
      if (m)
        extra[i] = ks_arena_printf(a, "-I%s", m);
      ks_ctx_release(&quiet);
    }
  }
  scan->extra_args = extra;
  for (size_t i = 0; i < captures->len; i++)
    if (!(captures->items[i] = ks_mirror_map(ctx, &r->mirror, captures->items[i], a)))
      return -1;
  if (chdir(r->mirror.root))
    return ks_fail(ctx, "--mpi: %s: %s", r->mirror.root, strerror(errno));
  ks_info(ctx, "--mpi: rank %d on %s: the project's %zu files %s %s", r->search.rank,
          ks_cluster_host(r->cluster, r->search.rank), r->mirror.nfiles,
          r->mirror.copied ? "copied to" : "found as they are in", r->mirror.root);
  return 0;
}

void ks_pipeline_ranks_close(ks_pipeline_ranks *r, ks_ctx *ctx) {
  if (!r)
    return;
  if (r->search.rank == 0) {
    /* Whatever the others still wait for, so that they stop too. */
    ks_arena a = KS_ARENA_INIT;
    ks_blob none = {"", 0};
    ks_ctx quiet;
    ks_ctx_init(&quiet, ctx->prog);
    if (!r->sent_argv)
      ks_cluster_bcast(r->cluster, &quiet, TAG_ARGV, &none, &a);
    if (!r->sent_inputs)
      ks_cluster_bcast(r->cluster, &quiet, TAG_INPUTS, &none, &a);
    ks_ctx_release(&quiet);
    ks_arena_release(&a);
  }
  ks_search_ranks_end(&r->search, ctx);
  if (r->have_mirror && r->mirror.copied && ks_mirror_remove(ctx, &r->mirror))
    ks_warn(ctx, "%s", ctx->error);
  ks_cluster_close(r->cluster);
  ks_search_ranks_release(&r->search);
  free(r);
}
