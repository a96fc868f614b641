/* footprint_int: what the files of the footprint analysis share
 * (ks_footprint.h says what it proves).
 *
 *   footprint_sym.c    symbolic bounds: polynomials over atoms (parameters,
 *                      launch dimensions, and opaque quotients, minima and
 *                      maxima), lower bounds under the facts, printing
 *   footprint_const.c  the unit's text: tokens, macros, and the constants
 *                      the tree does not fold (enumerators, namespace-scope
 *                      constants, sizeof)
 *   footprint_macro.c  operators the tree could not read inside nested
 *                      macros, read back from the macros' text
 *   footprint_eval.c   ranges of integer expressions, conditions as facts
 *   footprint_loop.c   the facts of `for` loops
 *   footprint_change.c what may change a variable, and calls' arguments
 *   footprint_hidden.c uses of a pointer the tree does not show
 *   footprint.c        the uses of each pointer, the walk over statements,
 *                      the result
 *
 * Internal to passes/. Everything lives in the state's arena. */
#ifndef KS_FOOTPRINT_INT_H
#define KS_FOOTPRINT_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "ks_footprint.h"
#include "rules_tree.h"

/* ---- symbolic bounds ---- */

#define FP_MAXDEG 4    /* factors in one monomial */
#define FP_MAXTERMS 48 /* monomials in one polynomial */
#define FP_NO_LOWER LLONG_MIN

typedef struct fp_poly fp_poly;

typedef enum fp_atom_kind {
  FP_SYM, /* a scalar parameter or a launch dimension */
  FP_DIV, /* a / b, C's truncating division (b > 0 where it is made) */
  FP_MIN,
  FP_MAX,
} fp_atom_kind;

typedef struct fp_atom {
  fp_atom_kind kind;
  const char *text;     /* printed form, its identity (atoms are interned) */
  int rank;             /* order of factors: parameters by position, then
                           grid_x .. block_z, then compound atoms as made */
  long long static_lo;  /* SYM: a lower bound in every execution (launch
                           dimensions 1, unsigned parameters 0), else
                           FP_NO_LOWER */
  const fp_poly *a, *b; /* DIV, MIN, MAX: the operands */
} fp_atom;

typedef struct fp_term {
  long long coef;
  unsigned deg;                  /* 0: the constant term */
  const fp_atom *f[FP_MAXDEG];   /* factors, sorted by rank */
} fp_term;

/* A sum of terms, sorted, no zero coefficients: 0 has no terms. */
struct fp_poly {
  size_t n;
  const fp_term *t;
};

/* A value's range: NULL is unbounded on that side. */
typedef struct fp_range {
  const fp_poly *lo, *hi;
} fp_range;

/* ---- facts along a path (a persistent list, newest first) ---- */

typedef enum fp_fact_kind {
  FP_FACT_SYM_LO, /* sym >= lo */
  FP_FACT_RANGE,  /* decl's value (or builtin's: threadIdx.x ...) is within r
                     (either side may be NULL) */
  FP_FACT_LOOP,   /* decl is the variable of the loop being walked: r, or
                     `why` the loop is not understood */
  FP_FACT_DEF,    /* decl was just given `value` (its only assignment),
                     with `at` the facts at that point */
} fp_fact_kind;

typedef struct fp_fact {
  fp_fact_kind kind;
  const ks_anode *decl;
  int builtin;              /* RANGE on a builtin: 1 + 3 * (0 threadIdx,
                               1 blockIdx) + dimension; else 0 */
  const fp_atom *sym;
  long long lo;
  fp_range r;
  const char *why;
  const ks_anode *value;
  const struct fp_fact *at;
  const struct fp_fact *next;
} fp_fact;

/* ---- the analysis ---- */

/* One access: 1 + its largest index, valid where `env` holds. */
typedef struct fp_end {
  const fp_poly *end;
  const struct fp_fact *env;
} fp_end;

typedef struct fp_param {
  const ks_anode *decl;
  const fp_atom *sym;   /* an integer scalar usable in guards, else NULL */
  const char *sym_why;  /* sym NULL: why it cannot stand in a bound */
  bool pointer;
  const char *why;      /* the first use not understood */
  KS_ARRAY(fp_end) ends; /* per access */
  bool read, written;
} fp_param;

/* A local pointer `T *v = base + offset` (sign -1: base - offset; offset
 * NULL: v = base), never reassigned. */
