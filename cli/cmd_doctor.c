/* kernelsmith-cc doctor: what this machine can do, and what is missing.
 *
 * It gathers everything into a doctor_report first (plain values, no
 * output), then prints it as aligned "key: marker value" lines or as one
 * JSON object. The toolchain that scan and compile need (libclang, the CUDA
 * toolkit, NVRTC) decides the exit status; the driver, the GPUs and NVML are
 * reported but their absence is not a failure, since most commands run
 * without them.
 *
 * JSON (--json), one object:
 *   version          kernelsmith-cc's version
 *   ok               the toolchain for non-GPU work is usable (exit status 0)
 *   gpu_ready        a driver and at least one GPU are usable
 *   libclang         {version, resource_dir (null: libclang looks for its own),
 *                     resource_dir_from ("KERNELSMITH_CLANG_RESOURCE_DIR" or
 *                     "build")}
 *   toolkit          {ok, root, version ("13.0"), error}
 *   nvrtc            {ok, version ("13.0"), archs ([75, 80, ...]),
 *                     smoke {ok, arch ("sm_90"), cubin_bytes, ms, error}, error}
 *   driver           {ok, version (cuDriverGetVersion, 13000), version_text
 *                     ("13.0"), device_count, error, warning,
 *                     gpus [{ordinal, name, compute_capability ("9.0"), sm ("sm_90"),
 *                     nvrtc_supported, sm_count, memory_bytes, l2_bytes,
 *                     mem_clock_khz, mem_bus_bits, peak_bandwidth_gbs, sm_clock_khz,
 *                     smem_per_block_optin, smem_per_sm, regs_per_sm,
 *                     max_threads_per_sm, ecc, pci_bus_id,
 *                     nvml (null, or {sm_clock_mhz, sm_clock_max_mhz,
 *                     mem_clock_mhz, temperature_c, power_w, power_limit_w,
 *                     clock_event_reasons (null when unknown), throttled})}]}
 *   nvml             {ok, driver_version ("580.159.03"), device_count, error}
 * A key whose value is unknown is null; "error" is null when all went well. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flags.h"
#include "ks_alloc.h"
#include "ks_cli.h"
#include "ks_cuda.h"
#include "ks_nvml.h"
#include "ks_nvrtc.h"
#include "ks_scan.h"
#include "ks_toolkit.h"
#include "ks_version.h"

static const char usage[] =
    "usage: kernelsmith-cc doctor [--json]\n"
    "\n"
    "Checks what kernelsmith-cc needs and reports what it found: libclang and its\n"
    "resource headers, the CUDA toolkit, NVRTC (its version, the architectures it\n"
    "targets, and a test compile for sm_90), the NVIDIA driver and each GPU, and\n"
    "NVML's clocks, temperature and power.\n"
    "\n"
    "options:\n"
    "      --json    one JSON object instead of text\n"
    "  -h, --help    show this help\n"
    "\n"
    "exit status: 0 when scan and compile can run here (libclang, toolkit, NVRTC),\n"
    "even without a GPU; 1 when the toolkit or NVRTC is unusable.\n";

const ks_command ks_cmd_doctor;

enum { MAX_GPUS = 64, MAX_ARCHS = 64, MESSAGE = 2048 };

static const char smoke_arch[] = "sm_90"; /* the architecture the project targets first */

typedef struct doctor_gpu {
  ks_gpu_info info;
  bool nvrtc_supported; /* NVRTC can compile for its architecture */
  bool has_sample;      /* NVML found it by PCI bus id */
  ks_nvml_sample sample;
} doctor_gpu;

typedef struct doctor_report {
  char *libclang_version;      /* malloc'd by the frontend */
  char resource_dir[4096];     /* "" when libclang is left to find its own */
  const char *resource_from;   /* where resource_dir came from */

  bool toolkit_ok;
  ks_toolkit toolkit;
  char toolkit_error[MESSAGE];

  bool nvrtc_ok;
  int nvrtc_major, nvrtc_minor;
  int archs[MAX_ARCHS];
  int narchs;
  char nvrtc_error[MESSAGE];
  bool smoke_ok;
  size_t smoke_bytes;
  double smoke_ms;
  char smoke_error[MESSAGE];

  bool driver_ok;
  int driver_version;
  int device_count;            /* may exceed MAX_GPUS; gpus holds the first */
  doctor_gpu gpus[MAX_GPUS];
  char driver_error[MESSAGE];
  char driver_warning[MESSAGE]; /* e.g. a driver older than NVRTC */

  bool nvml_ok;
  char nvml_driver[96];
  int nvml_count;
  char nvml_error[MESSAGE];
} doctor_report;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void keep_error(const ks_ctx *ctx, char *out) { snprintf(out, MESSAGE, "%s", ctx->error); }

