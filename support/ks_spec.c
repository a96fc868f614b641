/* ks_spec: element types of spec buffers and scalars (see ks_spec.h).
 *
 * Types arrive from two places: as clang spells a parameter's type
 * ("const unsigned int", "long long", "std::size_t", "__nv_bfloat16") and as a
 * user writes one in a spec ("f32", "float", "u8"). Both map onto the few
 * element types a GPU worker can fill and compare. The C mapping assumes the
 * LP64 data model of every CUDA host (long is 64-bit, char is signed). */
#include "ks_spec.h"

#include <ctype.h>
#include <string.h>

static const struct {
  ks_dtype type;
  const char *name;
  size_t size;
} dtypes[] = {
    {KS_DT_NONE, "none", 0}, {KS_DT_F16, "f16", 2}, {KS_DT_BF16, "bf16", 2}, {KS_DT_F32, "f32", 4},
    {KS_DT_F64, "f64", 8},   {KS_DT_I8, "i8", 1},   {KS_DT_U8, "u8", 1},     {KS_DT_I16, "i16", 2},
    {KS_DT_U16, "u16", 2},   {KS_DT_I32, "i32", 4}, {KS_DT_U32, "u32", 4},   {KS_DT_I64, "i64", 8},
    {KS_DT_U64, "u64", 8},
};

size_t ks_dtype_size(ks_dtype t) {
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
    if (dtypes[i].type == t)
      return dtypes[i].size;
  return 0;
}

const char *ks_dtype_name(ks_dtype t) {
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
    if (dtypes[i].type == t)
      return dtypes[i].name;
  return "none";
}

bool ks_dtype_is_float(ks_dtype t) {
  return t == KS_DT_F16 || t == KS_DT_BF16 || t == KS_DT_F32 || t == KS_DT_F64;
}

/* Named types that are one word (after an optional "std::"). */
static bool named_dtype(const char *w, ks_dtype *out) {
  static const struct {
    const char *name;
    ks_dtype type;
  } names[] = {
      {"size_t", KS_DT_U64},
      {"ssize_t", KS_DT_I64},
      {"ptrdiff_t", KS_DT_I64},
      {"intptr_t", KS_DT_I64},
      {"uintptr_t", KS_DT_U64},
      {"int8_t", KS_DT_I8},
      {"uint8_t", KS_DT_U8},
      {"int16_t", KS_DT_I16},
      {"uint16_t", KS_DT_U16},
      {"int32_t", KS_DT_I32},
      {"uint32_t", KS_DT_U32},
      {"int64_t", KS_DT_I64},
      {"uint64_t", KS_DT_U64},
      {"uint", KS_DT_U32},
      {"__half", KS_DT_F16},
      {"half", KS_DT_F16},
      {"__nv_bfloat16", KS_DT_BF16},
      {"nv_bfloat16", KS_DT_BF16},
      {"__nv_bfloat16_raw", KS_DT_BF16},
      {"__half_raw", KS_DT_F16},
  };
  if (!strncmp(w, "std::", 5))
    w += 5;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(names[i].name, w)) {
      *out = names[i].type;
      return true;
    }
  return false;
}

bool ks_dtype_from_param(const char *spelled, const char *canon, ks_dtype *out) {
  return ks_dtype_from_c(spelled, out) || (canon && ks_dtype_from_c(canon, out));
}

