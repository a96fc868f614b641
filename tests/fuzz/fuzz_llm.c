/* fuzz_llm: the LLM reply parsers (passes/llm_reply*.c, ks_llm_text.h) on
 * any reply: every input is parsed as a planner's reply (ks_reply_plan),
 * a summarizer's (ks_reply_insight) and an executor's (ks_reply_child)
 * against the seed of a testdata/apps kernel: the one whose name the reply
 * mentions first (saxpy, gelu, softmax; saxpy when none), so that edits
 * and code blocks written for that kernel reach the checks behind the
 * signature.
 *
 * Invariants (the header's promises): a parse never fails the caller; a
 * rejection has a reason and a message of one line of at most 240 bytes;
 * an accepted child keeps the parent's kernel name, and its source fits
 * KS_REPLY_MAX_SOURCE (plus the "_ks_variant" a kernel written under the
 * original's name gets back after the cap is checked); a plan's text fits its caps and its technique tag
 * is short and of the tag alphabet. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ks_llm_text.h"

/* The seeds as ks_rules_seed makes them: the kernel renamed. */
static const char saxpy[] =
    "__global__ void saxpy_kernel_ks_variant(int n, float a, float* x, float* y) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";
static const char gelu[] =
    "__global__ void gelu_forward_kernel_ks_variant(float* __restrict__ out, const float* "
    "__restrict__ inp, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) {\n"
    "        float x = inp[i];\n"
    "        float cube = 0.044715f * x * x * x;\n"
    "        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));\n"
    "    }\n"
    "}\n";
static const char softmax[] =
    "__global__ void softmax_rows_kernel_ks_variant(float* out, const float* in, int rows, int "
    "cols) {\n"
    "    int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (row >= rows) return;\n"
    "    const float* x = in + (size_t)row * cols;\n"
    "    float* y = out + (size_t)row * cols;\n"
    "    float max_val = -INFINITY;\n"
    "    for (int c = 0; c < cols; ++c) max_val = fmaxf(max_val, x[c]);\n"
    "    float sum = 0.0f;\n"
    "    for (int c = 0; c < cols; ++c) sum += expf(x[c] - max_val);\n"
    "    float inv_sum = 1.0f / sum;\n"
    "    for (int c = 0; c < cols; ++c) y[c] = expf(x[c] - max_val) * inv_sum;\n"
    "}\n";

static const struct {
  const char *kernel, *source;
} parents[] = {
    {"saxpy_kernel", saxpy},
    {"gelu_forward_kernel", gelu},
    {"softmax_rows_kernel", softmax},
};

static void check_message(const ks_reply_result *r) {
  fuzz_check(r->reason < KS_REPLY_NREASONS);
  fuzz_check(r->message);
  fuzz_check(strlen(r->message) <= 240);
  fuzz_check(!strchr(r->message, '\n'));
  fuzz_check(r->reason == KS_REPLY_OK || *r->message);
}

static void check_tag(const char *t) {
  fuzz_check(t && *t && strlen(t) <= 32);
  fuzz_check(strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_=.+-") == strlen(t));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *reply = fuzz_text(data, size);
  ks_ctx ctx;
  fuzz_ctx(&ctx);
  ks_arena arena = KS_ARENA_INIT;
  ks_reply_tally tally = {0};
  ks_reply_result r;

  fuzz_check(ks_reply_plan(&ctx, reply, &arena, &tally, &r) == 0);
  check_message(&r);
  if (r.reason == KS_REPLY_OK) {
    fuzz_check(r.text && strlen(r.text) <= KS_REPLY_MAX_PLAN);
    check_tag(r.technique);
  }

  fuzz_check(ks_reply_insight(&ctx, reply, &arena, &tally, &r) == 0);
  check_message(&r);
  if (r.reason == KS_REPLY_OK)
    fuzz_check(r.text && strlen(r.text) <= KS_REPLY_MAX_INSIGHT);

  size_t pick = 0;
  const char *first = NULL;
  for (size_t i = 0; i < sizeof parents / sizeof *parents; i++) {
    const char *at = strstr(reply, parents[i].kernel);
    if (at && (!first || at < first))
      first = at, pick = i;
  }
  ks_variant parent = {
      .source = parents[pick].source,
      .kernel_name = ks_arena_printf(&arena, "%s_ks_variant", parents[pick].kernel),
      .file = "parent.cu",
  };
  fuzz_check(ks_reply_child(&ctx, reply, &parent, "child.cu", &arena, &tally, &r) == 0);
  check_message(&r);
  if (r.reason == KS_REPLY_OK) {
    fuzz_check(r.child.source &&
               strlen(r.child.source) <= KS_REPLY_MAX_SOURCE + sizeof "_ks_variant" - 1);
    fuzz_check(r.child.kernel_name && !strcmp(r.child.kernel_name, parent.kernel_name));
  }
  unsigned counted = tally.accepted;
  for (int i = 0; i < KS_REPLY_NREASONS; i++)
    counted += tally.rejected[i];
  fuzz_check(counted == 3 && tally.rejected[KS_REPLY_OK] == 0);

  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  free(reply);
  return 0;
}