/* The resource directory exactly as a scan would pick it: the frontend's own
 * lookup, run on a throwaway work directory. */
static void find_resource_dir(ks_ctx *ctx, doctor_report *r) {
  const char *env = getenv("KERNELSMITH_CLANG_RESOURCE_DIR");
  r->resource_from = env && *env ? "KERNELSMITH_CLANG_RESOURCE_DIR" : "build";
  char workdir[] = "/tmp/kernelsmith-doctor-XXXXXX";
  if (!mkdtemp(workdir))
    return;
  ks_clang_env env_out;
  if (!ks_clang_env_init(ctx, workdir, &env_out))
    snprintf(r->resource_dir, sizeof r->resource_dir, "%s", env_out.resource_dir);
  char path[4096 + 64];
  snprintf(path, sizeof path, "%s/stubs/texture_fetch_functions.h", workdir);
  unlink(path);
  snprintf(path, sizeof path, "%s/stubs", workdir);
  rmdir(path);
  rmdir(workdir);
}

static void check_nvrtc(ks_ctx *ctx, doctor_report *r) {
  if (ks_nvrtc_version(&r->nvrtc_major, &r->nvrtc_minor)) {
    snprintf(r->nvrtc_error, MESSAGE, "NVRTC did not report its version");
    return;
  }
  r->narchs = ks_nvrtc_archs(ctx, r->archs, MAX_ARCHS);
  if (r->narchs < 0) {
    keep_error(ctx, r->nvrtc_error);
    r->narchs = 0;
    return;
  }
  if (r->narchs > MAX_ARCHS)
    r->narchs = MAX_ARCHS;
  r->nvrtc_ok = true;
  double start = now_ms();
  r->smoke_ok = !ks_nvrtc_smoke(ctx, smoke_arch, &r->smoke_bytes);
  r->smoke_ms = now_ms() - start;
  if (!r->smoke_ok)
    keep_error(ctx, r->smoke_error);
}

static bool nvrtc_targets(const doctor_report *r, int sm) {
  for (int i = 0; i < r->narchs; i++)
    if (r->archs[i] == sm)
      return true;
  return false;
}

static void check_driver(ks_ctx *ctx, doctor_report *r, const ks_nvml *nvml) {
  ks_cuda cu;
  if (ks_cuda_load(ctx, &cu)) {
    keep_error(ctx, r->driver_error);
    return;
  }
  r->driver_version = cu.driver_version;
  ks_gpu_info *infos = ks_xcalloc(MAX_GPUS, sizeof *infos);
  int n = ks_cuda_devices(ctx, &cu, infos, MAX_GPUS);
  if (n < 0) {
    keep_error(ctx, r->driver_error);
    goto out;
  }
  r->driver_ok = true;
  r->device_count = n;
  for (int i = 0; i < n && i < MAX_GPUS; i++) {
    doctor_gpu *g = &r->gpus[i];
    g->info = infos[i];
    g->nvrtc_supported = nvrtc_targets(r, g->info.cc_major * 10 + g->info.cc_minor);
    ks_nvml_device dev;
    if (nvml->lib && g->info.pci_bus_id[0] &&
        !ks_nvml_device_by_pci(ctx, nvml, g->info.pci_bus_id, &dev) &&
        !ks_nvml_sample_device(ctx, nvml, dev, &g->sample))
      g->has_sample = true;
  }
  /* A cubin from a newer NVRTC may not load on an older driver. */
  if (r->nvrtc_ok && cu.driver_version / 1000 < r->nvrtc_major)
    snprintf(r->driver_warning, MESSAGE,
             "the driver supports CUDA %d.%d, older than NVRTC %d.%d: cubins it compiles may "
             "not load; update the driver",
             cu.driver_version / 1000, cu.driver_version % 1000 / 10, r->nvrtc_major,
             r->nvrtc_minor);
out:
  free(infos);
  ks_cuda_unload(&cu);
}

