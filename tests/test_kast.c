/* ks_kast on real units: testdata/apps is scanned once, seven kernels are
 * sliced as `extract` does, and each unit (the slice, then a renamed copy of
 * the kernel as a variant) is parsed on the device side. Tests assert kinds,
 * operators, names, declaration links, FOR layout and, through
 * ks_anode_text, that offsets are exact bytes of the in-memory text (the
 * slices carry #line directives naming the user's files). A small embedded
 * unit covers macros, casts, member access and overloaded operators; others
 * cover errors, concurrent parses and the parse time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ks_kast.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_test.h"

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;
static ks_scan scan;
static ks_scan_options scan_opts;
static const char *apps_path;

/* ---- building units ---- */

static struct {
  const char *name, *source;
} slices[16];

static const char *slice_of(const char *name) {
  for (size_t i = 0; i < 16 && slices[i].name; i++)
    if (!strcmp(slices[i].name, name))
      return slices[i].source;
  const ks_kernel *k = NULL;
  if (ks_scan_lookup(&ctx, &scan, name, &k))
    fail_msg("%s", ctx.error);
  ks_slice slice;
  if (ks_slice_kernel(&ctx, &scan_opts, &scan, k, NULL, &arena, &slice))
    fail_msg("slice of %s: %s", name, ctx.error);
  for (size_t i = 0; i < 16; i++)
    if (!slices[i].name) {
      slices[i].name = name;
      slices[i].source = slice.source;
      break;
    }
  return slice.source;
}

/* The slice, then the kernel's definition copied and renamed
 * <name>_ks_variant, as the search composes a unit. */
static const char *with_variant(const char *slice, const char *name, size_t *variant_offset) {
  char head[256];
  snprintf(head, sizeof head, " %s(", name);
  const char *at = strstr(slice, head);
  assert_non_null(at);
  const char *start = at;
  while (start > slice && start[-1] != '\n')
    start--;
  /* A template header on the line before belongs to the definition. */
  const char *prev = start > slice ? start - 1 : start;
  while (prev > slice && prev[-1] != '\n')
    prev--;
  if (!strncmp(prev, "template", 8))
    start = prev;
  const char *p = strchr(at, '{');
  assert_non_null(p);
  int depth = 0;
  for (; *p; p++) {
    depth += *p == '{';
    depth -= *p == '}';
    if (!depth)
      break;
  }
  size_t name_at = (size_t)(at - start) + 1;
  *variant_offset = strlen(slice) + 1;
  return ks_arena_printf(&arena, "%s\n%.*s%s_ks_variant%.*s\n", slice, (int)name_at, start, name,
                         (int)(p + 1 - (at + 1 + strlen(name))), at + 1 + strlen(name));
}

static void parse_ok(const char *source, const char *name, ks_kast *out) {
  ks_kast_options o = {.name = name};
  if (ks_kast_parse(&ctx, "unit.cu", source, &o, &arena, out))
    fail_msg("parse of %s failed: %s\n%s", name, ctx.error, source);
}

/* ---- looking at trees ---- */

static const char *T(const ks_kast *k, const ks_anode *n) { return ks_anode_text(&arena, k, n); }

typedef struct finder {
  const ks_kast *k;
  ks_akind kind;
  const char *text; /* NULL: any */
  const char *name; /* NULL: any */
  unsigned skip;    /* matches to pass over */
  ks_anode *found;
} finder;

static bool find_visit(ks_anode *n, void *arg) {
  finder *f = arg;
  if (f->found)
    return false;
  if (n->kind == f->kind && (!f->text || !strcmp(T(f->k, n), f->text)) &&
      (!f->name || (n->name && !strcmp(n->name, f->name)))) {
    if (f->skip == 0) {
      f->found = n;
      return false;
    }
    f->skip--;
  }
  return true;
}

static ks_anode *find_nth(const ks_kast *k, ks_akind kind, const char *text, const char *name,
                          unsigned nth) {
  finder f = {k, kind, text, name, nth, NULL};
  ks_anode_walk(k->root, find_visit, &f);
  if (!f.found)
    fail_msg("no node of kind %d with text '%s' name '%s'", (int)kind, text ? text : "*",
             name ? name : "*");
  return f.found;
}

static ks_anode *find(const ks_kast *k, ks_akind kind, const char *text) {
  return find_nth(k, kind, text, NULL, 0);
}

static size_t count_kind(const ks_kast *k, ks_akind kind);

typedef struct counter {
  ks_akind kind;
  size_t n;
} counter;

static bool count_visit(ks_anode *n, void *arg) {
  counter *c = arg;
  c->n += n->kind == c->kind;
  return true;
}

static size_t count_kind(const ks_kast *k, ks_akind kind) {
  counter c = {kind, 0};
  ks_anode_walk(k->root, count_visit, &c);
  return c.n;
}

/* Invariants of every tree: parents, extents inside the text and inside
 * the parent, FOR's four kids, kids in source order. */
static void check_node(const ks_kast *k, const ks_anode *n, unsigned lo, unsigned hi) {
  assert_true(n->begin <= n->end);
  assert_true(n->end <= k->source_len);
  if (n->begin < lo || n->end > hi)
    fail_msg("%s '%s' [%u,%u) outside its parent [%u,%u)", n->kind_name, T(k, n), n->begin, n->end,
             lo, hi);
  if (n->kind == KS_AK_FOR)
    assert_int_equal(n->nkids, 4);
  unsigned last = n->begin;
  for (size_t i = 0; i < n->nkids; i++) {
    const ks_anode *kid = n->kids[i];
    if (!kid) {
      assert_int_equal(n->kind, KS_AK_FOR);
      continue;
    }
    assert_ptr_equal(kid->parent, n);
    if (!kid->from_macro && kid->begin < last)
      fail_msg("kids of %s '%s' out of order at '%s'", n->kind_name, T(k, n), T(k, kid));
    if (!kid->from_macro)
      last = kid->begin;
    check_node(k, kid, n->begin, n->end);
  }
  if (n->kind == KS_AK_DECL_REF && n->decl)
    assert_true(n->decl->kind == KS_AK_PARAM || n->decl->kind == KS_AK_VAR ||
                n->decl->kind == KS_AK_TEMPLATE_PARAM);
  if (n->kind == KS_AK_BINARY || n->kind == KS_AK_COMPOUND_ASSIGN || n->kind == KS_AK_UNARY) {
    assert_non_null(n->op);
    if (!n->from_macro)
      assert_string_not_equal(n->op, "?");
  }
}

