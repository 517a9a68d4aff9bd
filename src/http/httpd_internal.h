/* SPDX-License-Identifier: Apache-2.0 */
/* Private parts of src/http's server (httpd.c, request.c): the request head's parser, which is
 * a pure function of the head's bytes so that tests and the fuzz target can call it alone.
 * httpd.h says what the server is for. */
#ifndef GS_HTTP_HTTPD_INTERNAL_H
#define GS_HTTP_HTTPD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define GS__HTTPD_HEAD_MAX   (16u << 10) /* bytes of a request line and its headers */
#define GS__HTTPD_METHOD_MAX 16
#define GS__HTTPD_TARGET_MAX 4096

/* What the server needs of a request head. */
typedef struct gs__httpd_head {
    char method[GS__HTTPD_METHOD_MAX];
    char target[GS__HTTPD_TARGET_MAX];
    int http10;      /* HTTP/1.0 (else 1.1) */
    int close;       /* the connection ends after this request */
    int chunked;     /* Transfer-Encoding: chunked */
    int expect;      /* Expect: 100-continue */
    uint64_t length; /* Content-Length (0 when none) */
} gs__httpd_head_t;

/* Parses a whole head: len bytes, the request line and headers ending with the empty line
 * (CRLF CRLF). Returns 0 with *out, or the status to refuse it with (400, 417, 501, 505; the
 * connection is then closed). */
int gs__httpd_parse_head(const char *head, size_t len, gs__httpd_head_t *out);

/* The reason phrase of a status the server sends ("Bad Request"; "Unknown" for others). */
const char *gs__httpd_reason(int status);

#endif
