/* What a name from a system header means to NVRTC: the one place where the
 * slicer decides, for a declaration or macro it does not copy, whether NVRTC
 * has it built in, gets it from a toolkit header (#include), gets it from a
 * line we add, or cannot have it at all.
 *
 * - Toolkit headers: a slice includes what the user included, when NVRTC can
 *   compile it (ks_toolkit_header_allowed, shared with the candidate rules):
 *   of the headers between the user's #include and the declaration, the
 *   outermost allowed one. A header only CUDA's own wrapper included
 *   (cuda_runtime.h, vector types, the math API) is built into NVRTC.
 * - The C and C++ libraries: NVRTC has the CUDA math API, printf, assert,
 *   size_t, but none of libc's or libstdc++'s headers. Fixed-width integers
 *   and limits come from libcu++ (cuda/std/...), float limits from
 *   definitions of our own; std::numeric_limits is libcu++'s
 *   cuda::std::numeric_limits (<cuda/std/limits>, named into std), and
 *   anything else in namespace std is missing. A libc typedef of an
 *   arithmetic type (glibc's uint, ushort, ulong) is written out. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ks_ctext.h"
#include "ks_toolkit.h"
#include "slice.h"

typedef struct name_fix {
  const char *name;
  slice_system_kind kind;
  const char *text; /* header for SLICE_SYS_INCLUDE, value for SLICE_SYS_DEFINE */
} name_fix;

