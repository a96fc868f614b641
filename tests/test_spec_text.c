/* Spec text (frontend/spec_parse.c, spec_find.c): malformed lines get
 * "file:line: field: ..." messages, the comment forms parse alike, random
 * input never crashes, and annotations and sidecars are found where they
 * should be and nowhere else. A scratch tree is scanned once: its kernels are
 * where specs are looked for, and what the fuzzed specs are checked against. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_specs.h"

static ks_ctx ctx;
static ks_scan scan;
static ks_arena arena = KS_ARENA_INIT;
static char scratch[64];

static const char scratch_cu[] =
    "// Kernels for finding specs.\n"                                /* 1 */
    "__global__ void alpha(float *x, int n) { x[0] = n; }\n"         /* 2 */
    "\n"                                                             /* 3 */
    "// kernelsmith:\n"                                              /* 4 */
    "//   size timed: n = 100\n"                                     /* 5 */
    "//   inout x[n]\n"                                              /* 6 */
    "//   launch grid = 1, block = 1\n"                              /* 7 */
    "__global__ void beta(float *x, int n) { x[0] = n; }\n"          /* 8 */
    "__global__ void fill(float *x, float v, int n) { x[0] = v; }\n" /* 9 */
    "__global__ void fill(int *x, int v, int n) { x[0] = v; }\n"     /* 10 */
    "/* kernelsmith: size timed: n = 5\n"                            /* 11 */
    " *   out x[n]\n"                                                /* 12 */
    " *   launch grid = 1, block = 1 */\n"                           /* 13 */
    "// an ordinary comment between the annotation and the kernel\n" /* 14 */
    "\n"                                                             /* 15 */
    "__global__ void epsilon(float *x, int n) { x[0] = n; }\n"       /* 16 */
    "// kernelsmith: size timed: n = 1\n"                            /* 17 */
    "#define NOT_A_COMMENT 1\n"                                      /* 18 */
    "__global__ void delta(float *x, int n) { x[0] = n; }\n"         /* 19 */
    "void host(float *x, int n) {\n"                                 /* 20 */
    "  // kernelsmith: size timed: n = 64\n"                         /* 21 */
    "  //   out x[n]\n"                                              /* 22 */
    "  alpha<<<(n + 31) / 32, 32>>>(x, n);\n"                        /* 23 */
    "  delta<<<1, 1>>>(x, n);\n"                                     /* 24 */
    "}\n";

