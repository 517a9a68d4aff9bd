/* SPDX-License-Identifier: Apache-2.0 */
/* Module images: the gpusim kernel image text format ("gpusim-module 1") and file loading.
 *
 *   gpusim-module 1
 *   # a comment
 *   kernel vectorAdd 1ms        duration: a number with unit ns, us, ms or s (simulated time)
 *   global counter 4096         a __device__ variable of 4096 bytes (cuModuleGetGlobal)
 *
 * Any other image (cubin, fatbin, PTX) is accepted as opaque: every name resolves with the
 * default cost. The parser reads at most max bytes and never past a NUL. */
#include "cuda_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC          "gpusim-module"
#define LINE_MAX_BYTES 1024
#define MAX_ENTRIES    4096
#define MAX_DURATION   (INT64_C(3600) * 1000000000) /* one hour of simulated time */
#define MAX_FILE       (64u << 20)

typedef struct cursor {
    const char *text;
    size_t len; /* bytes up to the NUL or max */
    size_t pos;
    int line;
} cursor_t;

/* Returns nonzero when the image starts with the magic word. Reads no byte after a mismatch. */
static int has_magic(const unsigned char *image, size_t max)
{
    for (size_t i = 0; i < sizeof(MAGIC) - 1; i++) {
        if (i >= max || image[i] != (unsigned char)MAGIC[i])
            return 0;
    }
    return 1;
}

/* Copies the next line (without its newline) into buf; returns 0 at the end, -1 if too long. */
static int next_line(cursor_t *c, char *buf, size_t cap)
{
    if (c->pos >= c->len)
        return 0;
    size_t start = c->pos;
    while (c->pos < c->len && c->text[c->pos] != '\n')
        c->pos++;
    size_t n = c->pos - start;
    if (c->pos < c->len)
        c->pos++;
    c->line++;
    if (n >= cap)
        return -1;
    memcpy(buf, c->text + start, n);
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\r')
        buf[n - 1] = '\0';
    return 1;
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= GSIM_CU_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && ch != '_' && ch != '$' && ch != '.')
            return 0;
    }
    return 1;
}

/* Parses "1ms", "2.5us", "30 s" into simulated nanoseconds. Returns 0 or -1. */
static int parse_duration(const char *s, int64_t *ns)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0))
        return -1;
    while (*end == ' ' || *end == '\t')
        end++;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].unit) == 0) {
            double total = v * units[i].scale;
            if (total > (double)MAX_DURATION)
                return -1;
            *ns = (int64_t)(total + 0.5);
            return 0;
        }
    }
    return -1;
}

/* Parses a byte count with an optional K, M or G suffix (binary units). Returns 0 or -1. */
static int parse_bytes(const char *s, size_t *bytes)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift != 0)
        end++;
    if (*end != '\0' || v == 0 || v > (UINT64_C(1) << 40) >> shift)
        return -1;
    *bytes = (size_t)(v << shift);
    return 0;
}

static int has_kernel(const gsim_cu_image_t *img, const char *name)
{
    for (size_t i = 0; i < img->n_kernels; i++) {
        if (strcmp(img->kernels[i].name, name) == 0)
            return 1;
    }
    for (size_t i = 0; i < img->n_globals; i++) {
        if (strcmp(img->globals[i].name, name) == 0)
            return 1;
    }
    return 0;
}

/* Splits "word1 word2 rest..." in place into at most 3 fields. Returns the count. */
static int split3(char *line, char **f)
{
    int n = 0;
    char *p = line;
    while (n < 3) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        f[n++] = p;
        if (n == 3)
            break;
        while (*p != '\0' && *p != ' ' && *p != '\t')
            p++;
        if (*p != '\0')
            *p++ = '\0';
    }
    if (n == 3) {
        size_t len = strlen(f[2]);
        while (len > 0 && (f[2][len - 1] == ' ' || f[2][len - 1] == '\t'))
            f[2][--len] = '\0';
    }
    return n;
}

