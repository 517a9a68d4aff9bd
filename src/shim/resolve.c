/* SPDX-License-Identifier: Apache-2.0 */
/* How applications reach the driver, and how each path is routed to the shim's hooks: exported
 * symbols (by being preloaded), dlsym/dlvsym (interposed here) and cuGetProcAddress (below). */
#include "shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

typedef struct hook_entry {
    const char *name;
    void *hook;
} hook_entry_t;

static gs__real_t real;

/* Built from hooks.def: the shim's hooks by name, in the order of the real table's members. */
static const hook_entry_t hooks[] = {
#define GS_HOOK(fn) {#fn, (void *)&fn},
#define GS_DRIVER(fn)
#include "hooks.def"
#undef GS_HOOK
#undef GS_DRIVER
};

#define N_HOOKS (sizeof(hooks) / sizeof(hooks[0]))

/* Where the real pointer of each hooked function is kept, parallel to hooks[]. */
static void **const real_slots[] = {
#define GS_HOOK(fn) (void **)&real.fn,
#define GS_DRIVER(fn)
#include "hooks.def"
#undef GS_HOOK
#undef GS_DRIVER
};

static void **hooked_real_slot(size_t i)
{
    return real_slots[i];
}

const gs__real_t *gs__real(void)
{
    return &real;
}

/* String helpers of our own: dlsym runs while a sanitizer runtime is still setting up its
 * interceptors of strcmp and friends, so this file must not call them. */
static int same_string(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static int starts_with(const char *s, const char *prefix)
{
    while (*prefix != '\0') {
        if (*s++ != *prefix++)
            return 0;
    }
    return 1;
}

static const char *base_name(const char *path)
{
    const char *base = path;
    for (const char *p = path; *p != '\0'; p++) {
        if (*p == '/')
            base = p + 1;
    }
    return base;
}

/* ---- finding libc's dlsym and dlvsym without calling our own ---- */

typedef struct elf_query {
    const char *name;
    void *found;
} elf_query_t;

static uint32_t gnu_hash(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
        h = h * 33 + *p;
    return h;
}

static ElfW(Addr) relocate(ElfW(Addr) value, ElfW(Addr) base)
{
    /* ld.so relocates most dynamic-section pointers in place; tolerate both forms. */
    return value < base ? value + base : value;
}

/* Looks name up in one object's .gnu.hash / .dynsym. */
/* An object's dynamic symbol table and GNU hash table, found once. */
typedef struct elf_tables {
    ElfW(Addr) base;
    const ElfW(Sym) * symtab;
    const char *strtab;
    const uint32_t *gnu;
} elf_tables_t;

static int read_tables(const struct dl_phdr_info *info, elf_tables_t *t)
{
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
    *t = (elf_tables_t){.base = info->dlpi_addr};
    for (; dyn != NULL && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            t->symtab = (const ElfW(Sym) *)relocate(dyn->d_un.d_ptr, info->dlpi_addr);
        else if (dyn->d_tag == DT_STRTAB)
            t->strtab = (const char *)relocate(dyn->d_un.d_ptr, info->dlpi_addr);
        else if (dyn->d_tag == DT_GNU_HASH)
            t->gnu = (const uint32_t *)relocate(dyn->d_un.d_ptr, info->dlpi_addr);
    }
    return t->symtab != NULL && t->strtab != NULL && t->gnu != NULL ? 0 : -1;
}

/* Looks name up through the GNU hash table; NULL when absent, or when it is an IFUNC (whose
 * value is its resolver: *ifunc is then set, and dlsym must resolve it). */
static void *lookup_in_tables(const elf_tables_t *t, const char *name, int *ifunc)
{
    *ifunc = 0;
    const uint32_t *gnu = t->gnu;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gnu + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t index = buckets[h % nbuckets];
    if (index < symoffset)
        return NULL;
    for (;; index++) {
        uint32_t ch = chain[index - symoffset];
        const ElfW(Sym) *sym = &t->symtab[index];
        if ((ch | 1) == (h | 1) && sym->st_shndx != SHN_UNDEF &&
            same_string(t->strtab + sym->st_name, name)) {
            *ifunc = ELF64_ST_TYPE(sym->st_info) == STT_GNU_IFUNC;
            return *ifunc ? NULL : (void *)(t->base + sym->st_value);
        }
        if (ch & 1)
            return NULL;
    }
}

static void *lookup_in_object(const struct dl_phdr_info *info, const char *name)
{
    elf_tables_t tables;
    int ifunc;
    return read_tables(info, &tables) == 0 ? lookup_in_tables(&tables, name, &ifunc) : NULL;
}

/* glibc 2.34 moved dlsym and dlvsym into libc.so.6; before, they are in libdl.so.2. */
static int find_in_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    elf_query_t *query = arg;
    const char *base = base_name(info->dlpi_name);
    if (!starts_with(base, "libc.so") && !starts_with(base, "libdl.so"))
        return 0;
    query->found = lookup_in_object(info, query->name);
    return query->found != NULL;
}

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