typedef struct fp_alias {
  const ks_anode *var;
  const ks_anode *base;   /* a pointer PARAM or another alias's VAR */
  const ks_anode *offset;
  int sign;
  fp_param *root;
} fp_alias;

typedef struct fp_consts fp_consts; /* footprint_const.c */

typedef struct fp_op {
  const ks_anode *node;
  const char *op;
} fp_op;

/* A macro expansion read back (footprint_macro.c). */
typedef struct fp_fix {
  const ks_anode *top;
  const char *why; /* NULL: read back, its operators are in `ops` */
} fp_fix;

typedef struct fp_by_value_memo {
  const char *name; /* callee */
  size_t arg;
  bool yes;
} fp_by_value_memo;

typedef struct fp_state {
  ks_ctx *ctx;
  ks_arena *arena;
  const ks_kast *k;
  const char *why;             /* why the last evaluation failed */
  KS_ARRAY(const fp_atom *) atoms;
  int compound_rank;
  fp_param *params;
  size_t nparams;
  KS_ARRAY(fp_alias) aliases;
  const fp_atom *launch[6];    /* grid_x .. grid_z, block_x .. block_z */
  unsigned depth;              /* evaluation depth, against runaway chains */
  fp_consts *consts;           /* built on first need */
  KS_ARRAY(fp_op) ops;         /* operators read back from macro text */
  KS_ARRAY(fp_fix) fixes;      /* macro expansions already read back */
  int user_minmax;             /* -1 unknown, 0 no, 1 the unit defines min or max */
  KS_ARRAY(fp_by_value_memo) by_value; /* fp_by_value's answers */
} fp_state;

/* st->params from the kernel's parameters (each integer scalar that a guard
 * can name, and never modified, becomes a symbol) and st->launch: the
 * symbols the analysis, and rules_meaning's folding, build bounds on. */