static const name_fix fixes[] = {
    /* <stdint.h> */
    {"int8_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"int16_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"int32_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"int64_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"uint8_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"uint16_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"uint32_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"uint64_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"intptr_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"uintptr_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"intmax_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    {"uintmax_t", SLICE_SYS_INCLUDE, "cuda/std/cstdint"},
    /* <limits.h> */
    {"CHAR_BIT", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"SCHAR_MIN", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"SCHAR_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"UCHAR_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"SHRT_MIN", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"SHRT_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"USHRT_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"INT_MIN", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"INT_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"UINT_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"LONG_MIN", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"LONG_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"ULONG_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"LLONG_MIN", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"LLONG_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    {"ULLONG_MAX", SLICE_SYS_INCLUDE, "cuda/std/climits"},
    /* the toolkit's reduced-precision types, by the header that declares
     * them for NVRTC too, whatever the user's code included first (a
     * template argument deduced through cublas_v2.h's chain: llm.c's
     * norm_kernel3<__nv_bfloat16>) */
    {"__nv_bfloat16", SLICE_SYS_INCLUDE, "cuda_bf16.h"},
    {"__nv_bfloat162", SLICE_SYS_INCLUDE, "cuda_bf16.h"},
    {"nv_bfloat16", SLICE_SYS_INCLUDE, "cuda_bf16.h"},
    {"nv_bfloat162", SLICE_SYS_INCLUDE, "cuda_bf16.h"},
    {"__half", SLICE_SYS_INCLUDE, "cuda_fp16.h"},
    {"__half2", SLICE_SYS_INCLUDE, "cuda_fp16.h"},
    {"half", SLICE_SYS_INCLUDE, "cuda_fp16.h"},
    {"half2", SLICE_SYS_INCLUDE, "cuda_fp16.h"},
    /* <math.h> */
    {"INFINITY", SLICE_SYS_INCLUDE, "cuda/std/cmath"},
    {"NAN", SLICE_SYS_INCLUDE, "cuda/std/cmath"},
    {"HUGE_VALF", SLICE_SYS_DEFINE, "__int_as_float(0x7f800000)"},
    {"HUGE_VAL", SLICE_SYS_DEFINE, "__longlong_as_double(0x7ff0000000000000LL)"},
    /* <float.h>: libcu++ leaves these to the compiler, which NVRTC is not */
    {"FLT_MAX", SLICE_SYS_DEFINE, "3.40282347e+38F"},
    {"FLT_MIN", SLICE_SYS_DEFINE, "1.17549435e-38F"},
    {"FLT_EPSILON", SLICE_SYS_DEFINE, "1.19209290e-07F"},
    {"FLT_TRUE_MIN", SLICE_SYS_DEFINE, "1.40129846e-45F"},
    {"FLT_DIG", SLICE_SYS_DEFINE, "6"},
    {"FLT_MANT_DIG", SLICE_SYS_DEFINE, "24"},
    {"DBL_MAX", SLICE_SYS_DEFINE, "1.7976931348623157e+308"},
    {"DBL_MIN", SLICE_SYS_DEFINE, "2.2250738585072014e-308"},
    {"DBL_EPSILON", SLICE_SYS_DEFINE, "2.2204460492503131e-16"},
    {"DBL_TRUE_MIN", SLICE_SYS_DEFINE, "4.9406564584124654e-324"},
    {"DBL_DIG", SLICE_SYS_DEFINE, "15"},
    {"DBL_MANT_DIG", SLICE_SYS_DEFINE, "53"},
};

static const name_fix *find_fix(const char *name) {
  for (size_t i = 0; i < sizeof fixes / sizeof *fixes; i++)
    if (!strcmp(fixes[i].name, name))
      return &fixes[i];
  return NULL;
}

bool ks_slice_toolkit_header(const ks_slicer *s, const char *path, const char **rel) {
  const char *dirs[] = {s->env->cccl_dir, s->env->toolkit.include};
  for (size_t i = 0; path && i < 2; i++) {
    size_t n = strlen(dirs[i]);
    if (n && !strncmp(path, dirs[i], n) && path[n] == '/') {
      *rel = path + n + 1;
      return true;
    }
  }
  /* Some installations also copy the toolkit's headers into another system
   * include directory (/usr/local/include), which the parser may find
   * first: the part after ".../include/cccl/" or the last ".../include/"
   * names the header as well. The allow-list decides what may be used. */
  /* clang's own headers (its resource directory, wherever it was installed
   * or unpacked) are not the toolkit's. */
  size_t res = strlen(s->env->resource_dir);
  if (path && res && !strncmp(path, s->env->resource_dir, res))
    return false;
  const char *cccl = path ? strstr(path, "/include/cccl/") : NULL;
  if (cccl) {
    *rel = cccl + strlen("/include/cccl/");
    return true;
  }
  const char *last = NULL;
  for (const char *p = path ? strstr(path, "/include/") : NULL; p; p = strstr(p + 1, "/include/"))
    last = p;
  if (!last || strstr(path, "/lib/clang/") || strstr(path, "/cuda_wrappers/"))
    return false;
  /* Only a header the toolkit has too: /usr/include/math.h is libc's (its
   * M_PI is copied, not left to NVRTC, which has none). */
  const char *name = last + strlen("/include/");
  if (s->env->toolkit.include[0]) {
    char full[4096];
    int n = snprintf(full, sizeof full, "%s/%s", s->env->toolkit.include, name);
    if (n < 0 || (size_t)n >= sizeof full || access(full, F_OK) != 0)
      return false;
  }
  *rel = name;
  return true;
}

void ks_slice_add_prelude(ks_slicer *s, const char *text) {
  for (size_t i = 0; i < s->prelude.len; i++)
    if (!strcmp(s->prelude.items[i], text))
      return;
  *ks_array_push(s->tu.arena, &s->prelude) = text;
}

void ks_slice_add_include(ks_slicer *s, const char *header) {
  for (size_t i = 0; i < s->includes.len; i++)
    if (!strcmp(s->includes.items[i], header))
      return;
  *ks_array_push(s->tu.arena, &s->includes) = header;
  ks_slice_add_prelude(s, ks_arena_printf(s->tu.arena, "#include <%s>", header));
}

static const char *fix_text(ks_slicer *s, const name_fix *fix, const char **out) {
  if (fix->kind == SLICE_SYS_INCLUDE)
    return *out = fix->text;
  return *out = ks_arena_printf(s->tu.arena, "#ifndef %s\n#define %s %s\n#endif", fix->name,
                                fix->name, fix->text);
}

/* The file's chain of includers up to the user's file that included it.
 * Fills files[0..n) innermost first; *user is false when no user file
 * included it (CUDA's wrapper did, or a forced include). */
static unsigned includers(ks_slicer *s, long file, long *files, unsigned max, bool *user) {
  unsigned n = 0;
  *user = false;
  while (file >= 0 && n < max) {
    const slice_file *f = &s->files.items[file];
    if (!f->system) {
      *user = true;
      break;
    }
    files[n++] = file;
    file = f->includer;
  }
  return n;
}

/* The header a user-included chain should be reached through: the
 * outermost one NVRTC can compile. */
static const char *allowed_on_chain(ks_slicer *s, const long *files, unsigned n) {
  for (unsigned i = n; i-- > 0;) {
    const char *rel = NULL;
    if (ks_slice_toolkit_header(s, s->files.items[files[i]].path, &rel) &&
        ks_toolkit_header_allowed(rel))
      return rel;
  }
  return NULL;
}

/* The header nearest to `file` (fewest #includes away) that a user file
 * includes itself and NVRTC can compile: <cuda_bf16.h> for __nv_bfloat16,
 * even when cooperative_groups.h, included first, brought it in. */
static const char *nearest_user_include(ks_slicer *s, long file) {
  size_t n = s->files.len;
  long *queue = ks_arena_alloc(s->tu.arena, n * sizeof *queue);
  bool *seen = ks_arena_alloc(s->tu.arena, n * sizeof *seen);
  size_t head = 0, tail = 0;
  queue[tail++] = file;
  seen[file] = true;
  while (head < tail) {
    long x = queue[head++];
    for (size_t i = 0; i < s->edges.len; i++) {
      const slice_edge *e = &s->edges.items[i];
      if (e->to != x)
        continue;
      const char *rel = NULL;
      if (!s->files.items[e->from].system) {
        if (ks_slice_toolkit_header(s, s->files.items[x].path, &rel) &&
            ks_toolkit_header_allowed(rel))
          return rel;
      } else if (!seen[e->from]) {
        seen[e->from] = true;
        queue[tail++] = e->from;
      }
    }
  }
  return NULL;
}

static long file_of(ks_slicer *s, CXSourceLocation loc) {
  CXFile file = NULL;
  clang_getFileLocation(loc, &file, NULL, NULL, NULL);
  const slice_file *f = ks_slice_file(s, file);
  return f ? f - s->files.items : -1;
}

/* A header's name as a user would write it between <>. */
static const char *header_name(ks_slicer *s, long file) {
  const char *path = s->files.items[file].path, *rel = NULL;
  if (ks_slice_toolkit_header(s, path, &rel))
    return rel;
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* `typedef unsigned int uint;` for a typedef at file scope of libc's
 * headers whose type is arithmetic (NVRTC has none of those headers); NULL
 * for any other declaration, and for the names NVRTC declares itself
 * (size_t, ptrdiff_t) or that are the implementation's (_-prefixed). */
static const char *libc_typedef(ks_slicer *s, CXCursor decl, const char *name) {
  if (clang_getCursorKind(decl) != CXCursor_TypedefDecl || strchr(name, ':') || name[0] == '_' ||
      !strcmp(name, "size_t") || !strcmp(name, "ptrdiff_t") || !strcmp(name, "wchar_t") ||
      !strcmp(name, "max_align_t") || !strcmp(name, "nullptr_t"))
    return NULL;
  CXType t = clang_getCanonicalType(clang_getTypedefDeclUnderlyingType(decl));
  if (t.kind < CXType_Bool || t.kind > CXType_LongDouble)
    return NULL;
  CXString sp = clang_getTypeSpelling(t);
  const char *text = ks_arena_printf(s->tu.arena, "typedef %s %s;", clang_getCString(sp), name);
  clang_disposeString(sp);
  return text;
}

slice_system_kind ks_slice_system_decl(ks_slicer *s, CXCursor decl, const char **out) {
  *out = NULL;
  const char *name = ks_tu_qualified_name(&s->tu, decl);
  const name_fix *fix = find_fix(name);
  if (fix) {
    fix_text(s, fix, out);
    return fix->kind;
  }
  long file = file_of(s, clang_getCursorLocation(decl));
  if (file < 0)
    return SLICE_SYS_BUILTIN;
  long chain[64];
  bool user = false;
  unsigned n = includers(s, file, chain, 64, &user);
  const char *rel = NULL;
  if (ks_slice_toolkit_header(s, s->files.items[file].path, &rel)) {
    if (!user)
      return SLICE_SYS_BUILTIN; /* from CUDA's own wrapper: built into NVRTC */
    const char *header = nearest_user_include(s, file);
    if (!header)
      header = allowed_on_chain(s, chain, n);
    if (header)
      return (*out = header), SLICE_SYS_INCLUDE;
    *out = n ? header_name(s, chain[n - 1]) : rel;
    return SLICE_SYS_MISSING;
  }
  /* The C and C++ libraries, and clang's own CUDA headers: of namespace std
   * NVRTC has only what the language needs (std::move, std::forward,
   * std::initializer_list); the C functions it has (the CUDA math API,
   * printf, malloc). */
  static const char *const std_builtin[] = {"std::move", "std::forward",
                                            "std::initializer_list"};
  for (size_t i = 0; i < sizeof std_builtin / sizeof *std_builtin; i++)
    if (!strcmp(name, std_builtin[i]))
      return SLICE_SYS_BUILTIN;
  /* libcu++ has the same template, constexpr on the device: the user's
   * std::numeric_limits<float>::max() compiles as written. */
  if (!strncmp(name, "std::numeric_limits", 19) && (!name[19] || name[19] == ':')) {
    ks_slice_add_include(s, "cuda/std/limits");
    /* Only NVRTC lacks it: a parse with the host's headers (the rules',
     * nvcc) has <limits>'s, which a using declaration would conflict with. */
    *out = "#ifdef __CUDACC_RTC__\nnamespace std { using ::cuda::std::numeric_limits; }\n#endif";
    return SLICE_SYS_DEFINE;
  }
  const char *typedef_text = libc_typedef(s, decl, name);
  if (typedef_text)
    return (*out = typedef_text), SLICE_SYS_DEFINE;
  if (!strncmp(name, "std::", 5) || !strncmp(name, "__gnu_cxx::", 11)) {
    *out = user && n ? header_name(s, chain[n - 1]) : NULL;
    return SLICE_SYS_MISSING;
  }
  return SLICE_SYS_BUILTIN;
}

slice_system_kind ks_slice_system_macro(ks_slicer *s, slice_macro *m, const char **out) {
  *out = NULL;
  const name_fix *fix = find_fix(m->name);
  if (fix) {
    fix_text(s, fix, out);
    return fix->kind;
  }
  /* Reserved names are the implementation's: NVRTC has its own. */
  if (m->name[0] == '_' && (m->name[1] == '_' || (m->name[1] >= 'A' && m->name[1] <= 'Z')))
    return SLICE_SYS_BUILTIN;
  CXSourceRange r = clang_getCursorExtent(m->cursor);
  long file = file_of(s, clang_getRangeStart(r));
  if (file < 0)
    return SLICE_SYS_BUILTIN;
  const char *rel = NULL;
  if (ks_slice_toolkit_header(s, s->files.items[file].path, &rel)) {
    /* A constant of math_constants.h the user included: the header; one
     * only CUDA's wrapper brought in: built in. */
    const char *header = nearest_user_include(s, file);
    if (header)
      return (*out = header), SLICE_SYS_INCLUDE;
    return SLICE_SYS_BUILTIN;
  }
  /* libc's constants (M_PI, M_SQRT2, ...) are plain numbers: copied. */
  ks_slice_locate_macro(s, m);
  const char *text = ks_tu_range_text(&s->tu, m->range);
  const char *body = text ? text + strlen(m->name) : NULL;
  if (!body || (*body != ' ' && *body != '\t'))
    return SLICE_SYS_BUILTIN; /* function-like, or empty */
  const char *end = body + strlen(body);
  const char *comment = strstr(body, "/*");
  if (comment)
    end = comment;
  body = ks_ctext_trim(s->tu.arena, body, end);
  if (!*body || strspn(body, "0123456789.eExXabcdfABCDFuUlL+-() ") != strlen(body))
    return SLICE_SYS_BUILTIN; /* anything else is left to NVRTC, which names it */
  *out = ks_arena_printf(s->tu.arena, "#ifndef %s\n#define %s %s\n#endif", m->name, m->name, body);
  return SLICE_SYS_DEFINE;
}
