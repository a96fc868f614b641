/* The compile service: NVRTC (or nvcc, compile_nvcc.c) in parallel
 * threads, with an on-disk cache of cubins and lowered names keyed by
 * everything that determines them. See ks_compile.h. */
#include "ks_compile.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compile_nvcc.h"
#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_nvrtc.h"
#include "ks_toolkit.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

const char *ks_compiler_kind_name(ks_compiler_kind k) {
  return k == KS_COMPILER_NVRTC ? "nvrtc" : k == KS_COMPILER_NVCC ? "nvcc" : "auto";
}

int ks_compiler_kind_parse(const char *name, ks_compiler_kind *out) {
  static const ks_compiler_kind kinds[] = {KS_COMPILER_AUTO, KS_COMPILER_NVRTC, KS_COMPILER_NVCC};
  for (size_t i = 0; name && i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(name, ks_compiler_kind_name(kinds[i]))) {
      *out = kinds[i];
      return 0;
    }
  return -1;
}

static void add_option(ks_compiler *c, const char *prefix, const char *value) {
  *ks_array_push(&c->arena, &c->options) = ks_arena_printf(&c->arena, "%s%s", prefix, value);
}

int ks_compiler_init(ks_ctx *ctx, ks_compiler *c, const char *arch, const char *cache_dir) {
  memset(c, 0, sizeof *c);
  if (strlen(arch) >= sizeof c->arch || strncmp(arch, "sm_", 3))
    return ks_fail(ctx, "bad architecture '%s' (expected sm_XX, e.g. sm_90)", arch);
  snprintf(c->arch, sizeof c->arch, "%s", arch);
  if (ks_nvrtc_version(&c->nvrtc_major, &c->nvrtc_minor))
    return ks_fail(ctx, "NVRTC is not usable (nvrtcVersion failed)");
  ks_toolkit tk;
  if (ks_toolkit_find(ctx, &tk))
    return -1;
  add_option(c, "-arch=", arch);
  add_option(c, "", "-std=c++17");
  add_option(c, "-I", tk.include);
  char *cccl = ks_path_join(tk.include, "cccl");
  if (ks_is_dir(cccl))
    add_option(c, "-I", cccl);
  free(cccl);
  add_option(c, "", "-lineinfo");
  ks_nvcc_find(c, tk.root);
  if (cache_dir)
    c->cache_dir = ks_arena_strdup(&c->arena, cache_dir);
  return 0;
}

void ks_compiler_release(ks_compiler *c) { ks_arena_release(&c->arena); }

/* ---- the cache ---------------------------------------------------------- */

/* nvcc's key: its version and "nvcc" instead of NVRTC's and its options
 * (nvcc gets only -cubin, -arch and the unit's own). */
static void cache_key(const ks_compiler *c, const ks_compile_unit *u, bool nvcc,
                      char key[KS_HASH_HEX]) {
  ks_buf b = KS_BUF_INIT;
  if (nvcc)
    ks_buf_addf(&b, "kernelsmith-cc cubin v1\x1f%s\x1fnvcc %s", c->arch, c->nvcc_version);
  else
    ks_buf_addf(&b, "kernelsmith-cc cubin v1\x1f%s\x1fnvrtc %d.%d", c->arch, c->nvrtc_major,
                c->nvrtc_minor);
  for (size_t i = 0; !nvcc && i < c->options.len; i++)
    ks_buf_addf(&b, "\x1f%s", c->options.items[i]);
  for (size_t i = 0; i < u->nextra; i++)
    ks_buf_addf(&b, "\x1f+%s", u->extra_options[i]);
  for (size_t i = 0; i < u->nnames; i++)
    ks_buf_addf(&b, "\x1fname %s", u->name_expressions[i]);
  ks_buf_addc(&b, '\x1e');
  ks_buf_adds(&b, u->source);
  ks_sha256_hex(b.data, b.len, key);
  ks_buf_release(&b);
}

/* Writes atomically: a reader sees the old file or the whole new one. */
static void write_atomic(const char *path, const void *data, size_t n) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lx", path, (long)getpid(), (unsigned long)pthread_self());
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return;
  bool ok = fwrite(data, 1, n, f) == n;
  ok = fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path))
    remove(tmp);
}

typedef struct unit_out {
  ks_compile_status status;
  char *reason, *log, *note;
  ks_buf cubin;
  char **lowered;
  double ms;
  bool cached, nvcc;
} unit_out;

