/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare error codes: 0 or a negative errno-style value, their text, and the one way a
 * function says why it failed.
 *
 * The convention (docs/api.md, "Errors inside gpushare"): a function that can fail returns 0 or
 * one of the codes below, never -1; when the caller may want the reason, it takes
 * (char *err, size_t errlen) last and writes one line there with gs_fail. Codes are kept in a
 * variable called result; wire codes (what gpushared replies) are another table
 * (gpushare/wire_errors.def). */
#ifndef GPUSHARE_ERROR_H
#define GPUSHARE_ERROR_H

#include <errno.h>
#include <stddef.h>

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
    GS_ECONNRESET = -ECONNRESET,
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

/* Writes why a call failed into err as one line (printf's format; cut to errlen bytes; nothing
 * when err is NULL or errlen is 0) and returns code, so that a failure and its reason are one
 * statement: return gs_fail(err, errlen, GS_EINVAL, "bad size \"%s\"", text);
 * Thread-safe; libc only (the shim may use it). */
int gs_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