static void check_tree(const ks_kast *k, size_t variant_offset) {
  assert_non_null(k->root);
  assert_non_null(k->fn);
  assert_non_null(k->body);
  assert_int_equal(k->body->kind, KS_AK_COMPOUND);
  assert_ptr_equal(k->body->parent, k->fn);
  assert_true(k->root->begin >= variant_offset);
  check_node(k, k->root, 0, (unsigned)k->source_len);
  for (size_t i = 0; i < k->nparams; i++) {
    assert_int_equal(k->params[i]->kind, KS_AK_PARAM);
    assert_ptr_equal(k->params[i]->parent, k->fn);
  }
  assert_int_equal(k->source[k->params_open], '(');
  assert_int_equal(k->source[k->params_close], ')');
  assert_true(k->decl_begin <= k->global_at && k->global_at < k->name_begin);
  assert_true(k->name_end < k->params_open + 1);
}

static size_t variant_unit(const char *kernel, ks_kast *out) {
  size_t off;
  const char *unit = with_variant(slice_of(kernel), kernel, &off);
  parse_ok(unit, ks_arena_printf(&arena, "%s_ks_variant", kernel), out);
  check_tree(out, off);
  return off;
}

/* ---- setup ---- */

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_kast");
  ctx.verbosity = KS_LOG_ERROR;
  apps_path = ks_arena_strdup(&arena, ks_testdata("apps"));
  scan_opts = (ks_scan_options){.paths = &apps_path, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&ctx, &scan_opts, &scan)) {
    fprintf(stderr, "scan failed: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ks_scan_release(&scan);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

/* ---- the apps ---- */

static void saxpy_global_index_and_guard(void **state) {
  (void)state;
  ks_kast k;
  size_t off = variant_unit("saxpy_kernel", &k);
  assert_int_equal(k.root->kind, KS_AK_FUNCTION);
  assert_ptr_equal(k.root, k.fn);
  assert_string_equal(k.fn->name, "saxpy_kernel_ks_variant");
  assert_string_equal(ks_arena_strndup(&arena, k.source + k.name_begin, k.name_end - k.name_begin),
                      "saxpy_kernel_ks_variant");
  assert_true(k.decl_begin >= off);
  assert_memory_equal(k.source + k.decl_begin, "__global__", 10);
  assert_memory_equal(k.source + k.global_at, "__global__", 10);
  assert_string_equal(ks_arena_strndup(&arena, k.source + k.params_open,
                                       k.params_close + 1 - k.params_open),
                      "(int n, float a, float* x, float* y)");
  assert_int_equal(k.nparams, 4);
  assert_string_equal(k.params[2]->name, "x");
  assert_true(k.params[2]->is_pointer);
  assert_false(k.params[2]->is_const);
  assert_string_equal(k.params[2]->pointee, "float");
  assert_false(k.params[0]->is_pointer);
  assert_string_equal(T(&k, k.params[2]), "float* x");
  /* The kernel's own attribute. */
  assert_int_equal(k.fn->kids[0]->kind, KS_AK_ATTR);
  assert_string_equal(k.fn->kids[0]->name, "__global__");

  ks_anode *body = k.body;
  assert_int_equal(body->nkids, 2);
  ks_anode *decl = body->kids[0];
  assert_int_equal(decl->kind, KS_AK_DECL_STMT);
  assert_string_equal(T(&k, decl), "int i = blockIdx.x * blockDim.x + threadIdx.x;");
  ks_anode *var = decl->kids[0];
  assert_int_equal(var->kind, KS_AK_VAR);
  assert_string_equal(var->name, "i");
  assert_int_equal(var->nkids, 1);
  ks_anode *sum = var->kids[0];
  assert_int_equal(sum->kind, KS_AK_BINARY);
  assert_string_equal(sum->op, "+");
  assert_string_equal(T(&k, sum), "blockIdx.x * blockDim.x + threadIdx.x");
  ks_anode *prod = sum->kids[0];
  assert_string_equal(prod->op, "*");
  assert_true(ks_anode_is_builtin(prod->kids[0], "blockIdx", 'x'));
  assert_true(ks_anode_is_builtin(prod->kids[1], "blockDim", 'x'));
  assert_false(ks_anode_is_builtin(prod->kids[1], "blockIdx", 'x'));
  ks_anode *tid = sum->kids[1];
  assert_int_equal(tid->kind, KS_AK_MEMBER);
  assert_string_equal(tid->name, "x");
  assert_false(tid->arrow);
  assert_true(ks_anode_is_builtin(tid, "threadIdx", 'x'));
  assert_true(ks_anode_is_builtin(tid, "threadIdx", 0));
  assert_false(ks_anode_is_builtin(tid, "threadIdx", 'y'));
  assert_int_equal(tid->kids[0]->kind, KS_AK_DECL_REF);
  assert_string_equal(tid->kids[0]->name, "threadIdx");
  assert_null(tid->kids[0]->decl);

  ks_anode *guard = body->kids[1];
  assert_int_equal(guard->kind, KS_AK_IF);
  assert_int_equal(guard->nkids, 2);
  ks_anode *cond = guard->kids[0];
  assert_string_equal(cond->op, "<");
  assert_string_equal(T(&k, cond), "i < n");
  assert_ptr_equal(cond->kids[0]->decl, var);
  assert_ptr_equal(cond->kids[1]->decl, k.params[0]);
  ks_anode *store = guard->kids[1];
  assert_int_equal(store->kind, KS_AK_BINARY);
  assert_string_equal(store->op, "=");
  assert_int_equal(store->kids[0]->kind, KS_AK_SUBSCRIPT);
  assert_string_equal(T(&k, store->kids[0]), "y[i]");
  assert_ptr_equal(store->kids[0]->kids[0]->decl, k.params[3]);
  assert_string_equal(T(&k, store->kids[1]), "a * x[i] + y[i]");
}

static void line_directives_do_not_shift_offsets(void **state) {
  (void)state;
  const char *plain = "__global__ void k(float *y) {\n  y[threadIdx.x] = 1.0f;\n}\n";
  const char *lines = "#line 1000 \"/elsewhere/user.cu\"\n"
                      "__global__ void k(float *y) {\n  y[threadIdx.x] = 1.0f;\n}\n";
  size_t shift = strlen("#line 1000 \"/elsewhere/user.cu\"\n");
  ks_kast a, b;
  parse_ok(plain, "k", &a);
  parse_ok(lines, "k", &b);
  ks_anode *sa = find(&a, KS_AK_SUBSCRIPT, "y[threadIdx.x]");
  ks_anode *sb = find(&b, KS_AK_SUBSCRIPT, "y[threadIdx.x]");
  assert_int_equal(sb->begin, sa->begin + shift);
  assert_int_equal(sb->end, sa->end + shift);
  assert_int_equal(b.name_begin, a.name_begin + shift);
  assert_int_equal(b.params_close, a.params_close + shift);
  /* The real slice: its first #line is before the kernel. */
  const char *slice = slice_of("saxpy_kernel");
  assert_non_null(strstr(slice, "#line 17 "));
  ks_kast s;
  parse_ok(slice, "saxpy_kernel", &s);
  assert_int_equal(s.decl_begin, (unsigned)(strstr(slice, "__global__") - slice));
  assert_string_equal(T(&s, find(&s, KS_AK_IF, NULL)), "if (i < n) y[i] = a * x[i] + y[i]");
}

static void gelu_macro_constant(void **state) {
  (void)state;
  ks_kast k;
  variant_unit("gelu_forward_kernel", &k);
  /* The variant's own use of the slice's macro. */
  ks_anode *c = find(&k, KS_AK_FLOAT_LITERAL, "GELU_SCALING_FACTOR");
  assert_true(c->from_macro);
  ks_anode *mul = c->parent;
  assert_int_equal(mul->kind, KS_AK_BINARY);
  assert_false(mul->from_macro);
  assert_string_equal(mul->op, "*");
  assert_string_equal(T(&k, mul), "GELU_SCALING_FACTOR * (x + cube)");
  assert_int_equal(mul->kids[1]->kind, KS_AK_PAREN);
  const ks_anode *inner = ks_anode_strip(mul->kids[1], false);
  assert_int_equal(inner->kind, KS_AK_BINARY);
  assert_string_equal(T(&k, inner), "x + cube");
  ks_anode *call = find(&k, KS_AK_CALL, "tanhf(GELU_SCALING_FACTOR * (x + cube))");
  assert_string_equal(call->name, "tanhf");
  assert_int_equal(call->nkids, 1);
  assert_ptr_equal(call->kids[0], mul);
  /* __restrict__ parameters. */
  assert_true(k.params[0]->is_restrict);
  assert_false(k.params[0]->is_const);
  assert_true(k.params[1]->is_restrict);
  assert_true(k.params[1]->is_const);
  assert_string_equal(k.params[1]->pointee, "const float");
  assert_int_equal(k.params[1]->nkids, 1);
  assert_int_equal(k.params[1]->kids[0]->kind, KS_AK_ATTR);
  assert_string_equal(T(&k, k.params[1]->kids[0]), "__restrict__");
  assert_false(k.params[2]->is_restrict);
  /* Only whole invocations are from macros. */
  assert_false(find(&k, KS_AK_FLOAT_LITERAL, "0.044715f")->from_macro);
}

static void reduce_sum_template_shared_for(void **state) {
  (void)state;
  ks_kast k;
  variant_unit("reduce_sum_kernel", &k);
  assert_int_equal(k.root->kind, KS_AK_TEMPLATE);
  assert_int_equal(k.root->nkids, 2);
  ks_anode *tp = k.root->kids[0];
  assert_int_equal(tp->kind, KS_AK_TEMPLATE_PARAM);
  assert_string_equal(tp->name, "blockSize");
  assert_string_equal(tp->type, "unsigned int");
  assert_ptr_equal(k.root->kids[1], k.fn);
  assert_int_equal(k.fn->kind, KS_AK_FUNCTION);
  assert_memory_equal(k.source + k.root->begin, "template", 8);
  assert_memory_equal(k.source + k.fn->begin, "__global__", 10);
  assert_int_equal(k.decl_begin, k.root->begin);
  assert_memory_equal(k.source + k.global_at, "__global__", 10);
  assert_true(k.params[0]->is_const);
  assert_string_equal(k.params[0]->pointee, "const float");

  ks_anode *partial = find_nth(&k, KS_AK_VAR, NULL, "partial", 0);
  assert_true(partial->shared_space);
  assert_int_equal(partial->nkids, 0);
  assert_string_equal(T(&k, partial), "__shared__ float partial[blockSize]");
  assert_false(find_nth(&k, KS_AK_VAR, NULL, "tid", 0)->shared_space);

  ks_anode *loop = find(&k, KS_AK_FOR, NULL);
  assert_int_equal(loop->nkids, 4);
  assert_int_equal(loop->kids[0]->kind, KS_AK_DECL_STMT);
  assert_string_equal(T(&k, loop->kids[0]), "unsigned int s = 1;");
  ks_anode *s = loop->kids[0]->kids[0];
  assert_int_equal(s->kids[0]->kind, KS_AK_INT_LITERAL);
  assert_int_equal(s->kids[0]->int_value, 1);
  assert_string_equal(loop->kids[1]->op, "<");
  assert_string_equal(T(&k, loop->kids[1]), "s < blockSize");
  assert_ptr_equal(loop->kids[1]->kids[0]->decl, s);
  assert_ptr_equal(loop->kids[1]->kids[1]->decl, tp);
  assert_int_equal(loop->kids[2]->kind, KS_AK_COMPOUND_ASSIGN);
  assert_string_equal(loop->kids[2]->op, "*=");
  assert_string_equal(T(&k, loop->kids[2]), "s *= 2");
  assert_int_equal(loop->kids[3]->kind, KS_AK_COMPOUND);

  ks_anode *sync = find_nth(&k, KS_AK_CALL, NULL, "__syncthreads", 0);
  assert_int_equal(sync->nkids, 0);
  assert_string_equal(T(&k, sync), "__syncthreads()");
  assert_string_equal(
      ks_arena_strndup(&arena, k.source + sync->name_begin, sync->name_end - sync->name_begin),
      "__syncthreads");
  ks_anode *atomic = find_nth(&k, KS_AK_CALL, NULL, "atomicAdd", 0);
  assert_int_equal(atomic->nkids, 2);
  assert_string_equal(T(&k, atomic->kids[0]), "result");
  assert_ptr_equal(atomic->kids[0]->decl, k.params[1]);
  assert_string_equal(T(&k, atomic->kids[1]), "partial[0]");
  assert_ptr_equal(atomic->kids[1]->kids[0]->decl, partial);

  ks_anode *acc = find(&k, KS_AK_COMPOUND_ASSIGN, "partial[tid] += partial[tid + s]");
  assert_string_equal(acc->op, "+=");
  ks_anode *sel = find(&k, KS_AK_CONDITIONAL, "(i < (unsigned int)n) ? input[i] : 0.0f");
  assert_int_equal(sel->nkids, 3);
  ks_anode *cast = find(&k, KS_AK_CAST, "(unsigned int)n");
  assert_string_equal(cast->type, "unsigned int");
  assert_ptr_equal(ks_anode_strip(cast, true)->decl, k.params[2]);
  assert_ptr_equal(ks_anode_strip(cast, false), cast);
  ks_anode *mod = find(&k, KS_AK_BINARY, "tid % (2 * s)");
  assert_string_equal(mod->op, "%");
  assert_string_equal(find(&k, KS_AK_BINARY, "tid % (2 * s) == 0")->op, "==");
}

static void softmax_loops_and_early_return(void **state) {
  (void)state;
  ks_kast k;
  variant_unit("softmax_rows_kernel", &k);
  assert_int_equal(count_kind(&k, KS_AK_FOR), 3);
  ks_anode *first = k.body->kids[1];
  assert_int_equal(first->kind, KS_AK_IF);
  assert_string_equal(T(&k, first), "if (row >= rows) return");
  assert_int_equal(first->kids[1]->kind, KS_AK_RETURN);
  assert_int_equal(first->kids[1]->nkids, 0);
  for (unsigned i = 0; i < 3; i++) {
    ks_anode *loop = find_nth(&k, KS_AK_FOR, NULL, NULL, i);
    assert_string_equal(T(&k, loop->kids[0]), "int c = 0;");
    assert_string_equal(T(&k, loop->kids[1]), "c < cols");
    assert_int_equal(loop->kids[2]->kind, KS_AK_UNARY);
    assert_string_equal(loop->kids[2]->op, "++");
    assert_false(loop->kids[2]->postfix);
    assert_ptr_equal(loop->kids[2]->kids[0]->decl, loop->kids[0]->kids[0]);
  }
  ks_anode *fmax = find_nth(&k, KS_AK_CALL, NULL, "fmaxf", 0);
  assert_string_equal(T(&k, fmax), "fmaxf(max_val, x[c])");
  assert_int_equal(fmax->nkids, 2);
  assert_int_equal(fmax->parent->kind, KS_AK_BINARY);
  assert_string_equal(fmax->parent->op, "=");
  ks_anode *e = find_nth(&k, KS_AK_CALL, NULL, "expf", 1);
  assert_string_equal(T(&k, e), "expf(x[c] - max_val)");
  assert_string_equal(e->kids[0]->op, "-");
  /* -INFINITY: a unary minus on a macro from the toolkit's headers. */
  ks_anode *neg = find(&k, KS_AK_UNARY, "-INFINITY");
  assert_string_equal(neg->op, "-");
  assert_false(neg->from_macro);
  assert_true(neg->kids[0]->from_macro);
  assert_string_equal(T(&k, neg->kids[0]), "INFINITY");
  ks_anode *xv = find_nth(&k, KS_AK_VAR, NULL, "x", 0);
  assert_true(xv->is_pointer);
  assert_true(xv->is_const);
  assert_string_equal(T(&k, xv->kids[0]), "in + (size_t)row * cols");
}

static void gemv_type_template(void **state) {
  (void)state;
  ks_kast k;
  variant_unit("gemv_kernel", &k);
  assert_int_equal(k.root->kind, KS_AK_TEMPLATE);
  ks_anode *t = k.root->kids[0];
  assert_string_equal(t->name, "T");
  assert_null(t->type);
  assert_int_equal(k.nparams, 5);
  assert_string_equal(k.params[0]->pointee, "const T");
  assert_true(k.params[0]->is_const);
  assert_true(k.params[0]->is_pointer);
  assert_string_equal(k.params[2]->pointee, "T");
  ks_anode *sum = find_nth(&k, KS_AK_VAR, NULL, "sum", 0);
  assert_string_equal(sum->type, "T");
  ks_anode *acc = find(&k, KS_AK_COMPOUND_ASSIGN, "sum += A[(size_t)row * cols + c] * x[c]");
  assert_ptr_equal(acc->kids[0]->decl, sum);
  ks_anode *cast = find(&k, KS_AK_CAST, "(size_t)row");
  assert_string_equal(cast->type, "size_t");
  ks_anode *store = find(&k, KS_AK_BINARY, "y[row] = sum");
  assert_string_equal(store->op, "=");
}

static void histogram_atomic_on_address(void **state) {
  (void)state;
  ks_kast k;
  variant_unit("histogram_kernel", &k);
  ks_anode *call = find_nth(&k, KS_AK_CALL, NULL, "atomicAdd", 0);
  assert_string_equal(T(&k, call), "atomicAdd(&bins[data[i]], 1u)");
  assert_int_equal(call->nkids, 2);
  ks_anode *addr = call->kids[0];
  assert_int_equal(addr->kind, KS_AK_UNARY);
  assert_string_equal(addr->op, "&");
  assert_false(addr->postfix);
  ks_anode *sub = addr->kids[0];
  assert_int_equal(sub->kind, KS_AK_SUBSCRIPT);
  assert_ptr_equal(sub->kids[0]->decl, k.params[1]);
  assert_int_equal(sub->kids[1]->kind, KS_AK_SUBSCRIPT);
  assert_string_equal(T(&k, sub->kids[1]), "data[i]");
  assert_int_equal(call->kids[1]->kind, KS_AK_INT_LITERAL);
  assert_int_equal(call->kids[1]->int_value, 1);
  assert_string_equal(T(&k, call->kids[1]), "1u");
  /* (size_t)blockIdx.x * blockDim.x + threadIdx.x */
  ks_anode *i = find_nth(&k, KS_AK_VAR, NULL, "i", 0);
  const ks_anode *sum = i->kids[0];
  assert_string_equal(sum->op, "+");
  assert_true(ks_anode_is_builtin(sum->kids[1], "threadIdx", 'x'));
  assert_int_equal(sum->kids[0]->kids[0]->kind, KS_AK_CAST);
  assert_true(ks_anode_is_builtin(ks_anode_strip(sum->kids[0]->kids[0], true), "blockIdx", 'x'));
}

static void transpose_two_dimensions(void **state) {
  (void)state;
  ks_kast k;
  variant_unit("transpose_naive_kernel", &k);
  ks_anode *row = find_nth(&k, KS_AK_VAR, NULL, "row", 0);
  const ks_anode *sum = row->kids[0];
  assert_true(ks_anode_is_builtin(sum->kids[1], "threadIdx", 'y'));
  assert_true(ks_anode_is_builtin(sum->kids[0]->kids[0], "blockIdx", 'y'));
  assert_true(ks_anode_is_builtin(sum->kids[0]->kids[1], "blockDim", 'y'));
  ks_anode *both = find(&k, KS_AK_BINARY, "row < rows && col < cols");
  assert_string_equal(both->op, "&&");
  ks_anode *store = find(&k, KS_AK_BINARY,
                         "out[(size_t)col * rows + row] = in[(size_t)row * cols + col]");
  assert_string_equal(store->op, "=");
  assert_string_equal(T(&k, store->kids[0]->kids[1]), "(size_t)col * rows + row");
}

/* ---- constructs the apps do not have ---- */

static const char misc_unit[] =
    "#line 5 \"/x/user.cu\"\n"
    "#include <cuda_fp16.h>\n"
    "#define IDX(i, j) ((i) * cols + (j))\n"
    "#define SQR(x) ((x) * (x))\n"
    "#define MYEXP expf\n"
    "#define TPB 256\n"
    "#define TID threadIdx.x\n"
    "#define LOOP(j, n) for (int j = 0; j < n; j++)\n"
    "struct P { float a; int b; };\n"
    "template <typename T> __device__ T twice(T v) { return v + v; }\n"
    "__global__ void misc(float *out) { out[0] = 1; }\n"
    "__global__ void __launch_bounds__(TPB, 2) misc(float *__restrict__ out,\n"
    "    const float *__restrict__ in, int n, int cols, P *ps, __half *h) {\n"
    "  int i = TID;\n"
    "  float4 v = reinterpret_cast<const float4 *>(in)[i];\n"
    "  float s = v.x + ps->a + ps[0].b;\n"
    "  int arr[3] = {1, 2, 3};\n"
    "  for (;;) { if (i > n) break; else continue; }\n"
    "  for (int j = 0; j < n;) { j++; --j; }\n"
    "  for (; i < n; i += 2) s -= 1.0f;\n"
    "  int q = -i + !i + ~i + *(&i) + i--;\n"
    "  while (i < n) i <<= 1;\n"
    "  do { s *= 2.0f; } while (s < 1e3f);\n"
    "  s = SQR(s + 1.0f) + in[IDX(i, 1)] + MYEXP(s) + twice<float>(s) + max(i, n);\n"
    "  s = (float)i + static_cast<float>(n) + float(q) + (i ? 1.0f : 2.0f);\n"
    "  LOOP(j, n) s += j;\n"
    "  __half a = h[0] * h[1];\n"
    "  a += h[2];\n"
    "#pragma unroll 4\n"
    "  for (int j = 0; j < 4; j++) s += j;\n"
    "  out[i] = s + q + arr[0];\n"
    "}\n";

static void misc_constructs(void **state) {
  (void)state;
  ks_kast k;
  parse_ok(misc_unit, "misc", &k);
  check_tree(&k, 0);
  /* The last definition of the name. */
  assert_int_equal(k.nparams, 6);
  ks_anode *lb = k.fn->kids[1];
  assert_int_equal(lb->kind, KS_AK_ATTR);
  assert_string_equal(lb->name, "__launch_bounds__");
  assert_string_equal(T(&k, lb), "__launch_bounds__(TPB, 2)");
  assert_string_equal(k.params[0]->kids[0]->name, "__restrict__");

  /* threadIdx.x spelled by a macro. */
  ks_anode *i = find_nth(&k, KS_AK_VAR, NULL, "i", 0);
  assert_true(ks_anode_is_builtin(i->kids[0], "threadIdx", 'x'));
  assert_true(i->kids[0]->from_macro);
  assert_string_equal(T(&k, i->kids[0]), "TID");
  /* An implicit copy construction is not a node. */
  ks_anode *v = find_nth(&k, KS_AK_VAR, NULL, "v", 0);
  assert_int_equal(v->kids[0]->kind, KS_AK_SUBSCRIPT);
  assert_int_equal(v->kids[0]->kids[0]->kind, KS_AK_CAST);
  ks_anode *arrow = find(&k, KS_AK_MEMBER, "ps->a");
  assert_true(arrow->arrow);
  assert_string_equal(arrow->name, "a");
  ks_anode *dot = find(&k, KS_AK_MEMBER, "ps[0].b");
  assert_false(dot->arrow);
  assert_string_equal(dot->name, "b");
  assert_string_equal(find(&k, KS_AK_MEMBER, "v.x")->name, "x");
  assert_int_equal(find(&k, KS_AK_INIT_LIST, "{1, 2, 3}")->nkids, 3);

  /* FOR layouts. */
  ks_anode *forever = find(&k, KS_AK_FOR, "for (;;) { if (i > n) break; else continue; }");
  assert_null(forever->kids[0]);
  assert_null(forever->kids[1]);
  assert_null(forever->kids[2]);
  assert_int_equal(forever->kids[3]->kind, KS_AK_COMPOUND);
  assert_non_null(find(&k, KS_AK_BREAK, "break"));
  assert_non_null(find(&k, KS_AK_CONTINUE, "continue"));
  ks_anode *no_inc = find(&k, KS_AK_FOR, "for (int j = 0; j < n;) { j++; --j; }");
  assert_non_null(no_inc->kids[0]);
  assert_string_equal(T(&k, no_inc->kids[1]), "j < n");
  assert_null(no_inc->kids[2]);
  ks_anode *no_init = find(&k, KS_AK_FOR, "for (; i < n; i += 2) s -= 1.0f");
  assert_null(no_init->kids[0]);
  assert_string_equal(T(&k, no_init->kids[1]), "i < n");
  assert_string_equal(no_init->kids[2]->op, "+=");
  assert_string_equal(no_init->kids[3]->op, "-=");
  ks_anode *macro_for = find(&k, KS_AK_FOR, "LOOP(j, n) s += j");
  assert_true(macro_for->kids[0] && macro_for->kids[1] && macro_for->kids[2]);
  /* A postfix operator on a macro argument cannot be read back. */
  assert_int_equal(macro_for->kids[2]->kind, KS_AK_UNARY);
  assert_true(macro_for->kids[2]->postfix);
  assert_true(macro_for->kids[2]->from_macro);
  assert_false(macro_for->kids[3]->from_macro);
  assert_string_equal(T(&k, macro_for->kids[3]), "s += j");
  /* A #pragma unroll wraps its loop. */
  ks_anode *unrolled = find(&k, KS_AK_FOR, "for (int j = 0; j < 4; j++) s += j");
  assert_int_equal(unrolled->parent->kind, KS_AK_OTHER);
  assert_memory_equal(k.source + unrolled->parent->begin, "#pragma unroll 4", 16);

  /* Unary operators. */
  ks_anode *post = find(&k, KS_AK_UNARY, "j++");
  assert_true(post->postfix);
  assert_string_equal(post->op, "++");
  assert_false(find(&k, KS_AK_UNARY, "--j")->postfix);
  assert_string_equal(find(&k, KS_AK_UNARY, "!i")->op, "!");
  assert_string_equal(find(&k, KS_AK_UNARY, "~i")->op, "~");
  assert_string_equal(find(&k, KS_AK_UNARY, "*(&i)")->op, "*");
  assert_true(find(&k, KS_AK_UNARY, "i--")->postfix);
  assert_string_equal(find(&k, KS_AK_COMPOUND_ASSIGN, "i <<= 1")->op, "<<=");
  assert_int_equal(find(&k, KS_AK_DO, NULL)->kids[0]->kind, KS_AK_COMPOUND);

  /* Macros: whole invocations, operators read from the definitions. */
  ks_anode *sqr = find(&k, KS_AK_PAREN, "SQR(s + 1.0f)");
  assert_true(sqr->from_macro);
  assert_string_equal(sqr->kids[0]->op, "*");
  ks_anode *idx = find(&k, KS_AK_PAREN, "IDX(i, 1)");
  assert_string_equal(idx->kids[0]->op, "+");
  assert_int_equal(idx->parent->kind, KS_AK_SUBSCRIPT);
  ks_anode *e = find(&k, KS_AK_CALL, "MYEXP(s)");
  assert_string_equal(e->name, "expf");
  assert_false(e->from_macro);
  assert_int_equal(e->nkids, 1);
  ks_anode *tw = find(&k, KS_AK_CALL, "twice<float>(s)");
  assert_string_equal(tw->name, "twice");
  assert_string_equal(ks_arena_strndup(&arena, k.source + tw->name_begin, tw->name_end - tw->name_begin),
                      "twice<float>");
  assert_string_equal(find(&k, KS_AK_CALL, "max(i, n)")->name, "max");

  /* Casts, C and C++. */
  assert_string_equal(find(&k, KS_AK_CAST, "(float)i")->type, "float");
  assert_string_equal(find(&k, KS_AK_CAST, "static_cast<float>(n)")->type, "float");
  assert_string_equal(find(&k, KS_AK_CAST, "float(q)")->type, "float");

  /* Overloaded operators read as the operators they are written as. */
  ks_anode *hm = find(&k, KS_AK_BINARY, "h[0] * h[1]");
  assert_string_equal(hm->op, "*");
  assert_int_equal(hm->nkids, 2);
  assert_int_equal(hm->kids[0]->kind, KS_AK_SUBSCRIPT);
  assert_string_equal(find(&k, KS_AK_COMPOUND_ASSIGN, "a += h[2]")->op, "+=");
}

static const char lookup_unit[] =
    "namespace a { namespace b {\n"
    "__launch_bounds__(128) __global__ void k(float *p) { p[0] = 1.0f; }\n"
    "} }\n"
    "template <typename T, int N = (3 > 2)> __global__ void t(T *p) { p[0] = T(N); }\n"
    "template __global__ void t<float, 1>(float *);\n"
    "extern \"C\" __global__ void c(float *p) { p[threadIdx.x] = 0; }\n";

static void names_namespaces_instantiations(void **state) {
  (void)state;
  ks_kast q, plain;
  parse_ok(lookup_unit, "a::b::k", &q);
  parse_ok(lookup_unit, "k", &plain);
  assert_int_equal(q.root->begin, plain.root->begin);
  /* An attribute before __global__ starts the definition. */
  assert_memory_equal(q.source + q.decl_begin, "__launch_bounds__(128)", 22);
  assert_memory_equal(q.source + q.global_at, "__global__", 10);
  assert_string_equal(q.fn->kids[0]->name, "__launch_bounds__");
  assert_string_equal(T(&q, q.fn->kids[0]), "__launch_bounds__(128)");
  check_tree(&q, 0);

  /* The template, not its explicit instantiation. */
  ks_kast t;
  parse_ok(lookup_unit, "t<float, 1>", &t);
  check_tree(&t, 0);
  assert_int_equal(t.root->kind, KS_AK_TEMPLATE);
  assert_int_equal(t.root->nkids, 3);
  assert_string_equal(T(&t, t.root->kids[1]), "int N = (3 > 2)");
  assert_memory_equal(t.source + t.fn->begin, "__global__", 10);
  ks_anode *cast = find(&t, KS_AK_CAST, "T(N)");
  assert_string_equal(cast->type, "T");
  assert_ptr_equal(cast->kids[0]->decl, t.root->kids[1]);

  ks_kast c;
  parse_ok(lookup_unit, "c", &c);
  check_tree(&c, 0);
  assert_true(ks_anode_is_builtin(find(&c, KS_AK_MEMBER, "threadIdx.x"), "threadIdx", 'x'));
}

static void shared_lambda_switch(void **state) {
  (void)state;
  ks_kast k;
  parse_ok("#define SHMEM extern __shared__ float smem[]\n"
           "__global__ void more(float *out, const float *in, int n) {\n"
           "  SHMEM;\n"
           "  extern __shared__ float dyn[];\n"
           "  auto f = [=] __device__ (float x) { return x * 2.0f; };\n"
           "  float s = 0.0f;\n"
           "  switch (n) { case 1: s = 1.0f; break; default: break; }\n"
           "  s += f(in[threadIdx.x]);\n"
           "  dyn[threadIdx.x] = s;\n"
           "  if (threadIdx.x == 0) out[blockIdx.x] = smem[0] + dyn[0];\n"
           "}\n",
           "more", &k);
  check_tree(&k, 0);
  ks_anode *smem = find_nth(&k, KS_AK_VAR, NULL, "smem", 0);
  assert_true(smem->shared_space);
  assert_true(smem->from_macro);
  assert_string_equal(T(&k, smem), "SHMEM");
  ks_anode *dyn = find_nth(&k, KS_AK_VAR, NULL, "dyn", 0);
  assert_true(dyn->shared_space);
  assert_false(dyn->from_macro);
  assert_string_equal(dyn->type, "float[]");
  assert_ptr_equal(find(&k, KS_AK_SUBSCRIPT, "smem[0]")->kids[0]->decl, smem);
  /* A lambda call is named after the lambda; its parameter is its own. */
  ks_anode *call = find(&k, KS_AK_CALL, "f(in[threadIdx.x])");
  assert_string_equal(call->name, "f");
  assert_int_equal(call->nkids, 1);
  assert_int_equal(call->kids[0]->kind, KS_AK_SUBSCRIPT);
  ks_anode *x = find_nth(&k, KS_AK_PARAM, NULL, "x", 0);
  assert_int_equal(x->parent->kind, KS_AK_OTHER);
  assert_ptr_equal(find(&k, KS_AK_BINARY, "x * 2.0f")->kids[0]->decl, x);
  assert_int_equal(k.nparams, 3);
  ks_anode *sw = find(&k, KS_AK_OTHER, "switch (n) { case 1: s = 1.0f; break; default: break; }");
  assert_string_equal(sw->kind_name, "SwitchStmt");
  assert_ptr_equal(sw->kids[0]->decl, k.params[2]);
}

/* ---- helpers ---- */

static bool stop_at_if(ks_anode *n, void *arg) {
  size_t *count = arg;
  (*count)++;
  return n->kind != KS_AK_IF;
}

static void walk_and_strip(void **state) {
  (void)state;
  ks_kast k;
  parse_ok("__global__ void w(int *p, int n) { if (n) { p[0] = ((n)); } p[1] = (int)(n); }\n",
           "w", &k);
  counter c = {KS_AK_PAREN, 0};
  ks_anode_walk(k.root, count_visit, &c);
  assert_int_equal(c.n, 3);
  /* FUNCTION, ATTR, 2 PARAMs, COMPOUND, IF (its kids skipped), then
   * p[1] = (int)(n): BINARY, SUBSCRIPT, DECL_REF, INT_LITERAL, CAST, PAREN,
   * DECL_REF. */
  size_t pruned = 0;
  ks_anode_walk(k.root, stop_at_if, &pruned);
  assert_int_equal(pruned, 13);
  ks_anode *inner = find(&k, KS_AK_BINARY, "p[0] = ((n))");
  const ks_anode *n = ks_anode_strip(inner->kids[1], false);
  assert_int_equal(n->kind, KS_AK_DECL_REF);
  assert_ptr_equal(n->decl, k.params[1]);
  ks_anode *cast = find(&k, KS_AK_CAST, "(int)(n)");
  assert_ptr_equal(ks_anode_strip(cast, false), cast);
  const ks_anode *through = ks_anode_strip(cast, true);
  assert_int_equal(through->kind, KS_AK_DECL_REF);
  assert_ptr_equal(through->decl, k.params[1]);
}

/* ---- errors ---- */

static void syntax_error_names_the_line(void **state) {
  (void)state;
  ks_kast k;
  ks_kast_options o = {.name = "bad"};
  const char *src = "#line 40 \"/user/file.cu\"\n"
                    "__global__ void bad(float *p) {\n"
                    "  p[0] = 1.0f\n"
                    "}\n";
  assert_int_equal(ks_kast_parse(&ctx, "variant.cu", src, &o, &arena, &k), -1);
  assert_non_null(strstr(ctx.error, "variant.cu:3: "));
  assert_non_null(strstr(ctx.error, "expected ';'"));
  assert_null(k.root);
}

static void missing_kernel(void **state) {
  (void)state;
  ks_kast k;
  ks_kast_options o = {.name = "absent"};
  const char *src = "__device__ void absent(float *p) { p[0] = 1.0f; }\n"
                    "__global__ void present(float *p) { p[0] = 1.0f; }\n";
  assert_int_equal(ks_kast_parse(&ctx, "unit.cu", src, &o, &arena, &k), -1);
  assert_non_null(strstr(ctx.error, "absent"));
  o.name = "present";
  assert_int_equal(ks_kast_parse(&ctx, "unit.cu", src, &o, &arena, &k), 0);
  assert_string_equal(k.fn->name, "present");
}

/* nvcc accepts a C++11 attribute after __shared__ (a GNU attribute under
 * clang); clang 16 refuses the order, and the parse must not (cuda-samples'
 * globalToShmemAsyncCopy). The tree keeps the declaration. */
static void shared_alignas_accepted(void **state) {
  (void)state;
  ks_kast k;
  const char *src = "__global__ void tiled(float *c, const float *a) {\n"
                    "  __shared__ alignas(alignof(float4)) float t[32][32];\n"
                    "  t[threadIdx.y][threadIdx.x] = a[threadIdx.x];\n"
                    "  __syncthreads();\n"
                    "  c[threadIdx.x] = t[threadIdx.x][threadIdx.y];\n"
                    "}\n";
  parse_ok(src, "tiled", &k);
  assert_non_null(strstr(T(&k, k.body), "t[threadIdx.y][threadIdx.x]"));
  /* A real error is still one. */
  ks_kast_options o = {.name = "tiled"};
  const char *bad = "__global__ void tiled(float *c) {\n"
                    "  __shared__ alignas(16) float t[32];\n"
                    "  c[0] = t[0]\n"
                    "}\n";
  assert_int_equal(ks_kast_parse(&ctx, "unit.cu", bad, &o, &arena, &k), -1);
  assert_non_null(strstr(ctx.error, "unit.cu:3: expected ';'"));
}

/* A slice keeps a kernel's assert but not the host's <assert.h> (NVRTC has
 * device assert built in): the parse of the slice knows it as NVRTC does. */
static void device_assert_without_include(void **state) {
  (void)state;
  ks_kast k;
  ks_kast_options o = {.name = "checked_halve"};
  const char *src = "__global__ void checked_halve(float *v, int count) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  assert(count > 0);\n"
                    "  if (i < count) v[i] = 0.5f * v[i];\n"
                    "}\n";
  if (ks_kast_parse(&ctx, "checked_halve.slice.cu", src, &o, &arena, &k))
    fail_msg("%s", ctx.error);
  assert_string_equal(k.fn->name, "checked_halve");
}

/* ---- threads and time ---- */

typedef struct job {
  const char *source;
  int rc;
  size_t nodes;
  char error[2048];
} job;

static bool count_all(ks_anode *n, void *arg) {
  (void)n;
  (*(size_t *)arg)++;
  return true;
}

static void *parse_thread(void *arg) {
  job *j = arg;
  ks_ctx c;
  ks_ctx_init(&c, "kast-thread");
  ks_arena a = KS_ARENA_INIT;
  ks_kast k;
  ks_kast_options o = {.name = "saxpy_kernel_ks_variant"};
  for (int r = 0; r < 3 && !j->rc; r++) {
    j->rc = ks_kast_parse(&c, "unit.cu", j->source, &o, &a, &k);
    if (!j->rc) {
      j->nodes = 0;
      ks_anode_walk(k.root, count_all, &j->nodes);
    }
  }
  snprintf(j->error, sizeof j->error, "%s", c.error);
  ks_arena_release(&a);
  ks_ctx_release(&c);
  return NULL;
}

static void concurrent_parses(void **state) {
  (void)state;
  size_t off;
  const char *unit = with_variant(slice_of("saxpy_kernel"), "saxpy_kernel", &off);
  enum { N = 4 };
  pthread_t threads[N];
  job jobs[N];
  for (int i = 0; i < N; i++) {
    jobs[i] = (job){.source = unit};
    assert_int_equal(pthread_create(&threads[i], NULL, parse_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < N; i++)
    pthread_join(threads[i], NULL);
  for (int i = 0; i < N; i++) {
    if (jobs[i].rc)
      fail_msg("thread %d: %s", i, jobs[i].error);
    assert_int_equal(jobs[i].nodes, jobs[0].nodes);
  }
  assert_true(jobs[0].nodes > 30);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double time_parse(const char *unit, const char *name, bool no_pch) {
  ks_kast k;
  ks_kast_options o = {.name = name, .no_pch = no_pch};
  double best = 1e9;
  for (int r = 0; r < (no_pch ? 1 : 3); r++) {
    double t0 = now_ms();
    if (ks_kast_parse(&ctx, "unit.cu", unit, &o, &arena, &k))
      fail_msg("%s", ctx.error);
    double t = now_ms() - t0;
    best = t < best ? t : best;
  }
  return best;
}

/* Not a benchmark: says what a parse costs, and that the precompiled
 * headers are used (a warm parse far below a cold one). */
static void parse_time(void **state) {
  (void)state;
  size_t off;
  const char *saxpy = with_variant(slice_of("saxpy_kernel"), "saxpy_kernel", &off);
  const char *softmax = with_variant(slice_of("softmax_rows_kernel"), "softmax_rows_kernel", &off);
  double warm = time_parse(saxpy, "saxpy_kernel_ks_variant", false);
  double cold = time_parse(saxpy, "saxpy_kernel_ks_variant", true);
  double warm_softmax = time_parse(softmax, "softmax_rows_kernel_ks_variant", false);
  double cold_softmax = time_parse(softmax, "softmax_rows_kernel_ks_variant", true);
  printf("kast parse: saxpy %.0f ms (%.0f ms without precompiled headers), "
         "softmax with <cuda/std/cmath> %.0f ms (%.0f ms)\n",
         warm, cold, warm_softmax, cold_softmax);
  assert_true(warm < cold);
  assert_true(warm_softmax < cold_softmax);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(saxpy_global_index_and_guard),
      cmocka_unit_test(line_directives_do_not_shift_offsets),
      cmocka_unit_test(gelu_macro_constant),
      cmocka_unit_test(reduce_sum_template_shared_for),
      cmocka_unit_test(softmax_loops_and_early_return),
      cmocka_unit_test(gemv_type_template),
      cmocka_unit_test(histogram_atomic_on_address),
      cmocka_unit_test(transpose_two_dimensions),
      cmocka_unit_test(misc_constructs),
      cmocka_unit_test(names_namespaces_instantiations),
      cmocka_unit_test(shared_lambda_switch),
      cmocka_unit_test(walk_and_strip),
      cmocka_unit_test(syntax_error_names_the_line),
      cmocka_unit_test(missing_kernel),
      cmocka_unit_test(device_assert_without_include),
      cmocka_unit_test(shared_alignas_accepted),
      cmocka_unit_test(concurrent_parses),
      cmocka_unit_test(parse_time),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