static void check_nvml(ks_ctx *ctx, doctor_report *r, ks_nvml *nvml) {
  if (ks_nvml_load(ctx, nvml)) {
    keep_error(ctx, r->nvml_error);
    return;
  }
  r->nvml_ok = true;
  if (ks_nvml_driver_version(ctx, nvml, r->nvml_driver, sizeof r->nvml_driver))
    r->nvml_driver[0] = '\0';
  r->nvml_count = ks_nvml_device_count(ctx, nvml);
}

static void gather(ks_ctx *ctx, doctor_report *r) {
  r->libclang_version = ks_libclang_version();
  find_resource_dir(ctx, r);
  r->toolkit_ok = !ks_toolkit_find(ctx, &r->toolkit);
  if (!r->toolkit_ok)
    keep_error(ctx, r->toolkit_error);
  check_nvrtc(ctx, r);
  ks_nvml nvml;
  check_nvml(ctx, r, &nvml);
  check_driver(ctx, r, &nvml);
  ks_nvml_unload(&nvml);
}

static bool toolchain_ok(const doctor_report *r) {
  return r->libclang_version && r->toolkit_ok && r->nvrtc_ok && r->smoke_ok;
}

static bool gpu_ready(const doctor_report *r) { return r->driver_ok && r->device_count > 0; }

/* ---- text -------------------------------------------------------------- */

/* MARK_ABSENT is "missing" for what only GPU commands need: shown, in
 * yellow, but not a failure. */
typedef enum mark { MARK_NONE, MARK_OK, MARK_MISSING, MARK_ABSENT, MARK_FAILED, MARK_NOTE } mark;

