/* flags: the arguments libclang parses each file with.
 *
 * Every file is parsed as CUDA for the host side only (kernels are visible
 * there as declarations with bodies), against the CUDA toolkit's headers.
 * Its own flags come from compile_commands.json when there is one: nvcc,
 * clang and gcc command lines are reduced to what changes how a file parses
 * (macros, include paths, forced includes, the language standard), since
 * everything else is code generation that libclang does not do.
 *
 * Ownership: strings go into the caller's arena; a ks_compdb belongs to the
 * caller and is closed with ks_compdb_close. */
#ifndef KS_FLAGS_H
#define KS_FLAGS_H

#include "ks_ctx.h"
#include "ks_model.h"
#include "ks_toolkit.h"

typedef struct ks_clang_env {
  ks_toolkit toolkit;
  char resource_dir[4096]; /* clang's resource headers; "" lets libclang look */
  char stub_dir[4096];     /* stand-ins for headers newer CUDA removed */
  char cccl_dir[4096];     /* toolkit's include/cccl, or "" */
  char prelude[4200];      /* declarations clang lacks, force-included */
} ks_clang_env;

/* Finds the toolkit and clang's resources and writes the stub headers into
 * `workdir` (a private directory that lives as long as the scan). */
int ks_clang_env_init(ks_ctx *ctx, const char *workdir, ks_clang_env *out);

/* The complete argument list: the CUDA base, the file's own flags, then the
 * user's extra arguments. */
void ks_clang_args(ks_arena *arena, const ks_clang_env *env, const ks_strings *file_flags,
                   const char *const *extra, size_t nextra, ks_strings *out);

/* Reduces a compiler command line to the flags that matter for parsing;
 * relative paths are made absolute against `dir`. */
void ks_flags_translate(ks_arena *arena, const char *const *argv, size_t argc, const char *dir,
                        ks_strings *out);

/* The code-generation options of a compiler command line that change what
 * a kernel computes or how fast (--use_fast_math, -ftz, -prec-div,
 * -prec-sqrt, -fmad, -maxrregcount, --extra-device-vectorization; clang's
 * -ffast-math and -fcuda-flush-denormals-to-zero), in NVRTC's spelling, so
 * that the judge compiles a kernel as the user's build does. */
void ks_flags_codegen(ks_arena *arena, const char *const *argv, size_t argc, ks_strings *out);

typedef struct ks_compdb ks_compdb;

/* Opens BUILD_DIR/compile_commands.json; fails with a message naming it. */
int ks_compdb_open(ks_ctx *ctx, const char *build_dir, ks_compdb **out);
/* Looks for compile_commands.json in each path's directory, its build/ and
 * their parents; returns NULL (no error) when there is none. */
ks_compdb *ks_compdb_find(const char *const *paths, size_t npaths);
/* The directory holding the database. */
const char *ks_compdb_dir(const ks_compdb *db);
/* The translated flags of `file` (a realpath); false when the database has
 * no entry of its own for it. */
bool ks_compdb_flags(ks_compdb *db, ks_arena *arena, const char *file, ks_strings *out);
/* The file's code-generation options (ks_flags_codegen); false as above. */
bool ks_compdb_codegen(ks_compdb *db, ks_arena *arena, const char *file, ks_strings *out);
void ks_compdb_close(ks_compdb *db);

#endif