void fp_setup_params(fp_state *st);
/* Records why and returns false (printf-style). */
bool fp_fail(fp_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A node's text, shortened for a message. */
const char *fp_text(fp_state *st, const ks_anode *n);

/* footprint_sym.c. Operations return NULL when the result would overflow
 * or grow too large (with st->why set). */
const fp_atom *fp_sym(fp_state *st, const char *name, int rank, long long static_lo);
const fp_poly *fp_num(fp_state *st, long long v);
const fp_poly *fp_atom_poly(fp_state *st, const fp_atom *a);
const fp_poly *fp_add(fp_state *st, const fp_poly *a, const fp_poly *b);
const fp_poly *fp_sub(fp_state *st, const fp_poly *a, const fp_poly *b);
const fp_poly *fp_mul(fp_state *st, const fp_poly *a, const fp_poly *b);
const fp_poly *fp_scale(fp_state *st, const fp_poly *a, long long c);
const fp_poly *fp_addc(fp_state *st, const fp_poly *a, long long c);
/* a / b: exact when b is a constant dividing every coefficient, else an
 * opaque quotient. The caller has proved b > 0. */
const fp_poly *fp_div(fp_state *st, const fp_poly *a, const fp_poly *b);
/* min and max: one of them when comparable under `env`, else an atom. */
const fp_poly *fp_min(fp_state *st, const fp_poly *a, const fp_poly *b, const fp_fact *env);
const fp_poly *fp_max(fp_state *st, const fp_poly *a, const fp_poly *b, const fp_fact *env);
bool fp_is_const(const fp_poly *a, long long *v);
bool fp_equal(const fp_poly *a, const fp_poly *b);
/* A constant lower bound of `a` under the facts (FP_NO_LOWER: none). */
long long fp_lower(fp_state *st, const fp_poly *a, const fp_fact *env);
/* a <= b provably under the facts. */
bool fp_le(fp_state *st, const fp_poly *a, const fp_poly *b, const fp_fact *env);
/* a >= 0 provably (NULL: false). */
bool fp_nonneg(fp_state *st, const fp_poly *a, const fp_fact *env);
/* The guard-language text of `a`. */
const char *fp_print(fp_state *st, const fp_poly *a);
/* `a` is k * s + c for one parameter s (k > 0). */
bool fp_linear_in_one(const fp_poly *a, const fp_atom **s, long long *k, long long *c);

/* footprint_const.c: tokens of C text (comments skipped) */
typedef enum fp_tok_kind { T_IDENT, T_NUMBER, T_PUNCT, T_STRING } fp_tok_kind;
typedef struct fp_tok {
  fp_tok_kind kind;
  const char *s;
  size_t n;
} fp_tok;
typedef KS_ARRAY(fp_tok) fp_toks;
void fp_lex(ks_arena *a, const char *p, const char *end, fp_toks *out);
bool fp_tok_is(const fp_tok *t, const char *s);
const char *fp_tok_str(ks_arena *a, const fp_tok *t);
/* The index of the bracket closing the one at `open`, or t->len. */
size_t fp_matching(const fp_toks *t, size_t open);
void fp_consts_release(fp_state *st);
/* The value of a name the tree leaves unresolved (an enumerator, a
 * namespace-scope const or constexpr integer), read from the unit. */
bool fp_named_constant(fp_state *st, const ks_anode *ref, long long *out);
/* `text` with the unit's macros expanded (tokens joined by single spaces);
 * NULL with st->why when it cannot be. */
const char *fp_expand(fp_state *st, const char *text);
/* sizeof(T) for a basic type. */
bool fp_sizeof(fp_state *st, const ks_anode *n, long long *out);

/* footprint_macro.c */
/* The operator of a node the tree left as "?" (inside nested macros),
 * read back from the macros' text; NULL with st->why when it cannot be. */
const char *fp_macro_op(fp_state *st, const ks_anode *n);

/* footprint_eval.c */
typedef enum fp_sign { FP_SIGNED, FP_UNSIGNED, FP_NARROW, FP_NOT_INT } fp_sign;
/* How a C type name behaves as an integer (NULL or unknown names:
 * FP_NOT_INT). */
fp_sign fp_int_type(const char *type);
/* The operator of an operator node, read back from macros where needed. */
const char *fp_op_of(fp_state *st, const ks_anode *n);
/* The range of integer expression `n` under `env`; `cut`: facts at the
 * definition being re-evaluated (loop variables must be those of then).
 * false with st->why when it cannot be bounded. */
bool fp_eval(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
             fp_range *out);
/* `cond` taken as true (or false): the facts it adds. */
const fp_fact *fp_assume(fp_state *st, const ks_anode *cond, bool truth, const fp_fact *env);
/* `a op b` taken as true (op: < <= > >= == !=). */
const fp_fact *fp_compare(fp_state *st, const ks_anode *a, const char *op, const ks_anode *b,
                          const fp_fact *env);
/* The range of local `d` (ref: where it is read, for messages). */
bool fp_eval_var(fp_state *st, const ks_anode *ref, const ks_anode *d, const fp_fact *env,
                 const fp_fact *cut, fp_range *out);
/* An operator node of `kind` spelled `op` (read back from macros). */
bool fp_is_op(fp_state *st, const ks_anode *n, ks_akind kind, const char *op);
/* `r` is one constant. */
bool fp_const_point(fp_range r, long long *c);
const fp_fact *fp_push(fp_state *st, const fp_fact *env, fp_fact f);

/* footprint_loop.c */
/* The facts in a `for` loop's condition/increment (loop) and body (body),
 * the loop variable's fact included. */
void fp_for_facts(fp_state *st, const ks_anode *loop, const fp_fact *env, const fp_fact **in_loop,
                  const fp_fact **in_body);
/* `f` is one of the facts of `chain`. */
bool fp_in_chain(const fp_fact *chain, const fp_fact *f);

/* footprint_hidden.c */
/* Fails the pointers whose uses the tree may not show all of: member calls'
 * objects, statements clang dropped, names the text has more often than
 * the tree. */
void fp_hidden_uses(fp_state *st);

/* footprint_change.c */
/* `decl` may change below `root`: assigned, incremented, its address taken,
 * bound to a reference, an asm operand, or passed to a function that may
 * take it by reference. */
bool fp_modified(fp_state *st, const ks_anode *root, const ks_anode *decl);
/* The same, not counting the assignment `except`. */
bool fp_modified_except(fp_state *st, const ks_anode *root, const ks_anode *decl,
                        const ks_anode *except);
/* `n` assigns, increments or takes the address of `decl`. */
bool fp_is_target(fp_state *st, const ks_anode *n, const ks_anode *decl);
/* Does the call take argument `arg` by value? */
bool fp_by_value(fp_state *st, const ks_anode *call, size_t arg);
/* A member call's callee as written (`acc[i].add`), or NULL. */
const char *fp_member_callee(fp_state *st, const ks_anode *call);
/* Atomics (one element, read and written: 3), cache-hinted loads (1) and
 * stores (2); 0 for any other call. */
int fp_call_kind(fp_state *st, const ks_anode *call);

#endif