__attribute__((used)) static dlsym_fn libc_dlsym;
__attribute__((used)) static dlvsym_fn libc_dlvsym;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

static void find_libc_functions(void)
{
    elf_query_t query = {.name = "dlsym"};
    dl_iterate_phdr(find_in_libc, &query);
    libc_dlsym = (dlsym_fn)query.found;
    query = (elf_query_t){.name = "dlvsym"};
    dl_iterate_phdr(find_in_libc, &query);
    libc_dlvsym = (dlvsym_fn)query.found;
}

void *gs__real_dlsym(void *handle, const char *name)
{
    pthread_once(&libc_once, find_libc_functions);
    return libc_dlsym != NULL ? libc_dlsym(handle, name) : NULL;
}

static void *real_dlvsym(void *handle, const char *name, const char *version)
{
    pthread_once(&libc_once, find_libc_functions);
    return libc_dlvsym != NULL ? libc_dlvsym(handle, name, version) : NULL;
}

typedef struct object_query {
    uintptr_t base;
    elf_tables_t tables;
    int found;
} object_query_t;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    object_query_t *query = arg;
    if (info->dlpi_addr != query->base)
        return 0;
    query->found = read_tables(info, &query->tables) == 0;
    return 1;
}

/* The driver's function name: straight from its dynamic symbol table (a hash lookup; a name
 * it lacks is simply absent), through dlsym only for an IFUNC or when the table could not be
 * read. Several times cheaper than dlsym for the ninety lookups of start-up. */
static void *driver_symbol(object_query_t *query, void *handle, const char *name)
{
    int ifunc = 0;
    if (query->found) {
        void *fn = lookup_in_tables(&query->tables, name, &ifunc);
        if (fn != NULL || !ifunc)
            return fn;
    }
    return gs__real_dlsym(handle, name);
}

void gs__resolve_driver(void *handle)
{
    struct link_map *map = NULL;
    object_query_t query = {.found = 0};
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_addr != 0) {
        query.base = map->l_addr;
        dl_iterate_phdr(find_object, &query);
    }
#define GS_HOOK(fn)   real.fn = (__typeof__(real.fn))driver_symbol(&query, handle, #fn);
#define GS_DRIVER(fn) real.fn = (__typeof__(real.fn))driver_symbol(&query, handle, #fn);
#include "hooks.def"
#undef GS_HOOK
#undef GS_DRIVER
}

void *gs__hook_for_real(void *fn)
{
    if (fn == NULL)
        return NULL;
    for (size_t i = 0; i < N_HOOKS; i++) {
        if (*hooked_real_slot(i) == fn)
            return hooks[i].hook;
    }
    return NULL;
}

