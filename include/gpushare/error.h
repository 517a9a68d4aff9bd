/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare error codes: 0 or a negative errno-style value, and their text. */
#ifndef GPUSHARE_ERROR_H
#define GPUSHARE_ERROR_H

#include <errno.h>

/* Every gpushare function that can fail returns 0 on success or one of these negative codes.
 * errno-based codes keep system failures meaningful; the GS_E*-only ones (below -10000) are
 * conditions the system has no errno for. */
enum gs_error {
    GS_OK = 0,
    GS_EPERM = -EPERM,
    GS_ENOENT = -ENOENT,
    GS_EIO = -EIO,
    GS_EAGAIN = -EAGAIN,
    GS_ENOMEM = -ENOMEM,
    GS_EACCES = -EACCES,
    GS_EEXIST = -EEXIST,
    GS_EINVAL = -EINVAL,
    GS_ENOSPC = -ENOSPC,
    GS_ERANGE = -ERANGE,
    GS_ENOSYS = -ENOSYS,
    GS_EPROTO = -EPROTO,
    GS_EMSGSIZE = -EMSGSIZE,
    GS_ETIMEDOUT = -ETIMEDOUT,
    GS_ECONNREFUSED = -ECONNREFUSED,
    GS_ESRCH = -ESRCH,
    GS_EBUSY = -EBUSY,
    GS_ENOTSUP = -ENOTSUP,
    GS_EFORMAT = -10001,  /* input text is malformed */
    GS_EVERSION = -10002, /* a file or message has an incompatible version */
    GS_ELIMIT = -10003,   /* the request exceeds a configured limit */
    GS_ENOFIT = -10004,   /* nothing can satisfy the request now */
    GS_EGPU = -10005,     /* a GPU (its driver, MIG or MPS control) failed to do what was asked */
};

/* Returns a static, human-readable description of code (0, a gs_error or any -errno).
 * Never returns NULL; thread-safe. */
const char *gs_strerror(int code);

#endif
