/* One launch site: which kernel it runs (the overload, the template
 * arguments, or the candidates of a function pointer) and its configuration
 * and arguments as the user wrote them.
 *
 * Text comes from the source when the <<< >>> is spelled in the file, split at
 * top-level commas so that macros and formatting survive; when the chevrons
 * come from a macro, each piece is read from its own cursor instead. */
#include <ctype.h>
#include <string.h>

#include "ks_ctext.h"
#include "ks_hash.h"
#include "tu.h"

enum { MAX_CHILDREN = 96 };

bool ks_tu_is_chevron_launch(CXCursor call) {
  CXCursor kids[MAX_CHILDREN];
  unsigned n = ks_tu_children(call, kids, MAX_CHILDREN);
  for (unsigned i = 0; i < n; i++) {
    if (clang_getCursorKind(kids[i]) != CXCursor_CallExpr)
      continue;
    CXString s = clang_getCursorSpelling(kids[i]);
    const char *name = clang_getCString(s);
    bool config = name && (!strcmp(name, "__cudaPushCallConfiguration") ||
                           !strcmp(name, "cudaConfigureCall"));
    clang_disposeString(s);
    if (config)
      return true;
  }
  return false;
}

/* The template arguments written after the callee's name: "k<T, 4>". */
static void written_template_args(ks_tu *tu, const char *callee, ks_strings *out) {
  const char *open = strchr(callee, '<');
  if (!open)
    return;
  const char *end = callee + strlen(callee);
  const char *close = ks_ctext_matching(open, end);
  if (close)
    ks_ctext_split(tu->arena, open + 1, close, out);
}

/* <<< >>> spelled in the file: read callee, configuration and arguments
 * straight from the text. */
static bool split_chevron_text(ks_tu *tu, const char *text, ks_launch *out) {
  const char *end = text + strlen(text);
  const char *open = ks_ctext_find(text, end, "<<<");
  const char *close = open ? ks_ctext_find(open + 3, end, ">>>") : NULL;
  if (!open || !close)
    return false;
  const char *paren = close + 3;
  while (paren < end && isspace((unsigned char)*paren))
    paren++;
  const char *paren_end = paren < end && *paren == '(' ? ks_ctext_matching(paren, end) : NULL;
  if (!paren_end)
    return false;
  out->callee = ks_ctext_trim(tu->arena, text, open);
  ks_strings config = {0};
  ks_ctext_split(tu->arena, open + 3, close, &config);
  if (config.len < 2)
    return false;
  out->grid = config.items[0];
  out->block = config.items[1];
  out->smem = config.len > 2 ? config.items[2] : NULL;
  out->stream = config.len > 3 ? config.items[3] : NULL;
  ks_ctext_split(tu->arena, paren + 1, paren_end, &out->args);
  return true;
}

/* ---- resolution ------------------------------------------------------- */

static bool kernel_decl(CXCursor decl, CXCursor *primary) {
  enum CXCursorKind k = clang_getCursorKind(decl);
  if (k != CXCursor_FunctionDecl && k != CXCursor_FunctionTemplate)
    return false;
  CXCursor pattern = clang_getSpecializedCursorTemplate(decl);
  CXCursor p = clang_Cursor_isNull(pattern) ? decl : pattern;
  if (!ks_tu_is_kernel(p) && !ks_tu_is_kernel(decl))
    return false;
  *primary = p;
  return true;
}

static void set_kernel(ks_tu *tu, CXCursor decl, CXCursor primary, ks_launch *out) {
  out->kernel_usr = ks_tu_usr(tu, primary);
  out->kernel_name = ks_tu_qualified_name(tu, primary);
  if (!clang_equalCursors(decl, primary))
    ks_tu_template_args(tu, decl, &out->template_args);
}

/* Collects the kernels a function-pointer variable is given, from its
 * initializer and every plain assignment to it inside `scope`. */
typedef struct pointer_search {
  ks_tu *tu;
  CXCursor var;
  ks_launch *out;
} pointer_search;

