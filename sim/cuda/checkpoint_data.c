/* SPDX-License-Identifier: Apache-2.0 */
/* The contents of a checkpoint: at cuCheckpointProcessCheckpoint the target process copies the
 * data of its device allocations (cuMemAlloc, pitch, managed, stream-ordered, module globals) to
 * host memory and releases the device copies (their pages are dropped: the memory reads as zeros
 * until restored); at restore it copies them back to the same addresses. Only pages that hold
 * data are copied (present or swapped pages that are not all zeros, from /proc/self/pagemap), so
 * an untouched 20 GiB allocation costs no host memory. VMM memory, arrays and graph allocations
 * keep their contents in place (their charge moves like the rest).
 * Threading: called by the process's checkpoint thread only, with the CUDA gate closed; the saved
 * set is that thread's (one checkpoint at a time). */
#include "cuda_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGEMAP_PRESENT (UINT64_C(1) << 63)
#define PAGEMAP_SWAPPED (UINT64_C(1) << 62)
#define PAGEMAP_CHUNK   512

typedef struct saved {
    uintptr_t base;
    size_t size;    /* bytes of the allocation */
    size_t map_len; /* nonzero: its own mapping, saved page by page */
    unsigned char *copy;
    unsigned char *pages; /* map_len != 0: 1 for each page copied */
} saved_t;

static struct {
    saved_t *items;
    size_t n, cap;
    uint64_t host_bytes;
    int failed;
} set;

static int wanted(const gsim_cu_alloc_t *a)
{
    return a->kind == GSIM_CU_MEM_DEVICE || a->kind == GSIM_CU_MEM_MANAGED ||
           a->kind == GSIM_CU_MEM_POOL;
}

static void note_entry(const gsim_cu_alloc_t *a, void *arg)
{
    (void)arg;
    if (!wanted(a) || a->size == 0 || set.failed)
        return;
    if (set.n == set.cap) {
        size_t cap = set.cap != 0 ? set.cap * 2 : 64;
        saved_t *items = realloc(set.items, cap * sizeof(*items));
        if (items == NULL) {
            set.failed = 1;
            return;
        }
        set.items = items;
        set.cap = cap;
    }
    set.items[set.n++] = (saved_t){.base = a->base, .size = a->size, .map_len = a->map_len};
}

static int page_is_zero(const unsigned char *p, size_t len)
{
    return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

/* Copies the pages of s that hold data into s->copy (a sparse mapping of the same length). */
static int save_pages(saved_t *s, int pagemap)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = s->map_len / page;
    s->copy = gsim_cu_map_anon(s->map_len, PROT_READ | PROT_WRITE);
    s->pages = calloc(n, 1);
    if (s->copy == NULL || s->pages == NULL)
        return -1;
    uint64_t entries[PAGEMAP_CHUNK];
    for (size_t i = 0; i < n; i += PAGEMAP_CHUNK) {
        size_t k = n - i < PAGEMAP_CHUNK ? n - i : PAGEMAP_CHUNK;
        off_t at = (off_t)((s->base / page + i) * sizeof(uint64_t));
        if (pread(pagemap, entries, k * sizeof(uint64_t), at) != (ssize_t)(k * sizeof(uint64_t)))
            return -1;
        for (size_t j = 0; j < k; j++) {
            const unsigned char *src = (const unsigned char *)s->base + (i + j) * page;
            if ((entries[j] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED)) == 0 || page_is_zero(src, page))
                continue;
            memcpy(s->copy + (i + j) * page, src, page);
            s->pages[i + j] = 1;
            set.host_bytes += page;
        }
    }
    return 0;
}

static int save_one(saved_t *s, int pagemap)
{
    if (s->map_len != 0)
        return save_pages(s, pagemap);
    s->copy = malloc(s->size);
    if (s->copy == NULL)
        return -1;
    memcpy(s->copy, (const void *)s->base, s->size);
    set.host_bytes += s->size;
    return 0;
}

static void free_one(saved_t *s)
{
    if (s->map_len != 0 && s->copy != NULL)
        munmap(s->copy, s->map_len);
    else
        free(s->copy);
    free(s->pages);
}

void gsim_cu_checkpoint_data_discard(void)
{
    for (size_t i = 0; i < set.n; i++)
        free_one(&set.items[i]);
    free(set.items);
    set.items = NULL;
    set.n = set.cap = 0;
    set.host_bytes = 0;
    set.failed = 0;
}

/* Drops the device copy of s: its pages go back to the system (reads give zeros). */
static void release_one(const saved_t *s)
{
    if (s->map_len != 0)
        madvise((void *)s->base, s->map_len, MADV_DONTNEED);
    else
        memset((void *)s->base, 0, s->size);
}

int gsim_cu_checkpoint_data_save(uint64_t *host_bytes)
{
    gsim_cu_checkpoint_data_discard();
    gsim_cu_table_foreach(note_entry, NULL);
    int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    int rc = set.failed || pagemap < 0 ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < set.n; i++)
        rc = save_one(&set.items[i], pagemap);
    if (pagemap >= 0)
        close(pagemap);
    if (rc != 0) {
        gsim_cu_checkpoint_data_discard();
        return -1;
    }
    for (size_t i = 0; i < set.n; i++)
        release_one(&set.items[i]);
    *host_bytes = set.host_bytes;
    return 0;
}

static void restore_one(const saved_t *s)
{
    if (s->map_len == 0) {
        memcpy((void *)s->base, s->copy, s->size);
        return;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = s->map_len / page;
    for (size_t i = 0; i < n; i++)
        if (s->pages[i])
            memcpy((unsigned char *)s->base + i * page, s->copy + i * page, page);
}

void gsim_cu_checkpoint_data_restore(void)
{
    for (size_t i = 0; i < set.n; i++)
        restore_one(&set.items[i]);
    gsim_cu_checkpoint_data_discard();
}
