/* SPDX-License-Identifier: Apache-2.0 */
/* A small strict CSV reader: one row per line, optional quoted fields, errors as file:line. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Files larger than this are refused: traces are a few MiB. */
#define READ_MAX (UINT64_C(1) << 30)

void gs__csv_init(gs__csv_t *csv, const char *text, size_t len, const char *source)
{
    memset(csv, 0, sizeof(*csv));
    csv->p = text;
    csv->end = text + len;
    csv->source = source != NULL ? source : "<input>";
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Copies the next line (without its end of line) into csv->buf. Returns 1, 0 at the end, or
 * GS_EFORMAT. */
static int read_line(gs__csv_t *csv, char *err, size_t errlen)
{
    if (csv->p >= csv->end)
        return 0;
    csv->line++;
    const char *start = csv->p;
    const char *nl = memchr(start, '\n', (size_t)(csv->end - start));
    const char *stop = nl != NULL ? nl : csv->end;
    csv->p = nl != NULL ? nl + 1 : csv->end;
    if (stop > start && stop[-1] == '\r')
        stop--;
    size_t n = (size_t)(stop - start);
    if (n >= sizeof(csv->buf))
        return gs_fail(err, errlen, GS_EFORMAT, "%s:%u: line longer than %zu bytes", csv->source,
                       csv->line, sizeof(csv->buf) - 1);
    if (memchr(start, '\0', n) != NULL)
        return gs_fail(err, errlen, GS_EFORMAT, "%s:%u: NUL byte in line", csv->source, csv->line);
    memcpy(csv->buf, start, n);
    csv->buf[n] = '\0';
    return 1;
}

/* Reads a quoted field starting at *pp (on the opening quote), unescaping "" in place into out.
 * Leaves *pp after the closing quote. Returns 0 or GS_EFORMAT. */
static int quoted_field(gs__csv_t *csv, char **pp, char *err, size_t errlen)
{
    char *r = *pp + 1, *w = *pp;
    for (;;) {
        if (*r == '\0')
            return gs_fail(err, errlen, GS_EFORMAT, "%s:%u: unterminated quoted field", csv->source,
                           csv->line);
        if (*r == '"') {
            if (r[1] != '"')
                break;
            r++;
        }
        *w++ = *r++;
    }
    *w = '\0';
    r++; /* the closing quote */
    while (is_blank(*r))
        r++;
    if (*r != ',' && *r != '\0')
        return gs_fail(err, errlen, GS_EFORMAT, "%s:%u: text after a quoted field", csv->source,
                       csv->line);
    *pp = r;
    return 0;
}

/* Splits csv->buf into fields. Returns 0 or GS_EFORMAT. */
static int split(gs__csv_t *csv, char *err, size_t errlen)
{
    char *p = csv->buf;
    csv->nfields = 0;
    for (;;) {
        if (csv->nfields == GS__CSV_FIELDS_MAX)
            return gs_fail(err, errlen, GS_EFORMAT, "%s:%u: more than %d fields", csv->source,
                           csv->line, GS__CSV_FIELDS_MAX);
        while (is_blank(*p))
            p++;
        char *field = p;
        if (*p == '"') {
            int result = quoted_field(csv, &p, err, errlen);
            if (result != 0)
                return result;
        } else {
            p += strcspn(p, ",");
            char *trim = p;
            while (trim > field && is_blank(trim[-1]))
                trim--;
            if (memchr(field, '"', (size_t)(trim - field)) != NULL)
                return gs_fail(err, errlen, GS_EFORMAT, "%s:%u: quote inside an unquoted field",
                               csv->source, csv->line);
            if (*trim != '\0' && trim != p)
                *trim = '\0';
        }
        csv->field[csv->nfields++] = field;
        if (*p == '\0')
            return 0;
        *p++ = '\0'; /* the comma */
    }
}

int gs__csv_next(gs__csv_t *csv, char *err, size_t errlen)
{
    for (;;) {
        int result = read_line(csv, err, errlen);
        if (result <= 0)
            return result;
        const char *q = csv->buf;
        while (is_blank(*q))
            q++;
        if (*q == '\0' || (csv->comments && *q == '#'))
            continue; /* blank lines (and comments, where the caller allows them) carry no row */
        result = split(csv, err, errlen);
        return result != 0 ? result : 1;
    }
}

int gs__csv_column(const gs__csv_t *csv, const char *name)
{
    for (unsigned i = 0; i < csv->nfields; i++) {
        if (strcasecmp(csv->field[i], name) == 0)
            return (int)i;
    }
    return -1;
}

int gs__read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t size = 0, cap = 0;
    int result = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return gs_fail(err, errlen, errno == ENOENT ? GS_ENOENT : GS_EIO, "%s: %s", path,
                       strerror(errno));
    for (;;) {
        if (cap - size < 65536) {
            cap = cap ? cap * 2 : 262144;
            if (cap > READ_MAX + 1) {
                result = gs_fail(err, errlen, GS_ELIMIT, "%s: file larger than 1 GiB", path);
                goto out;
            }
            char *grown = realloc(buf, cap + 1);
            if (grown == NULL) {
                result = gs_fail(err, errlen, GS_ENOMEM, "%s: out of memory", path);
                goto out;
            }
            buf = grown;
        }
        size_t n = fread(buf + size, 1, cap - size, f);
        size += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        result = gs_fail(err, errlen, GS_EIO, "%s: read error", path);
        goto out;
    }
    buf[size] = '\0';
    *text = buf;
    *len = size;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return result;
}
