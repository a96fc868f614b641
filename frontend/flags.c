/* Argument lists for libclang: the CUDA base and compiler-flag translation. */
#include "flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_fs.h"

#ifndef KS_CLANG_RESOURCE_DIR
#define KS_CLANG_RESOURCE_DIR ""
#endif

/* clang 16's CUDA wrapper includes texture_fetch_functions.h, which CUDA 12
 * removed: an empty stand-in lets the parse go on. */
static const char texture_stub[] =
    "/* kernelsmith-cc: stand-in for a header CUDA 12 removed. */\n";

/* Declarations clang 16 lacks for parsing CUDA 12+ code: the cache-hinted
 * loads and stores of sm_32_intrinsics.h, which clang's wrapper leaves out
 * because it defines __ldg itself, and the surface functions it has no
 * support for. Templates, so that the exact overloads of cuda_fp16.h and
 * cuda_bf16.h still win; never compiled, only parsed. */
static const char prelude[] =
    "/* kernelsmith-cc: declarations for parsing CUDA code with clang. */\n"
    "#pragma once\n"
    "#include <cuda_runtime.h>\n"
    "#include <cmath>\n"
    "#include <ctime>\n"
    /* NVRTC has device assert built in; kernels call it with no include
     * in the slice. */
    "#include <cassert>\n"
    "using std::isfinite; using std::isinf; using std::isnan;\n"
    "#define KS_LOAD(name) template <class T> __device__ T name(const T *);\n"
    "#define KS_STORE(name) template <class T> __device__ void name(T *, T);\n"
    "KS_LOAD(__ldcg) KS_LOAD(__ldca) KS_LOAD(__ldcs) KS_LOAD(__ldlu) KS_LOAD(__ldcv)\n"
    "KS_STORE(__stwb) KS_STORE(__stcg) KS_STORE(__stcs) KS_STORE(__stwt)\n"
    "#undef KS_LOAD\n"
    "template <class... A> __device__ void surf1Dwrite(A...);\n"
    "template <class... A> __device__ void surf2Dwrite(A...);\n"
    "template <class... A> __device__ void surf3Dwrite(A...);\n"
    "template <class... A> __device__ void surf2DLayeredwrite(A...);\n"
    "template <class T, class... A> __device__ T surf1Dread(A...);\n"
    "template <class T, class... A> __device__ T surf2Dread(A...);\n"
    "template <class T, class... A> __device__ T surf3Dread(A...);\n"
    "template <class T, class... A> __device__ void surf1Dread(T *, A...);\n"
    "template <class T, class... A> __device__ void surf2Dread(T *, A...);\n"
    "template <class T, class... A> __device__ void surf3Dread(T *, A...);\n"
    "#undef KS_STORE\n"
    /* nvcc's math_functions.hpp gives host code min and max for the integer
     * and floating types (host launch code sizes grids with them); clang's
     * wrapper has only the device overloads, so each such call was an
     * error and its host function lost. */
    "#define KS_MINMAX(T, U, R) \\\n"
    "  static inline __host__ R min(T a, U b) { return (R)a < (R)b ? (R)a : (R)b; } \\\n"
    "  static inline __host__ R max(T a, U b) { return (R)a > (R)b ? (R)a : (R)b; }\n"
    "KS_MINMAX(int, int, int) KS_MINMAX(unsigned, unsigned, unsigned)\n"
    "KS_MINMAX(int, unsigned, unsigned) KS_MINMAX(unsigned, int, unsigned)\n"
    "KS_MINMAX(long, long, long) KS_MINMAX(unsigned long, unsigned long, unsigned long)\n"
    "KS_MINMAX(long, unsigned long, unsigned long) KS_MINMAX(unsigned long, long, unsigned long)\n"
    "KS_MINMAX(long long, long long, long long)\n"
    "KS_MINMAX(unsigned long long, unsigned long long, unsigned long long)\n"
    "KS_MINMAX(long long, unsigned long long, unsigned long long)\n"
    "KS_MINMAX(unsigned long long, long long, unsigned long long)\n"
    "KS_MINMAX(float, float, float) KS_MINMAX(double, double, double)\n"
    "KS_MINMAX(float, double, double) KS_MINMAX(double, float, double)\n"
    "#undef KS_MINMAX\n";

static int write_file(ks_ctx *ctx, const char *dir, const char *name, const char *text) {
  char *path = ks_path_join(dir, name);
  FILE *f = fopen(path, "w");
  int rc = 0;
  if (!f || fputs(text, f) < 0)
    rc = ks_fail(ctx, "%s: cannot write", path);
  if (f && fclose(f) && !rc)
    rc = ks_fail(ctx, "%s: cannot write", path);
  free(path);
  return rc;
}

