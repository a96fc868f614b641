/* nvrtc_info: NVRTC's version and architectures, one compile to a cubin,
 * and the smoke compile doctor runs. nvrtc.h is included here only. */
#include "ks_nvrtc.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_alloc.h"

int ks_nvrtc_version(int *major, int *minor) {
  *major = *minor = 0;
  return nvrtcVersion(major, minor) == NVRTC_SUCCESS ? 0 : -1;
}

int ks_nvrtc_archs(ks_ctx *ctx, int *out, int max) {
  int count = 0;
  nvrtcResult r = nvrtcGetNumSupportedArchs(&count);
  if (r != NVRTC_SUCCESS)
    return ks_fail(ctx, "nvrtcGetNumSupportedArchs: %s", nvrtcGetErrorString(r));
  if (count <= 0)
    return 0;
  /* NVRTC writes the whole list, so it needs room for all of it. */
  int *all = ks_xcalloc((size_t)count, sizeof *all);
  r = nvrtcGetSupportedArchs(all);
  if (r == NVRTC_SUCCESS)
    memcpy(out, all, sizeof *all * (size_t)(count < max ? count : max));
  free(all);
  if (r != NVRTC_SUCCESS)
    return ks_fail(ctx, "nvrtcGetSupportedArchs: %s", nvrtcGetErrorString(r));
  return count;
}

/* The first line of the log that says "error", for a one-line message; the
 * full log goes to the caller's buffer. */
static void first_error(const char *log, char *out, size_t size) {
  const char *line = strstr(log, "error");
  if (!line) {
    snprintf(out, size, "see the compile log");
    return;
  }
  while (line > log && line[-1] != '\n')
    line--;
  size_t n = strcspn(line, "\n");
  snprintf(out, size, "%.*s", (int)n, line);
}

int ks_nvrtc_compile(ks_ctx *ctx, const ks_nvrtc_unit *unit, ks_buf *cubin, ks_buf *log) {
  return ks_nvrtc_compile_named(ctx, unit, cubin, log, NULL);
}

int ks_nvrtc_compile_named(ks_ctx *ctx, const ks_nvrtc_unit *unit, ks_buf *cubin, ks_buf *log,
                           char **lowered) {
  nvrtcProgram prog = NULL;
  ks_buf text = KS_BUF_INIT;
  int rc = 0;
  for (size_t i = 0; lowered && i < unit->nnames; i++)
    lowered[i] = NULL;
  if (ks_fault(ctx, "nvrtc_compile"))
    return ks_fail(ctx, "%s: NVRTC compile failed: fault injected", unit->name);
  nvrtcResult r = nvrtcCreateProgram(&prog, unit->source, unit->name, (int)unit->nheaders,
                                     unit->nheaders ? unit->header_sources : NULL,
                                     unit->nheaders ? unit->header_names : NULL);
  if (r != NVRTC_SUCCESS) {
    prog = NULL;
    rc = ks_fail(ctx, "%s: nvrtcCreateProgram: %s", unit->name, nvrtcGetErrorString(r));
    goto out;
  }
  for (size_t i = 0; i < unit->nnames; i++) {
    r = nvrtcAddNameExpression(prog, unit->name_expressions[i]);
    if (r != NVRTC_SUCCESS) {
      rc = ks_fail(ctx, "%s: nvrtcAddNameExpression(%s): %s", unit->name,
                   unit->name_expressions[i], nvrtcGetErrorString(r));
      goto out;
    }
  }
  nvrtcResult compiled = nvrtcCompileProgram(prog, (int)unit->noptions, unit->options);
  /* The log is read whatever the outcome: it carries warnings too. */
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    ks_buf_grow(&text, log_size);
    if (nvrtcGetProgramLog(prog, text.data) == NVRTC_SUCCESS)
      text.len = strnlen(text.data, log_size);
    text.data[text.len] = '\0';
  }
  if (log)
    ks_buf_add(log, text.data, text.len);
  if (compiled != NVRTC_SUCCESS) {
    char line[512];
    first_error(text.data, line, sizeof line);
    rc = ks_fail(ctx, "%s: NVRTC compile failed (%s): %s", unit->name,
                 nvrtcGetErrorString(compiled), line);
    goto out;
  }
  size_t size = 0;
  r = nvrtcGetCUBINSize(prog, &size);
  if (r != NVRTC_SUCCESS) {
    rc = ks_fail(ctx, "%s: nvrtcGetCUBINSize: %s", unit->name, nvrtcGetErrorString(r));
    goto out;
  }
  if (size == 0) {
    rc = ks_fail(ctx, "%s: NVRTC made no cubin (an -arch=compute_XX compile gives PTX only; "
                      "use sm_XX)", unit->name);
    goto out;
  }
  size_t at = cubin->len;
  if (cubin->limit && at + size > cubin->limit) {
    rc = ks_fail(ctx, "%s: the cubin (%zu bytes) exceeds the limit of %zu bytes", unit->name,
                 size, cubin->limit);
    goto out;
  }
  ks_buf_grow(cubin, size);
  r = nvrtcGetCUBIN(prog, cubin->data + at);
  if (r != NVRTC_SUCCESS) {
    cubin->data[at] = '\0';
    rc = ks_fail(ctx, "%s: nvrtcGetCUBIN: %s", unit->name, nvrtcGetErrorString(r));
    goto out;
  }
  cubin->len = at + size;
  cubin->data[cubin->len] = '\0';
  for (size_t i = 0; lowered && i < unit->nnames; i++) {
    const char *name = NULL;
    r = nvrtcGetLoweredName(prog, unit->name_expressions[i], &name);
    if (r != NVRTC_SUCCESS || !name) {
      rc = ks_fail(ctx, "%s: no lowered name for '%s': %s", unit->name,
                   unit->name_expressions[i], nvrtcGetErrorString(r));
      goto out;
    }
    lowered[i] = ks_xstrdup(name); /* owned by the program until it is destroyed */
  }
