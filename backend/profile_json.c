/* profile_json: the aggregated profile as JSON (schema kernelsmith-cc.profile,
 * docs/profile.md) and back, and the choice of the hot kernels that
 * `optimize --profile` searches. See ks_profile.h. */
#include "ks_profile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_fs.h"

/* ---- the aggregate as JSON ----------------------------------------------- */

static cJSON *dims_json(const unsigned d[3]) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < 3; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(d[i]));
  return a;
}

static cJSON *kernel_json(const ks_profile_kernel *k) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mangled", k->mangled);
  cJSON_AddStringToObject(o, "demangled", k->demangled);
  if (k->source) {
    cJSON *s = cJSON_AddObjectToObject(o, "source");
    cJSON_AddStringToObject(s, "qualified_name", k->source->qualified_name);
    cJSON_AddStringToObject(s, "signature", k->source->signature);
    if (k->source->file)
      cJSON_AddStringToObject(s, "file", k->source->file);
    else
      cJSON_AddNullToObject(s, "file");
    cJSON_AddNumberToObject(s, "line", k->source->line);
  } else {
    cJSON_AddNullToObject(o, "source");
  }
  cJSON_AddNumberToObject(o, "launches", (double)k->launches);
  cJSON_AddNumberToObject(o, "untimed_launches", (double)k->untimed);
  if (k->sampled_launches)
    cJSON_AddNumberToObject(o, "sampled_launches", (double)k->sampled_launches);
  cJSON_AddNumberToObject(o, "total_ms", k->total_ms);
  cJSON_AddNumberToObject(o, "mean_ms", k->mean_ms);
  cJSON_AddNumberToObject(o, "min_ms", k->min_ms);
  cJSON_AddNumberToObject(o, "max_ms", k->max_ms);
  cJSON_AddNumberToObject(o, "share", k->share);
  cJSON_AddNumberToObject(o, "smem_static", (double)k->smem_static);
  cJSON *cs = cJSON_AddArrayToObject(o, "configs");
  for (size_t i = 0; i < k->configs.len; i++) {
    const ks_profile_config *c = &k->configs.items[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "grid", dims_json(c->grid));
    cJSON_AddItemToObject(j, "block", dims_json(c->block));
    cJSON_AddNumberToObject(j, "smem_dynamic", (double)c->smem_dynamic);
    cJSON_AddNumberToObject(j, "launches", (double)c->launches);
    cJSON_AddNumberToObject(j, "total_ms", c->total_ms);
    cJSON_AddItemToArray(cs, j);
  }
  cJSON_AddNumberToObject(o, "other_launches", (double)k->other_launches);
  cJSON_AddNumberToObject(o, "distinct_configs", k->distinct_configs);
  return o;
}

int ks_profile_write_json(ks_ctx *ctx, FILE *out, const ks_profile *p) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", KS_PROFILE_SCHEMA);
  cJSON_AddNumberToObject(root, "version", KS_PROFILE_VERSION);
  cJSON *cmd = cJSON_AddArrayToObject(root, "command");
  for (size_t i = 0; i < p->command.len; i++)
    cJSON_AddItemToArray(cmd, cJSON_CreateString(p->command.items[i]));
  if (p->exit_status >= 0)
    cJSON_AddNumberToObject(root, "exit_status", p->exit_status);
  else
    cJSON_AddNullToObject(root, "exit_status");
  if (p->signal)
    cJSON_AddNumberToObject(root, "signal", p->signal);
  else
    cJSON_AddNullToObject(root, "signal");
  cJSON_AddBoolToObject(root, "ended_normally", p->ended_normally);
  cJSON_AddNumberToObject(root, "processes", p->processes);
  cJSON_AddNumberToObject(root, "dropped", (double)p->dropped);
  cJSON_AddNumberToObject(root, "truncated_lines", p->truncated_lines);
  cJSON_AddNumberToObject(root, "launches", (double)p->launches);
  if (p->sample_percent) {
    cJSON_AddNumberToObject(root, "sample_percent", p->sample_percent);
    cJSON_AddNumberToObject(root, "sample_after_ms", p->sample_after_ms);
  }
  cJSON_AddNumberToObject(root, "total_ms", p->total_ms);
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (size_t i = 0; i < p->kernels.len; i++)
    cJSON_AddItemToArray(ks, kernel_json(&p->kernels.items[i]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  int rc = 0;
  if (!text || fputs(text, out) < 0 || fputc('\n', out) == EOF)
    rc = ks_fail(ctx, "cannot write the profile: %s", strerror(errno));
  free(text);
  return rc;
}

static int write_profile(ks_ctx *ctx, FILE *out, const void *p) {
  return ks_profile_write_json(ctx, out, p);
}

int ks_profile_save(ks_ctx *ctx, const char *path, const ks_profile *p) {
  return ks_write_file_whole(ctx, path, write_profile, p);
}

/* Reading back: the first problem is the message. */
typedef struct reader {
  ks_ctx *ctx;
  const char *path;
  ks_arena *arena;
  const char *bad; /* the first field found wrong */
} reader;

static double get_num(reader *r, const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(v))
    return v->valuedouble;
  if (!r->bad)
    r->bad = key;
  return 0;
}