static void add_candidate(pointer_search *s, CXCursor ref) {
  CXCursor decl = clang_getCursorReferenced(ref), primary;
  if (clang_Cursor_isNull(decl) || !kernel_decl(decl, &primary))
    return;
  ks_launch_candidate *c = ks_array_push(s->tu->arena, &s->out->candidates);
  c->kernel_usr = ks_tu_usr(s->tu, primary);
  c->kernel_name = ks_tu_qualified_name(s->tu, primary);
  c->loc = ks_tu_expansion_loc(s->tu, clang_getCursorLocation(ref));
  if (!clang_equalCursors(decl, primary))
    ks_tu_template_args(s->tu, decl, &c->template_args);
}

static enum CXChildVisitResult collect_refs(CXCursor c, CXCursor parent, CXClientData data) {
  if (clang_getCursorKind(c) == CXCursor_DeclRefExpr)
    add_candidate(data, c);
  return CXChildVisit_Recurse;
}

static bool refers_to(CXCursor expr, CXCursor var) {
  CXCursor ref = ks_tu_strip(expr);
  return clang_getCursorKind(ref) == CXCursor_DeclRefExpr &&
         clang_equalCursors(clang_getCursorReferenced(ref), var);
}

static enum CXChildVisitResult find_assignments(CXCursor c, CXCursor parent, CXClientData data) {
  pointer_search *s = data;
  enum CXCursorKind kind = clang_getCursorKind(c);
  if (kind == CXCursor_VarDecl && clang_equalCursors(c, s->var)) {
    clang_visitChildren(c, collect_refs, s);
    return CXChildVisit_Continue;
  }
  if (kind == CXCursor_BinaryOperator) {
    CXCursor kids[2];
    if (ks_tu_children(c, kids, 2) == 2 && refers_to(kids[0], s->var)) {
      /* Only "=": the text between the operands is the operator. */
      ks_range l = ks_tu_extent(s->tu, kids[0]), r = ks_tu_extent(s->tu, kids[1]);
      const char *op = ks_tu_text(s->tu, l.end.file, l.end.offset, r.begin.offset);
      while (op && isspace((unsigned char)*op))
        op++;
      if (op && op[0] == '=' && op[1] != '=') {
        clang_visitChildren(kids[1], collect_refs, s);
        if (clang_getCursorKind(kids[1]) == CXCursor_DeclRefExpr)
          add_candidate(s, kids[1]); /* the visit above saw only its children */
        return CXChildVisit_Continue;
      }
    }
  }
  return CXChildVisit_Recurse;
}