out:
  if (rc && lowered)
    for (size_t i = 0; i < unit->nnames; i++) {
      free(lowered[i]);
      lowered[i] = NULL;
    }
  if (prog)
    nvrtcDestroyProgram(&prog);
  ks_buf_release(&text);
  return rc;
}

int ks_nvrtc_lowered_names(ks_ctx *ctx, const ks_nvrtc_unit *unit, char **lowered) {
  nvrtcProgram prog = NULL;
  int rc = 0;
  for (size_t i = 0; i < unit->nnames; i++)
    lowered[i] = NULL;
  const char **options = ks_xcalloc(unit->noptions + 1, sizeof *options);
  for (size_t i = 0; i < unit->noptions; i++)
    options[i] = unit->options[i];
  options[unit->noptions] = "-fdevice-syntax-only";
  nvrtcResult r = nvrtcCreateProgram(&prog, unit->source, unit->name, (int)unit->nheaders,
                                     unit->nheaders ? unit->header_sources : NULL,
                                     unit->nheaders ? unit->header_names : NULL);
  if (r != NVRTC_SUCCESS) {
    prog = NULL;
    rc = ks_fail(ctx, "%s: nvrtcCreateProgram: %s", unit->name, nvrtcGetErrorString(r));
    goto out;
  }
  for (size_t i = 0; i < unit->nnames && !rc; i++)
    if ((r = nvrtcAddNameExpression(prog, unit->name_expressions[i])) != NVRTC_SUCCESS)
      rc = ks_fail(ctx, "%s: nvrtcAddNameExpression(%s): %s", unit->name,
                   unit->name_expressions[i], nvrtcGetErrorString(r));
  if (!rc && (r = nvrtcCompileProgram(prog, (int)unit->noptions + 1, options)) != NVRTC_SUCCESS)
    rc = ks_fail(ctx, "%s: NVRTC's front end failed (%s)", unit->name, nvrtcGetErrorString(r));
  for (size_t i = 0; i < unit->nnames && !rc; i++) {
    const char *name = NULL;
    r = nvrtcGetLoweredName(prog, unit->name_expressions[i], &name);
    if (r != NVRTC_SUCCESS || !name)
      rc = ks_fail(ctx, "%s: no lowered name for '%s': %s", unit->name,
                   unit->name_expressions[i], nvrtcGetErrorString(r));
    else
      lowered[i] = ks_xstrdup(name);
  }
out:
  if (rc)
    for (size_t i = 0; i < unit->nnames; i++) {
      free(lowered[i]);
      lowered[i] = NULL;
    }
  if (prog)
    nvrtcDestroyProgram(&prog);
  free(options);
  return rc;
}

int ks_nvrtc_smoke(ks_ctx *ctx, const char *arch, size_t *cubin_bytes) {
  static const char source[] =
      "extern \"C\" __global__ void ks_smoke(int *out, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) out[i] = 2 * i;\n"
      "}\n";
  char option[64];
  snprintf(option, sizeof option, "-arch=%s", arch);
  const char *const options[] = {option};
  ks_nvrtc_unit unit = {.source = source, .name = "ks_smoke.cu", .options = options, .noptions = 1};
  ks_buf cubin = KS_BUF_INIT;
  *cubin_bytes = 0;
  int rc = ks_nvrtc_compile(ctx, &unit, &cubin, NULL);
  if (!rc)
    *cubin_bytes = cubin.len;
  ks_buf_release(&cubin);
  return rc;
}