/* Applies one "kernel NAME DURATION" or "global NAME BYTES" line. Returns 0, -EINVAL, -ENOMEM. */
static int parse_entry(gsim_cu_image_t *img, char **f, int n, char *err, size_t errlen, int line)
{
    int is_kernel = strcmp(f[0], "kernel") == 0;
    if (!is_kernel && strcmp(f[0], "global") != 0) {
        snprintf(err, errlen, "line %d: unknown directive \"%.32s\"", line, f[0]);
        return -EINVAL;
    }
    if (n != 3 || !valid_name(f[1])) {
        snprintf(err, errlen, "line %d: expected \"%s NAME %s\"", line, f[0],
                 is_kernel ? "DURATION" : "BYTES");
        return -EINVAL;
    }
    if (has_kernel(img, f[1])) {
        snprintf(err, errlen, "line %d: \"%.64s\" declared twice", line, f[1]);
        return -EINVAL;
    }
    if (img->n_kernels + img->n_globals >= MAX_ENTRIES) {
        snprintf(err, errlen, "line %d: more than %d entries", line, MAX_ENTRIES);
        return -EINVAL;
    }
    if (is_kernel) {
        int64_t ns;
        if (parse_duration(f[2], &ns) != 0) {
            snprintf(err, errlen, "line %d: bad duration \"%.32s\" (e.g. 1ms, 250us)", line, f[2]);
            return -EINVAL;
        }
        gsim_cu_image_kernel_t *k = realloc(img->kernels, (img->n_kernels + 1) * sizeof(*k));
        if (k == NULL)
            return -ENOMEM;
        img->kernels = k;
        snprintf(k[img->n_kernels].name, GSIM_CU_NAME_MAX, "%s", f[1]);
        k[img->n_kernels++].duration_ns = ns;
        return 0;
    }
    size_t bytes;
    if (parse_bytes(f[2], &bytes) != 0) {
        snprintf(err, errlen, "line %d: bad size \"%.32s\" (e.g. 4096, 64K)", line, f[2]);
        return -EINVAL;
    }
    gsim_cu_image_global_t *g = realloc(img->globals, (img->n_globals + 1) * sizeof(*g));
    if (g == NULL)
        return -ENOMEM;
    img->globals = g;
    snprintf(g[img->n_globals].name, GSIM_CU_NAME_MAX, "%s", f[1]);
    g[img->n_globals++].bytes = bytes;
    return 0;
}

static int parse_header(cursor_t *c, char *err, size_t errlen)
{
    char line[LINE_MAX_BYTES];
    char *f[3];
    if (next_line(c, line, sizeof(line)) != 1 || split3(line, f) != 2 || strcmp(f[0], MAGIC) != 0) {
        snprintf(err, errlen, "line 1: expected \"%s 1\"", MAGIC);
        return -EINVAL;
    }
    if (strcmp(f[1], "1") != 0) {
        snprintf(err, errlen, "line 1: unsupported format version \"%.16s\"", f[1]);
        return -EINVAL;
    }
    return 0;
}

static int parse_body(cursor_t *c, gsim_cu_image_t *img, char *err, size_t errlen)
{
    char line[LINE_MAX_BYTES];
    int rc;
    while ((rc = next_line(c, line, sizeof(line))) == 1) {
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        char *f[3];
        int n = split3(line, f);
        if (n == 0)
            continue;
        int result = parse_entry(img, f, n, err, errlen, c->line);
        if (result != 0)
            return result;
    }
    if (rc < 0) {
        snprintf(err, errlen, "line %d: longer than %d bytes", c->line, LINE_MAX_BYTES - 1);
        return -EINVAL;
    }
    return 0;
}

int gsim_cu_image_parse(const void *image, size_t max, gsim_cu_image_t *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (!has_magic(image, max))
        return 0;
    const char *text = image;
    cursor_t c = {.text = text, .len = strnlen(text, max)};
    out->known = 1;
    int result = parse_header(&c, err, errlen);
    if (result == 0)
        result = parse_body(&c, out, err, errlen);
    if (result != 0)
        gsim_cu_image_free(out);
    return result;
}

void gsim_cu_image_free(gsim_cu_image_t *image)
{
    free(image->kernels);
    free(image->globals);
    memset(image, 0, sizeof(*image));
}

CUresult gsim_cu_read_file(const char *path, char **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    CUresult result = CUDA_SUCCESS;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_FILE) {
        result = CUDA_ERROR_FILE_NOT_FOUND;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return result;
}

int gsim_cu_image_copy(const gsim_cu_image_t *from, gsim_cu_image_t *to)
{
    memset(to, 0, sizeof(*to));
    to->known = from->known;
    if (from->n_kernels > 0) {
        to->kernels = malloc(from->n_kernels * sizeof(*to->kernels));
        if (to->kernels == NULL)
            goto fail;
        memcpy(to->kernels, from->kernels, from->n_kernels * sizeof(*to->kernels));
        to->n_kernels = from->n_kernels;
    }
    if (from->n_globals > 0) {
        to->globals = malloc(from->n_globals * sizeof(*to->globals));
        if (to->globals == NULL)
            goto fail;
        memcpy(to->globals, from->globals, from->n_globals * sizeof(*to->globals));
        to->n_globals = from->n_globals;
    }
    return 0;
fail:
    gsim_cu_image_free(to);
    return -ENOMEM;
}

const gsim_cu_image_kernel_t *gsim_cu_image_kernel(const gsim_cu_image_t *image, const char *name)
{
    for (size_t i = 0; i < image->n_kernels; i++) {
        if (strcmp(image->kernels[i].name, name) == 0)
            return &image->kernels[i];
    }
    return NULL;
}
