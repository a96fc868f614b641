/* replay: a main for the harnesses where libFuzzer is not linked (gcc, or
 * a build without -DKS_FUZZ=ON): it runs LLVMFuzzerTestOneInput on every
 * file named, or in a directory named (sorted, so runs are repeatable),
 * and on a fixed number of mutations of each: bytes flipped, set, cut,
 * repeated, and tokens of the harness's dictionary inserted, from a seeded
 * generator. No coverage guidance: this is a smoke test of every harness on
 * its seeds in CI, not fuzzing.
 *
 *   fuzz_NAME_replay [-mutations=N] [-seed=S] [-dict=FILE] FILE|DIR...
 *
 * A crash is the sanitizer's report or an abort; then the input that
 * caused it is written to ./replay-crash-input and its seed named. At the
 * end one line counts the inputs. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

typedef struct bytes {
  unsigned char *p;
  size_t n;
} bytes;

static bytes *tokens;
static size_t ntokens;
static unsigned long long rng = 88172645463325252ull;

static unsigned long long next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static bytes read_all(const char *path) {
  bytes b = {0};
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    exit(2);
  }
  size_t cap = 0;
  for (;;) {
    if (b.n == cap) {
      cap = cap ? 2 * cap : 4096;
      b.p = realloc(b.p, cap);
      if (!b.p)
        abort();
    }
    size_t got = fread(b.p + b.n, 1, cap - b.n, f);
    if (!got)
      break;
    b.n += got;
  }
  fclose(f);
  return b;
}

/* A libFuzzer dictionary: lines `name="value"` or `"value"`, with \\, \"
 * and \xNN escapes; '#' lines are comments. */
static void read_dict(const char *path) {
  bytes text = read_all(path);
  char *s = fuzz_text(text.p, text.n);
  free(text.p);
  for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
    char *q = strchr(line, '"');
    if (line[strspn(line, " \t")] == '#' || !q)
      continue;
    bytes t = {malloc(strlen(q) + 1), 0};
    for (q++; *q && *q != '"'; q++) {
      if (*q == '\\' && q[1] == 'x' && q[2] && q[3]) {
        char hex[3] = {q[2], q[3], 0};
        t.p[t.n++] = (unsigned char)strtoul(hex, NULL, 16);
        q += 3;
      } else {
        if (*q == '\\' && q[1])
          q++;
        t.p[t.n++] = (unsigned char)*q;
      }
    }
    tokens = realloc(tokens, (ntokens + 1) * sizeof *tokens);
    tokens[ntokens++] = t;
  }
  free(s);
}

static size_t inputs;

/* The input being run, for the crash report. */
static const unsigned char *current;
static size_t current_len;
static const char *current_seed;
static unsigned current_mutation;

/* Called by the sanitizers before they exit, and on SIGABRT; only
 * async-signal-safe calls. */
static void save_input(void) {
  int fd = open("replay-crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (write(fd, current, current_len) < 0)
      current_len = 0;
    close(fd);
  }
  static const char a[] = "replay: the input is in replay-crash-input (seed ";
  if (write(2, a, sizeof a - 1) < 0 || write(2, current_seed, strlen(current_seed)) < 0 ||
      write(2, current_mutation ? ", mutated)\n" : ")\n", current_mutation ? 11 : 2) < 0)
    return;
}

