/* SPDX-License-Identifier: Apache-2.0 */
/* gs_strerror: the one place that turns a gpushare error code into text. */
#include "gpushare/error.h"

#include <string.h>

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
