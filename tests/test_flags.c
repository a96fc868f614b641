/* Unit tests of the compile-flag translation: nvcc, clang and gcc command
 * lines reduced to what changes how a file parses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flags.h"
#include "ks_buf.h"

static char *joined(ks_arena *a, const ks_strings *s) {
  size_t n = 1;
  for (size_t i = 0; i < s->len; i++)
    n += strlen(s->items[i]) + 1;
  char *out = ks_arena_alloc(a, n);
  for (size_t i = 0; i < s->len; i++) {
    if (i)
      strcat(out, " ");
    strcat(out, s->items[i]);
  }
  return out;
}

static void nvcc_command(void **state) {
  ks_arena a = KS_ARENA_INIT;
  const char *argv[] = {"/usr/local/cuda/bin/nvcc", "-forward-unknown-to-host-compiler",
                        "-DUSE_MPI", "-D", "TILE=32", "--define-macro=FAST",
                        "-Iinclude", "-I", "/abs/inc", "--include-path", "third",
                        "-isystem", "sys", "--generate-code=arch=compute_90,code=[sm_90]",
                        "-O3", "-Xcompiler", "-fPIC", "-std=c++17", "-x", "cu",
                        "-c", "src/k.cu", "-o", "k.o", "-UNDEBUG", "-include", "pre.h"};
  ks_strings out = {0};
  ks_flags_translate(&a, argv, sizeof argv / sizeof *argv, "/build", &out);
  assert_string_equal(joined(&a, &out),
                      "-DUSE_MPI -DTILE=32 -DFAST -I /build/include -I /abs/inc -I /build/third "
                      "-isystem /build/sys -std=c++17 -UNDEBUG -include /build/pre.h");
  ks_arena_release(&a);
}

static void clang_and_gcc_commands(void **state) {
  ks_arena a = KS_ARENA_INIT;
  const char *argv[] = {"clang++", "-x", "cuda", "--cuda-gpu-arch=sm_80", "-std=c++20",
                        "-iquote", "q", "-Wall", "-stdlib=libc++", "-idirafter", "/late",
                        "a.cu"};
  ks_strings out = {0};
  ks_flags_translate(&a, argv, sizeof argv / sizeof *argv, "/w", &out);
  assert_string_equal(joined(&a, &out), "-std=c++20 -iquote /w/q -idirafter /late");
  const char *nvcc_std[] = {"nvcc", "--std", "c++17", "a.cu"};
  ks_strings out2 = {0};
  ks_flags_translate(&a, nvcc_std, 4, "/w", &out2);
  assert_string_equal(joined(&a, &out2), "-std=c++17");
  ks_arena_release(&a);
}

static void empty_command(void **state) {
  ks_arena a = KS_ARENA_INIT;
  const char *argv[] = {"nvcc"};
  ks_strings out = {0};
  ks_flags_translate(&a, argv, 1, "/w", &out);
  assert_int_equal(out.len, 0);
  /* A trailing flag with its value missing is dropped, not read past. */
  const char *cut[] = {"nvcc", "-I"};
  ks_flags_translate(&a, cut, 2, "/w", &out);
  assert_int_equal(out.len, 0);
  ks_arena_release(&a);
}

static void codegen_options(void **state) {
  ks_arena a = KS_ARENA_INIT;
  const char *argv[] = {"nvcc", "-O3", "-use_fast_math", "--ftz=true", "-prec-div", "false",
                        "--prec-sqrt=false", "-fmad=false", "-maxrregcount=32",
                        "--extra-device-vectorization", "-Xptxas", "-O3", "-c", "k.cu"};
  ks_strings out = {0};
  ks_flags_codegen(&a, argv, sizeof argv / sizeof *argv, &out);
  assert_string_equal(joined(&a, &out),
                      "--use_fast_math --ftz=true --prec-div=false --prec-sqrt=false "
                      "--fmad=false --maxrregcount=32 --extra-device-vectorization");
  const char *clang[] = {"clang++", "-x", "cuda", "-ffast-math", "-fcuda-flush-denormals-to-zero",
                         "a.cu"};
  ks_strings out2 = {0};
  ks_flags_codegen(&a, clang, sizeof clang / sizeof *clang, &out2);
  assert_string_equal(joined(&a, &out2), "--use_fast_math --ftz=true");
  /* nothing that only changes the parse or the host code */
  const char *plain[] = {"nvcc", "-O3", "-DX=1", "-I", "inc", "-Xcompiler", "-ffast-math", "a.cu"};
  ks_strings out3 = {0};
  ks_flags_codegen(&a, plain, sizeof plain / sizeof *plain, &out3);
  /* -Xcompiler's value is the host compiler's */
  assert_string_equal(joined(&a, &out3), "");
  ks_arena_release(&a);
}

/* A macro flag or -std with an empty value (found by tests/fuzz/fuzz_flags)
 * is dropped: "-D" alone would make clang take the next argument for it. */
static void empty_values_dropped(void **state) {
  ks_arena a = KS_ARENA_INIT;
  const char *argv[] = {"nvcc", "-D", "", "--define-macro=", "-U", "", "-std=", "--std", "",
                        "-DX", "a.cu"};
  ks_strings out = {0};
  ks_flags_translate(&a, argv, sizeof argv / sizeof *argv, "/w", &out);
  assert_string_equal(joined(&a, &out), "-DX");
  ks_arena_release(&a);
}

static void write_text(const char *dir, const char *name, const char *text) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* Response files inside response files are read, but a file that names
 * itself many times (found by tests/fuzz/fuzz_flags: 20 times took 8 s,
 * 40 would take minutes) is read at most 16 times for one command line. */
static void response_files_bounded(void **state) {
  char dir[] = "/tmp/ks-test-flags-XXXXXX";
  assert_non_null(mkdtemp(dir));
  write_text(dir, "outer.rsp", "-Iouter @inner.rsp");
  write_text(dir, "inner.rsp", "-DINNER '-DQ=a b'");
  ks_buf self = KS_BUF_INIT;
  for (int i = 0; i < 40; i++)
    ks_buf_adds(&self, "@self.rsp ");
  ks_buf_adds(&self, "-Iinc");
  write_text(dir, "self.rsp", self.data);
  ks_buf_release(&self);

  ks_arena a = KS_ARENA_INIT;
  const char *nested[] = {"nvcc", "--options-file", "outer.rsp", "k.cu"};
  ks_strings out = {0};
  ks_flags_translate(&a, nested, 4, dir, &out);
  assert_string_equal(joined(&a, &out),
                      ks_arena_printf(&a, "-I %s/outer -DINNER -DQ=a b", dir));

  const char *loop[] = {"clang++", "@self.rsp", "k.cu"};
  ks_strings out2 = {0};
  ks_flags_translate(&a, loop, 3, dir, &out2);
  assert_int_equal(out2.len, 2 * 16); /* "-I", "DIR/inc" from each file read */
  ks_arena_release(&a);
  const char *names[] = {"outer.rsp", "inner.rsp", "self.rsp"};
  for (size_t i = 0; i < 3; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nvcc_command),
      cmocka_unit_test(clang_and_gcc_commands),
      cmocka_unit_test(empty_command),
      cmocka_unit_test(codegen_options),
      cmocka_unit_test(empty_values_dropped),
      cmocka_unit_test(response_files_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
