/* fuzz: what the libFuzzer harnesses of tests/fuzz share.
 *
 * Each fuzz_*.c defines LLVMFuzzerTestOneInput for one parser of the
 * project. The same file links either with clang's libFuzzer
 * (-DKS_FUZZ=ON: `fuzz_NAME`, which mutates inputs) or with replay.c
 * (every build: `fuzz_NAME_replay`, which runs the seed corpus and a fixed
 * set of mutations of it, so that CI with gcc still runs every harness).
 *
 * A harness must not leak, keep state between inputs (other than caches
 * made once, such as a temporary directory), or print: a finding is a
 * sanitizer report or an abort() on a broken invariant (fuzz_check). */
#ifndef KS_FUZZ_H
#define KS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "ks_ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (malloc'd; the caller frees it).
 * A NUL inside the input ends the string early, as it would in a file
 * read as text. */
char *fuzz_text(const uint8_t *data, size_t size);

/* A context whose diagnostics go nowhere (ks_ctx_release it). */
void fuzz_ctx(ks_ctx *ctx);

/* A private temporary directory ($TMPDIR, else /dev/shm, else /tmp), made
 * on the first call and removed at exit, for harnesses whose parser reads
 * a file. */
const char *fuzz_tmpdir(void);
/* Writes `n` bytes to `path` (truncating); aborts on failure, which is the
 * harness's, not the parser's. */
void fuzz_write_file(const char *path, const void *bytes, size_t n);

/* Aborts with the condition's text when an invariant the parser promises
 * does not hold (libFuzzer reports the abort as a crash). */
#define fuzz_check(cond) ((cond) ? (void)0 : fuzz_fail_(#cond, __FILE__, __LINE__))
void fuzz_fail_(const char *what, const char *file, int line) __attribute__((noreturn));

/* A failed call must leave a message (no silent failure). */
void fuzz_check_error(const ks_ctx *ctx);

#endif