static bool cache_load(const ks_compiler *c, const ks_compile_unit *u, const char *key,
                       unit_out *o) {
  if (!c->cache_dir)
    return false;
  ks_ctx quiet;
  ks_ctx_init(&quiet, "cache");
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.cubin", c->cache_dir, key);
  ks_buf names = KS_BUF_INIT;
  bool hit = ks_read_file(&quiet, path, 256u << 20, &o->cubin) == 0 && o->cubin.len > 0;
  if (hit) {
    snprintf(path, sizeof path, "%s/%s.names", c->cache_dir, key);
    hit = ks_read_file(&quiet, path, 1u << 20, &names) == 0;
  }
  size_t found = 0;
  char *save = NULL;
  for (char *line = hit ? strtok_r(names.data, "\n", &save) : NULL; line && found < u->nnames;
       line = strtok_r(NULL, "\n", &save))
    o->lowered[found++] = ks_xstrdup(line);
  if (!hit || found != u->nnames) {
    for (size_t i = 0; i < found; i++) {
      free(o->lowered[i]);
      o->lowered[i] = NULL;
    }
    ks_buf_reset(&o->cubin);
    hit = false;
  }
  ks_buf_release(&names);
  ks_ctx_release(&quiet);
  return hit;
}

static void cache_store(const ks_compiler *c, const ks_compile_unit *u, const char *key,
                        const unit_out *o) {
  if (!c->cache_dir || ks_mkdir_p(c->cache_dir))
    return;
  char path[4200];
  ks_buf names = KS_BUF_INIT;
  for (size_t i = 0; i < u->nnames; i++)
    ks_buf_addf(&names, "%s\n", o->lowered[i]);
  /* Names first: a cubin without its names file is not a hit. */
  snprintf(path, sizeof path, "%s/%s.names", c->cache_dir, key);
  write_atomic(path, names.data, names.len);
  snprintf(path, sizeof path, "%s/%s.cubin", c->cache_dir, key);
  write_atomic(path, o->cubin.data, o->cubin.len);
  ks_buf_release(&names);
}

/* A unit nvcc rejected: the reason under its nvcc key, so that the next
 * compile of it goes to NVRTC at once. */
static char *rejection_load(const ks_compiler *c, const char *key) {
  if (!c->cache_dir)
    return NULL;
  ks_ctx quiet;
  ks_ctx_init(&quiet, "cache");
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.nvcc-rejected", c->cache_dir, key);
  ks_buf why = KS_BUF_INIT;
  char *out = ks_read_file(&quiet, path, 1u << 16, &why) == 0 && why.len ? ks_buf_detach(&why)
                                                                       : NULL;
  ks_buf_release(&why);
  ks_ctx_release(&quiet);
  return out;
}

static void rejection_store(const ks_compiler *c, const char *key, const char *why) {
  if (!c->cache_dir || ks_mkdir_p(c->cache_dir))
    return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.nvcc-rejected", c->cache_dir, key);
  write_atomic(path, why, strlen(why));
}

/* ---- compiling ---------------------------------------------------------- */

typedef struct pool {
  ks_ctx *ctx;
  const ks_compiler *c;
  const ks_compile_unit *units;
  unit_out *outs;
  size_t n;
  atomic_size_t next;
} pool;

/* Each thread records its own failure message in a context of its own. */
static void local_ctx(const pool *p, ks_ctx *local) {
  ks_ctx_init(local, p->ctx->prog);
  memcpy(local->faults, p->ctx->faults, sizeof local->faults);
  local->nfaults = p->ctx->nfaults;
}

/* The unit by nvcc, from the cache or compiled; true when that made the
 * cubin. Otherwise o->note says why not, and NVRTC compiles it. */
static bool compile_nvcc(pool *p, const ks_compile_unit *u, unit_out *o) {
  const ks_compiler *c = p->c;
  if (!*c->nvcc) {
    o->note = ks_xstrdup("no nvcc was found (CUDA_HOME, /usr/local/cuda, PATH, "
                         "$KERNELSMITH_NVCC): compiled with NVRTC");
    return false;
  }
  char key[KS_HASH_HEX];
  cache_key(c, u, true, key);
  char *before = rejection_load(c, key);
  if (before) {
    o->note = before;
    return false;
  }
  if (cache_load(c, u, key, o)) {
    o->status = KS_COMPILE_OK;
    o->cached = o->nvcc = true;
    o->log = ks_xstrdup("");
    return true;
  }
  ks_ctx local;
  local_ctx(p, &local);
  ks_buf log = KS_BUF_INIT;
  log.limit = 1u << 20;
  double t0 = now_ms();
  bool rejected = false;
  int rc = ks_nvcc_compile(&local, c, u, &o->cubin, &log, o->lowered, &rejected);
  o->ms = now_ms() - t0;
  if (rc) {
    /* NVRTC's log replaces nvcc's: it is the one about the cubin used. */
    ks_buf note = KS_BUF_INIT;
    ks_buf_addf(&note, "nvcc rejected it (%s): compiled with NVRTC", local.error);
    o->note = ks_buf_detach(&note);
    if (rejected)
      rejection_store(c, key, o->note);
    ks_buf_reset(&o->cubin);
  } else {
    o->status = KS_COMPILE_OK;
    o->nvcc = true;
    o->log = ks_buf_detach(&log);
    cache_store(c, u, key, o);
  }
  ks_buf_release(&log);
  ks_ctx_release(&local);
  return !rc;
}

