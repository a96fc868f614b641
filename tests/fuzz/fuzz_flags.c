/* fuzz_flags: the translation of compiler command lines
 * (frontend/flags.c: ks_flags_translate, ks_flags_codegen, ks_clang_args)
 * on any nvcc, clang or gcc command line, with a response file.
 * compile_commands.json itself is read by libclang and is not fuzzed here;
 * what our code does with the arguments it hands back is.
 *
 * Input: the command line, one argument per line (so arguments may hold
 * spaces), then optionally a NUL byte and the text of a response file.
 * The file is written as "r" in the command's directory (a private
 * temporary directory), so "@r", "--options-file r" or "-optf=r" in the
 * command or in the file itself (a file that includes itself) reach it.
 *
 * Invariants: every translated argument is a non-empty string, a macro
 * flag (-D, -U) and -std= carry their value (alone, clang would take the
 * next argument for it), each path-taking flag is followed by its value,
 * and every code-generation option is in NVRTC's long spelling. */
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "fuzz.h"

static void split_lines(ks_arena *a, char *text, ks_strings *out) {
  for (char *p = text;;) {
    char *nl = strchr(p, '\n');
    if (nl)
      *nl = '\0';
    *ks_array_push(a, out) = p;
    if (!nl)
      break;
    p = nl + 1;
  }
}

static bool takes_value(const char *flag) {
  static const char *const flags[] = {"-I", "-isystem", "-iquote", "-idirafter", "-include"};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
    if (!strcmp(flag, flags[i]))
      return true;
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char rsp[4200];
  const char *dir = fuzz_tmpdir();
  if (!rsp[0])
    snprintf(rsp, sizeof rsp, "%s/r", dir);
  const uint8_t *nul = memchr(data, 0, size);
  if (nul)
    fuzz_write_file(rsp, nul + 1, size - (size_t)(nul + 1 - data));
  else
    remove(rsp);
  char *text = fuzz_text(data, size);
  ks_arena arena = KS_ARENA_INIT;
  ks_strings argv = {0};
  split_lines(&arena, text, &argv);

  ks_strings flags = {0};
  ks_flags_translate(&arena, argv.items, argv.len, dir, &flags);
  for (size_t i = 0; i < flags.len; i++) {
    fuzz_check(flags.items[i] && *flags.items[i]);
    fuzz_check(strcmp(flags.items[i], "-D") && strcmp(flags.items[i], "-U") &&
               strcmp(flags.items[i], "-std="));
    if (takes_value(flags.items[i]))
      fuzz_check(i + 1 < flags.len);
  }
  ks_strings codegen = {0};
  ks_flags_codegen(&arena, argv.items, argv.len, &codegen);
  for (size_t i = 0; i < codegen.len; i++)
    fuzz_check(codegen.items[i] && !strncmp(codegen.items[i], "--", 2));

  ks_clang_env env = {0};
  snprintf(env.toolkit.root, sizeof env.toolkit.root, "/usr/local/cuda");
  ks_strings args = {0};
  const char *extra[] = {"-DFUZZ=1"};
  ks_clang_args(&arena, &env, &flags, extra, 1, &args);
  fuzz_check(args.len >= flags.len + 1);

  ks_arena_release(&arena);
  free(text);
  return 0;
}
