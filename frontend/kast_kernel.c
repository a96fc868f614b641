/* The root of a kernel's tree: the definition (or its template), its
 * attributes, parameters and body, and the offsets of the parts of the
 * definition that rules rewrite (where it starts, __global__, the name, the
 * parameter list). */
#include <string.h>

#include "kast_int.h"

/* The first token after a template header `template <...>` at `at`. */
static unsigned after_template_header(kast_builder *b, unsigned at) {
  size_t i = kast_token_at(b, at);
  if (!kast_token_is(b, i, "template") || !kast_token_is(b, i + 1, "<"))
    return at;
  int depth = 0;
  for (size_t k = i + 1; k < b->ntokens; k++) {
    if (kast_token_is(b, k, "(") || kast_token_is(b, k, "[") || kast_token_is(b, k, "{")) {
      size_t m = kast_token_match(b, k);
      if (m >= b->ntokens)
        return at;
      k = m;
      continue;
    }
    if (kast_token_is(b, k, "<"))
      depth++;
    else if (kast_token_is(b, k, ">"))
      depth--;
    else if (kast_token_is(b, k, ">>"))
      depth -= 2;
    if (depth <= 0)
      return k + 1 < b->ntokens ? b->tokens[k + 1].begin : at;
  }
  return at;
}

void kast_build_kernel(kast_builder *b, CXCursor def, ks_kast *out) {
  bool is_template = clang_getCursorKind(def) == CXCursor_FunctionTemplate;
  kast_cursors kids = {0};
  kast_children(b, def, true, &kids);

  /* Tokens first: extents of macro invocations are measured with them. The
   * definition starts at its first attribute when one comes before it. */
  CXSourceRange r = clang_getCursorExtent(def);
  unsigned begin = 0, end = (unsigned)b->len, at;
  if (kast_expansion_offset(b, clang_getRangeStart(r), &at))
    begin = at;
  for (size_t i = 0; i < kids.len; i++)
    if (clang_isAttribute(clang_getCursorKind(kids.items[i])) &&
        kast_expansion_offset(b, clang_getCursorLocation(kids.items[i]), &at) && at < begin)
      begin = at;
  CXFile file = NULL;
  unsigned line, col, offset;
  clang_getFileLocation(clang_getRangeEnd(r), &file, &line, &col, &offset);
  if (file && clang_File_isEqual(file, b->file) && offset >= begin && offset <= b->len)
    end = offset;
  kast_tokenize(b, begin, end);

  ks_anode *root = kast_new_node(b, def, NULL);
  root->begin = begin;
  root->end = end;
  root->from_macro = false;
  ks_anode *fn = root;
  if (is_template) {
    fn = ks_arena_alloc(b->arena, sizeof *fn);
    *fn = *root;
    root->kind = KS_AK_TEMPLATE;
    root->type = NULL;
    fn->kind_name = kast_kind_name(b, CXCursor_FunctionDecl);
    fn->parent = root;
    fn->begin = after_template_header(b, begin);
  }
  fn->kind = KS_AK_FUNCTION;
  kast_decl_name(b, def, fn);
  root->name = fn->name;
  root->name_begin = fn->name_begin;
  root->name_end = fn->name_end;

  KS_ARRAY(ks_anode *) tparams = {0}, fkids = {0}, params = {0};
  ks_anode *body = NULL;
  out->global_at = fn->begin;
  for (size_t i = 0; i < kids.len; i++) {
    CXCursor c = kids.items[i];
    enum CXCursorKind k = clang_getCursorKind(c);
    if (clang_isAttribute(k)) {
      ks_anode *a = kast_build_attr(b, c, fn);
      *ks_array_push(&b->scratch, &fkids) = a;
      if (k == CXCursor_CUDAGlobalAttr)
        out->global_at = a->begin;
    } else if (k == CXCursor_TemplateTypeParameter || k == CXCursor_NonTypeTemplateParameter ||
               k == CXCursor_TemplateTemplateParameter) {
      *ks_array_push(&b->scratch, &tparams) = kast_build_node(b, c, root);
    } else if (k == CXCursor_ParmDecl) {
      ks_anode *p = kast_build_node(b, c, fn);
      *ks_array_push(&b->scratch, &fkids) = p;
      *ks_array_push(&b->scratch, &params) = p;
    } else if (k == CXCursor_CompoundStmt) {
      body = kast_build_node(b, c, fn);
      *ks_array_push(&b->scratch, &fkids) = body;
    }
  }
  kast_set_kids(b, fn, fkids.len);
  if (fkids.len)
    memcpy(fn->kids, fkids.items, fkids.len * sizeof *fn->kids);
  if (is_template) {
    kast_set_kids(b, root, tparams.len + 1);
    if (tparams.len)
      memcpy(root->kids, tparams.items, tparams.len * sizeof *root->kids);
    root->kids[tparams.len] = fn;
  }

  out->root = root;
  out->fn = fn;
  out->body = body;
  out->nparams = params.len;
  out->params = ks_arena_alloc(b->arena, (params.len ? params.len : 1) * sizeof *out->params);
  if (params.len)
    memcpy(out->params, params.items, params.len * sizeof *out->params);
  out->decl_begin = begin;
  out->name_begin = fn->name_begin;
  out->name_end = fn->name_end;
  size_t i = kast_token_at(b, fn->name_end);
  while (i < b->ntokens && !kast_token_is(b, i, "("))
    i++;
  size_t close = kast_token_match(b, i);
  out->params_open = i < b->ntokens ? b->tokens[i].begin : fn->name_end;
  out->params_close = close < b->ntokens ? b->tokens[close].begin : out->params_open;
}