bool ks_dtype_from_c(const char *c_type, ks_dtype *out) {
  if (!c_type)
    return false;
  /* Count the keywords; qualifiers are dropped. */
  unsigned n_unsigned = 0, n_signed = 0, n_char = 0, n_short = 0, n_int = 0, n_long = 0,
           n_float = 0, n_double = 0, n_words = 0;
  ks_dtype named = KS_DT_NONE;
  const char *p = c_type;
  while (*p) {
    if (isspace((unsigned char)*p)) {
      p++;
      continue;
    }
    if (!isalpha((unsigned char)*p) && *p != '_')
      return false; /* '*', '[', '<': not an element type */
    char w[64];
    size_t n = 0;
    while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == ':') && n + 1 < sizeof w)
      w[n++] = *p++;
    w[n] = '\0';
    if (!strcmp(w, "const") || !strcmp(w, "volatile") || !strcmp(w, "__restrict") ||
        !strcmp(w, "__restrict__") || !strcmp(w, "restrict"))
      continue;
    n_words++;
    if (!strcmp(w, "unsigned"))
      n_unsigned++;
    else if (!strcmp(w, "signed"))
      n_signed++;
    else if (!strcmp(w, "char"))
      n_char++;
    else if (!strcmp(w, "short"))
      n_short++;
    else if (!strcmp(w, "int"))
      n_int++;
    else if (!strcmp(w, "long"))
      n_long++;
    else if (!strcmp(w, "float"))
      n_float++;
    else if (!strcmp(w, "double"))
      n_double++;
    else if (named == KS_DT_NONE && n_words == 1 && named_dtype(w, &named))
      continue;
    else
      return false; /* bool, a struct, a template parameter, ... */
  }
  if (named != KS_DT_NONE) {
    if (n_words != 1)
      return false;
    *out = named;
    return true;
  }
  if (n_unsigned && n_signed)
    return false;
  if (n_float || n_double) {
    /* long double has no GPU counterpart: refused with the rest. */
    if (n_unsigned || n_signed || n_char || n_short || n_int || n_long || n_float + n_double != 1)
      return false;
    *out = n_float ? KS_DT_F32 : KS_DT_F64;
    return true;
  }
  bool u = n_unsigned > 0;
  if (n_char) {
    if (n_char > 1 || n_short || n_int || n_long)
      return false;
    *out = u ? KS_DT_U8 : KS_DT_I8;
  } else if (n_short) {
    if (n_short > 1 || n_long || n_int > 1)
      return false;
    *out = u ? KS_DT_U16 : KS_DT_I16;
  } else if (n_long) {
    if (n_long > 2 || n_int > 1)
      return false;
    *out = u ? KS_DT_U64 : KS_DT_I64;
  } else if (n_int || n_unsigned || n_signed) {
    if (n_int > 1)
      return false;
    *out = u ? KS_DT_U32 : KS_DT_I32;
  } else {
    return false;
  }
  return true;
}

bool ks_dtype_parse(const char *name, ks_dtype *out) {
  static const struct {
    const char *name;
    ks_dtype type;
  } short_names[] = {
      {"f16", KS_DT_F16},  {"fp16", KS_DT_F16}, {"bf16", KS_DT_BF16}, {"f32", KS_DT_F32},
      {"fp32", KS_DT_F32}, {"f64", KS_DT_F64},  {"fp64", KS_DT_F64},  {"i8", KS_DT_I8},
      {"u8", KS_DT_U8},    {"i16", KS_DT_I16},  {"u16", KS_DT_U16},   {"i32", KS_DT_I32},
      {"u32", KS_DT_U32},  {"i64", KS_DT_I64},  {"u64", KS_DT_U64},
  };
  if (!name)
    return false;
  for (size_t i = 0; i < sizeof short_names / sizeof *short_names; i++)
    if (!strcmp(short_names[i].name, name)) {
      *out = short_names[i].type;
      return true;
    }
  return ks_dtype_from_c(name, out);
}

void ks_dtype_tolerance(ks_dtype t, double *atol, double *rtol) {
  double a = 0, r = 0;
  switch (t) {
  case KS_DT_F16: a = 1e-3, r = 1e-2; break;
  case KS_DT_BF16: a = 1e-2, r = 2e-2; break;
  case KS_DT_F32: a = 1e-5, r = 1e-4; break;
  case KS_DT_F64: a = 1e-12, r = 1e-9; break;
  default: break; /* integers: exact */
  }
  *atol = a;
  *rtol = r;
}

bool ks_warg_length(const ks_workload *w, const ks_warg *a, unsigned long long *out) {
  if (a->kind != KS_ARG_BUFFER || a->buffer >= w->buffers.len || a->length_unknown)
    return false;
  *out = a->length_set ? a->length : w->buffers.items[a->buffer].count;
  return true;
}
