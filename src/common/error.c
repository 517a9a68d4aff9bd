/* SPDX-License-Identifier: Apache-2.0 */
/* gs_strerror: the one place that turns a gpushare error code into text; gs_fail: the one way
 * a function writes why it failed. */
#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gs_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *gs_strerror(int code)
{
    switch (code) {
    case GS_OK:
        return "success";
    case GS_EFORMAT:
        return "malformed input";
    case GS_EVERSION:
        return "incompatible version";
    case GS_ELIMIT:
        return "limit exceeded";
    case GS_ENOFIT:
        return "no resources fit the request";
    case GS_EGPU:
        return "the GPU failed";
    default:
        break;
    }
    if (code < 0 && code > -4096) {
        /* strerrordesc_np is thread-safe and returns a static string (glibc >= 2.32). */
        const char *text = strerrordesc_np(-code);
        if (text != NULL)
            return text;
    }
    return "unknown error";
}
