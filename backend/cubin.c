/* cubin: what the compile service reads from a cubin (an ELF file) without
 * a GPU or the toolkit's disassembler: the entry functions (kernels), and
 * per function its register count (the EIATTR_REGCOUNT attribute of the
 * .nv.info section, what `cuobjdump -res-usage` prints as REG) and a digest
 * of its machine code (the SHA-256 of its .text.<name> section: two cubins
 * whose digests agree run the same instructions, `cuobjdump -sass` would
 * print the same listing). Every offset is checked against the size, so a
 * truncated or hostile file gives "not found", never a read out of bounds.
 * See ks_compile.h. */
#include "ks_compile.h"

#include <stdint.h>
#include <string.h>

#include "ks_hash.h"

enum {
  ELF_SHT_SYMTAB = 2,
  ELF_STT_FUNC = 2,
  CUDA_STO_ENTRY = 0x10,  /* st_other: a __global__ function */
  EIFMT_NVAL = 1, EIFMT_BVAL = 2, EIFMT_HVAL = 3, EIFMT_SVAL = 4,
  EIATTR_REGCOUNT = 0x2f,
};

typedef struct elf {
  const unsigned char *data;
  size_t size;
  uint64_t shoff;
  unsigned shnum, shentsize, shstrndx;
} elf;

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t u64(const unsigned char *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

static bool elf_open(const void *cubin, size_t size, elf *e) {
  const unsigned char *d = cubin;
  memset(e, 0, sizeof *e);
  /* 64-bit little-endian ELF, the only kind NVRTC and nvcc make. */
  if (!d || size < 64 || memcmp(d, "\177ELF", 4) || d[4] != 2 || d[5] != 1)
    return false;
  e->data = d;
  e->size = size;
  e->shoff = u64(d + 0x28);
  e->shentsize = u16(d + 0x3a);
  e->shnum = u16(d + 0x3c);
  e->shstrndx = u16(d + 0x3e);
  return e->shentsize >= 64 && e->shoff < size &&
         (uint64_t)e->shnum * e->shentsize <= size - e->shoff && e->shstrndx < e->shnum;
}

typedef struct section {
  uint32_t name, type, link, info;
  uint64_t offset, size, entsize;
} section;

static bool elf_section(const elf *e, unsigned i, section *s) {
  if (i >= e->shnum)
    return false;
  const unsigned char *p = e->data + e->shoff + (uint64_t)i * e->shentsize;
  s->name = u32(p);
  s->type = u32(p + 4);
  s->offset = u64(p + 0x18);
  s->size = u64(p + 0x20);
  s->link = u32(p + 0x28);
  s->info = u32(p + 0x2c);
  s->entsize = u64(p + 0x38);
  return s->offset <= e->size && s->size <= e->size - s->offset;
}

/* The NUL-terminated string at `off` of string-table section `strtab`. */
static const char *elf_string(const elf *e, unsigned strtab, uint64_t off) {
  section s;
  if (!elf_section(e, strtab, &s) || off >= s.size)
    return NULL;
  const char *p = (const char *)e->data + s.offset + off;
  return memchr(p, '\0', s.size - off) ? p : NULL;
}

static const char *section_name(const elf *e, const section *s) {
  return elf_string(e, e->shstrndx, s->name);
}

static bool find_section(const elf *e, const char *name, section *out) {
  for (unsigned i = 0; i < e->shnum; i++) {
    const char *n = elf_section(e, i, out) ? section_name(e, out) : NULL;
    if (n && !strcmp(n, name))
      return true;
  }
  return false;
}

static bool symtab(const elf *e, section *out) {
  for (unsigned i = 0; i < e->shnum; i++)
    if (elf_section(e, i, out) && out->type == ELF_SHT_SYMTAB && out->entsize >= 24)
      return true;
  return false;
}

size_t ks_cubin_entries(ks_arena *a, const void *cubin, size_t size, const char ***out) {
  elf e;
  section st;
  ks_strings names = {0};
  if (elf_open(cubin, size, &e) && symtab(&e, &st))
    for (uint64_t off = 0; off + 24 <= st.size; off += st.entsize) {
      const unsigned char *sym = e.data + st.offset + off;
      const char *name = elf_string(&e, st.link, u32(sym));
      if (name && *name && (sym[4] & 0xf) == ELF_STT_FUNC && (sym[5] & CUDA_STO_ENTRY))
        *ks_array_push(a, &names) = ks_arena_strdup(a, name);
    }
  *ks_array_push(a, &names) = NULL;
  *out = (const char **)names.items;
  return names.len - 1;
}

/* The index of `function` in the symbol table, or -1. */
static long symbol_index(const elf *e, const char *function) {
  section st;
  if (!symtab(e, &st))
    return -1;
  for (uint64_t off = 0, i = 0; off + 24 <= st.size; off += st.entsize, i++) {
    const char *name = elf_string(e, st.link, u32(e->data + st.offset + off));
    if (name && !strcmp(name, function))
      return (long)i;
  }
  return -1;
}

/* EIATTR_REGCOUNT of symbol `sym` in .nv.info: entries are a format byte,
 * an attribute byte and, for EIFMT_SVAL, a 16-bit length and that many
 * bytes (here: the symbol index, then the count). */
static int register_count(const elf *e, long sym) {
  section s;
  if (sym < 0 || !find_section(e, ".nv.info", &s))
    return -1;
  const unsigned char *p = e->data + s.offset, *end = p + s.size;
  while (end - p >= 2) {
    unsigned fmt = p[0], attr = p[1];
    if (fmt == EIFMT_SVAL) {
      if (end - p < 4 || u16(p + 2) > end - p - 4)
        return -1;
      unsigned len = u16(p + 2);
      if (attr == EIATTR_REGCOUNT && len >= 8 && u32(p + 4) == (uint32_t)sym)
        return (int)u32(p + 8);
      p += 4 + len;
    } else if (fmt == EIFMT_HVAL || fmt == EIFMT_BVAL) {
      p += 4; /* the value in the two bytes after the attribute */
    } else if (fmt == EIFMT_NVAL) {
      p += 2;
    } else {
      return -1; /* a format this reader does not know: stop, say nothing */
    }
  }
  return -1;
}

int ks_cubin_function_info(const void *cubin, size_t size, const char *function,
                           ks_cubin_function *out) {
  memset(out, 0, sizeof *out);
  out->registers = -1;
  elf e;
  section text;
  if (!function || !elf_open(cubin, size, &e))
    return -1;
  char name[1024];
  if ((size_t)snprintf(name, sizeof name, ".text.%s", function) >= sizeof name ||
      !find_section(&e, name, &text))
    return -1;
  ks_sha256_hex(e.data + text.offset, (size_t)text.size, out->text_sha256);
  out->text_bytes = (size_t)text.size;
  out->registers = register_count(&e, symbol_index(&e, function));
  return 0;
}
