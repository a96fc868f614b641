/* slice_fp64: a slice's double-precision twin, the judge's fp64 reference
 * (docs/judge.md, "The fp64 reference").
 *
 * With `reference fp64` in a kernel's spec, the judge also runs the kernel
 * computed in double, on the same inputs widened, and asks of a variant that
 * it be no less accurate than the original against that reference: a
 * variant that trades precision for speed inside a loosened tolerance is
 * caught there. The twin is made lexically, on the slice's text as written
 * (comments, string literals and #include lines untouched):
 *
 *   - `float`, `floatN` and `make_floatN` become `double`, `doubleN`,
 *     `make_doubleN` (sizeof, casts, templates, shared arrays alike);
 *   - the single-precision math functions become their double versions
 *     (expf -> exp, rsqrtf -> rsqrt, ...), the fast and rounding-mode
 *     intrinsics the plain operation (__expf -> exp, __fmul_rn(a, b) ->
 *     ((a) * (b)), __frcp_rn(x) -> (1.0 / (x)), __fdividef(a, b) ->
 *     ((a) / (b))), cache-hinted loads and stores plain ones (__ldg(p) ->
 *     (*(p)): there is no double4 __ldg), the float constants of
 *     math_constants.h their double ones (CUDART_PI_F -> CUDART_PI);
 *   - floating literals lose an f/F suffix (0.5f -> 0.5, 1e-3f -> 1e-3;
 *     0xff is an integer and stays).
 *
 * Float-to-integer conversions (__float2int_rn) are left alone: they take
 * the double through a float, which rounds to the same integer but at the
 * edges. A lexical rewrite cannot see types, so what it cannot make
 * faithful is refused with the reason instead of guessed at: half,
 * bfloat16 and fp8 code (their intrinsics have no wider twin), inline PTX,
 * tensor-core fragments, texture and surface reads, and the float bit
 * reinterpretations (__float_as_int), whose meaning changes with the width.
 * Casts of float pointers to integer pointers are not seen (docs/spec.md,
 * "The fp64 reference", says so). */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_slice.h"

/* Identifiers renamed as they stand. */
typedef struct fp64_rename {
  const char *from, *to;
} fp64_rename;

static const fp64_rename renames[] = {
    {"float", "double"},
    {"float1", "double1"},
    {"float2", "double2"},
    {"float3", "double3"},
    {"float4", "double4"}, /* deprecated in CUDA 13 (double4_16a), still
                              accepted, and the one name every toolkit has */
    {"make_float1", "make_double1"},
    {"make_float2", "make_double2"},
    {"make_float3", "make_double3"},
    {"make_float4", "make_double4"},
    /* fast intrinsics: the accurate double function */
    {"__expf", "exp"},
    {"__exp10f", "exp10"},
    {"__logf", "log"},
    {"__log2f", "log2"},
    {"__log10f", "log10"},
    {"__powf", "pow"},
    {"__sinf", "sin"},
    {"__cosf", "cos"},
    {"__tanf", "tan"},
    {"__sincosf", "sincos"},
    /* rounding-mode intrinsics that are functions in double too */
    {"__fsqrt_rn", "sqrt"},
    {"__fsqrt_rz", "sqrt"},
    {"__fsqrt_ru", "sqrt"},
    {"__fsqrt_rd", "sqrt"},
    {"__frsqrt_rn", "rsqrt"},
    {"__fmaf_rn", "fma"},
    {"__fmaf_rz", "fma"},
    {"__fmaf_ru", "fma"},
    {"__fmaf_rd", "fma"},
    {"__fmaf_ieee_rn", "fma"},
    {"__fmaf_ieee_rz", "fma"},
    {"__fmaf_ieee_ru", "fma"},
    {"__fmaf_ieee_rd", "fma"},
    /* integers to floating point: exact in double */
    {"__int2float_rn", "__int2double_rn"},
    {"__uint2float_rn", "__uint2double_rn"},
    {"__ll2float_rn", "__ll2double_rn"},
    {"__ull2float_rn", "__ull2double_rn"},
};

/* Single-precision functions whose double version is the name without the
 * final 'f' (CUDA's math API, C99's <math.h>). */
