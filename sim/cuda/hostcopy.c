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

static int overlaps(const void *a, const void *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + n && y < x + n;
}

CUresult gsim_cu_copy_bytes(void *dst, const void *src, size_t n, int host_side)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!host_side || overlaps(dst, src, n) || atomic_load(&unavailable)) {
        memmove(dst, src, n);
        return CUDA_SUCCESS;
    }
    int rc = kernel_copy(dst, src, n);
    if (rc == -2) {
        atomic_store(&unavailable, 1);
        memmove(dst, src, n);
        rc = 0;
    }
    return rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
