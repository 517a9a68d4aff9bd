/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request head's parser (httpd_internal.h): strict framing per RFC 9112, anything
 * a proxy could read another way refused. */
#include "httpd_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The header fields that decide framing and the connection, as seen in one head. */
typedef struct fields {
    int lengths, encodings, hosts, keep_alive;
} fields_t;

static int is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Every line ends with CRLF, no bare CR or LF, no NUL (RFC 9112 2.2: a recipient may accept a
 * bare LF, but a proxy that does not would frame the request otherwise). */
static int lines_ok(const char *head, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (head[i] == '\0' || (head[i] == '\r' && (i + 1 == len || head[i + 1] != '\n')) ||
            (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')))
            return 0;
    }
    return 1;
}

/* "METHOD SP TARGET SP HTTP/1.x CRLF"; *next: the first header line. Returns 0 or a status. */
static int request_line(const char *p, gs__httpd_head_t *out, const char **next)
{
    size_t m = 0, t = 0;
    while (is_tchar((unsigned char)p[m]))
        m++;
    if (m == 0 || m >= sizeof(out->method) || p[m] != ' ')
        return 400;
    memcpy(out->method, p, m);
    out->method[m] = '\0';
    p += m + 1;
    while ((unsigned char)p[t] > ' ' && (unsigned char)p[t] < 0x7f)
        t++;
    if (t == 0 || t >= sizeof(out->target) || p[t] != ' ')
        return 400;
    memcpy(out->target, p, t);
    out->target[t] = '\0';
    p += t + 1;
    if (strncmp(p, "HTTP/1.1\r\n", 10) == 0 || strncmp(p, "HTTP/1.0\r\n", 10) == 0) {
        out->http10 = p[7] == '0';
        *next = p + 10;
        return 0;
    }
    return strncmp(p, "HTTP/", 5) == 0 && p[5] >= '0' && p[5] <= '9' ? 505 : 400;
}

/* Whether the comma-separated list v[0..n) holds token (any case). */
static int list_has(const char *v, size_t n, const char *token)
{
    size_t k = strlen(token);
    for (size_t i = 0; i < n;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t j = i;
        while (j < n && v[j] != ',' && v[j] != ' ' && v[j] != '\t')
            j++;
        if (j - i == k && strncasecmp(v + i, token, k) == 0)
            return 1;
        i = j;
    }
    return 0;
}

/* Content-Length: 1*DIGIT, no sign, no list, at most 19 digits. */
static int content_length(const char *v, size_t n, uint64_t *out)
{
    if (n == 0 || n > 19)
        return 400;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return 400;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *out = x;
    return 0;
}

/* One header field, name[0..nn) and its value v[0..n) without surrounding whitespace. */
static int field(const char *name, size_t nn, const char *v, size_t n, gs__httpd_head_t *out,
                 fields_t *f)
{
#define IS(x) (nn == sizeof(x) - 1 && strncasecmp(name, x, nn) == 0)
    if (IS("Content-Length"))
        return f->lengths++ > 0 ? 400 : content_length(v, n, &out->length);
    if (IS("Transfer-Encoding")) {
        if (f->encodings++ > 0)
            return 400;
        out->chunked = n == 7 && strncasecmp(v, "chunked", 7) == 0;
        return out->chunked ? 0 : 501; /* a coding of ours it is not, or chunked not alone */
    }
    if (IS("Host"))
        f->hosts++;
    else if (IS("Connection")) {
        out->close |= list_has(v, n, "close");
        f->keep_alive |= list_has(v, n, "keep-alive");
    } else if (IS("Expect")) {
        out->expect = n == 12 && strncasecmp(v, "100-continue", 12) == 0;
        return out->expect ? 0 : 417;
    }
    return 0;
#undef IS
}

/* "name: value CRLF" with no whitespace before the colon and no fold (RFC 9112 5.1, 5.2). */
static int header_line(const char *p, const char *eol, gs__httpd_head_t *out, fields_t *f)
{
    const char *colon = p;
    while (colon < eol && is_tchar((unsigned char)*colon))
        colon++;
    if (colon == p || colon == eol || *colon != ':')
        return 400;
    const char *v = colon + 1, *end = eol;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    for (const char *c = v; c < end; c++)
        if ((unsigned char)*c < ' ' && *c != '\t')
            return 400;
    return field(p, (size_t)(colon - p), v, (size_t)(end - v), out, f);
}

int gs__httpd_parse_head(const char *head, size_t len, gs__httpd_head_t *out)
{
    fields_t f = {0};
    const char *p;
    memset(out, 0, sizeof(*out));
    if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0 || !lines_ok(head, len))
        return 400;
    while (strncmp(head, "\r\n", 2) == 0 && len > 4) { /* RFC 9112 2.2: empty lines before */
        head += 2;
        len -= 2;
    }
    int status = request_line(head, out, &p);
    while (status == 0 && p < head + len - 2) {
        const char *eol = memchr(p, '\r', (size_t)(head + len - p));
        status = header_line(p, eol, out, &f);
        p = eol + 2;
    }
    if (status != 0)
        return status;
    if ((f.lengths > 0 && f.encodings > 0) || (out->http10 && f.encodings > 0) ||
        (!out->http10 && f.hosts != 1) || f.hosts > 1)
        return 400;
    out->close |= out->http10 && !f.keep_alive;
    return 0;
}

const char *gs__httpd_reason(int status)
{
    static const struct {
        int status;
        const char *reason;
    } reasons[] = {
        {100, "Continue"},
        {200, "OK"},
        {400, "Bad Request"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {413, "Content Too Large"},
        {417, "Expectation Failed"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {503, "Service Unavailable"},
        {505, "HTTP Version Not Supported"},
    };
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}
