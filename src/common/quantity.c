/* SPDX-License-Identifier: Apache-2.0 */
/* The strict quantity parser every gpushare part uses for sizes, fractions and percentages. */
#include "gpushare/quantity.h"
#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* At most this many decimal digits are read after the point (10^18 fits in 64 bits). */
#define MAX_DECIMALS 18

typedef struct decimal {
    uint64_t whole;    /* digits before the point */
    uint64_t frac;     /* digits after the point, as an integer */
    unsigned decimals; /* number of digits after the point */
    const char *rest;  /* first character after the number */
} decimal_t;

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static uint64_t pow10_u64(unsigned n)
{
    uint64_t p = 1;
    while (n-- > 0)
        p *= 10;
    return p;
}

/* Reads [digits][.digits] (at least one digit) from text. Returns 0, GS_EINVAL when there is no
 * number, or GS_ERANGE when the whole part overflows 64 bits or there are too many decimals. */
static int read_decimal(const char *text, decimal_t *d)
{
    const char *p = text;
    int digits = 0;
    d->whole = 0;
    d->frac = 0;
    d->decimals = 0;
    for (; is_digit(*p); p++, digits++) {
        uint64_t v = (uint64_t)(*p - '0');
        if (d->whole > (UINT64_MAX - v) / 10)
            return GS_ERANGE;
        d->whole = d->whole * 10 + v;
    }
    if (*p == '.') {
        p++;
        for (; is_digit(*p); p++, digits++) {
            if (d->decimals == MAX_DECIMALS)
                return GS_ERANGE;
            d->frac = d->frac * 10 + (uint64_t)(*p - '0');
            d->decimals++;
        }
    }
    d->rest = p;
    return digits > 0 ? 0 : GS_EINVAL;
}

/* Returns the unit's shift (10 for K ... 60 for E) or -1 when c is not a unit letter. */
static int unit_shift(char c)
{
    static const char letters[] = "KMGTPE";
    for (int i = 0; letters[i] != '\0'; i++) {
        if (c == letters[i] || c == letters[i] + ('a' - 'A'))
            return 10 * (i + 1);
    }
    return -1;
}

/* Parses the unit suffix at s into a shift; "" and "B" are bytes. A unit letter may be followed
 * by B, i or iB, and a lowercase one also by b or ib ("4gb", how 4GB is often typed; "4Gb" reads
 * as gigabits and is refused). Returns 0 or GS_EINVAL. */
static int parse_unit(const char *s, int *shift)
{
    if (*s == '\0' || strcmp(s, "B") == 0) {
        *shift = 0;
        return 0;
    }
    int sh = unit_shift(s[0]);
    if (sh < 0)
        return GS_EINVAL;
    const char *tail = s + 1;
    int lower = s[0] >= 'a' && s[0] <= 'z';
    if (*tail == '\0' || strcmp(tail, "B") == 0 || strcmp(tail, "i") == 0 ||
        strcmp(tail, "iB") == 0 || (lower && (strcmp(tail, "b") == 0 || strcmp(tail, "ib") == 0))) {
        *shift = sh;
        return 0;
    }
    return GS_EINVAL;
}

/* The hint for a number written without a unit: "4G or 4096M". */
static void unit_hint(const char *text, const decimal_t *d, char *buf, size_t len)
{
    unsigned __int128 mib = (unsigned __int128)d->whole * 1024 +
                            (unsigned __int128)d->frac * 1024 / pow10_u64(d->decimals);
    if (mib > UINT64_MAX)
        snprintf(buf, len, "%sG", text);
    else
        snprintf(buf, len, "%sG or %lluM", text, (unsigned long long)mib);
}

/* Scales the number d by the unit 2^shift: exact for a whole number, rounded down to whole MiB
 * when it has decimals. Returns 0 or GS_ERANGE. */
static int scale(const decimal_t *d, int shift, int *rounded, unsigned __int128 *total)
{
    unsigned __int128 unit = (unsigned __int128)1 << shift;
    unsigned __int128 whole = (unsigned __int128)d->whole * unit;
    if (whole > UINT64_MAX)
        return GS_ERANGE;
    *rounded = 0;
    *total = whole;
    if (d->decimals == 0 || d->frac == 0)
        return 0;
    /* frac / 10^decimals of a unit, in bytes rounded down to whole MiB (a unit of K or B holds
     * no whole MiB, so its decimals add nothing). */
    unsigned __int128 part = (unsigned __int128)d->frac * unit / pow10_u64(d->decimals);
    *total = (whole + part) & ~(unsigned __int128)(GS_QTY_MIB - 1);
    *rounded = 1;
    return *total > UINT64_MAX ? GS_ERANGE : 0;
}