static void line(bool color, const char *key, mark m, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "key:   marker   value", the marker coloured on a terminal. */
static void line(bool color, const char *key, mark m, const char *fmt, ...) {
  static const char *const words[] = {"", "ok", "missing", "missing", "failed", "note"};
  static const char *const colors[] = {"",           "\033[32m", "\033[1;31m",
                                       "\033[33m", "\033[1;31m", "\033[36m"};
  char label[64];
  snprintf(label, sizeof label, "%s:", key);
  printf("%-17s ", label);
  if (color && m != MARK_NONE)
    printf("%s%-7s\033[0m  ", colors[m], words[m]);
  else
    printf("%-7s  ", words[m]);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

static void human_size(double bytes, char *out, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    u++;
  }
  snprintf(out, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

static void print_gpu(bool color, const doctor_gpu *g) {
  const ks_gpu_info *i = &g->info;
  char key[32], mem[32], l2[32], bw[48] = "";
  snprintf(key, sizeof key, "GPU %d", i->ordinal);
  human_size((double)i->total_mem, mem, sizeof mem);
  human_size(i->l2_bytes, l2, sizeof l2);
  double peak = ks_gpu_peak_bandwidth(i);
  if (peak > 0)
    snprintf(bw, sizeof bw, ", %.2f TB/s peak", peak / 1e12);
  line(color, key, g->nvrtc_supported ? MARK_OK : MARK_NOTE,
       "%s, sm_%d%d, %d SMs, %s, L2 %s%s, PCI %s%s", i->name, i->cc_major, i->cc_minor,
       i->sm_count, mem, l2, bw, i->pci_bus_id[0] ? i->pci_bus_id : "unknown",
       g->nvrtc_supported ? "" : " (NVRTC cannot compile for this architecture)");
  if (!g->has_sample)
    return;
  const ks_nvml_sample *s = &g->sample;
  snprintf(key, sizeof key, "GPU %d now", i->ordinal);
  line(color, key, MARK_NONE, "SM %d/%d MHz, memory %d MHz, %d C, %.0f/%.0f W%s", s->sm_clock_mhz,
       s->sm_clock_max_mhz, s->mem_clock_mhz, s->temperature_c, s->power_mw / 1e3,
       s->power_limit_mw / 1e3,
       s->has_reasons && (s->reasons & KS_NVML_REASONS_THROTTLED) ? ", throttled" : "");
}

static void print_text(bool color, const doctor_report *r) {
  line(color, "kernelsmith-cc", MARK_NONE, "%s", KS_VERSION);
  if (r->libclang_version)
    line(color, "libclang", MARK_OK, "%s", r->libclang_version);
  else
    line(color, "libclang", MARK_MISSING, "libclang did not report its version");
  if (r->resource_dir[0])
    line(color, "clang resources", MARK_OK, "%s (from %s)", r->resource_dir, r->resource_from);
  else
    line(color, "clang resources", MARK_NOTE,
         "not found; libclang will look for its own (set KERNELSMITH_CLANG_RESOURCE_DIR)");
  if (r->toolkit_ok)
    line(color, "CUDA toolkit", MARK_OK, "%s at %s", r->toolkit.version_text, r->toolkit.root);
  else
    line(color, "CUDA toolkit", MARK_MISSING, "%s", r->toolkit_error);

  if (r->nvrtc_ok) {
    char archs[512] = "";
    size_t at = 0;
    for (int i = 0; i < r->narchs && at < sizeof archs; i++)
      at += (size_t)snprintf(archs + at, sizeof archs - at, "%ssm_%d", i ? " " : "", r->archs[i]);
    line(color, "NVRTC", MARK_OK, "%d.%d; targets %s", r->nvrtc_major, r->nvrtc_minor, archs);
    if (r->smoke_ok)
      line(color, "NVRTC compile", MARK_OK, "%s cubin of %zu bytes in %.1f ms", smoke_arch,
           r->smoke_bytes, r->smoke_ms);
    else
      line(color, "NVRTC compile", MARK_FAILED, "%s", r->smoke_error);
  } else {
    line(color, "NVRTC", MARK_FAILED, "%s", r->nvrtc_error);
  }

  if (!r->driver_ok) {
    line(color, "CUDA driver", MARK_ABSENT, "%s", r->driver_error);
  } else {
    line(color, "CUDA driver", MARK_OK, "CUDA %d.%d, %d GPU%s", r->driver_version / 1000,
         r->driver_version % 1000 / 10, r->device_count, r->device_count == 1 ? "" : "s");
    if (r->driver_warning[0])
      line(color, "CUDA driver", MARK_NOTE, "%s", r->driver_warning);
    for (int i = 0; i < r->device_count && i < MAX_GPUS; i++)
      print_gpu(color, &r->gpus[i]);
  }
  if (r->nvml_ok)
    line(color, "NVML", MARK_OK, "driver %s, %d GPU%s", r->nvml_driver[0] ? r->nvml_driver : "?",
         r->nvml_count, r->nvml_count == 1 ? "" : "s");
  else /* the key already says NVML */
    line(color, "NVML", MARK_ABSENT, "%s",
         strncmp(r->nvml_error, "NVML ", 5) ? r->nvml_error : r->nvml_error + 5);

  putchar('\n');
  if (!toolchain_ok(r))
    printf("not ready: scan and compile need libclang, the CUDA toolkit and a working NVRTC\n");
  else if (!gpu_ready(r))
    printf("ready for scan and compile; GPU commands (check, bench, optimize) need an NVIDIA driver and a "
           "GPU, and there is none here\n");
  else
    printf("ready: scan, compile and GPU commands can run here\n");
}

/* ---- JSON -------------------------------------------------------------- */

static void add_string_or_null(cJSON *obj, const char *key, const char *value) {
  if (value && *value)
    cJSON_AddStringToObject(obj, key, value);
  else
    cJSON_AddNullToObject(obj, key);
}

/* NVML's -1 ("could not read") becomes null. */
static void add_reading(cJSON *obj, const char *key, int value, double scale) {
  if (value < 0)
    cJSON_AddNullToObject(obj, key);
  else
    cJSON_AddNumberToObject(obj, key, value * scale);
}

static cJSON *gpu_json(const doctor_gpu *g) {
  const ks_gpu_info *i = &g->info;
  cJSON *o = cJSON_CreateObject();
  char text[32];
  cJSON_AddNumberToObject(o, "ordinal", i->ordinal);
  cJSON_AddStringToObject(o, "name", i->name);
  snprintf(text, sizeof text, "%d.%d", i->cc_major, i->cc_minor);
  cJSON_AddStringToObject(o, "compute_capability", text);
  snprintf(text, sizeof text, "sm_%d%d", i->cc_major, i->cc_minor);
  cJSON_AddStringToObject(o, "sm", text);
  cJSON_AddBoolToObject(o, "nvrtc_supported", g->nvrtc_supported);
  cJSON_AddNumberToObject(o, "sm_count", i->sm_count);
  cJSON_AddNumberToObject(o, "memory_bytes", (double)i->total_mem);
  cJSON_AddNumberToObject(o, "l2_bytes", i->l2_bytes);
  cJSON_AddNumberToObject(o, "mem_clock_khz", i->mem_clock_khz);
  cJSON_AddNumberToObject(o, "mem_bus_bits", i->mem_bus_bits);
  cJSON_AddNumberToObject(o, "peak_bandwidth_gbs", ks_gpu_peak_bandwidth(i) / 1e9);
  cJSON_AddNumberToObject(o, "sm_clock_khz", i->sm_clock_khz);
  cJSON_AddNumberToObject(o, "smem_per_block_optin", i->smem_per_block_optin);
  cJSON_AddNumberToObject(o, "smem_per_sm", i->smem_per_sm);
  cJSON_AddNumberToObject(o, "regs_per_sm", i->regs_per_sm);
  cJSON_AddNumberToObject(o, "max_threads_per_sm", i->max_threads_per_sm);
  cJSON_AddBoolToObject(o, "ecc", i->ecc);
  add_string_or_null(o, "pci_bus_id", i->pci_bus_id);
  if (!g->has_sample) {
    cJSON_AddNullToObject(o, "nvml");
    return o;
  }
  const ks_nvml_sample *s = &g->sample;
  cJSON *n = cJSON_AddObjectToObject(o, "nvml");
  add_reading(n, "sm_clock_mhz", s->sm_clock_mhz, 1);
  add_reading(n, "sm_clock_max_mhz", s->sm_clock_max_mhz, 1);
  add_reading(n, "mem_clock_mhz", s->mem_clock_mhz, 1);
  add_reading(n, "temperature_c", s->temperature_c, 1);
  add_reading(n, "power_w", s->power_mw, 1e-3);
  add_reading(n, "power_limit_w", s->power_limit_mw, 1e-3);
  if (s->has_reasons)
    cJSON_AddNumberToObject(n, "clock_event_reasons", (double)s->reasons);
  else
    cJSON_AddNullToObject(n, "clock_event_reasons");
  cJSON_AddBoolToObject(n, "throttled",
                        s->has_reasons && (s->reasons & KS_NVML_REASONS_THROTTLED));
  return o;
}

static int print_json(ks_ctx *ctx, const doctor_report *r) {
  cJSON *root = cJSON_CreateObject();
  char text[64];
  cJSON_AddStringToObject(root, "version", KS_VERSION);
  cJSON_AddBoolToObject(root, "ok", toolchain_ok(r));
  cJSON_AddBoolToObject(root, "gpu_ready", gpu_ready(r));

  cJSON *clang = cJSON_AddObjectToObject(root, "libclang");
  add_string_or_null(clang, "version", r->libclang_version);
  add_string_or_null(clang, "resource_dir", r->resource_dir);
  cJSON_AddStringToObject(clang, "resource_dir_from", r->resource_from);

  cJSON *tk = cJSON_AddObjectToObject(root, "toolkit");
  cJSON_AddBoolToObject(tk, "ok", r->toolkit_ok);
  add_string_or_null(tk, "root", r->toolkit_ok ? r->toolkit.root : NULL);
  add_string_or_null(tk, "version", r->toolkit_ok ? r->toolkit.version_text : NULL);
  add_string_or_null(tk, "error", r->toolkit_ok ? NULL : r->toolkit_error);

  cJSON *nv = cJSON_AddObjectToObject(root, "nvrtc");
  cJSON_AddBoolToObject(nv, "ok", r->nvrtc_ok && r->smoke_ok);
  snprintf(text, sizeof text, "%d.%d", r->nvrtc_major, r->nvrtc_minor);
  add_string_or_null(nv, "version", r->nvrtc_ok ? text : NULL);
  cJSON_AddItemToObject(nv, "archs", cJSON_CreateIntArray(r->archs, r->narchs));
  cJSON *smoke = cJSON_AddObjectToObject(nv, "smoke");
  cJSON_AddBoolToObject(smoke, "ok", r->smoke_ok);
  cJSON_AddStringToObject(smoke, "arch", smoke_arch);
  cJSON_AddNumberToObject(smoke, "cubin_bytes", (double)r->smoke_bytes);
  cJSON_AddNumberToObject(smoke, "ms", (double)(long long)(r->smoke_ms * 10 + 0.5) / 10);
  add_string_or_null(smoke, "error", r->smoke_ok ? NULL : r->smoke_error);
  add_string_or_null(nv, "error", r->nvrtc_ok ? NULL : r->nvrtc_error);

  cJSON *drv = cJSON_AddObjectToObject(root, "driver");
  cJSON_AddBoolToObject(drv, "ok", r->driver_ok);
  snprintf(text, sizeof text, "%d.%d", r->driver_version / 1000, r->driver_version % 1000 / 10);
  if (r->driver_version) {
    cJSON_AddNumberToObject(drv, "version", r->driver_version);
    cJSON_AddStringToObject(drv, "version_text", text);
  } else {
    cJSON_AddNullToObject(drv, "version");
    cJSON_AddNullToObject(drv, "version_text");
  }
  cJSON_AddNumberToObject(drv, "device_count", r->device_count);
  add_string_or_null(drv, "error", r->driver_ok ? NULL : r->driver_error);
  add_string_or_null(drv, "warning", r->driver_warning);
  cJSON *gpus = cJSON_AddArrayToObject(drv, "gpus");
  for (int i = 0; i < r->device_count && i < MAX_GPUS; i++)
    cJSON_AddItemToArray(gpus, gpu_json(&r->gpus[i]));

  cJSON *nvml = cJSON_AddObjectToObject(root, "nvml");
  cJSON_AddBoolToObject(nvml, "ok", r->nvml_ok);
  add_string_or_null(nvml, "driver_version", r->nvml_driver);
  if (r->nvml_ok && r->nvml_count >= 0)
    cJSON_AddNumberToObject(nvml, "device_count", r->nvml_count);
  else
    cJSON_AddNullToObject(nvml, "device_count");
  add_string_or_null(nvml, "error", r->nvml_ok ? NULL : r->nvml_error);

  char *out = cJSON_Print(root);
  int rc = 0;
  if (!out || puts(out) == EOF)
    rc = ks_fail(ctx, "cannot write the JSON report");
  free(out);
  cJSON_Delete(root);
  return rc;
}

/* ---- the command ------------------------------------------------------- */

static int run_doctor(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_JSON = 256 };
  static const struct option opts[] = {
      {"json", no_argument, NULL, OPT_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  bool json = false;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      return ks_print_help(&ks_cmd_doctor);
    default:
      return ks_usage_error(ctx, &ks_cmd_doctor, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return ks_usage_error(ctx, &ks_cmd_doctor, "takes no arguments, not '%s'", argv[optind]);

  doctor_report *r = ks_xcalloc(1, sizeof *r);
  gather(ctx, r);
  int rc = toolchain_ok(r) ? KS_EXIT_OK : KS_EXIT_FAILURE;
  if (json) {
    if (print_json(ctx, r)) {
      ks_error(ctx, "%s", ctx->error);
      rc = KS_EXIT_FAILURE;
    }
  } else {
    print_text(ks_color_wanted(stdout) && ctx->color, r);
  }
  fflush(stdout);
  if (!r->toolkit_ok)
    ks_error(ctx, "%s", r->toolkit_error);
  else if (!r->nvrtc_ok)
    ks_error(ctx, "%s", r->nvrtc_error);
  else if (!r->smoke_ok)
    ks_error(ctx, "%s", r->smoke_error);
  free(r->libclang_version);
  free(r);
  return rc;
}

const ks_command ks_cmd_doctor = {"doctor", "check the toolchain, the driver and the GPUs", usage,
                                  run_doctor};
