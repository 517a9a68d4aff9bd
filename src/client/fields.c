/* SPDX-License-Identifier: Apache-2.0 */
/* Lease request fields people write: names, GPU models, durations (shared by CLI and daemon). */
#include "gpushare/client.h"
#include "gpushare/error.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Length of the UTF-8 sequence starting at s (1..4), or 0 when it is not valid UTF-8. */
static size_t utf8_length(const unsigned char *s)
{
    size_t n = s[0] < 0x80             ? 1
               : (s[0] & 0xE0) == 0xC0 ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    if (n == 2 && s[0] < 0xC2)
        return 0; /* overlong */
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

int gs_lease_name_check(const char *name, char *err, size_t errlen)
{
    size_t len = strnlen(name, GS_LEASE_NAME_MAX);
    if (len == 0)
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    if (len >= GS_LEASE_NAME_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "a name has at most %d bytes",
                       GS_LEASE_NAME_MAX - 1);
    for (size_t i = 0; i < len;) {
        const unsigned char *c = (const unsigned char *)name + i;
        size_t n = utf8_length(c);
        if (n == 0 || (n == 1 && (c[0] < 0x20 || c[0] == 0x7f)))
            return gs_fail(err, errlen, GS_EINVAL,
                           "a name must be text without control characters");
        i += n;
    }
    /* C1 controls and the characters that reorder text are refused too: whatever the display
     * escape would change (gs_display_escape) is not plain text. */
    char shown[GS_LEASE_NAME_MAX * 6 + 1];
    gs_display_escape(shown, sizeof(shown), name);
    if (strcmp(shown, name) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "a name must be text without control characters");
    return 0;
}

static int type_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || c == ' ';
}

int gs_lease_add_gpu_types(gs_lease_request_t *req, const char *list, char *err, size_t errlen)
{
    gs_lease_request_t copy = *req;
    if (list[0] == '\0')
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= GS_GPU_TYPE_MAX)
            return gs_fail(err, errlen, GS_EINVAL,
                           "a GPU type is 1 to %d characters (T4, A100-40GB, H100)",
                           GS_GPU_TYPE_MAX - 1);
        for (size_t i = 0; i < len; i++) {
            if (!type_char(p[i]))
                return gs_fail(err, errlen, GS_EINVAL,
                               "a GPU type is letters, digits, '-', '_' and '.' (T4, A100-40GB, "
                               "H100)");
        }
        if (copy.n_gpu_types == GS_GPU_TYPES_MAX)
            return gs_fail(err, errlen, GS_EINVAL, "at most %d GPU types", GS_GPU_TYPES_MAX);
        snprintf(copy.gpu_types[copy.n_gpu_types++], GS_GPU_TYPE_MAX, "%.*s", (int)len, p);
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *req = copy;
    return 0;
}

/* Copies the next part of s (split at '-', '_' and blanks) into part; returns the rest or NULL
 * at the end. */
static const char *next_part(const char *s, char *part, size_t len)
{
    while (*s == '-' || *s == '_' || *s == ' ')
        s++;
    if (*s == '\0')
        return NULL;
    size_t n = strcspn(s, "-_ ");
    snprintf(part, len, "%.*s", (int)(n < len ? n : len - 1), s);
    return s + n;
}

static int name_has_part(const char *name, const char *part)
{
    char have[GS_GPU_TYPE_MAX];
    for (const char *p = name; (p = next_part(p, have, sizeof(have))) != NULL;) {
        if (strcasecmp(have, part) == 0)
            return 1;
    }
    return 0;
}

int gs_gpu_type_matches(const char *type, const char *name)
{
    char want[GS_GPU_TYPE_MAX];
    int parts = 0;
    for (const char *p = type; (p = next_part(p, want, sizeof(want))) != NULL; parts++) {
        if (!name_has_part(name, want))
            return 0;
    }
    return parts > 0;
}

int gs_format_duration(uint64_t ms, char *buf, size_t len)
{
    uint64_t s = ms / 1000;
    int n;
    if (ms < 1000)
        n = snprintf(buf, len, "%llums", (unsigned long long)ms);
    else if (ms < 10000 && ms % 1000 != 0)
        n = snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
    else if (s < 60)
        n = snprintf(buf, len, "%llus", (unsigned long long)s);
    else if (s < 3600)
        n = s % 60 != 0 ? snprintf(buf, len, "%llum%02llus", (unsigned long long)(s / 60),
                                   (unsigned long long)(s % 60))
                        : snprintf(buf, len, "%llum", (unsigned long long)(s / 60));
    else if (s < 86400)
        n = (s / 60) % 60 != 0 ? snprintf(buf, len, "%lluh%02llum", (unsigned long long)(s / 3600),
                                          (unsigned long long)((s / 60) % 60))
                               : snprintf(buf, len, "%lluh", (unsigned long long)(s / 3600));
    else
        n = (s / 3600) % 24 != 0
                ? snprintf(buf, len, "%llud%02lluh", (unsigned long long)(s / 86400),
                           (unsigned long long)((s / 3600) % 24))
                : snprintf(buf, len, "%llud", (unsigned long long)(s / 86400));
    if (n < 0)
        return 0;
    return (size_t)n >= len ? (int)(len > 0 ? len - 1 : 0) : n;
}