static const char *const float_functions[] = {
    "acosf",   "acoshf",      "asinf",      "asinhf",        "atan2f",        "atanf",
    "atanhf",  "cbrtf",       "ceilf",      "copysignf",     "cosf",          "coshf",
    "cospif",  "cyl_bessel_i0f", "cyl_bessel_i1f", "erfcf", "erfcinvf",      "erfcxf",
    "erff",    "erfinvf",     "exp10f",     "exp2f",         "expf",          "expm1f",
    "fabsf",   "fdimf",       "floorf",     "fmaf",          "fmaxf",         "fminf",
    "fmodf",   "frexpf",      "hypotf",     "ilogbf",        "j0f",           "j1f",
    "jnf",     "ldexpf",      "lgammaf",    "llrintf",       "llroundf",      "log10f",
    "log1pf",  "log2f",       "logbf",      "logf",          "lrintf",        "lroundf",
    "modff",   "nanf",        "nearbyintf", "nextafterf",    "norm3df",       "norm4df",
    "normcdff", "normcdfinvf", "normf",     "powf",          "rcbrtf",        "remainderf",
    "remquof", "rhypotf",     "rintf",      "rnorm3df",      "rnorm4df",      "rnormf",
    "roundf",  "rsqrtf",      "scalblnf",   "scalbnf",       "sincosf",       "sincospif",
    "sinf",    "sinhf",       "sinpif",     "sqrtf",         "tanf",          "tanhf",
    "tgammaf", "truncf",      "y0f",        "y1f",           "ynf",
};

/* math_constants.h: the float constants of mathematical values that have a
 * double twin (limits of the float type, like CUDART_TWO_TO_23_F, stay). */
static const char *const cudart_constants[] = {
    "CUDART_2_OVER_PI_F", "CUDART_3PIO4_F", "CUDART_INF_F",  "CUDART_L2E_F",
    "CUDART_L2T_F",       "CUDART_LG2_F",   "CUDART_LGE_F",  "CUDART_LN2_F",
    "CUDART_LNPI_F",      "CUDART_LNT_F",   "CUDART_NAN_F",  "CUDART_NEG_ZERO_F",
    "CUDART_ONE_F",       "CUDART_PIO2_F",  "CUDART_PIO4_F", "CUDART_PI_F",
    "CUDART_SQRT_2_OVER_PI_F", "CUDART_SQRT_HALF_F", "CUDART_SQRT_TWO_F", "CUDART_THIRD_F",
    "CUDART_ZERO_F",
};

/* Intrinsics that become an expression of their arguments: %1, %2 stand
 * for the (converted) arguments. */
typedef struct expansion {
  const char *name;
  size_t nargs;
  const char *pattern;
} expansion;

static const expansion expansions[] = {
    {"__fdividef", 2, "((%1) / (%2))"}, {"fdividef", 2, "((%1) / (%2))"},
    {"__fadd_rn", 2, "((%1) + (%2))"},  {"__fadd_rz", 2, "((%1) + (%2))"},
    {"__fadd_ru", 2, "((%1) + (%2))"},  {"__fadd_rd", 2, "((%1) + (%2))"},
    {"__fsub_rn", 2, "((%1) - (%2))"},  {"__fsub_rz", 2, "((%1) - (%2))"},
    {"__fsub_ru", 2, "((%1) - (%2))"},  {"__fsub_rd", 2, "((%1) - (%2))"},
    {"__fmul_rn", 2, "((%1) * (%2))"},  {"__fmul_rz", 2, "((%1) * (%2))"},
    {"__fmul_ru", 2, "((%1) * (%2))"},  {"__fmul_rd", 2, "((%1) * (%2))"},
    {"__fdiv_rn", 2, "((%1) / (%2))"},  {"__fdiv_rz", 2, "((%1) / (%2))"},
    {"__fdiv_ru", 2, "((%1) / (%2))"},  {"__fdiv_rd", 2, "((%1) / (%2))"},
    {"__frcp_rn", 1, "(1.0 / (%1))"},   {"__frcp_rz", 1, "(1.0 / (%1))"},
    {"__frcp_ru", 1, "(1.0 / (%1))"},   {"__frcp_rd", 1, "(1.0 / (%1))"},
    /* __saturatef maps NaN to 0, as fmax(NaN, 0.0) does */
    {"__saturatef", 1, "fmin(fmax((%1), 0.0), 1.0)"},
    /* cache-hinted loads and stores: CUDA has no double4 versions, and a
     * reference needs no cache hints */
    {"__ldg", 1, "(*(%1))"},            {"__ldca", 1, "(*(%1))"},
    {"__ldcg", 1, "(*(%1))"},           {"__ldcs", 1, "(*(%1))"},
    {"__ldlu", 1, "(*(%1))"},           {"__ldcv", 1, "(*(%1))"},
    {"__stcg", 2, "(*(%1) = (%2))"},    {"__stcs", 2, "(*(%1) = (%2))"},
    {"__stwb", 2, "(*(%1) = (%2))"},    {"__stwt", 2, "(*(%1) = (%2))"},
};

