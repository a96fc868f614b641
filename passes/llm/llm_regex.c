/* PCRE2 for the reply parser, and nowhere else: every pattern runs under a
 * match limit, a depth limit and a heap limit, so a reply shaped to make a
 * pattern backtrack costs a bounded amount of work and ends as a rejection
 * (LT_RE_LIMIT), never as a hang. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "llm_text_int.h"

/* Generous for the linear, line-anchored patterns the parser uses on a
 * reply of at most 256 KiB; tight for exponential backtracking. */
enum {
  MATCH_LIMIT = 5000000,
  DEPTH_LIMIT = 10000,
  HEAP_LIMIT_KIB = 8192,
};

int lt_re_open(lt_re *re, const char *pattern, bool multiline) {
  re->code = re->match = re->mctx = NULL;
  int err;
  PCRE2_SIZE erroff;
  pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   multiline ? PCRE2_MULTILINE : 0, &err, &erroff, NULL);
  if (!code)
    return -1;
  pcre2_match_context *mctx = pcre2_match_context_create(NULL);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
  if (!mctx || !md) {
    pcre2_match_context_free(mctx);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    return -1;
  }
  pcre2_set_match_limit(mctx, MATCH_LIMIT);
  pcre2_set_depth_limit(mctx, DEPTH_LIMIT);
  pcre2_set_heap_limit(mctx, HEAP_LIMIT_KIB);
  re->code = code;
  re->match = md;
  re->mctx = mctx;
  return 0;
}

void lt_re_close(lt_re *re) {
  pcre2_match_data_free(re->match);
  pcre2_match_context_free(re->mctx);
  pcre2_code_free(re->code);
  re->code = re->match = re->mctx = NULL;
}

int lt_re_find(lt_re *re, const char *subject, size_t len, size_t start, size_t *ov,
               size_t ngroups) {
  if (start > len)
    return 0;
  int rc = pcre2_match(re->code, (PCRE2_SPTR)subject, len, start, 0, re->match, re->mctx);
  if (rc == PCRE2_ERROR_NOMATCH)
    return 0;
  if (rc < 0)
    /* Limits, and anything else the matcher gives up on, are the reply's
     * fault: the caller turns it into a rejection. */
    return LT_RE_LIMIT;
  PCRE2_SIZE *v = pcre2_get_ovector_pointer(re->match);
  uint32_t have = pcre2_get_ovector_count(re->match);
  for (size_t g = 0; g < ngroups; g++) {
    bool set = g < have && g < (size_t)rc && v[2 * g] != PCRE2_UNSET;
    ov[2 * g] = set ? v[2 * g] : (size_t)-1;
    ov[2 * g + 1] = set ? v[2 * g + 1] : (size_t)-1;
  }
  return 1;
}