static void write_file(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void remove_file(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  unlink(path);
}

static const ks_kernel *kernel_in(const char *name) {
  for (size_t i = 0; i < scan.kernels.len; i++)
    if (ks_spec_names_kernel(name, &scan.kernels.items[i]))
      return &scan.kernels.items[i];
  fail_msg("no kernel %s", name);
  return NULL;
}

static const ks_launch *first_site(const ks_kernel *k) {
  return k->launches.len ? &scan.launches.items[k->launches.items[0]] : NULL;
}

static int found(const char *name, ks_spec *spec) {
  return ks_spec_find(&ctx, &scan, kernel_in(name), &arena, spec);
}

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_spec_text");
  ctx.verbosity = KS_LOG_ERROR;
  strcpy(scratch, "/tmp/ks-test-spec-XXXXXX");
  char sub[128];
  snprintf(sub, sizeof sub, "%s/src", mkdtemp(scratch) ? scratch : "/nonexistent");
  if (mkdir(sub, 0755))
    return -1;
  write_file("src/t.cu", scratch_cu);
  const char *const paths[] = {scratch};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&ctx, &opts, &scan)) {
    fprintf(stderr, "scan failed: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  char sub[128];
  remove_file("src/t.cu");
  snprintf(sub, sizeof sub, "%s/src", scratch);
  rmdir(sub);
  rmdir(scratch);
  ks_scan_release(&scan);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

/* Parses one spec text as if written at saxpy.cu:12. */
static int parse(const char *text, ks_spec *out) {
  return ks_spec_parse(&ctx, "saxpy.cu", 12, text, &arena, out);
}

static void malformed_lines_name_file_line_and_field(void **state) {
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"size timed n = 1", "size 'timed': expected ':' after the name"},
      {"size : n = 1", "size: expected a name, as in 'size timed: n = 1 << 20'"},
      {"size timed:", "size 'timed': no variables (write 'size timed: n = ...')"},
      {"size timed: n 1", "size 'timed': expected 'variable = value', not 'n 1'"},
      {"size timed: n == 1", "size 'timed': expected 'variable = value', not 'n == 1'"},
      {"size timed: n = (1 << 26",
       "size 'timed': variable 'n' '(1 << 26': expected ')' at the end of the expression"},
      {"size timed: n = 1, n = 2", "size 'timed': variable 'n' given twice"},
      {"size timed: n = 1 << 99999999999999999999",
       "size 'timed': variable 'n' '1 << 99999999999999999999': integer literal "
       "'99999999999999999999' is too large at column 6"},
      {"scalar a", "scalar: expected 'name = value', not 'a'"},
      {"scalar a = 2.5.1", "scalar 'a': value '2.5.1': bad number '2.5.1' at column 1"},
      {"scalar a = foo(1)", "scalar 'a': value 'foo(1)': unknown function 'foo' at column 1"},
      {"in x: float[n] gauss(0, 1)",
       "buffer 'x': unknown distribution 'gauss' (expected uniform, normal, int, iota, "
       "permutation, const or sorted_int)"},
      {"in x: flaot[n]",
       "buffer 'x': unknown element type 'flaot' (expected a C arithmetic type such as float or "
       "unsigned int, or f16, bf16, f32, f64, i8 ... u64)"},
      {"in x: [n]", "buffer 'x': expected an element type after ':'"},
      {"in x: float", "buffer 'x': expected '[length]' after the element type"},
      {"in x[n", "buffer 'x': missing ']'"},
      {"in x n", "buffer 'x': expected '[length]' after the name (the type comes after a colon: "
                 "'x: float[n]')"},
      {"in", "buffer: expected a parameter name, as in 'in x: float[n] uniform(-1, 1)'"},
      {"in x[]", "buffer 'x': length is empty"},
      {"in x[n +]", "buffer 'x': length 'n +': expected a value at the end of the expression"},
      {"in x[n] uniform(1)", "buffer 'x': uniform takes 2 arguments (lo, hi) or none, not 1"},
      {"in x[n] int(0)", "buffer 'x': int takes 2 arguments (lo, hi), not 1"},
      {"in x[n] int", "buffer 'x': int takes 2 arguments (lo, hi), not 0"},
      {"in x[n] permutation(3)", "buffer 'x': permutation takes no arguments"},
      {"in x[n] const", "buffer 'x': const takes 1 argument (value), not 0"},
      {"in x[n] iota(1, 2)", "buffer 'x': iota takes 1 argument (start), not 2"},
      {"in x[n] uniform(0, 1) normal(0, 1)",
       "buffer 'x': two distributions ('uniform' and 'normal')"},
      {"in x[n] uniform(0, n +)",
       "buffer 'x': uniform argument 2 'n +': expected a value at the end of the expression"},
      {"out y[n] uniform(0, 1)",
       "buffer 'y': an out buffer takes no distribution (its contents are poisoned before each "
       "run); make it inout if the kernel reads it"},
      {"in x[n] tol(atol = 1)",
       "buffer 'x': tol() applies to outputs (out, inout), not to an input"},
      {"out y[n] tol(atol = -1)", "buffer 'y': atol must be a non-negative number, not '-1'"},
      {"out y[n] tol(btol = 1)", "buffer 'y': unknown key 'btol' (expected atol or rtol)"},
      {"out y[n] tol(atol = 1, atol = 2)", "buffer 'y': 'atol' given twice"},
      {"out y[n] tol", "buffer 'y': expected tol(atol = ..., rtol = ...)"},
      {"out y[n] tol()", "buffer 'y': expected atol = ..."},
      {"inout y[n] uniform(0, 1", "buffer 'y': unbalanced parentheses after 'uniform'"},
      {"inout y[n] 42", "buffer 'y': unexpected '42'"},
      {"launch grid = 1", "launch: needs both grid and block (smem is optional, 0 by default)"},
      {"launch block = 32", "launch: needs both grid and block (smem is optional, 0 by default)"},
      {"launch grid = 1, block = 32, blocks = 3",
       "launch: unknown key 'blocks' (expected grid, block or smem)"},
      {"launch grid = dim3(1, 2, 3, 4), block = 1",
       "launch: grid 'dim3(1, 2, 3, 4)' has more than 3 components"},
      {"launch grid = (n + 1) / , block = 1",
       "launch: grid '(n + 1) /': expected a value at the end of the expression"},
      {"launch grid = 1, block = dim3(32, q +)",
       "launch: block 'q +': expected a value at the end of the expression"},
      {"launch grid = 1, block = 32, smem = 4 *", "launch: smem '4 *': expected a value at the end "
                                                  "of the expression"},
      {"launch grid 1", "launch: expected 'key = value', not 'grid 1'"},
      {"launch grid =, block = 1", "launch: 'grid' has no value"},
      {"tolerance atol = x",
       "tolerance: atol 'x': unknown name 'x' at column 1 (a tolerance is a number)"},
      {"tolerance", "tolerance: expected atol = ..."},
      {"tolerance rtol = 1e-4, rtol = 1e-5", "tolerance: 'rtol' given twice"},
      {"reference fp32", "reference: expected 'fp64' or 'native'"},
      {"reference fp64 please", "reference: expected 'fp64' or 'native'"},
      {"seeds 0", "seeds: expected a number of input sets from 1 to 1000, not '0'"},
      {"seeds many", "seeds: expected a number of input sets from 1 to 1000, not 'many'"},
      {"seeds 1001", "seeds: expected a number of input sets from 1 to 1000, not '1001'"},
      {"instance", "instance: expected template arguments, as in 'instance float, 256'"},
      {"instance <>", "instance: expected template arguments, as in 'instance float, 256'"},
      {"flops", "flops: expression is empty"},
      {"flops 2 * * n", "flops: expression '2 * * n': unexpected '*' at column 5"},
      {"sise timed: n = 1", "unknown field 'sise' (did you mean 'size'?)"},
      {"scalr a = 1", "unknown field 'scalr' (did you mean 'scalar'?)"},
      {"frobnicate", "unknown field 'frobnicate' (expected size, scalar, in, out, inout, launch, "
                     "tolerance, reference, seeds, instance or flops)"},
      {"kernel saxpy", "'kernel NAME' starts a section of a .kspec file; an annotation belongs "
                       "to the kernel it is written above"},
      {"@@@", "expected a field (size, scalar, in, out, inout, launch, tolerance, reference, "
              "seeds, instance, flops), not '@@@'"},
      {"size timed: n = 1 \\", "the last line ends with '\\' but nothing follows"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ks_spec spec;
    char want[1024];
    snprintf(want, sizeof want, "saxpy.cu:12: %s", cases[i].msg);
    if (!parse(cases[i].text, &spec))
      fail_msg("'%s' parsed", cases[i].text);
    if (strcmp(ctx.error, want))
      fail_msg("'%s':\n got  %s\n want %s", cases[i].text, ctx.error, want);
  }
  /* Repeats name the first line; lines count from where the spec starts. */
  ks_spec spec;
  assert_int_equal(
      parse("size timed: n = 1\n\n  launch grid = 1, block = 1\nlaunch grid = 2, block = 1", &spec),
      -1);
  assert_string_equal(ctx.error, "saxpy.cu:15: launch: given twice (first on line 14)");
  assert_int_equal(parse("in x[n]\n# comment\nin x[n]", &spec), -1);
  assert_string_equal(ctx.error, "saxpy.cu:14: buffer 'x': given twice (first on line 12)");
  assert_int_equal(parse("size timed: n = 1\nsize timed: n = 2", &spec), -1);
  assert_string_equal(ctx.error, "saxpy.cu:13: size 'timed': given twice (first on line 12)");
  assert_int_equal(parse("scalar a = 1\nscalar a = 2", &spec), -1);
  assert_string_equal(ctx.error, "saxpy.cu:13: scalar 'a': given twice (first on line 12)");
}

static void comment_forms_parse_alike(void **state) {
  static const char *const forms[] = {
      "/* kernelsmith:\n"
      " *   size timed: n = 1 << 20   # the measured size\n"
      " *   in x[n] uniform(-1, 1)\n"
      " *   inout y[n] \\\n"
      " *     tol(atol = 1e-6)\n"
      " */",
      "// kernelsmith:\n"
      "//   size timed: n = 1 << 20\n"
      "//   in x[n] uniform(-1, 1)\n"
      "//   inout y[n] tol(atol = 1e-6)\n",
      "/** kernelsmith: size timed: n = 1 << 20\n"
      "    in x[n] uniform(-1, 1)\n"
      "    inout y[n] tol(atol = 1e-6) */",
      "size timed: n = 1 << 20\nin x[n] uniform(-1, 1)\ninout y[n] tol(atol = 1e-6)",
  };
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    ks_spec spec;
    if (parse(forms[i], &spec))
      fail_msg("form %zu: %s", i, ctx.error);
    assert_int_equal(spec.sizes.len, 1);
    assert_string_equal(spec.sizes.items[0].vars.items[0].value, "1 << 20");
    assert_int_equal(spec.buffers.len, 2);
    assert_true(spec.buffers.items[1].atol == 1e-6);
    assert_true(spec.buffers.items[1].rtol < 0);
  }
  /* A continued line reports errors at its first line. */
  ks_spec spec;
  assert_int_equal(parse("size timed: n = 1\ninout y[n] \\\n  tol(atol = -2)", &spec), -1);
  assert_string_equal(ctx.error,
                      "saxpy.cu:13: buffer 'y': atol must be a non-negative number, not '-2'");
}