#define COUNT(a) (sizeof(a) / sizeof *(a))

typedef struct conv {
  ks_ctx *ctx;
  ks_arena *arena;
  bool fp16_headers; /* cuda_fp16.h, cuda_bf16.h or cuda_fp8.h is included:
                        `half` and `half2` are type names, not just names
                        (`int half = n / 2` is common enough) */
  bool failed;
} conv;

static bool is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && !strncmp(s, word, n);
}

static bool starts(const char *s, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && !strncmp(s, prefix, k);
}

static bool contains(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (!strncmp(s + i, needle, k))
      return true;
  return false;
}

/* Why identifier [s, s+n) has no faithful double twin, or NULL. */
static const char *refusal(const conv *c, const char *s, size_t n) {
  if (is(s, n, "asm") || is(s, n, "__asm") || is(s, n, "__asm__"))
    return "inline PTX (asm) has no fp64 twin";
  if ((starts(s, n, "__") && contains(s, n, "half")) || contains(s, n, "bfloat16") ||
      starts(s, n, "__nv_fp8") || starts(s, n, "__nv_fp6") || starts(s, n, "__nv_fp4") ||
      (c->fp16_headers && (is(s, n, "half") || is(s, n, "half2"))))
    return "half-precision, bfloat16 and fp8 code has no faithful fp64 twin";
  if (is(s, n, "wmma") || is(s, n, "mma_sync") || starts(s, n, "__hmma"))
    return "tensor-core fragments (wmma) have no fp64 twin";
  if (starts(s, n, "tex1D") || starts(s, n, "tex2D") || starts(s, n, "tex3D") ||
      starts(s, n, "texCubemap") || starts(s, n, "surf1D") || starts(s, n, "surf2D") ||
      starts(s, n, "surf3D"))
    return "texture and surface reads have no fp64 twin";
  if (is(s, n, "__float_as_int") || is(s, n, "__float_as_uint") || is(s, n, "__int_as_float") ||
      is(s, n, "__uint_as_float"))
    return "it reinterprets the bits of a float, which mean something else in a double";
  return NULL;
}

/* The double name of identifier [s, s+n), or NULL to keep it. */
static const char *renamed(ks_arena *arena, const char *s, size_t n) {
  for (size_t i = 0; i < COUNT(renames); i++)
    if (is(s, n, renames[i].from))
      return renames[i].to;
  for (size_t i = 0; i < COUNT(float_functions); i++)
    if (is(s, n, float_functions[i]))
      return ks_arena_strndup(arena, s, n - 1);
  for (size_t i = 0; i < COUNT(cudart_constants); i++)
    if (is(s, n, cudart_constants[i]))
      return ks_arena_strndup(arena, s, n - 2);
  return NULL;
}

static const expansion *expansion_of(const char *s, size_t n) {
  for (size_t i = 0; i < COUNT(expansions); i++)
    if (is(s, n, expansions[i].name))
      return &expansions[i];
  return NULL;
}

/* Whether the identifier at `s` follows '.' or '->': a member, not one of
 * the functions (a struct may well have a field named `expf`). */
static bool is_member(const char *text, const char *s) {
  const char *p = s;
  while (p > text && (p[-1] == ' ' || p[-1] == '\t'))
    p--;
  return (p > text && p[-1] == '.') || (p - text >= 2 && p[-2] == '-' && p[-1] == '>');
}

/* A preprocessing number at `p`; its end. Signs belong to it after an
 * exponent letter (e/E, or p/P in hex). */