static void compile_one(pool *p, const ks_compile_unit *u, unit_out *o) {
  o->lowered = ks_xcalloc(u->nnames ? u->nnames : 1, sizeof *o->lowered);
  if (u->candidate) {
    ks_arena scratch = KS_ARENA_INIT;
    const char *why = ks_candidate_check(&scratch, u->candidate);
    if (why) {
      o->status = KS_COMPILE_REFUSED;
      o->reason = ks_xstrdup(why);
    }
    ks_arena_release(&scratch);
    if (why)
      return;
  }
  if (u->nvcc && compile_nvcc(p, u, o))
    return;
  char key[KS_HASH_HEX];
  cache_key(p->c, u, false, key);
  if (cache_load(p->c, u, key, o)) {
    o->status = KS_COMPILE_OK;
    o->cached = true;
    o->log = ks_xstrdup("");
    return;
  }
  size_t nopt = p->c->options.len + u->nextra;
  const char **options = ks_xcalloc(nopt ? nopt : 1, sizeof *options);
  for (size_t i = 0; i < p->c->options.len; i++)
    options[i] = p->c->options.items[i];
  for (size_t i = 0; i < u->nextra; i++)
    options[p->c->options.len + i] = u->extra_options[i];
  ks_nvrtc_unit nu = {.source = u->source,
                      .name = u->name,
                      .options = options,
                      .noptions = nopt,
                      .name_expressions = u->name_expressions,
                      .nnames = u->nnames};
  ks_ctx local;
  local_ctx(p, &local);
  ks_buf log = KS_BUF_INIT;
  log.limit = 1u << 20;
  double t0 = now_ms();
  int rc = ks_nvrtc_compile_named(&local, &nu, &o->cubin, &log, o->lowered);
  o->ms = now_ms() - t0;
  o->log = ks_buf_detach(&log);
  if (rc) {
    o->status = KS_COMPILE_FAILED;
    o->reason = ks_xstrdup(local.error);
  } else {
    o->status = KS_COMPILE_OK;
    cache_store(p->c, u, key, o);
  }
  ks_ctx_release(&local);
  free(options);
}

static void *worker(void *data) {
  pool *p = data;
  for (;;) {
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n)
      break;
    compile_one(p, &p->units[i], &p->outs[i]);
  }
  return NULL;
}

int ks_compile(ks_ctx *ctx, const ks_compiler *c, const ks_compile_unit *units, size_t n,
               ks_arena *arena, ks_compile_result *out) {
  if (!n)
    return 0;
  pool p = {ctx, c, units, ks_xcalloc(n, sizeof(unit_out)), n, 0};
  for (size_t i = 0; i < n; i++)
    ks_buf_init(&p.outs[i].cubin, 0);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = c->threads ? c->threads : (size_t)(cpus > 0 ? cpus : 1);
  if (threads > n)
    threads = n;
  pthread_t *tids = ks_xcalloc(threads, sizeof *tids);
  size_t started = 0;
  for (size_t i = 1; i < threads; i++)
    if (pthread_create(&tids[i], NULL, worker, &p) == 0)
      started = i;
    else
      break;
  worker(&p); /* this thread works too */
  for (size_t i = 1; i <= started; i++)
    pthread_join(tids[i], NULL);
  free(tids);

  for (size_t i = 0; i < n; i++) {
    unit_out *o = &p.outs[i];
    ks_compile_result *r = &out[i];
    memset(r, 0, sizeof *r);
    r->status = o->status;
    r->reason = o->reason ? ks_arena_strdup(arena, o->reason) : NULL;
    r->log = ks_arena_strdup(arena, o->log ? o->log : "");
    r->ms = o->ms;
    r->cached = o->cached;
    r->nvcc = o->nvcc;
    r->note = o->note ? ks_arena_strdup(arena, o->note) : NULL;
    if (o->status == KS_COMPILE_OK) {
      void *cubin = ks_arena_alloc(arena, o->cubin.len ? o->cubin.len : 1);
      memcpy(cubin, o->cubin.data, o->cubin.len);
      r->cubin = cubin;
      r->cubin_size = o->cubin.len;
      r->lowered = ks_arena_alloc(arena, (units[i].nnames + 1) * sizeof *r->lowered);
      for (size_t k = 0; k < units[i].nnames; k++)
        r->lowered[k] = ks_arena_strdup(arena, o->lowered[k]);
    }
    for (size_t k = 0; k < units[i].nnames; k++)
      free(o->lowered[k]);
    free(o->lowered);
    free(o->reason);
    free(o->log);
    free(o->note);
    ks_buf_release(&o->cubin);
  }
  free(p.outs);
  return 0;
}