static const char *get_str(reader *r, const cJSON *o, const char *key, bool nullable) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsString(v))
    return ks_arena_strdup(r->arena, v->valuestring);
  if (!(nullable && cJSON_IsNull(v)) && !r->bad)
    r->bad = key;
  return NULL;
}

static void get_dims(reader *r, const cJSON *o, const char *key, unsigned out[3]) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3) {
    r->bad = r->bad ? r->bad : key;
    return;
  }
  for (int i = 0; i < 3; i++) {
    const cJSON *d = cJSON_GetArrayItem(v, i);
    out[i] = cJSON_IsNumber(d) ? (unsigned)d->valuedouble : 0;
  }
}

static void read_kernel(reader *r, const cJSON *j, ks_profile_kernel *k) {
  k->mangled = get_str(r, j, "mangled", false);
  k->demangled = get_str(r, j, "demangled", false);
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "source");
  if (cJSON_IsObject(s)) {
    ks_profile_source *src = ks_arena_alloc(r->arena, sizeof *src);
    src->qualified_name = get_str(r, s, "qualified_name", false);
    src->signature = get_str(r, s, "signature", false);
    src->file = get_str(r, s, "file", true);
    src->line = (unsigned)get_num(r, s, "line");
    k->source = src;
  } else if (!cJSON_IsNull(s) && !r->bad) {
    r->bad = "source";
  }
  k->launches = (unsigned long long)get_num(r, j, "launches");
  k->untimed = (unsigned long long)get_num(r, j, "untimed_launches");
  const cJSON *sampled = cJSON_GetObjectItemCaseSensitive(j, "sampled_launches");
  k->sampled_launches = cJSON_IsNumber(sampled) ? (unsigned long long)sampled->valuedouble : 0;
  k->total_ms = get_num(r, j, "total_ms");
  k->mean_ms = get_num(r, j, "mean_ms");
  k->min_ms = get_num(r, j, "min_ms");
  k->max_ms = get_num(r, j, "max_ms");
  k->share = get_num(r, j, "share");
  k->smem_static = (unsigned long long)get_num(r, j, "smem_static");
  k->other_launches = (unsigned long long)get_num(r, j, "other_launches");
  k->distinct_configs = (unsigned)get_num(r, j, "distinct_configs");
  const cJSON *cs = cJSON_GetObjectItemCaseSensitive(j, "configs"), *c;
  if (!cJSON_IsArray(cs) && !r->bad)
    r->bad = "configs";
  cJSON_ArrayForEach(c, cs) {
    ks_profile_config *pc = ks_array_push(r->arena, &k->configs);
    get_dims(r, c, "grid", pc->grid);
    get_dims(r, c, "block", pc->block);
    pc->smem_dynamic = (unsigned long long)get_num(r, c, "smem_dynamic");
    pc->launches = (unsigned long long)get_num(r, c, "launches");
    pc->total_ms = get_num(r, c, "total_ms");
  }
}