int ks_clang_env_init(ks_ctx *ctx, const char *workdir, ks_clang_env *out) {
  memset(out, 0, sizeof *out);
  if (ks_toolkit_find(ctx, &out->toolkit))
    return -1;
  const char *res = getenv("KERNELSMITH_CLANG_RESOURCE_DIR");
  if (!res || !*res)
    res = KS_CLANG_RESOURCE_DIR;
  char *wrapper = ks_path_join(res, "include/__clang_cuda_runtime_wrapper.h");
  if (*res && ks_is_file(wrapper))
    snprintf(out->resource_dir, sizeof out->resource_dir, "%s", res);
  free(wrapper);
  snprintf(out->stub_dir, sizeof out->stub_dir, "%s/stubs", workdir);
  if (mkdir(out->stub_dir, 0700) && !ks_is_dir(out->stub_dir))
    return ks_fail(ctx, "%s: cannot create directory", out->stub_dir);
  char *cccl = ks_path_join(out->toolkit.include, "cccl");
  if (ks_is_dir(cccl) && strlen(cccl) < sizeof out->cccl_dir)
    memcpy(out->cccl_dir, cccl, strlen(cccl) + 1);
  free(cccl);
  snprintf(out->prelude, sizeof out->prelude, "%s/kernelsmith_clang_prelude.h", out->stub_dir);
  if (write_file(ctx, out->stub_dir, "texture_fetch_functions.h", texture_stub) ||
      write_file(ctx, out->stub_dir, "kernelsmith_clang_prelude.h", prelude))
    return -1;
  return 0;
}

static void push(ks_arena *arena, ks_strings *out, const char *s) {
  *ks_array_push(arena, out) = ks_arena_strdup(arena, s);
}

static bool has_std(const ks_strings *flags) {
  for (size_t i = 0; flags && i < flags->len; i++)
    if (!strncmp(flags->items[i], "-std=", 5))
      return true;
  return false;
}

void ks_clang_args(ks_arena *arena, const ks_clang_env *env, const ks_strings *file_flags,
                   const char *const *extra, size_t nextra, ks_strings *out) {
  push(arena, out, "-x");
  push(arena, out, "cuda");
  push(arena, out, "--cuda-host-only");
  *ks_array_push(arena, out) = ks_arena_printf(arena, "--cuda-path=%s", env->toolkit.root);
  /* The newest architecture clang 16 knows; only the host side is parsed,
   * so this changes no code path of the user's. */
  push(arena, out, "--cuda-gpu-arch=sm_90");
  push(arena, out, "-Wno-unknown-cuda-version");
  /* Errors must not stop the parse: kernels after the 20th error count too. */
  push(arena, out, "-ferror-limit=0");
  push(arena, out, "-w");
  if (*env->resource_dir) {
    push(arena, out, "-resource-dir");
    push(arena, out, env->resource_dir);
  }
  push(arena, out, "-isystem");
  push(arena, out, env->stub_dir);
  /* CUDA 13 keeps libcu++, CUB and Thrust here; nvcc adds it by itself. */
  if (*env->cccl_dir) {
    push(arena, out, "-isystem");
    push(arena, out, env->cccl_dir);
  }
  /* CCCL's traits use C variadics in device code, which clang 16 rejects
   * unless told that they are only for overload resolution. */
  push(arena, out, "-Xclang");
  push(arena, out, "-fcuda-allow-variadic-functions");
  push(arena, out, "-include");
  push(arena, out, env->prelude);
  bool std_given = has_std(file_flags);
  for (size_t i = 0; i < nextra; i++)
    if (!strncmp(extra[i], "-std=", 5))
      std_given = true;
  if (!std_given)
    push(arena, out, "-std=c++17");
  for (size_t i = 0; file_flags && i < file_flags->len; i++)
    *ks_array_push(arena, out) = file_flags->items[i];
  for (size_t i = 0; i < nextra; i++)
    push(arena, out, extra[i]);
}

/* ---- translation of compiler command lines ---------------------------- */

static const char *absolute(ks_arena *arena, const char *path, const char *dir) {
  if (path[0] == '/' || !dir)
    return ks_arena_strdup(arena, path);
  return ks_arena_printf(arena, "%s/%s", dir, path);
}

/* Flags that take a path, with the clang spelling we pass on. nvcc accepts
 * long forms and "=" for most of them. */
