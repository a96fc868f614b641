/* The scan as versioned JSON (schema in docs/scan-json.md). cJSON stays in
 * this file: the rest of the program sees only ks_ structs. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ks_fs.h"
#include "ks_report.h"

/* Paths below the scan's root are shown relative to it. */
static const char *rel(const ks_scan *scan, const char *path) {
  if (!path)
    return NULL;
  return *scan->root ? ks_path_below(path, scan->root) : path;
}

static void add_str(cJSON *o, const char *key, const char *value) {
  if (value)
    cJSON_AddStringToObject(o, key, value);
  else
    cJSON_AddNullToObject(o, key);
}

static cJSON *strings(const ks_strings *s) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < s->len; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(s->items[i]));
  return a;
}

static cJSON *position(const ks_loc *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "line", l->line);
  cJSON_AddNumberToObject(o, "col", l->col);
  cJSON_AddNumberToObject(o, "offset", l->offset);
  return o;
}

static void add_loc(cJSON *o, const ks_scan *scan, const ks_loc *l) {
  add_str(o, "file", rel(scan, l->file));
  cJSON_AddNumberToObject(o, "line", l->line);
  cJSON_AddNumberToObject(o, "col", l->col);
}

static cJSON *extent(const ks_range *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "begin", position(&r->begin));
  cJSON_AddItemToObject(o, "end", position(&r->end));
  return o;
}

static cJSON *targs(const ks_template_args *args) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < args->len; i++) {
    cJSON *o = cJSON_CreateObject();
    add_str(o, "param", args->items[i].param);
    add_str(o, "value", args->items[i].value);
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

static cJSON *targ_lists(const ks_template_arg_lists *lists) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < lists->len; i++)
    cJSON_AddItemToArray(a, targs(&lists->items[i]));
  return a;
}

static long kernel_id(const ks_scan *scan, const char *usr) {
  for (size_t i = 0; usr && i < scan->kernels.len; i++)
    if (!strcmp(scan->kernels.items[i].usr, usr))
      return (long)i;
  return -1;
}

static void add_id(cJSON *o, const char *key, long id) {
  if (id >= 0)
    cJSON_AddNumberToObject(o, key, (double)id);
  else
    cJSON_AddNullToObject(o, key);
}

static const char *param_kind(ks_param_kind k) {
  static const char *const names[] = {"scalar", "pointer", "struct", "dependent"};
  return names[k];
}