int gs_qty_parse_bytes(const char *text, unsigned flags, uint64_t *bytes, char *err, size_t errlen)
{
    if (text == NULL || *text == '\0')
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    if (text[0] == '-')
        return gs_fail(err, errlen, GS_EINVAL, "invalid memory size \"%s\": negative", text);
    decimal_t d;
    int result = read_decimal(text, &d);
    if (result == GS_ERANGE)
        return gs_fail(err, errlen, GS_ERANGE, "invalid memory size \"%s\": too large", text);
    if (result != 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid memory size \"%s\": expected a number and a unit such as 4G, "
                       "1.5G or 512M",
                       text);
    int shift;
    if (parse_unit(d.rest, &shift) != 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid memory size \"%s\": unknown unit \"%s\" (use K, M, G, T, P or E)",
                       text, d.rest);
    if ((flags & GS_QTY_REQUIRE_UNIT) && *d.rest == '\0' && (d.whole != 0 || d.frac != 0)) {
        char hint[64];
        unit_hint(text, &d, hint, sizeof(hint));
        return gs_fail(err, errlen, GS_EINVAL, "invalid memory size \"%s\": add a unit: %s", text,
                       hint);
    }
    unsigned __int128 total;
    int rounded;
    if (scale(&d, shift, &rounded, &total) != 0)
        return gs_fail(err, errlen, GS_ERANGE, "invalid memory size \"%s\": too large", text);
    if (total == 0 && rounded)
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid memory size \"%s\": below 1M (a size with decimals is rounded "
                       "down to whole MiB)",
                       text);
    if (total == 0 && !(flags & GS_QTY_ALLOW_ZERO))
        return gs_fail(err, errlen, GS_EINVAL, "invalid memory size \"%s\": must be above zero",
                       text);
    *bytes = (uint64_t)total;
    return 0;
}

/* Turns value / 10^decimals (of a unit worth `scale` thousandths) into thousandths; any digit
 * beyond a thousandth must be zero. Returns 0 or GS_EINVAL. */
static int to_milli(uint64_t whole, uint64_t frac, unsigned decimals, unsigned scale_milli,
                    uint64_t *milli)
{
    /* scale_milli is 1000 (a GPU) or 10 (a percent): thousandths = number * scale_milli. */
    unsigned keep = scale_milli == 1000 ? 3 : 1;
    while (decimals > keep) {
        if (frac % 10 != 0)
            return GS_EINVAL;
        frac /= 10;
        decimals--;
    }
    while (decimals < keep) {
        frac *= 10;
        decimals++;
    }
    if (whole > UINT32_MAX)
        return GS_EINVAL;
    *milli = whole * scale_milli + frac;
    return 0;
}

int gs_qty_parse_fraction(const char *text, uint32_t *milli, char *err, size_t errlen)
{
    if (text == NULL || *text == '\0')
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    if (text[0] == '-')
        return gs_fail(err, errlen, GS_ERANGE,
                       "invalid GPU fraction \"%s\": negative (must be above 0 and at most 1)",
                       text);
    decimal_t d;
    int result = read_decimal(text, &d);
    int percent = result == 0 && d.rest[0] == '%' && d.rest[1] == '\0';
    const char *range = percent ? "above 0% and at most 100%" : "above 0 and at most 1";
    if (result == GS_EINVAL || (result == 0 && *d.rest != '\0' && !percent))
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid GPU fraction \"%s\": expected a number such as 0.25 or 25%%", text);
    if (result == GS_ERANGE || d.whole > (percent ? 100u : 1u))
        return gs_fail(err, errlen, GS_ERANGE, "invalid GPU fraction \"%s\": must be %s", text,
                       range);
    uint64_t value;
    if (to_milli(d.whole, d.frac, d.decimals, percent ? 10 : 1000, &value) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "invalid GPU fraction \"%s\": at most %s", text,
                       percent ? "1 decimal in a percentage (0.1% of a GPU)"
                               : "3 decimals (0.001 GPU)");
    if (value == 0 || value > 1000)
        return gs_fail(err, errlen, GS_ERANGE, "invalid GPU fraction \"%s\": must be %s", text,
                       range);
    *milli = (uint32_t)value;
    return 0;
}