static void resolve_pointer(ks_tu *tu, CXCursor var, const ks_launch_scope *scope, ks_launch *out) {
  const char *name = ks_tu_spelling(tu, var);
  if (clang_getCursorKind(var) == CXCursor_ParmDecl) {
    out->resolution = KS_UNRESOLVED;
    out->note = ks_arena_printf(tu->arena,
                                "the kernel is the function pointer parameter '%s' of %s; "
                                "its callers decide which kernel runs",
                                name, out->enclosing);
    return;
  }
  pointer_search s = {tu, var, out};
  clang_visitChildren(scope->function, find_assignments, &s);
  if (out->candidates.len) {
    out->resolution = KS_RESOLVED_POINTER;
    out->note = ks_arena_printf(tu->arena,
                                "through the function pointer '%s': %zu candidate%s from its "
                                "assignments in %s",
                                name, out->candidates.len, out->candidates.len == 1 ? "" : "s",
                                out->enclosing);
  } else {
    out->resolution = KS_UNRESOLVED;
    out->note = ks_arena_printf(tu->arena,
                                "through the function pointer '%s', which is not assigned a "
                                "kernel inside %s",
                                name, out->enclosing);
  }
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Where the identifier `name` stands alone in `text`, or NULL. */
static const char *find_ident(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
    if ((p == text || !ident_char(p[-1])) && !ident_char(p[n]))
      return p;
  return NULL;
}

/* The type a template host function passes for `tparam` when it launches
 * `kern<<<g, b>>>(values, n)` with no template arguments written: the
 * argument `values` is a parameter of the host function whose type has the
 * kernel parameter's shape ("const T *" against "const U *"), so T is U,
 * a type parameter of the host function, which the merge then replaces
 * with each instantiation's argument. NULL when the text does not say. */
static const char *deduce_one(ks_tu *tu, const ks_tu_decl_parts *kern, const ks_tu_decl_parts *host,
                              const ks_launch *out, const char *tparam) {
  for (unsigned j = 0; j < kern->nparams && j < out->args.len; j++) {
    const char *ptype = kern->ptypes[j];
    const char *at = ptype ? find_ident(ptype, tparam) : NULL;
    if (!at)
      continue;
    const char *arg = out->args.items[j];
    for (unsigned h = 0; arg && h < host->nparams; h++) {
      if (!host->pnames[h] || strcmp(host->pnames[h], arg) || !host->ptypes[h])
        continue;
      const char *htype = host->ptypes[h];
      size_t pre = (size_t)(at - ptype), post = strlen(at + strlen(tparam));
      size_t hn = strlen(htype);
      if (hn <= pre + post || strncmp(htype, ptype, pre) ||
          strcmp(htype + hn - post, at + strlen(tparam)))
        break;
      /* Only one of the host function's own type parameters: the merge
       * knows each instantiation's argument for it (a type the host
       * function spells out may be a typedef the slice does not carry). */
      const char *mid = ks_ctext_trim(tu->arena, htype + pre, htype + hn - post);
      for (unsigned t = 0; t < host->ntparams; t++)
        if (host->type_param[t] && !strcmp(host->tparams[t], mid))
          return mid;
      return NULL;
    }
  }
  return NULL;
}

/* Template arguments deduced from the call's arguments (type parameters
 * only, each through one argument; none at all unless every parameter is
 * deduced). */
static void deduce_args(ks_tu *tu, CXCursor kernel, CXCursor host_fn, ks_launch *out) {
  if (strchr(out->callee ? out->callee : "", '<') || clang_Cursor_isNull(host_fn))
    return;
  ks_tu_decl_parts kern, host;
  ks_tu_decl_parts_of(tu, kernel, &kern);
  ks_tu_decl_parts_of(tu, host_fn, &host);
  const char *values[64];
  unsigned n = 0;
  for (; n < kern.ntparams; n++) {
    values[n] = kern.type_param[n] ? deduce_one(tu, &kern, &host, out, kern.tparams[n]) : NULL;
    if (!values[n])
      break;
  }
  if (n < kern.ntparams)
    return;
  for (unsigned i = 0; i < n; i++) {
    ks_template_arg *a = ks_array_push(tu->arena, &out->template_args);
    a->param = kern.tparams[i];
    a->value = values[i];
  }
}

/* Fills kernel, template arguments and resolution from the callee cursor. */
static void resolve(ks_tu *tu, CXCursor callee, const ks_launch_scope *scope, ks_launch *out) {
  CXCursor ref = ks_tu_strip(callee);
  enum CXCursorKind kind = clang_getCursorKind(ref);
  if (kind == CXCursor_DeclRefExpr) {
    /* A name that depends on template parameters refers to the set of
     * templates it may mean. */
    CXCursor target = clang_getCursorReferenced(ref);
    if (clang_getCursorKind(target) == CXCursor_OverloadedDeclRef) {
      ref = target;
      kind = CXCursor_OverloadedDeclRef;
    }
  }
  if (kind == CXCursor_DeclRefExpr || kind == CXCursor_MemberRefExpr) {
    CXCursor decl = clang_getCursorReferenced(ref), primary;
    if (!clang_Cursor_isNull(decl) && kernel_decl(decl, &primary)) {
      out->resolution = KS_RESOLVED;
      set_kernel(tu, decl, primary, out);
      return;
    }
    enum CXCursorKind dk = clang_getCursorKind(decl);
    if (dk == CXCursor_VarDecl || dk == CXCursor_ParmDecl) {
      resolve_pointer(tu, decl, scope, out);
      return;
    }
  } else if (kind == CXCursor_OverloadedDeclRef) {
    /* A call that depends on template parameters: clang keeps the set of
     * templates the name may mean. */
    unsigned n = clang_getNumOverloadedDecls(ref);
    CXCursor only = clang_getNullCursor(), primary;
    unsigned kernels = 0;
    for (unsigned i = 0; i < n; i++) {
      CXCursor d = clang_getOverloadedDecl(ref, i);
      if (kernel_decl(d, &primary)) {
        if (kernels == 0 || !clang_equalCursors(primary, only))
          kernels++;
        only = primary;
      }
    }
    if (kernels == 1) {
      out->resolution = KS_RESOLVED;
      out->kernel_usr = ks_tu_usr(tu, only);
      out->kernel_name = ks_tu_qualified_name(tu, only);
      out->template_dependent = true;
      deduce_args(tu, only, scope->function, out);
      return;
    }
    out->resolution = KS_UNRESOLVED;
    out->note = ks_arena_printf(tu->arena,
                                "the callee names %u overloaded kernels and its arguments "
                                "depend on template parameters",
                                kernels);
    return;
  }
  out->resolution = KS_UNRESOLVED;
  out->note = "the callee is an expression that does not name a kernel";
}

/* Pairs dependent, as-written template arguments with the kernel template's
 * parameter names (looked up by the merge when it knows the kernel). */
static void dependent_args(ks_tu *tu, ks_launch *out) {
  if (out->template_args.len)
    return; /* deduced from the call's arguments */
  ks_strings written = {0};
  written_template_args(tu, out->callee ? out->callee : "", &written);
  for (size_t i = 0; i < written.len; i++) {
    ks_template_arg *a = ks_array_push(tu->arena, &out->template_args);
    a->value = written.items[i];
  }
}

/* Returns the enclosing function's text up to the launch, or NULL. */
static const char *set_scope(ks_tu *tu, const ks_launch_scope *scope, ks_launch *out) {
  CXCursor fn = scope->function;
  out->enclosing = ks_tu_qualified_name(tu, fn);
  out->enclosing_usr = ks_tu_usr(tu, fn);
  /* The code the launch's configuration may come from (dim3 locals, sizes
   * computed above it): the enclosing function's text up to the launch. */
  ks_range r = ks_tu_extent(tu, fn);
  const char *text = NULL;
  if (r.begin.file && out->extent.begin.file && !strcmp(r.begin.file, out->extent.begin.file) &&
      r.begin.offset <= out->extent.begin.offset) {
    r.end = out->extent.begin;
    text = ks_tu_range_text(tu, r);
    if (text) {
      char hash[KS_HASH_HEX];
      ks_sha256_hex(text, strlen(text), hash);
      out->context_hash = ks_arena_strdup(tu->arena, hash);
    }
  }
  out->in_lambda = scope->in_lambda;
  CXCursor parent = clang_getCursorSemanticParent(fn);
  out->in_template = clang_getCursorKind(fn) == CXCursor_FunctionTemplate ||
                     clang_getCursorKind(parent) == CXCursor_ClassTemplate ||
                     clang_getCursorKind(parent) == CXCursor_ClassTemplatePartialSpecialization;
  return text;
}

/* The macro expansion that begins at `offset` of `file`, or a null cursor. */
static CXCursor expansion_at(ks_tu *tu, CXFile file, unsigned offset) {
  CXCursor use = clang_getCursor(tu->unit, clang_getLocationForOffset(tu->unit, file, offset));
  return clang_getCursorKind(use) == CXCursor_MacroExpansion ? use : clang_getNullCursor();
}

/* A macro invocation's text after one level of expansion: the definition's
 * body with the invocation's arguments put in for its parameters, as the
 * preprocessor does (# and ## are left as written). */
static const char *expand_one(ks_tu *tu, CXCursor use, ks_range *used) {
  CXCursor def = clang_getCursorReferenced(use);
  if (clang_getCursorKind(def) != CXCursor_MacroDefinition)
    return NULL;
  *used = ks_tu_extent(tu, use);
  const char *def_text = ks_tu_range_text(tu, ks_tu_extent(tu, def));
  const char *use_text = ks_tu_range_text(tu, *used);
  if (!def_text || !use_text)
    return NULL;
  const char *name_end = def_text;
  while (ks_ctext_is_ident_char(*name_end))
    name_end++;
  const char *def_end = def_text + strlen(def_text);
  const char *body = name_end;
  ks_strings params = {0}, args = {0};
  if (clang_Cursor_isMacroFunctionLike(def)) {
    const char *params_end = ks_ctext_matching(name_end, def_end);
    const char *args_open = strchr(use_text, '(');
    const char *args_close =
        args_open ? ks_ctext_matching(args_open, use_text + strlen(use_text)) : NULL;
    if (!params_end || !args_close)
      return NULL;
    ks_ctext_split(tu->arena, name_end + 1, params_end, &params);
    ks_ctext_split(tu->arena, args_open + 1, args_close, &args);
    body = params_end + 1;
    /* A variadic macro's last parameter takes the remaining arguments. */
    if (params.len && !strcmp(params.items[params.len - 1], "...")) {
      params.items[params.len - 1] = "__VA_ARGS__";
      if (args.len >= params.len) {
        const char *rest = args.items[params.len - 1];
        for (size_t i = params.len; i < args.len; i++)
          rest = ks_arena_printf(tu->arena, "%s, %s", rest, args.items[i]);
        args.items[params.len - 1] = rest;
        args.len = params.len;
      }
    }
    if (args.len < params.len)
      return NULL;
  }
  /* Line continuations become plain spaces. */
  char *text = (char *)ks_ctext_trim(tu->arena, body, def_end);
  for (char *p = text; *p; p++)
    if (*p == '\\' && (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n')))
      *p = ' ';
  return ks_ctext_substitute(tu->arena, text, params.items, args.items, params.len);
}

/* A launch whose <<< >>> come from a macro: the launch's text with the first
 * macro invocation inside it replaced by that macro's expansion. Sets
 * out->macro to the macro's name. */
static const char *expand_launch(ks_tu *tu, ks_launch *out) {
  const char *text = ks_tu_range_text(tu, out->extent);
  CXFile file = ks_tu_file(tu, out->extent.begin.file);
  if (!text || !file)
    return NULL;
  for (const char *p = text; *p;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    bool starts_ident = ks_ctext_is_ident_char(*p) && (p == text || !ks_ctext_is_ident_char(p[-1]));
    if (!starts_ident) {
      p++;
      continue;
    }
    unsigned offset = out->extent.begin.offset + (unsigned)(p - text);
    CXCursor use = expansion_at(tu, file, offset);
    if (!clang_Cursor_isNull(use)) {
      ks_range used;
      const char *expanded = expand_one(tu, use, &used);
      if (!expanded || used.begin.offset != offset)
        return NULL;
      unsigned end = used.end.offset - out->extent.begin.offset;
      if (end > strlen(text))
        end = (unsigned)strlen(text);
      out->macro = ks_tu_macro_at(tu, used.begin);
      return ks_arena_printf(tu->arena, "%.*s%s%s", (int)(p - text), text, expanded, text + end);
    }
    while (ks_ctext_is_ident_char(*p))
      p++;
  }
  return NULL;
}

static void chevron(ks_tu *tu, CXCursor call, ks_launch *out) {
  CXCursor kids[MAX_CHILDREN];
  unsigned n = ks_tu_children(call, kids, MAX_CHILDREN);
  const char *text = ks_tu_range_text(tu, out->extent);
  if (text && split_chevron_text(tu, text, out))
    return;
  const char *expanded = expand_launch(tu, out);
  if (expanded && split_chevron_text(tu, expanded, out)) {
    out->macro_expansion = expanded;
    return;
  }
  /* The chevrons come from a macro: read each piece from its cursor. */
  out->callee = n ? ks_tu_expr_text(tu, kids[0], out->extent) : NULL;
  for (unsigned i = 1; i < n; i++) {
    if (clang_getCursorKind(kids[i]) == CXCursor_CallExpr) {
      CXString s = clang_getCursorSpelling(kids[i]);
      bool config = !strcmp(clang_getCString(s), "__cudaPushCallConfiguration") ||
                    !strcmp(clang_getCString(s), "cudaConfigureCall");
      clang_disposeString(s);
      if (config) {
        CXCursor cfg[6];
        unsigned m = ks_tu_children(kids[i], cfg, 6);
        /* cfg[0] is the reference to the configuration function itself. */
        out->grid = m > 1 ? ks_tu_expr_text(tu, cfg[1], out->extent) : NULL;
        out->block = m > 2 ? ks_tu_expr_text(tu, cfg[2], out->extent) : NULL;
        out->smem = m > 3 ? ks_tu_expr_text(tu, cfg[3], out->extent) : NULL;
        out->stream = m > 4 ? ks_tu_expr_text(tu, cfg[4], out->extent) : NULL;
        for (unsigned j = i + 1; j < n; j++)
          *ks_array_push(tu->arena, &out->args) = ks_tu_expr_text(tu, kids[j], out->extent);
        return;
      }
    }
  }
}

/* cudaLaunchKernel(func, grid, block, args, smem, stream) and friends. */
static void runtime_api(ks_tu *tu, CXCursor call, const char *api, ks_launch *out,
                        CXCursor *callee) {
  CXCursor kids[MAX_CHILDREN];
  unsigned n = ks_tu_children(call, kids, MAX_CHILDREN);
  /* kids[0] is the API function itself. */
  bool ex = strncmp(api, "cudaLaunchKernelEx", 18) == 0;
  unsigned func = ex ? 2 : 1;
  if (n <= func) {
    *callee = clang_getNullCursor();
    return;
  }
  *callee = kids[func];
  out->callee = ks_tu_expr_text(tu, kids[func], out->extent);
  if (ex) {
    const char *config = n > 1 ? ks_tu_expr_text(tu, kids[1], out->extent) : NULL;
    out->grid = ks_arena_printf(tu->arena, "(%s)->gridDim", config ? config : "config");
    out->block = ks_arena_printf(tu->arena, "(%s)->blockDim", config ? config : "config");
    out->smem = ks_arena_printf(tu->arena, "(%s)->dynamicSmemBytes", config ? config : "config");
    out->stream = ks_arena_printf(tu->arena, "(%s)->stream", config ? config : "config");
    for (unsigned j = 3; j < n; j++)
      *ks_array_push(tu->arena, &out->args) = ks_tu_expr_text(tu, kids[j], out->extent);
    return;
  }
  const char *const *slots[] = {&out->grid, &out->block, NULL, &out->smem, &out->stream};
  for (unsigned j = 0; j < 5 && func + 1 + j < n; j++) {
    const char *t = ks_tu_expr_text(tu, kids[func + 1 + j], out->extent);
    if (slots[j])
      *(const char **)slots[j] = t;
    else if (t)
      *ks_array_push(tu->arena, &out->args) = t; /* the void** argument array */
  }
}

bool ks_tu_launch(ks_tu *tu, CXCursor call, const char *api, const ks_launch_scope *scope,
                  ks_launch *out) {
  out->kind = api ? KS_LAUNCH_RUNTIME_API : KS_LAUNCH_CHEVRON;
  out->api = api;
  out->extent = ks_tu_extent(tu, call);
  out->loc = out->extent.begin;
  const char *context = set_scope(tu, scope, out);
  /* A runtime-API launch inside a macro shows the macro's name first. */
  const char *head = ks_tu_macro_at(tu, out->loc);
  if (api && head && strcmp(head, api) != 0)
    out->macro = head;

  CXCursor callee;
  if (api) {
    runtime_api(tu, call, api, out, &callee);
    if (clang_Cursor_isNull(callee))
      return false;
  } else {
    CXCursor kids[1];
    if (!ks_tu_children(call, kids, 1))
      return false;
    callee = kids[0];
    chevron(tu, call, out);
  }
  resolve(tu, callee, scope, out);
  if (out->template_dependent)
    dependent_args(tu, out);
  ks_tu_launch_macros(tu, context, out);
  return true;
}
