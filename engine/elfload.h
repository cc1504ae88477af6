/* elfload.h - the bundle's x86-64 object linked into this process.
 *
 * rulec compiles the CPU backend's code into one relocatable ELF object
 * (bundle.h, BD_SEC_HOST_OBJECT).  el_load links it the way a static
 * linker and loader would, with no LLVM: its allocated sections laid out in
 * one mapping, a GOT and call stubs beside them, the relocations applied,
 * then the code made executable and the constants read-only.  Calls out of
 * the object go only to the functions in el_externs (memcpy and libm): the
 * same in a static build as in a dynamic one.  Anything else the object asks
 * for (a relocation type, an external symbol, constructors, TLS) is refused
 * with a message that names it.
 *
 * Ownership: an ElfImage owns its mapping; el_free() unmaps it.  The object
 * bytes are not kept.
 */
#ifndef SENTINEL_ELFLOAD_H
#define SENTINEL_ELFLOAD_H

#include <stddef.h>

typedef struct ElfImage ElfImage;

/* Link obj (len bytes) into memory.  On failure returns -errno and writes
 * a message into err. */
int el_load(const void *obj, size_t len, ElfImage **out, char *err, size_t n);
/* The address of a global symbol the object defines, or NULL. */
void *el_sym(const ElfImage *im, const char *name);
/* The same, and its size (the symbol's st_size) in *size. */
void *el_sym_size(const ElfImage *im, const char *name, size_t *size);
/* Bytes mapped (code, data, GOT and stubs). */
size_t el_size(const ElfImage *im);
void el_free(ElfImage *im);

#endif