static cJSON *kernel_json(const ks_scan *scan, size_t id, const ks_kernel *k) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", (double)id);
  add_str(o, "name", k->name);
  add_str(o, "qualified_name", k->qualified_name);
  add_str(o, "signature", k->signature);
  add_str(o, "usr", k->usr);
  add_loc(o, scan, &k->loc);
  cJSON_AddItemToObject(o, "extent", extent(&k->extent));
  add_str(o, "macro", k->macro);
  add_str(o, "source_hash", k->source_hash);
  cJSON_AddBoolToObject(o, "template", k->is_template);
  cJSON_AddBoolToObject(o, "extern_c", k->is_extern_c);
  cJSON_AddBoolToObject(o, "static", k->is_static);
  cJSON_AddBoolToObject(o, "in_header", k->in_header);

  cJSON *params = cJSON_AddArrayToObject(o, "params");
  for (size_t i = 0; i < k->params.len; i++) {
    const ks_param *p = &k->params.items[i];
    cJSON *j = cJSON_CreateObject();
    add_str(j, "name", p->name);
    add_str(j, "type", p->type);
    add_str(j, "kind", param_kind(p->kind));
    add_str(j, "pointee", p->pointee);
    cJSON_AddBoolToObject(j, "pointee_const", p->pointee_const);
    cJSON_AddBoolToObject(j, "const", p->is_const);
    cJSON_AddBoolToObject(j, "restrict", p->is_restrict);
    cJSON_AddBoolToObject(j, "grid_constant", p->grid_constant);
    cJSON_AddItemToArray(params, j);
  }
  cJSON *tparams = cJSON_AddArrayToObject(o, "template_params");
  for (size_t i = 0; i < k->tparams.len; i++) {
    const ks_tparam *t = &k->tparams.items[i];
    static const char *const kinds[] = {"type", "value", "template"};
    cJSON *j = cJSON_CreateObject();
    add_str(j, "kind", kinds[t->kind]);
    add_str(j, "name", t->name);
    add_str(j, "type", t->type);
    add_str(j, "default", t->default_arg);
    cJSON_AddBoolToObject(j, "pack", t->is_pack);
    cJSON_AddItemToArray(tparams, j);
  }
  cJSON_AddItemToObject(o, "attributes", strings(&k->attributes));
  if (k->max_threads) {
    cJSON *lb = cJSON_AddObjectToObject(o, "launch_bounds");
    add_str(lb, "max_threads", k->max_threads);
    add_str(lb, "min_blocks", k->min_blocks);
  } else {
    cJSON_AddNullToObject(o, "launch_bounds");
  }
  cJSON *smem = cJSON_AddObjectToObject(o, "shared_memory");
  if (k->static_smem >= 0)
    cJSON_AddNumberToObject(smem, "static_bytes", (double)k->static_smem);
  else
    cJSON_AddNullToObject(smem, "static_bytes");
  cJSON_AddBoolToObject(smem, "dynamic", k->dynamic_smem);
  cJSON *vars = cJSON_AddArrayToObject(smem, "variables");
  for (size_t i = 0; i < k->shared.len; i++) {
    const ks_shared_var *s = &k->shared.items[i];
    cJSON *j = cJSON_CreateObject();
    add_str(j, "name", s->name);
    add_str(j, "type", s->type);
    add_loc(j, scan, &s->loc);
    add_str(j, "function", s->function);
    cJSON_AddBoolToObject(j, "extern", s->is_extern);
    if (s->bytes >= 0)
      cJSON_AddNumberToObject(j, "bytes", (double)s->bytes);
    else
      cJSON_AddNullToObject(j, "bytes");
    cJSON_AddItemToArray(vars, j);
  }
  cJSON *calls = cJSON_AddArrayToObject(o, "calls");
  for (size_t i = 0; i < k->callees.len; i++) {
    cJSON *j = cJSON_CreateObject();
    add_str(j, "name", k->callees.items[i].name);
    add_loc(j, scan, &k->callees.items[i].loc);
    cJSON_AddNumberToObject(j, "depth", k->callees.items[i].depth);
    cJSON_AddItemToArray(calls, j);
  }
  cJSON_AddItemToObject(o, "builtins", strings(&k->builtins));
  cJSON_AddItemToObject(o, "instantiations", targ_lists(&k->instantiations));
  cJSON *launches = cJSON_AddArrayToObject(o, "launches");
  for (size_t i = 0; i < k->launches.len; i++)
    cJSON_AddItemToArray(launches, cJSON_CreateNumber((double)k->launches.items[i]));
  return o;
}

static cJSON *launch_json(const ks_scan *scan, size_t id, const ks_launch *l) {
  static const char *const resolutions[] = {"resolved", "function_pointer", "unresolved"};
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", (double)id);
  add_str(o, "kind", l->kind == KS_LAUNCH_CHEVRON ? "chevron" : "runtime_api");
  add_str(o, "api", l->api);
  add_loc(o, scan, &l->loc);
  cJSON_AddItemToObject(o, "extent", extent(&l->extent));
  add_str(o, "macro", l->macro);
  add_str(o, "callee", l->callee);
  add_id(o, "kernel", kernel_id(scan, l->kernel_usr));
  add_str(o, "kernel_name", l->kernel_name);
  add_str(o, "resolution", resolutions[l->resolution]);
  add_str(o, "note", l->note);
  cJSON_AddItemToObject(o, "template_args", targs(&l->template_args));
  cJSON_AddBoolToObject(o, "template_dependent", l->template_dependent);
  cJSON_AddItemToObject(o, "via_instantiations", targ_lists(&l->via_instantiations));
  cJSON *cands = cJSON_AddArrayToObject(o, "candidates");
  for (size_t i = 0; i < l->candidates.len; i++) {
    const ks_launch_candidate *c = &l->candidates.items[i];
    cJSON *j = cJSON_CreateObject();
    add_id(j, "kernel", kernel_id(scan, c->kernel_usr));
    add_str(j, "kernel_name", c->kernel_name);
    cJSON_AddItemToObject(j, "template_args", targs(&c->template_args));
    add_loc(j, scan, &c->loc);
    cJSON_AddItemToArray(cands, j);
  }
  add_str(o, "grid", l->grid);
  add_str(o, "block", l->block);
  add_str(o, "shared_memory", l->smem);
  add_str(o, "stream", l->stream);
  cJSON_AddItemToObject(o, "args", strings(&l->args));
  add_str(o, "enclosing_function", l->enclosing);
  cJSON_AddBoolToObject(o, "in_lambda", l->in_lambda);
  cJSON_AddBoolToObject(o, "in_template", l->in_template);
  cJSON_AddBoolToObject(o, "device_side", l->device_side);
  return o;
}

