/* Sampled profiling; see sample.h. */
#include "sample.h"

#include <cupti.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Distinct kernels counted; more are left uncounted (and then timed
 * launches stand for them, as without sampling). */
#define SLOTS 4096u
/* A kernel's first launches wake timing when it is off, so that a kernel
 * that runs only in a short burst (or only between two timed phases) is
 * still timed: without that, a program whose kernels all run in 100 ms
 * of an off phase would be counted and never timed. */
#define FIRST_LAUNCHES 16u

/* CUPTI hands the same symbol-name pointer for every launch of a function
 * in a module, so the pointer is the key and a launch costs a hash and an
 * atomic add; the name is copied once for the lines. The same name under
 * two pointers (two modules) is two slots, added up by the reader. */
enum { PHASE_IDLE, PHASE_ON, PHASE_OFF };

typedef struct slot {
  _Atomic(const char *) key;
  _Atomic(char *) name;
  _Atomic uint64_t launches;
} slot;

static struct {
  unsigned percent, period_ms, after_ms;
  slot *slots;
  pthread_mutex_t lock; /* guards stopping */
  pthread_cond_t wake;
  bool stopping, running;
  /* The toggler's phases: idle (timing on, no launch yet: the period
   * starts at the first launch, not at start-up), on and off. */
  _Atomic int phase;
  atomic_bool wanted; /* a kernel's first launches came while not timed */
  pthread_t thread;
} s = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static unsigned env_uint(const char *name, unsigned fallback, unsigned lo, unsigned hi) {
  const char *v = getenv(name);
  if (!v || !*v)
    return fallback;
  char *end;
  errno = 0;
  unsigned long n = strtoul(v, &end, 10);
  return errno || *end || n < lo || n > hi ? fallback : (unsigned)n;
}

unsigned ksrt_sample_init(void) {
  s.percent = env_uint("KERNELSMITH_PROFILE_SAMPLE", 0, 1, 99);
  s.period_ms = env_uint("KERNELSMITH_PROFILE_SAMPLE_PERIOD_MS", 500, 10, 60000);
  s.after_ms = env_uint("KERNELSMITH_PROFILE_SAMPLE_AFTER_MS", 0, 0, 3600000);
  if (s.percent && !(s.slots = calloc(SLOTS, sizeof *s.slots)))
    s.percent = 0;
  return s.percent;
}

unsigned ksrt_sample_period_ms(void) { return s.period_ms; }
unsigned ksrt_sample_after_ms(void) { return s.after_ms; }

void ksrt_sample_count(const char *symbol) {
  if (!s.slots || !symbol)
    return;
  uint64_t h = (uint64_t)(uintptr_t)symbol * 0x9E3779B97F4A7C15ull;
  for (unsigned i = 0; i < SLOTS; i++) {
    slot *sl = &s.slots[((unsigned)(h >> 40) + i) & (SLOTS - 1)];
    const char *k = atomic_load_explicit(&sl->key, memory_order_acquire);
    if (!k) {
      const char *none = NULL;
      if (atomic_compare_exchange_strong(&sl->key, &none, symbol)) {
        atomic_store_explicit(&sl->name, strdup(symbol), memory_order_release);
        k = symbol;
      } else {
        k = none; /* another thread took the slot first */
      }
    }
    if (k == symbol) {
      uint64_t n = atomic_fetch_add_explicit(&sl->launches, 1, memory_order_relaxed);
      if (n < FIRST_LAUNCHES && atomic_load_explicit(&s.phase, memory_order_relaxed) != PHASE_ON &&
          !atomic_exchange(&s.wanted, true)) {
        pthread_mutex_lock(&s.lock);
        pthread_cond_broadcast(&s.wake);
        pthread_mutex_unlock(&s.lock);
      }
      return;
    }
  }
}

#define FOREVER (-1L)

/* Sleeps `ms` (or FOREVER), until stopped, or, with `wake`, until a
 * kernel's first launches want timing; true when stopped. */
static bool nap(long ms, bool wake) {
  struct timespec until = {0};
  if (ms != FOREVER) {
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&s.lock);
  while (!s.stopping && !(wake && atomic_load(&s.wanted))) {
    if (ms != FOREVER ? pthread_cond_timedwait(&s.wake, &s.lock, &until) == ETIMEDOUT
                      : pthread_cond_wait(&s.wake, &s.lock) != 0)
      break;
  }
  bool stopped = s.stopping;
  pthread_mutex_unlock(&s.lock);
  return stopped;
}

/* Timing is on when the thread starts; it stays on for the first after_ms
 * from the first launch (a short program is timed whole), then the periods
 * start. An off phase ends early when a kernel's first launches come, and
 * the on phase then starts over from there. */
static void *toggler(void *arg) {
  (void)arg;
  /* at least 1 ms on: 1% of a 10 ms period rounds to none */
  long on = (long)s.period_ms * s.percent / 100, off;
  if (on < 1)
    on = 1;
  off = (long)s.period_ms - on;
  if (nap(FOREVER, true))
    return NULL;
  atomic_store(&s.phase, PHASE_ON);
  if (s.after_ms && nap(s.after_ms, false))
    return NULL;
  for (;;) {
    atomic_store(&s.wanted, false);
    atomic_store(&s.phase, PHASE_ON);
    if (nap(on, false))
      return NULL;
    atomic_store(&s.phase, PHASE_OFF);
    (void)cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    bool stopped = nap(off, true);
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (stopped)
      return NULL;
  }
}

void ksrt_sample_start(void) {
  if (!s.percent)
    return;
  /* The program's signals are not ours to receive. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  s.running = pthread_create(&s.thread, NULL, toggler, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void ksrt_sample_stop(void) {
  if (!s.running)
    return;
  pthread_mutex_lock(&s.lock);
  s.stopping = true;
  pthread_cond_broadcast(&s.wake);
  pthread_mutex_unlock(&s.lock);
  pthread_join(s.thread, NULL);
  s.running = false;
}

/* One line per name: the slots of one name (two modules) added up. */
int ksrt_sample_lines(ksrt_jbuf *b, long pid) {
  if (!s.slots)
    return 0;
  int rc = 0;
  for (unsigned i = 0; i < SLOTS; i++) {
    char *name = atomic_load_explicit(&s.slots[i].name, memory_order_acquire);
    if (!name)
      continue;
    bool seen = false;
    uint64_t n = 0;
    for (unsigned j = 0; j < SLOTS && !seen; j++) {
      char *other = atomic_load_explicit(&s.slots[j].name, memory_order_acquire);
      if (!other || strcmp(other, name))
        continue;
      if (j < i)
        seen = true;
      else
        n += atomic_load_explicit(&s.slots[j].launches, memory_order_relaxed);
    }
    if (!seen && n && ksrt_json_count(b, pid, name, n))
      rc = -1;
  }
  return rc;
}