int gs_qty_parse_percent(const char *text, unsigned flags, uint32_t *percent, char *err,
                         size_t errlen)
{
    if (text == NULL || *text == '\0')
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    if (text[0] == '-')
        return gs_fail(err, errlen, GS_ERANGE, "invalid percentage \"%s\": negative", text);
    uint64_t value = 0;
    const char *p = text;
    for (; is_digit(*p); p++) {
        value = value * 10 + (uint64_t)(*p - '0');
        if (value > 1000)
            return gs_fail(err, errlen, GS_ERANGE, "invalid percentage \"%s\": above 100", text);
    }
    if (p == text || !(*p == '\0' || (p[0] == '%' && p[1] == '\0')))
        return gs_fail(
            err, errlen, GS_EINVAL,
            "invalid percentage \"%s\": expected a whole number 1-100 such as 30 or 30%%", text);
    if (value > 100)
        return gs_fail(err, errlen, GS_ERANGE, "invalid percentage \"%s\": above 100", text);
    if (value == 0 && !(flags & GS_QTY_ALLOW_ZERO))
        return gs_fail(err, errlen, GS_ERANGE, "invalid percentage \"%s\": must be above zero",
                       text);
    *percent = (uint32_t)value;
    return 0;
}

/* Parses one "DEV=SIZE" item of length len into out. */
static int parse_device_item(const char *whole, const char *item, size_t len, unsigned flags,
                             gs_device_bytes_t *out, char *err, size_t errlen)
{
    char buf[64];
    if (len >= sizeof(buf))
        return gs_fail(err, errlen, GS_EINVAL, "invalid device memory list \"%s\": item too long",
                       whole);
    memcpy(buf, item, len);
    buf[len] = '\0';
    char *eq = strchr(buf, '=');
    if (eq == NULL)
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid device memory list \"%s\": \"%s\" is not DEVICE=SIZE", whole, buf);
    *eq = '\0';
    unsigned dev = 0;
    const char *p = buf;
    for (; is_digit(*p) && dev < 1000; p++)
        dev = dev * 10 + (unsigned)(*p - '0');
    if (p == buf || *p != '\0')
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid device memory list \"%s\": \"%s\" is not a device index", whole,
                       buf);
    if (dev >= GS_MAX_DEVICES)
        return gs_fail(err, errlen, GS_ERANGE,
                       "invalid device memory list \"%s\": device %u is above %d", whole, dev,
                       GS_MAX_DEVICES - 1);
    if (out->present & (1u << dev))
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid device memory list \"%s\": device %u given twice", whole, dev);
    char sub[GS_QTY_ERR_MAX];
    int result = gs_qty_parse_bytes(eq + 1, flags, &out->per_device[dev], sub, sizeof(sub));
    if (result != 0)
        return gs_fail(err, errlen, result, "invalid device memory list \"%s\": %s", whole, sub);
    out->present |= 1u << dev;
    return 0;
}

int gs_qty_parse_device_bytes(const char *text, unsigned flags, gs_device_bytes_t *out, char *err,
                              size_t errlen)
{
    gs_device_bytes_t parsed;
    memset(&parsed, 0, sizeof(parsed));
    if (text == NULL || *text == '\0')
        return gs_fail(err, errlen, GS_EINVAL, "missing value");
    if (strchr(text, '=') == NULL) {
        int result = gs_qty_parse_bytes(text, flags, &parsed.all_devices, err, errlen);
        if (result != 0)
            return result;
        parsed.has_all = 1;
        *out = parsed;
        return 0;
    }
    const char *item = text;
    for (;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma != NULL ? (size_t)(comma - item) : strlen(item);
        int result = parse_device_item(text, item, len, flags, &parsed, err, errlen);
        if (result != 0)
            return result;
        if (comma == NULL)
            break;
        item = comma + 1;
    }
    *out = parsed;
    return 0;
}

uint64_t gs_device_bytes_get(const gs_device_bytes_t *amounts, unsigned dev)
{
    if (dev < GS_MAX_DEVICES && (amounts->present & (1u << dev)))
        return amounts->per_device[dev];
    return amounts->has_all ? amounts->all_devices : 0;
}

int gs_qty_format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTPE";
    int shift = 0;
    while (shift < 60 && bytes != 0 && (bytes & ((UINT64_C(1) << (shift + 10)) - 1)) == 0)
        shift += 10;
    int n = shift == 0 ? snprintf(buf, len, "%llu", (unsigned long long)bytes)
                       : snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> shift),
                                  units[shift / 10 - 1]);
    return n < 0 || (size_t)n >= len ? GS_ENOSPC : n;
}

int gs_qty_format_human(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int i = 0;
    double value = (double)bytes;
    while (value >= 1024.0 && i < 6) {
        value /= 1024.0;
        i++;
    }
    int n;
    if (i == 0)
        n = snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else if (value == (double)(uint64_t)value)
        n = snprintf(buf, len, "%llu %s", (unsigned long long)value, units[i]);
    else
        n = snprintf(buf, len, "%.2f %s", value, units[i]);
    return n < 0 || (size_t)n >= len ? GS_ENOSPC : n;
}