static const char *number_end(const char *p, bool *floating) {
  bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  const char *q = p;
  *floating = false;
  while (ks_ctext_is_ident_char(*q) || *q == '.' ||
         ((*q == '+' || *q == '-') && q > p &&
          (hex ? (q[-1] == 'p' || q[-1] == 'P') : (q[-1] == 'e' || q[-1] == 'E')))) {
    if (*q == '.' || (hex ? (*q == 'p' || *q == 'P') : (q > p && (*q == 'e' || *q == 'E'))))
      *floating = true;
    q++;
  }
  return q;
}

static const char *convert(conv *c, const char *text);

/* Appends x's pattern with %1, %2, ... replaced by the converted arguments
 * between the parentheses at `open` and `close`; false, with nothing
 * appended, when there are not x->nargs of them (then the name is left as
 * it is, and the compiler has the last word). */
static bool expand(conv *c, const expansion *x, const char *open, const char *close, ks_buf *out) {
  ks_strings args = {0};
  ks_ctext_split(c->arena, open + 1, close, &args);
  if (args.len != x->nargs)
    return false;
  for (const char *p = x->pattern; *p; p++) {
    if (p[0] == '%' && p[1] >= '1' && p[1] <= '9' && (size_t)(p[1] - '1') < args.len) {
      const char *arg = convert(c, args.items[p[1] - '1']);
      ks_buf_adds(out, arg ? arg : "");
      p++;
    } else {
      ks_buf_addc(out, *p);
    }
  }
  return true;
}

/* Whether the line starting at `p` (after indentation) is an #include. */
static bool include_line(const char *p) {
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p++ != '#')
    return false;
  while (*p == ' ' || *p == '\t')
    p++;
  return !strncmp(p, "include", 7) && !ks_ctext_is_ident_char(p[7]);
}

static void note_headers(conv *c, const char *text) {
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    if (include_line(line) && (contains(line, n, "cuda_fp16.h") ||
                               contains(line, n, "cuda_bf16.h") || contains(line, n, "cuda_fp8.h")))
      c->fp16_headers = true;
    line += n + (nl != NULL);
  }
}

/* The twin of `text`; NULL after a refusal (recorded with ks_fail). */
static const char *convert(conv *c, const char *text) {
  ks_buf b = KS_BUF_INIT;
  for (const char *p = text; *p && !c->failed;) {
    if ((p == text || p[-1] == '\n') && include_line(p)) {
      const char *nl = strchr(p, '\n');
      size_t n = nl ? (size_t)(nl - p) : strlen(p);
      ks_buf_add(&b, p, n);
      p += n;
      continue;
    }
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      ks_buf_add(&b, p, (size_t)(q - p));
      p = q;
      continue;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
      bool floating;
      const char *end = number_end(p, &floating);
      size_t n = (size_t)(end - p);
      if (floating && (end[-1] == 'f' || end[-1] == 'F'))
        n--;
      ks_buf_add(&b, p, n);
      p = end;
      continue;
    }
    if (!ks_ctext_is_ident_char(*p)) {
      ks_buf_addc(&b, *p++);
      continue;
    }
    const char *s = p;
    while (ks_ctext_is_ident_char(*p))
      p++;
    size_t n = (size_t)(p - s);
    const char *why = refusal(c, s, n);
    if (why) {
      ks_fail(c->ctx, "no fp64 twin: '%.*s': %s", (int)n, s, why);
      c->failed = true;
      break;
    }
    if (is_member(text, s)) {
      ks_buf_add(&b, s, n);
      continue;
    }
    const expansion *x = expansion_of(s, n);
    if (x) {
      const char *open = p;
      while (*open == ' ' || *open == '\t' || *open == '\n')
        open++;
      const char *close = *open == '(' ? ks_ctext_matching(open, open + strlen(open)) : NULL;
      if (close && expand(c, x, open, close, &b)) {
        p = close + 1;
        continue;
      }
    }
    const char *to = renamed(c->arena, s, n);
    if (to)
      ks_buf_adds(&b, to);
    else
      ks_buf_add(&b, s, n);
  }
  const char *out = c->failed ? NULL : ks_arena_strdup(c->arena, b.data ? b.data : "");
  ks_buf_release(&b);
  return out;
}

const char *ks_slice_to_fp64(ks_ctx *ctx, ks_arena *arena, const char *source) {
  conv c = {.ctx = ctx, .arena = arena};
  note_headers(&c, source);
  return convert(&c, source);
}