typedef struct path_flag {
  const char *name; /* as written */
  const char *clang;
} path_flag;

static const path_flag path_flags[] = {
    {"-I", "-I"},           {"--include-path", "-I"}, {"-isystem", "-isystem"},
    {"--system-include", "-isystem"}, {"-iquote", "-iquote"},  {"-idirafter", "-idirafter"},
    {"-include", "-include"}, {"--pre-include", "-include"},
};

typedef struct value_flag {
  const char *name;
  const char *clang;
} value_flag;

static const value_flag value_flags[] = {
    {"-D", "-D"}, {"--define-macro", "-D"}, {"-U", "-U"}, {"--undefine-macro", "-U"},
};

/* Matches `arg` against `name` as "-Xvalue", "-X value", "--x=value" or
 * "--x value"; sets *value (possibly from the next argument) and *used. */
static bool match(const char *arg, const char *next, const char *name, const char **value,
                  int *used) {
  size_t n = strlen(name);
  if (strncmp(arg, name, n))
    return false;
  bool long_form = name[1] == '-' || n > 2;
  if (arg[n] == '\0') {
    if (!next)
      return false;
    *value = next;
    *used = 2;
    return true;
  }
  if (arg[n] == '=') {
    *value = arg + n + 1;
    *used = 1;
    return true;
  }
  if (!long_form) { /* -Ipath, -DNAME */
    *value = arg + n;
    *used = 1;
    return true;
  }
  return false;
}

/* Splits a response file's text into arguments the way a shell would:
 * whitespace separates, quotes group, a backslash escapes. */