void *gs__hook_by_name(const char *name)
{
    if (name == NULL)
        return NULL;
    if (starts_with(name, "nvml"))
        return gs__nvml_hook_by_name(name);
    if (name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (size_t i = 0; i < N_HOOKS; i++) {
        if (same_string(hooks[i].name, name))
            return hooks[i].hook;
    }
    return NULL;
}

/* Returns the real pointer of hook (NULL when the driver lacks that symbol). */
static void *real_of_hook(void *hook)
{
    for (size_t i = 0; i < N_HOOKS; i++) {
        if (hooks[i].hook == hook)
            return *hooked_real_slot(i);
    }
    return NULL;
}

/* dlsym and dlvsym. A name the shim interposes gets its hook (when the looked-up object would
 * have found the driver's function). Every other lookup goes to libc's own dlsym/dlvsym as a
 * tail jump, so libc sees the application's return address, not the shim's: RTLD_NEXT keeps
 * its exact meaning ("after the caller, in the caller's scope"), which glibc derives from that
 * address. The jump needs a few instructions of assembly (x86-64); other architectures fall
 * back to calling libc from C, where RTLD_NEXT is then relative to the shim. */

/* The hook for name when the lookup would have found the driver's function, else NULL (libc
 * then answers, setting dlerror as usual). */
static void *route_to_hook(void *handle, const char *name, const char *version, void *hook)
{
    gs__ensure_init();
    if ((handle == RTLD_NEXT || handle == RTLD_DEFAULT) && !starts_with(name, "nvml"))
        return real_of_hook(hook) != NULL ? hook : NULL;
    if (handle == RTLD_NEXT)
        handle = RTLD_DEFAULT;
    void *found =
        version != NULL ? real_dlvsym(handle, name, version) : gs__real_dlsym(handle, name);
    return found != NULL ? hook : NULL;
}

/* Returns the hook to answer with, or NULL to let libc answer. */
__attribute__((used)) static void *route_dlsym(void *handle, const char *name)
{
    pthread_once(&libc_once, find_libc_functions);
    void *hook = name != NULL ? gs__hook_by_name(name) : NULL;
    return hook != NULL ? route_to_hook(handle, name, NULL, hook) : NULL;
}

__attribute__((used)) static void *route_dlvsym(void *handle, const char *name, const char *version)
{
    pthread_once(&libc_once, find_libc_functions);
    void *hook = name != NULL ? gs__hook_by_name(name) : NULL;
    return hook != NULL ? route_to_hook(handle, name, version, hook) : NULL;
}

#if defined(__x86_64__)
/* dlsym(handle, name) / dlvsym(handle, name, version): save the arguments, ask route_*, then
 * either return its answer or restore the arguments and jump to libc's function (returning
 * NULL if libc's could not be found). The CFI lets debuggers and unwinders walk through. */
#define GS_DL_TRAMPOLINE(fn, route, libc_fn)                                                       \
    __asm__(".pushsection .text\n"                                                                 \
            ".globl " #fn "\n"                                                                     \
            ".type " #fn ", @function\n" #fn ":\n"                                                 \
            "    .cfi_startproc\n"                                                                 \
            "    endbr64\n"                                                                        \
            "    push %rdi\n"                                                                      \
            "    .cfi_adjust_cfa_offset 8\n"                                                       \
            "    push %rsi\n"                                                                      \
            "    .cfi_adjust_cfa_offset 8\n"                                                       \
            "    push %rdx\n"                                                                      \
            "    .cfi_adjust_cfa_offset 8\n"                                                       \
            "    call " #route "\n"                                                                \
            "    pop %rdx\n"                                                                       \
            "    .cfi_adjust_cfa_offset -8\n"                                                      \
            "    pop %rsi\n"                                                                       \
            "    .cfi_adjust_cfa_offset -8\n"                                                      \
            "    pop %rdi\n"                                                                       \
            "    .cfi_adjust_cfa_offset -8\n"                                                      \
            "    test %rax, %rax\n"                                                                \
            "    jnz 1f\n"                                                                         \
            "    mov " #libc_fn "(%rip), %rax\n"                                                   \
            "    test %rax, %rax\n"                                                                \
            "    jz 1f\n"                                                                          \
            "    jmp *%rax\n"                                                                      \
            "1:  ret\n"                                                                            \
            "    .cfi_endproc\n"                                                                   \
            ".size " #fn ", .-" #fn "\n"                                                           \
            ".popsection\n")

GS_DL_TRAMPOLINE(dlsym, route_dlsym, libc_dlsym);
GS_DL_TRAMPOLINE(dlvsym, route_dlvsym, libc_dlvsym);
#else
GS_EXPORT void *dlsym(void *handle, const char *name)
{
    void *answer = route_dlsym(handle, name);
    if (answer != NULL)
        return answer;
    return libc_dlsym != NULL ? libc_dlsym(handle, name) : NULL;
}

GS_EXPORT void *dlvsym(void *handle, const char *name, const char *version)
{
    void *answer = route_dlvsym(handle, name, version);
    if (answer != NULL)
        return answer;
    return libc_dlvsym != NULL ? libc_dlvsym(handle, name, version) : NULL;
}
#endif

/* cuGetProcAddress: the driver picks the versioned function for (symbol, cudaVersion, flags);
 * if the shim interposes exactly that function, the caller gets the hook instead. */
static void route_proc_address(CUresult result, void **pfn)
{
    if (result == CUDA_SUCCESS && pfn != NULL) {
        void *hook = gs__hook_for_real(*pfn);
        if (hook != NULL)
            *pfn = hook;
    }
}

GS_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                               cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *symbolStatus)
{
    gs__ensure_init(); /* lookups work even when the lease is misconfigured: cuInit refuses */
    if (real.cuGetProcAddress_v2 == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult result = real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    route_proc_address(result, pfn);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags)
{
    gs__ensure_init();
    if (real.cuGetProcAddress == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult result = real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    route_proc_address(result, pfn);
    return result;
}
