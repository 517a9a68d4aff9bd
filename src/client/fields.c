/* SPDX-License-Identifier: Apache-2.0 */
/* Lease request fields people write: names, GPU models, durations (shared by CLI and daemon). */
#include "gpushare/client.h"
#include "gpushare/error.h"
#include "name_chars.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Decodes the UTF-8 character at s into *cp. Returns its length (1..4), or 0 when it is not
 * valid UTF-8 (a stray byte, a short, overlong or surrogate sequence, beyond U+10FFFF). */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n = s[0] < 0x80             ? 1
               : (s[0] & 0xE0) == 0xC0 ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    uint32_t v = n == 1 ? s[0] : n == 2 ? s[0] & 0x1Fu : n == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (n == 0 || v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* Whether a name may hold cp (name_chars.h): a binary search of the ranges. */
static int name_char(uint32_t cp)
{
    unsigned lo = 0, hi = gs__name_chars_n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (cp < gs__name_chars[mid].lo)
            hi = mid;
        else if (cp > gs__name_chars[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

int gs_lease_name_check(const char *name, char *err, size_t errlen)
{
    size_t len = strnlen(name, GS_LEASE_NAME_MAX);
    if (len == 0)
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    if (len >= GS_LEASE_NAME_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "a name has at most %d bytes",
                       GS_LEASE_NAME_MAX - 1);
    /* Only what shows as itself: letters, marks, digits, punctuation, symbols and the space.
     * Controls, format characters (zero-width spaces, joiners, the byte order mark, soft hyphens,
     * tag characters, bidirectional controls) and the other default-ignorable code points would
     * let one name pass for another in listings. */
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = utf8_decode((const unsigned char *)name + i, &cp);
        if (n == 0)
            return gs_fail(err, errlen, GS_EINVAL, "a name must be valid UTF-8");
        if (!name_char(cp))
            return gs_fail(err, errlen, GS_EINVAL,
                           "a name must be printable text (letters, marks, digits, punctuation, "
                           "symbols and spaces): U+%04X is not",
                           (unsigned)cp);
        i += n;
    }
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