static void split_words(ks_arena *arena, const char *text, ks_strings *out) {
  ks_buf word = KS_BUF_INIT;
  bool in_word = false;
  for (const char *p = text;; p++) {
    char c = *p;
    if (c == '\0' || (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      if (in_word)
        *ks_array_push(arena, out) = ks_arena_strdup(arena, word.data);
      ks_buf_reset(&word);
      in_word = false;
      if (c == '\0')
        break;
      continue;
    }
    in_word = true;
    if (c == '"' || c == '\'') {
      char q = c;
      for (p++; *p && *p != q; p++) {
        if (q == '"' && *p == '\\' && p[1])
          p++;
        ks_buf_addc(&word, *p);
      }
      if (!*p)
        p--;
    } else if (c == '\\' && p[1]) {
      ks_buf_addc(&word, *++p);
    } else {
      ks_buf_addc(&word, c);
    }
  }
  ks_buf_release(&word);
}

/* Response files read for one command line: nesting and count are capped,
 * since a file that names itself twice (or two that name each other) would
 * otherwise be read exponentially often, and the command line comes from a
 * repository's compile_commands.json. CMake writes one or two per command. */
enum { KS_RSP_MAX_DEPTH = 4, KS_RSP_MAX_FILES = 16 };

typedef struct rsp_state {
  int depth;      /* response files being read now, one inside another */
  unsigned files; /* response files read so far */
} rsp_state;

static void translate(ks_arena *arena, const char *const *argv, size_t argc, size_t first,
                      const char *dir, ks_strings *out, rsp_state *rsp);

/* Response files: nvcc's --options-file (CMake writes its include paths
 * there) and the @file of gcc and clang. */
static void expand_response_file(ks_arena *arena, const char *path, const char *dir,
                                 ks_strings *out, rsp_state *rsp) {
  if (rsp->depth >= KS_RSP_MAX_DEPTH || rsp->files >= KS_RSP_MAX_FILES)
    return; /* a response file including itself */
  rsp->files++;
  const char *full = absolute(arena, path, dir);
  FILE *f = fopen(full, "r");
  if (!f)
    return;
  ks_buf text;
  ks_buf_init(&text, 1u << 20);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (ks_buf_add(&text, chunk, n))
      break;
  fclose(f);
  ks_strings words = {0};
  split_words(arena, text.data, &words);
  ks_buf_release(&text);
  rsp->depth++;
  translate(arena, words.items, words.len, 0, dir, out, rsp);
  rsp->depth--;
}

void ks_flags_translate(ks_arena *arena, const char *const *argv, size_t argc, const char *dir,
                        ks_strings *out) {
  rsp_state rsp = {0, 0};
  translate(arena, argv, argc, 1, dir, out, &rsp);
}

static void translate(ks_arena *arena, const char *const *argv, size_t argc, size_t first,
                      const char *dir, ks_strings *out, rsp_state *rsp) {
  for (size_t i = first; i < argc; i++) {
    const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL, *value = NULL;
    int used = 0;
    bool done = false;
    if (arg[0] == '@' && arg[1]) {
      expand_response_file(arena, arg + 1, dir, out, rsp);
      continue;
    }
    if (match(arg, next, "--options-file", &value, &used) || match(arg, next, "-optf", &value, &used)) {
      expand_response_file(arena, value, dir, out, rsp);
      i += (size_t)used - 1;
      continue;
    }
    for (size_t k = 0; !done && k < sizeof path_flags / sizeof *path_flags; k++) {
      if (match(arg, next, path_flags[k].name, &value, &used)) {
        push(arena, out, path_flags[k].clang);
        *ks_array_push(arena, out) = absolute(arena, value, dir);
        done = true;
      }
    }
    /* An empty macro name or standard is dropped: "-D" alone would make
     * clang take the next argument for the macro. */
    for (size_t k = 0; !done && k < sizeof value_flags / sizeof *value_flags; k++) {
      if (match(arg, next, value_flags[k].name, &value, &used)) {
        if (*value)
          *ks_array_push(arena, out) = ks_arena_printf(arena, "%s%s", value_flags[k].clang, value);
        done = true;
      }
    }
    /* Relocatable device code: clang parses device-side launches (dynamic
     * parallelism) only with it. */
    if (!done && (!strcmp(arg, "-rdc=true") || !strcmp(arg, "--relocatable-device-code=true") ||
                  !strcmp(arg, "-dc") || !strcmp(arg, "--device-c") || !strcmp(arg, "-fgpu-rdc"))) {
      push(arena, out, "-fgpu-rdc");
      continue;
    }
    if (!done && (match(arg, next, "-std", &value, &used) ||
                  match(arg, next, "--std", &value, &used))) {
      if (*value)
        *ks_array_push(arena, out) = ks_arena_printf(arena, "-std=%s", value);
      done = true;
    }
    if (done)
      i += (size_t)used - 1;
    /* Everything else (architectures, optimization, -Xcompiler, output
     * files, the source itself) does not change what the parse sees. */
  }
}

/* nvcc's code-generation options that change what a kernel computes or how
 * fast, by both spellings, and NVRTC's name for each (which takes the value
 * after '='). */
static const struct {
  const char *nvcc;
  const char *nvrtc;
} codegen_flags[] = {
    {"--ftz", "--ftz"},           {"-ftz", "--ftz"},
    {"--prec-div", "--prec-div"}, {"-prec-div", "--prec-div"},
    {"--prec-sqrt", "--prec-sqrt"}, {"-prec-sqrt", "--prec-sqrt"},
    {"--fmad", "--fmad"},         {"-fmad", "--fmad"},
    {"--maxrregcount", "--maxrregcount"}, {"-maxrregcount", "--maxrregcount"},
};

void ks_flags_codegen(ks_arena *arena, const char *const *argv, size_t argc, ks_strings *out) {
  static const char *const passed_on[] = {"-Xcompiler", "--compiler-options", "-Xptxas",
                                          "--ptxas-options", "-Xlinker", "--linker-options",
                                          "-Xnvlink", "--nvlink-options", "-Xarchive",
                                          "-Xfatbin", "--fatbin-options"};
  for (size_t i = 1; i < argc; i++) {
    const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL, *value = NULL;
    int used = 0;
    bool skip = false;
    for (size_t k = 0; k < sizeof passed_on / sizeof *passed_on && !skip; k++)
      skip = !strcmp(arg, passed_on[k]);
    if (skip) { /* the next word is another tool's (the host compiler's -ffast-math) */
      i++;
      continue;
    }
    if (!strcmp(arg, "--use_fast_math") || !strcmp(arg, "-use_fast_math") ||
        !strcmp(arg, "-ffast-math") /* clang's CUDA */) {
      *ks_array_push(arena, out) = "--use_fast_math";
      continue;
    }
    if (!strcmp(arg, "--extra-device-vectorization") || !strcmp(arg, "-extra-device-vectorization")) {
      *ks_array_push(arena, out) = "--extra-device-vectorization";
      continue;
    }
    if (!strcmp(arg, "-fcuda-flush-denormals-to-zero")) {
      *ks_array_push(arena, out) = "--ftz=true";
      continue;
    }
    for (size_t k = 0; k < sizeof codegen_flags / sizeof *codegen_flags; k++)
      if (match(arg, next, codegen_flags[k].nvcc, &value, &used) && *value) {
        *ks_array_push(arena, out) = ks_arena_printf(arena, "%s=%s", codegen_flags[k].nvrtc, value);
        i += (size_t)used - 1;
        break;
      }
  }
}