/* Parses `text` as saxpy's spec and checks it against saxpy_kernel. */

static void annotations_and_sidecars(void **state) {
  assert_int_equal(scan.kernels.len, 6);
  ks_spec spec;
  ks_workload w;

  /* Above a launch site; resolved with that site. */
  assert_int_equal(found("alpha", &spec), 0);
  assert_string_equal(spec.file, "src/t.cu");
  assert_int_equal(spec.line, 21);
  const ks_kernel *alpha = kernel_in("alpha");
  assert_int_equal(ks_spec_resolve(&ctx, &spec, alpha, first_site(alpha), 0, &arena, &w), 0);
  assert_int_equal(w.launch.grid[0], 2);
  /* Above the kernel, with an ordinary comment in between. */
  assert_int_equal(found("beta", &spec), 0);
  assert_int_equal(spec.line, 4);
  assert_int_equal(found("epsilon", &spec), 0);
  assert_int_equal(spec.line, 11);
  assert_int_equal(spec.buffers.items[0].role, KS_ROLE_OUT);
  /* Code between the comment and the kernel: no spec. */
  assert_int_equal(found("delta", &spec), 1);
  assert_int_equal(found("fill(float *, float, int)", &spec), 1);

  /* A sidecar naming other kernels changes nothing. */
  write_file("kernelsmith.kspec", "# sidecar\nkernel gamma\n  size timed: n = 1\n");
  assert_int_equal(found("beta", &spec), 0);
  assert_int_equal(spec.line, 4);
  assert_int_equal(found("delta", &spec), 1);
  /* One for a kernel that has an annotation: two specs, an error. */
  write_file("kernelsmith.kspec",
             "kernel gamma\n  size timed: n = 1\n\nkernel beta\n  size timed: n = 2\n");
  assert_int_equal(found("beta", &spec), -1);
  assert_string_equal(ctx.error,
                      "kernel 'beta' has 2 specs: src/t.cu:4 and kernelsmith.kspec:5; keep one");
  /* A sidecar for a kernel without annotation, with a comment on its line. */
  write_file("kernelsmith.kspec", "kernel delta   # below a #define\n  size timed: n = 3\n"
                                  "  inout x[n]\n");
  assert_int_equal(found("delta", &spec), 0);
  assert_string_equal(spec.file, "kernelsmith.kspec");
  assert_int_equal(spec.line, 2);
  assert_string_equal(spec.kernel, "delta");
  /* Errors in a sidecar name it and the line. */
  write_file("kernelsmith.kspec", "kernel delta\n  size timed: n = 3\n  inout x[n] gauss\n");
  assert_int_equal(found("delta", &spec), -1);
  assert_string_equal(ctx.error, "kernelsmith.kspec:3: buffer 'x': unknown distribution 'gauss' "
                                 "(expected uniform, normal, int, iota, permutation, const or "
                                 "sorted_int)");
  write_file("kernelsmith.kspec", "size timed: n = 3\nkernel delta\n");
  assert_int_equal(found("delta", &spec), -1);
  assert_string_equal(ctx.error,
                      "kernelsmith.kspec:1: expected 'kernel NAME' before the first spec line");
  remove_file("kernelsmith.kspec");
  /* Overloads: the name alone is ambiguous, the signature is not. */
  write_file("src/t.cu.kspec", "kernel fill\n  size timed: n = 1\n");
  assert_int_equal(found("fill(int *, int, int)", &spec), -1);
  assert_string_equal(ctx.error, "src/t.cu.kspec:1: kernel 'fill' names 2 kernels (fill(float *, "
                                 "float, int), fill(int *, int, int)): name one by its signature");
  write_file("src/t.cu.kspec", "kernel fill(int*,int,int)\n  size timed: n = 1\n  scalar v = 3\n"
                               "  out x[n]\n");
  assert_int_equal(found("fill(int *, int, int)", &spec), 0);
  assert_string_equal(spec.file, "src/t.cu.kspec");
  assert_int_equal(found("fill(float *, float, int)", &spec), 1);
  /* The sidecar beside the source and one above it both name delta. */
  write_file("src/t.cu.kspec", "kernel delta\n  size timed: n = 1\n");
  write_file("src/kernelsmith.kspec", "kernel delta\n  size timed: n = 2\n");
  assert_int_equal(found("delta", &spec), -1);
  assert_string_equal(ctx.error, "kernel 'delta' has 2 specs: src/t.cu.kspec:2 and "
                                 "src/kernelsmith.kspec:2; keep one");
  remove_file("src/t.cu.kspec");
  remove_file("src/kernelsmith.kspec");
}

