/* SPDX-License-Identifier: Apache-2.0 */
/* Moving bytes when one side is an application's host pointer that gpusim cannot validate: the
 * kernel copies them (process_vm_readv on this process), so a bad host pointer makes the copy
 * fail with CUDA_ERROR_INVALID_VALUE instead of crashing the application. */
#include "cuda_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic int unavailable; /* process_vm_readv refused (seccomp): plain copies */

/* Copies with the kernel; returns 0, -1 for a fault, or -2 when the call is not available. */
static int kernel_copy(void *dst, const void *src, size_t n)
{
    while (n > 0) {
        struct iovec local = {.iov_base = dst, .iov_len = n};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)src, .iov_len = n};
        ssize_t done = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (done < 0)
            return errno == ENOSYS || errno == EPERM ? -2 : -1;
        if (done == 0)
            return -1;
        dst = (char *)dst + done;
        src = (const char *)src + done;
        n -= (size_t)done;
    }
    return 0;
}

/* Whether [a, a+n) and [b, b+n) share a byte; safe for ranges that end at the top of memory. */
static int overlaps(const void *a, const void *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y ? y - x < n : x - y < n;
}

/* Kernel-checked copy of overlapping ranges through a bounce buffer, chunk by chunk in the
 * direction that never overwrites source bytes not yet read. Returns kernel_copy's codes. */
static int kernel_move(void *dst, const void *src, size_t n)
{
    enum { CHUNK = 64 * 1024 };
    unsigned char bounce[CHUNK];
    int forward = (uintptr_t)dst < (uintptr_t)src;
    for (size_t done = 0; done < n;) {
        size_t c = n - done < CHUNK ? n - done : CHUNK;
        size_t at = forward ? done : n - done - c;
        int rc = kernel_copy(bounce, (const char *)src + at, c);
        if (rc == 0)
            rc = kernel_copy((char *)dst + at, bounce, c);
        if (rc != 0)
            return rc;
        done += c;
    }
    return 0;
}

CUresult gsim_cu_copy_bytes(void *dst, const void *src, size_t n, int host_side)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!host_side || atomic_load(&unavailable)) {
        memmove(dst, src, n);
        return CUDA_SUCCESS;
    }
    int rc = overlaps(dst, src, n) ? kernel_move(dst, src, n) : kernel_copy(dst, src, n);
    if (rc == -2) {
        atomic_store(&unavailable, 1);
        memmove(dst, src, n);
        rc = 0;
    }
    return rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