static cJSON *file_json(const ks_scan *scan, const ks_scanned_file *f) {
  static const char *const statuses[] = {"ok", "errors", "failed"};
  static const char *const severities[] = {"warning", "error", "fatal"};
  cJSON *o = cJSON_CreateObject();
  add_str(o, "path", rel(scan, f->path));
  add_str(o, "status", statuses[f->status]);
  add_str(o, "flags_from", f->flags_from);
  if (f->included_by)
    add_str(o, "included_by", f->included_by);
  cJSON_AddNumberToObject(o, "errors", f->errors);
  cJSON_AddNumberToObject(o, "system_errors", f->system_errors);
  cJSON_AddNumberToObject(o, "warnings", f->warnings);
  cJSON_AddNumberToObject(o, "parse_ms", f->parse_ms);
  cJSON_AddBoolToObject(o, "precompiled_headers", f->used_pch);
  cJSON *diags = cJSON_AddArrayToObject(o, "diagnostics");
  for (size_t i = 0; i < f->diags.len; i++) {
    cJSON *d = cJSON_CreateObject();
    add_loc(d, scan, &f->diags.items[i].loc);
    add_str(d, "severity", severities[f->diags.items[i].severity]);
    add_str(d, "message", f->diags.items[i].message);
    cJSON_AddItemToArray(diags, d);
  }
  add_str(o, "system_error_sample", f->first_system_error);
  return o;
}

int ks_report_json(ks_ctx *ctx, FILE *out, const ks_scan *scan) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.scan");
  cJSON_AddNumberToObject(root, "version", KS_SCAN_SCHEMA_VERSION);
  add_str(root, "root", scan->root);
  add_str(root, "compile_commands", scan->compile_db);
  cJSON *files = cJSON_AddArrayToObject(root, "files");
  size_t bad = 0;
  for (size_t i = 0; i < scan->files.len; i++) {
    cJSON_AddItemToArray(files, file_json(scan, &scan->files.items[i]));
    bad += scan->files.items[i].status != KS_FILE_OK;
  }
  cJSON *kernels = cJSON_AddArrayToObject(root, "kernels");
  for (size_t i = 0; i < scan->kernels.len; i++)
    cJSON_AddItemToArray(kernels, kernel_json(scan, i, &scan->kernels.items[i]));
  cJSON *launches = cJSON_AddArrayToObject(root, "launches");
  for (size_t i = 0; i < scan->launches.len; i++)
    cJSON_AddItemToArray(launches, launch_json(scan, i, &scan->launches.items[i]));
  cJSON *summary = cJSON_AddObjectToObject(root, "summary");
  cJSON_AddNumberToObject(summary, "files", (double)scan->files.len);
  cJSON_AddNumberToObject(summary, "files_with_errors", (double)bad);
  cJSON_AddNumberToObject(summary, "kernels", (double)scan->kernels.len);
  cJSON_AddNumberToObject(summary, "launches", (double)scan->launches.len);
  cJSON_AddNumberToObject(summary, "wall_ms", scan->wall_ms);

  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return ks_fail(ctx, "out of memory while writing JSON");
  int rc = fputs(text, out) < 0 || fputc('\n', out) == EOF ? ks_fail(ctx, "cannot write JSON output") : 0;
  free(text);
  return rc;
}