static void write_bytes(const char *name, const char *bytes, size_t n) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  fclose(f);
}

/* Sources as the compiler reads them: a byte-order mark before a line-1
 * annotation, lone CRs for line endings (line numbers are the compiler's);
 * a NUL byte inside an annotation or a sidecar is refused with the file and
 * the line, where it used to cut the text and leave "no spec". */
static void byte_order_marks_cr_endings_and_nuls(void **state) {
  static const char bom[] = "\xEF\xBB\xBF// kernelsmith: size timed: n = 4\n"
                            "//   inout x[n]\n"
                            "//   launch grid = 1, block = 1\n"
                            "__global__ void bom_k(float *x, int n) { x[0] = n; }\n";
  static const char cr[] = "// lone CRs end these lines\r"                         /* 1 */
                           "/* kernelsmith: size timed: n = 6\r"                  /* 2 */
                           " *   inout x[n]\r"                                    /* 3 */
                           " *   launch grid = 1, block = 1 */\r"                 /* 4 */
                           "__global__ void cr_k(float *x, int n) { x[0] = n; }\r" /* 5 */
                           "\r"                                                   /* 6 */
                           "// kernelsmith: size timed: n = 6\r"                  /* 7 */
                           "//   inout x[n] gauss\r"                              /* 8 */
                           "__global__ void cr_bad(float *x, int n) { x[0] = n; }\r";
  static const char nul[] = "__global__ void other(float *x, int n) { x[0] = n; }\n" /* 1 */
                            "// kernelsmith: size timed: n = 4\n"                    /* 2 */
                            "//   inout x[n]\0 uniform(0, 1)\n"                      /* 3 */
                            "__global__ void nul_k(float *x, int n) { x[0] = n; }\n";
  char dir[128];
  snprintf(dir, sizeof dir, "%s/enc", scratch);
  assert_int_equal(mkdir(dir, 0755), 0);
  write_bytes("enc/bom.cu", bom, sizeof bom - 1);
  write_bytes("enc/cr.cu", cr, sizeof cr - 1);
  write_bytes("enc/nul.cu", nul, sizeof nul - 1);
  ks_scan enc;
  const char *const paths[] = {dir};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  assert_int_equal(ks_scan_run(&ctx, &opts, &enc), 0);
  const ks_kernel *bom_k = NULL, *cr_k = NULL, *cr_bad = NULL, *nul_k = NULL, *other = NULL;
  for (size_t i = 0; i < enc.kernels.len; i++) {
    const ks_kernel *k = &enc.kernels.items[i];
    if (!strcmp(k->name, "bom_k"))
      bom_k = k;
    else if (!strcmp(k->name, "cr_k"))
      cr_k = k;
    else if (!strcmp(k->name, "cr_bad"))
      cr_bad = k;
    else if (!strcmp(k->name, "nul_k"))
      nul_k = k;
    else if (!strcmp(k->name, "other"))
      other = k;
  }
  assert_true(bom_k && cr_k && cr_bad && nul_k && other);
  ks_spec spec;
  assert_int_equal(ks_spec_find(&ctx, &enc, bom_k, &arena, &spec), 0);
  assert_int_equal(spec.line, 1);
  assert_int_equal(spec.sizes.len, 1);
  assert_int_equal(spec.buffers.len, 1);
  assert_int_equal(ks_spec_check(&ctx, &spec, bom_k), 0);
  assert_int_equal(ks_spec_find(&ctx, &enc, cr_k, &arena, &spec), 0);
  assert_string_equal(spec.file, "cr.cu");
  assert_int_equal(spec.line, 2);
  assert_int_equal(spec.buffers.len, 1);
  assert_int_equal(spec.buffers.items[0].line, 3);
  assert_string_equal(spec.grid, "1");
  assert_int_equal(cr_k->loc.line, 5); /* the compiler counts lone CRs too */
  assert_int_equal(ks_spec_find(&ctx, &enc, cr_bad, &arena, &spec), -1);
  assert_string_equal(ctx.error, "cr.cu:8: buffer 'x': unknown distribution 'gauss' (expected "
                                 "uniform, normal, int, iota, permutation, const or sorted_int)");
  assert_int_equal(ks_spec_find(&ctx, &enc, nul_k, &arena, &spec), -1);
  assert_string_equal(ctx.error,
                      "nul.cu:3: a NUL byte (at byte 102) in the spec: remove it, a spec is text");
  assert_int_equal(ks_spec_find(&ctx, &enc, other, &arena, &spec), 1); /* no NUL of its own */
  /* In a sidecar, anywhere. */
  static const char side[] = "kernel other\n  size timed: n = 4\n  inout x[n]\0\n";
  write_bytes("enc/kernelsmith.kspec", side, sizeof side - 1);
  assert_int_equal(ks_spec_find(&ctx, &enc, other, &arena, &spec), -1);
  assert_string_equal(ctx.error, "kernelsmith.kspec:3: a NUL byte (at byte 45) in the spec: "
                                 "remove it, a spec is text");
  ks_scan_release(&enc);
  remove_file("enc/kernelsmith.kspec");
  remove_file("enc/bom.cu");
  remove_file("enc/cr.cu");
  remove_file("enc/nul.cu");
  rmdir(dir);
}