static void on_abort(int sig) {
  save_input();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* In ASan's and UBSan's runtimes (gcc's and clang's); absent without them. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void run(const unsigned char *p, size_t n) {
  /* An exact-size copy, so that ASan sees a read one past the end. */
  unsigned char *copy = malloc(n ? n : 1);
  if (n)
    memcpy(copy, p, n);
  current = p;
  current_len = n;
  LLVMFuzzerTestOneInput(copy, n);
  free(copy);
  inputs++;
}

/* One mutation of `in` into `out` (malloc'd). */
static bytes mutate(const bytes *in) {
  static const unsigned char interesting[] = {0, 0xff, 0x7f, 0x80, '\n', '\\', '"', '(',
                                              ')', '-', '0', '9', ' ', '*', '/', ','};
  size_t extra = 64;
  for (size_t i = 0; i < ntokens; i++)
    if (tokens[i].n > extra)
      extra = tokens[i].n;
  bytes b = {malloc(2 * in->n + extra + 1), in->n};
  if (in->n)
    memcpy(b.p, in->p, in->n);
  unsigned ops = 1 + (unsigned)(next_random() % 4);
  for (unsigned k = 0; k < ops; k++) {
    size_t at = b.n ? (size_t)(next_random() % b.n) : 0;
    switch (next_random() % 6) {
    case 0: /* flip a bit */
      if (b.n)
        b.p[at] ^= (unsigned char)(1u << (next_random() % 8));
      break;
    case 1: /* an interesting byte */
      if (b.n)
        b.p[at] = interesting[next_random() % sizeof interesting];
      break;
    case 2: { /* cut a range */
      size_t len = b.n - at ? 1 + (size_t)(next_random() % (b.n - at)) : 0;
      if (len > 16 && next_random() % 2)
        len = 1 + len % 16;
      memmove(b.p + at, b.p + at + len, b.n - at - len);
      b.n -= len;
      break;
    }
    case 3: /* truncate */
      b.n = at;
      break;
    case 4: { /* repeat a range (bounded by the room left) */
      size_t room = 2 * in->n + extra - b.n;
      size_t len = b.n - at < 16 ? b.n - at : 16;
      if (len > room)
        len = room;
      memmove(b.p + at + len, b.p + at, b.n - at);
      b.n += len;
      break;
    }
    default: /* a dictionary token */
      if (ntokens) {
        const bytes *t = &tokens[next_random() % ntokens];
        if (2 * in->n + extra - b.n >= t->n) {
          memmove(b.p + at + t->n, b.p + at, b.n - at);
          memcpy(b.p + at, t->p, t->n);
          b.n += t->n;
        }
      }
      break;
    }
  }
  return b;
}

static void run_with_mutations(const char *path, unsigned mutations) {
  bytes seed = read_all(path);
  current_seed = path;
  current_mutation = 0;
  run(seed.p, seed.n);
  for (unsigned m = 0; m < mutations; m++) {
    bytes b = mutate(&seed);
    current_mutation = m + 1;
    run(b.p, b.n);
    free(b.p);
  }
  free(seed.p);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t seeds;

static void run_path(const char *path, unsigned mutations) {
  struct stat st;
  if (stat(path, &st)) {
    fprintf(stderr, "replay: no such file or directory: %s\n", path);
    exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    seeds++;
    run_with_mutations(path, mutations);
    return;
  }
  DIR *d = opendir(path);
  if (!d)
    exit(2);
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    names = realloc(names, (n + 1) * sizeof *names);
    names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
    sprintf(names[n++], "%s/%s", path, e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    run_path(names[i], mutations);
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  unsigned mutations = 0;
  signal(SIGABRT, on_abort);
  if (__sanitizer_set_death_callback)
    __sanitizer_set_death_callback(save_input);
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "-mutations=", 11))
      mutations = (unsigned)strtoul(argv[i] + 11, NULL, 10);
    else if (!strncmp(argv[i], "-seed=", 6))
      rng = strtoull(argv[i] + 6, NULL, 10) | 1;
    else if (!strncmp(argv[i], "-dict=", 6))
      read_dict(argv[i] + 6);
  }
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-')
      run_path(argv[i], mutations);
  for (size_t i = 0; i < ntokens; i++)
    free(tokens[i].p);
  free(tokens);
  if (!seeds) {
    fprintf(stderr, "replay: no seed inputs\n");
    return 1;
  }
  printf("%s: %zu inputs (%zu seeds, %u mutations each), no crash\n", argv[0], inputs, seeds,
         mutations);
  return 0;
}