int ks_profile_load(ks_ctx *ctx, const char *path, ks_profile *out) {
  ks_profile_init(out);
  ks_buf text = KS_BUF_INIT;
  if (ks_read_file(ctx, path, (size_t)256 << 20, &text))
    return -1;
  cJSON *root = cJSON_ParseWithLength(text.data, text.len);
  ks_buf_release(&text);
  int rc = 0;
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!cJSON_IsObject(root) || !cJSON_IsString(schema) ||
      strcmp(schema->valuestring, KS_PROFILE_SCHEMA)) {
    rc = ks_fail(ctx, "%s: not a profile (JSON with schema \"%s\"; kernelsmith-cc profile writes one)",
                 path, KS_PROFILE_SCHEMA);
  } else if (!cJSON_IsNumber(version) || version->valuedouble != KS_PROFILE_VERSION) {
    rc = ks_fail(ctx, "%s: a profile of version %g; this kernelsmith-cc reads version %d", path,
                 cJSON_IsNumber(version) ? version->valuedouble : 0.0, KS_PROFILE_VERSION);
  } else {
    reader r = {ctx, path, &out->arena, NULL};
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(root, "command"), *c;
    cJSON_ArrayForEach(c, cmd)
      if (cJSON_IsString(c))
        *ks_array_push(&out->arena, &out->command) = ks_arena_strdup(&out->arena, c->valuestring);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "exit_status");
    out->exit_status = cJSON_IsNumber(st) ? (int)st->valuedouble : -1;
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(root, "signal");
    out->signal = cJSON_IsNumber(sig) ? (int)sig->valuedouble : 0;
    out->ended_normally = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "ended_normally"));
    out->processes = (unsigned)get_num(&r, root, "processes");
    out->dropped = (unsigned long long)get_num(&r, root, "dropped");
    out->truncated_lines = (unsigned)get_num(&r, root, "truncated_lines");
    out->launches = (unsigned long long)get_num(&r, root, "launches");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, "sample_percent");
    out->sample_percent = cJSON_IsNumber(sp) ? (unsigned)sp->valuedouble : 0;
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(root, "sample_after_ms");
    out->sample_after_ms = cJSON_IsNumber(sa) ? (unsigned)sa->valuedouble : 0;
    out->total_ms = get_num(&r, root, "total_ms");
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(root, "kernels"), *k;
    if (!cJSON_IsArray(ks) && !r.bad)
      r.bad = "kernels";
    cJSON_ArrayForEach(k, ks) read_kernel(&r, k, ks_array_push(&out->arena, &out->kernels));
    if (r.bad)
      rc = ks_fail(ctx, "%s: the profile's \"%s\" is missing or of the wrong type", path, r.bad);
  }
  cJSON_Delete(root);
  if (rc)
    ks_profile_release(out);
  return rc;
}

/* ---- the hot kernels ------------------------------------------------------- */

static bool same_source(const ks_profile_source *x, const ks_profile_source *y) {
  if (x == y)
    return true;
  return x && y && x->line == y->line && !strcmp(x->signature, y->signature) &&
         (x->file && y->file ? !strcmp(x->file, y->file) : x->file == y->file);
}

static int cmp_pick(const void *a, const void *b) {
  const ks_profile_pick *x = a, *y = b;
  return x->total_ms != y->total_ms ? (x->total_ms > y->total_ms ? -1 : 1) : strcmp(x->name, y->name);
}

void ks_profile_select(const ks_profile *p, unsigned top, double min_share_percent, ks_arena *a,
                       ks_profile_picks *out) {
  ks_profile_picks all = {0};
  for (size_t i = 0; i < p->kernels.len; i++) {
    const ks_profile_kernel *k = &p->kernels.items[i];
    ks_profile_pick *pick = NULL;
    for (size_t j = 0; k->source && j < all.len && !pick; j++)
      if (same_source(all.items[j].source, k->source))
        pick = &all.items[j];
    if (!pick) {
      pick = ks_array_push(a, &all);
      pick->source = k->source;
      pick->name = k->source ? k->source->qualified_name : k->demangled;
    }
    pick->share += k->share;
    pick->total_ms += k->total_ms;
  }
  if (all.len)
    qsort(all.items, all.len, sizeof *all.items, cmp_pick);
  unsigned taken = 0;
  for (size_t i = 0; i < all.len && (!top || taken < top); i++) {
    if (100 * all.items[i].share < min_share_percent)
      break;
    *ks_array_push(a, out) = all.items[i];
    taken += all.items[i].source != NULL;
  }
}
