/* pipeline_devices: the run's workers (--devices): which devices, a judge
 * (a worker process with its own context, ceilings and clock checks) per
 * entry, and for each kernel's search one evaluator per worker. */
#include <string.h>

#include "ks_cuda.h"
#include "pipeline_int.h"

/* How many devices the driver lists; without one, the stand-in stands in
 * for one device and a GPU run has none (p->no_gpu says why). */
static int count_devices(ks_pipeline *p, int *out) {
  ks_ctx *ctx = p->job->ctx;
  ks_cuda cu;
  ks_ctx quiet;
  ks_ctx_init(&quiet, ctx->prog);
  int n = ks_cuda_load(&quiet, &cu) ? -1 : ks_cuda_devices(&quiet, &cu, NULL, 0);
  if (n >= 0)
    ks_cuda_unload(&cu);
  if (n <= 0 && !p->job->standin)
    p->no_gpu = ks_arena_strdup(&p->arena, n < 0 ? quiet.error : "the driver lists no device");
  ks_ctx_release(&quiet);
  *out = n > 0 ? n : 1;
  return 0;
}

int pipeline_workers(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  int n = 1;
  if (job->all_devices) {
    if (count_devices(p, &n))
      return -1;
    p->workers = ks_arena_alloc(&p->arena, (size_t)n * sizeof *p->workers);
    for (int i = 0; i < n; i++)
      p->workers[i] = i;
    p->nworkers = (size_t)n;
  } else if (job->ndevices) {
    p->workers = ks_arena_alloc(&p->arena, job->ndevices * sizeof *p->workers);
    memcpy(p->workers, job->devices, job->ndevices * sizeof *p->workers);
    p->nworkers = job->ndevices;
  } else {
    p->workers = ks_arena_alloc(&p->arena, sizeof *p->workers);
    p->workers[0] = job->judge.device;
    p->nworkers = 1;
    if (job->local_rank > 0) {
      if (count_devices(p, &n))
        return -1;
      p->workers[0] = job->local_rank % n;
      job->judge.device = p->workers[0];
    }
  }
  p->retired = ks_arena_alloc(&p->arena, p->nworkers * sizeof *p->retired);
  return 0;
}

/* A judge for each worker after the first, with the first one's seed (the
 * same inputs on every device) and its options. The devices of one run
 * must be of one architecture: the variants are compiled once for it. */
int pipeline_open_more_judges(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  if (p->nworkers < 2)
    return 0;
  p->more_judges = ks_arena_alloc(&p->arena, (p->nworkers - 1) * sizeof *p->more_judges);
  ks_judge_options o = p->judge.opts;
  for (size_t i = 1; i < p->nworkers; i++) {
    o.device = p->workers[i];
    ks_judge *j = &p->more_judges[i - 1];
    if (ks_judge_open(ctx, j, &o)) {
      ks_fail_prefix(ctx, ks_arena_printf(&p->arena, "--devices: worker %zu (device %d)", i,
                                          o.device));
      return -1;
    }
    p->nmore_judges++;
    if (j->device.cc_major != p->judge.device.cc_major ||
        j->device.cc_minor != p->judge.device.cc_minor)
      return ks_fail(ctx, "--devices: device %d is sm_%d%d and device %d sm_%d%d: the devices of "
                          "one run must be of one architecture",
                     o.device, j->device.cc_major, j->device.cc_minor, p->workers[0],
                     p->judge.device.cc_major, p->judge.device.cc_minor);
  }
  return 0;
}

const char *pipeline_workers_text(ks_pipeline *p, const char *device) {
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "%s, %zu workers on devices ", device, p->nworkers);
  for (size_t i = 0; i < p->nworkers; i++)
    ks_buf_addf(&b, "%s%d", i ? "," : "", p->workers[i]);
  const char *text = ks_arena_strdup(&p->arena, b.data);
  ks_buf_release(&b);
  return text;
}

void pipeline_evaluators_make(ks_pipeline *p, ks_target *target, pipeline_evaluators *out) {
  size_t n = p->nworkers ? p->nworkers : 1;
  memset(out, 0, sizeof *out);
  out->n = n;
  out->table = ks_arena_alloc(&p->arena, n * sizeof *out->table);
  if (p->job->standin) {
    out->standins = ks_arena_alloc(&p->arena, n * sizeof *out->standins);
    for (size_t i = 0; i < n; i++) {
      out->standins[i] = (ks_standin){.device = p->workers ? p->workers[i] : 0,
                                      .worker = (unsigned)i};
      out->table[i] = ks_standin_evaluator_make(&out->standins[i]);
    }
    return;
  }
  out->judges = ks_arena_alloc(&p->arena, n * sizeof *out->judges);
  for (size_t i = 0; i < n; i++) {
    ks_judge *j = !p->judge_open ? NULL : i ? &p->more_judges[i - 1] : &p->judge;
    out->judges[i] = (ks_judge_evaluator){.judge = j, .target = target,
                                          .shared = n > 1 ? &out->judges[0] : NULL};
    out->table[i] = ks_judge_evaluator_make(&out->judges[i]);
  }
}

unsigned pipeline_evaluators_release(pipeline_evaluators *e) {
  unsigned reused = 0;
  for (size_t i = 0; e->judges && i < e->n; i++) {
    reused += e->judges[i].reused;
    ks_judge_evaluator_release(&e->judges[i]);
  }
  return reused;
}