/* Long user text is quoted by an excerpt, and a long path by its end. */
static void long_text_keeps_the_reason(void **state) {
  ks_buf name = KS_BUF_INIT, text = KS_BUF_INIT;
  for (int i = 0; i < 1000; i++)
    ks_buf_adds(&name, "abcdefghij");
  ks_buf_addf(&text, "size timed: n = 1\nfrob%s = 1", name.data);
  ks_spec spec;
  assert_int_equal(parse(text.data, &spec), -1);
  assert_true(strlen(ctx.error) < sizeof ctx.error - 1);
  assert_non_null(strstr(ctx.error, "saxpy.cu:13: unknown field 'frobabcdefghij"));
  assert_non_null(strstr(ctx.error, "abcdef...' (expected size, scalar, in, out, inout, "
                                    "launch, tolerance, reference, seeds, instance or flops)"));
  ks_buf_reset(&text);
  ks_buf_addf(&text, "%s/t.cu", name.data); /* a 10 KB path */
  assert_int_equal(ks_spec_parse(&ctx, text.data, 7, "size timed: n = 1\ninout y[n] gauss",
                                 &arena, &spec),
                   -1);
  assert_true(strlen(ctx.error) < 400);
  assert_int_equal(strncmp(ctx.error, "...", 3), 0);
  assert_non_null(strstr(ctx.error, "ghij/t.cu:8: buffer 'y': unknown distribution 'gauss'"));
  ks_buf_release(&name);
  ks_buf_release(&text);
}

static void fuzzed_specs_never_crash(void **state) {
  static const char *const pieces[] = {"size",
                                       "timed",
                                       "small",
                                       ":",
                                       "n",
                                       "=",
                                       "1",
                                       "<<",
                                       "26",
                                       "in",
                                       "out",
                                       "inout",
                                       "x",
                                       "y",
                                       "a",
                                       "[",
                                       "]",
                                       "(",
                                       ")",
                                       ",",
                                       "uniform",
                                       "int",
                                       "iota",
                                       "const",
                                       "tol",
                                       "atol",
                                       "rtol",
                                       "launch",
                                       "grid",
                                       "block",
                                       "smem",
                                       "dim3",
                                       "*",
                                       "+",
                                       "-",
                                       "/",
                                       "%",
                                       "#",
                                       "\\",
                                       "/*",
                                       "*/",
                                       "//",
                                       "kernelsmith:",
                                       "\n",
                                       "\n",
                                       "\n",
                                       "1e-5",
                                       "sizeof",
                                       "float",
                                       "@",
                                       "\"",
                                       "'",
                                       "?",
                                       "ceil_div",
                                       "{",
                                       "}",
                                       "scalar",
                                       "2.5",
                                       "0x",
                                       "99999999999999999999",
                                       "len_x",
                                       "instance",
                                       "seeds",
                                       "flops",
                                       "reference",
                                       "fp64",
                                       "tolerance",
                                       " ",
                                       " ",
                                       "\t",
                                       "<",
                                       ">",
                                       "&&",
                                       "!"};
  const ks_kernel *k = kernel_in("alpha");
  unsigned long long rng = 0x9E3779B97F4A7C15ULL;
  char text[512];
  unsigned parsed = 0;
  for (int round = 0; round < 3000; round++) {
    size_t len = 0;
    int n = 1 + (int)((rng >> 33) % 24);
    for (int i = 0; i < n; i++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      const char *p = pieces[(rng >> 33) % (sizeof pieces / sizeof *pieces)];
      if (round % 7 == 0 && i % 3 == 0) { /* raw bytes now and then */
        char b[2] = {(char)(1 + (rng >> 40) % 255), 0};
        p = b;
        len += (size_t)snprintf(text + len, sizeof text - len, "%s", p);
      } else {
        len += (size_t)snprintf(text + len, sizeof text - len, "%s ", p);
      }
      if (len >= sizeof text - 32)
        break;
    }
    ks_spec spec;
    if (ks_spec_parse(&ctx, "fz.cu", 1, text, &arena, &spec)) {
      if (strncmp(ctx.error, "fz.cu:", 6))
        fail_msg("'%s': message without file: %s", text, ctx.error);
      continue;
    }
    parsed++;
    ks_workload w;
    if (!ks_spec_check(&ctx, &spec, k))
      for (size_t s = 0; s < spec.sizes.len; s++)
        if (ks_spec_resolve(&ctx, &spec, k, first_site(k), s, &arena, &w) &&
            strncmp(ctx.error, "fz.cu:", 6))
          fail_msg("'%s': message without file: %s", text, ctx.error);
  }
  assert_true(parsed > 0); /* some of it is valid */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(malformed_lines_name_file_line_and_field),
      cmocka_unit_test(comment_forms_parse_alike),
      cmocka_unit_test(annotations_and_sidecars),
      cmocka_unit_test(byte_order_marks_cr_endings_and_nuls),
      cmocka_unit_test(long_text_keeps_the_reason),
      cmocka_unit_test(fuzzed_specs_never_crash),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
