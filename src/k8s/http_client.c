/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.1 requests over TCP or TLS (OpenSSL) with a streamed response body (http.h): the API
 * client's LIST pages and WATCH streams. One request per connection. */
#include "http_internal.h"
#include "k8s.h"

#include "gpushare/error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX (64u << 10)

typedef struct url {
    int tls;
    char host[256];
    char port[8];
    const char *target; /* path and query, into the URL */
} url_t;

static int parse_url(const char *text, url_t *u)
{
    memset(u, 0, sizeof(*u));
    const char *p = text;
    if (strncmp(p, "https://", 8) == 0) {
        u->tls = 1;
        p += 8;
    } else if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else {
        return GS_EINVAL;
    }
    const char *end = p + strcspn(p, "/"), *colon;
    if (*p == '[') { /* [IPv6]:port */
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (close == NULL || (size_t)(close - p - 1) >= sizeof(u->host))
            return GS_EINVAL;
        memcpy(u->host, p + 1, (size_t)(close - p - 1));
        colon = close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        size_t n = (size_t)((colon != NULL ? colon : end) - p);
        if (n == 0 || n >= sizeof(u->host))
            return GS_EINVAL;
        memcpy(u->host, p, n);
    }
    size_t plen = colon != NULL ? (size_t)(end - colon - 1) : 0;
    if (colon != NULL && (plen == 0 || plen >= sizeof(u->port)))
        return GS_EINVAL;
    snprintf(u->port, sizeof(u->port), "%.*s", (int)plen, colon != NULL ? colon + 1 : "");
    if (plen == 0)
        snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
    u->target = *end != '\0' ? end : "/";
    return 0;
}

/* Connects to one of host's addresses before the deadline. Returns the socket or an error. */
static int dial(const url_t *u, gs__khttp_conn_t *c, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &ai), result = GS_ECONNREFUSED;
    if (rc != 0)
        return gs_fail(err, errlen, GS_EIO, "%s: %s", u->host, gai_strerror(rc));
    for (struct addrinfo *a = ai; a != NULL && result != 0; a = a->ai_next) {
        c->fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
            continue;
        if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0) {
            result = 0;
        } else if (errno != EINPROGRESS) {
            result = errno == ECONNREFUSED ? GS_ECONNREFUSED : GS_EIO;
        } else if ((result = gs__khttp_wait(c, POLLOUT)) == 0) {
            int soerr = 0;
            socklen_t len = sizeof(soerr);
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
            result = soerr == 0 ? 0 : soerr == ECONNREFUSED ? GS_ECONNREFUSED : GS_EIO;
        }
        if (result != 0) {
            close(c->fd);
            c->fd = -1;
        }
    }
    freeaddrinfo(ai);
    return result != 0 ? gs_fail(err, errlen, result, "connect to %s:%s: %s", u->host, u->port,
                                 gs_strerror(result))
                       : 0;
}

/* Why a TLS handshake failed: the certificate's verification, or OpenSSL's first error. */
static int tls_failed(gs__khttp_conn_t *c, char *err, size_t errlen)
{
    long v = SSL_get_verify_result(c->ssl);
    char buf[256];
    if (v != X509_V_OK)
        return gs_fail(err, errlen, GS_EIO, "TLS: %s", X509_verify_cert_error_string(v));
    ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
    return gs_fail(err, errlen, GS_EIO, "TLS: %s", buf);
}

/* TLS over the connected socket, the server verified against the CAs and its name or address. */
static int tls_start(const gs__khttp_client_t *cl, const url_t *u, gs__khttp_conn_t *c,
                     SSL_CTX **ctxp, char *err, size_t errlen)
{
    unsigned char addr[16];
    int ip = inet_pton(AF_INET, u->host, addr) == 1 || inet_pton(AF_INET6, u->host, addr) == 1;
    SSL_CTX *ctx = *ctxp = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL || (c->ssl = SSL_new(ctx)) == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "TLS: out of memory");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (!cl->insecure) {
        int ok = cl->ca_file != NULL && cl->ca_file[0] != '\0'
                     ? SSL_CTX_load_verify_locations(ctx, cl->ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1)
            return gs_fail(err, errlen, GS_EIO, "TLS: cannot read the CA file %s",
                           cl->ca_file != NULL ? cl->ca_file : "(system)");
        SSL_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
        if (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), u->host) != 1
               : SSL_set1_host(c->ssl, u->host) != 1)
            return gs_fail(err, errlen, GS_EIO, "TLS: cannot verify %s", u->host);
    }
    if (!ip)
        SSL_set_tlsext_host_name(c->ssl, u->host);
    SSL_set_fd(c->ssl, c->fd);
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(c->ssl), e = r == 1 ? 0 : SSL_get_error(c->ssl, r), result;
        if (r == 1)
            return 0;
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return tls_failed(c, err, errlen);
        if ((result = gs__khttp_wait(c, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT)) != 0)
            return gs_fail(err, errlen, result, "TLS: %s", gs_strerror(result));
    }
}

static int send_request(gs__khttp_conn_t *c, const char *method, const url_t *u,
                        const char *const *headers, size_t nheaders, const char *body, size_t len)
{
    gs__k8s_buf_t b = {.max = 1u << 20};
    char line[1024];
    int deflt = strcmp(u->port, u->tls ? "443" : "80") == 0, v6 = strchr(u->host, ':') != NULL;
    int n =
        snprintf(line, sizeof(line), "%s %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n", method, u->target,
                 v6 ? "[" : "", u->host, v6 ? "]" : "", deflt ? "" : ":", deflt ? "" : u->port);
    int result =
        n > 0 && (size_t)n < sizeof(line) ? gs__k8s_buf_add(&b, line, (size_t)n) : GS_ELIMIT;
    static const char fixed[] = "User-Agent: gpushare-scheduler-extender\r\n"
                                "Accept: application/json\r\nAccept-Encoding: identity\r\n"
                                "Connection: close\r\n";
    if (result == 0)
        result = gs__k8s_buf_add(&b, fixed, sizeof(fixed) - 1);
    for (size_t i = 0; result == 0 && i < nheaders; i++) {
        result = gs__k8s_buf_add(&b, headers[i], strlen(headers[i]));
        if (result == 0)
            result = gs__k8s_buf_add(&b, "\r\n", 2);
    }
    if (result == 0 && body != NULL) {
        n = snprintf(line, sizeof(line), "Content-Length: %zu\r\n", len);
        result = gs__k8s_buf_add(&b, line, (size_t)n);
    }
    if (result == 0)
        result = gs__k8s_buf_add(&b, "\r\n", 2);
    if (result == 0)
        result = gs__khttp_write(c, b.data, b.len);
    if (result == 0 && body != NULL)
        result = gs__khttp_write(c, body, len);
    free(b.data);
    return result;
}

/* The response's framing, from its head. */
typedef struct response {
    long status;
    int chunked, has_length;
    uint64_t length;
} response_t;

static int parse_response(const char *head, response_t *r)
{
    memset(r, 0, sizeof(*r));
    if (sscanf(head, "HTTP/1.%*1d %3ld", &r->status) != 1 || r->status < 100)
        return GS_EPROTO;
    for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p, "\r\n")) {
        p += 2;
        if (strncasecmp(p, "Transfer-Encoding:", 18) == 0 && strstr(p, "chunked") != NULL &&
            strstr(p, "chunked") < strstr(p, "\r\n"))
            r->chunked = 1;
        else if (strncasecmp(p, "Content-Length:", 15) == 0)
            r->has_length = sscanf(p + 15, " %" SCNu64, &r->length) == 1;
    }
    return 0;
}

/* Feeds body bytes to the sink by the response's framing. Returns 0 (more), 1 (done or the sink
 * stopped) or an error. */
static int feed(response_t *r, gs__http_chunks_t *d, const char *data, size_t len,
                gs__khttp_sink_t sink, void *ctx)
{
    if (r->chunked) {
        size_t used;
        int state = gs__http_chunks(d, data, len, sink, ctx, &used);
        return state < 0 ? state : state > 0;
    }
    if (r->has_length && len > r->length)
        len = (size_t)r->length;
    int stop = len > 0 && sink(ctx, data, len);
    r->length -= r->has_length ? len : 0;
    return stop || (r->has_length && r->length == 0);
}

/* Reads the response: its head, then its body into the sink. */
int gs__khttp_response(gs__khttp_conn_t *c, gs__khttp_sink_t sink, void *ctx, long *status,
                       char *err, size_t errlen)
{
    gs__k8s_buf_t in = {.max = HEAD_MAX + 65536};
    char chunk[65536], *end = NULL;
    response_t r;
    gs__http_chunks_t d = {0};
    int result = 0;
    while (result == 0 && end == NULL) {
        ssize_t n = gs__khttp_read(c, chunk, sizeof(chunk));
        result = n > 0 ? gs__k8s_buf_add(&in, chunk, (size_t)n) : n == 0 ? GS_EPROTO : (int)n;
        end = result == 0 ? memmem(in.data, in.len, "\r\n\r\n", 4) : NULL;
    }
    if (result == 0 && (result = parse_response(in.data, &r)) == 0) {
        *status = r.status;
        size_t head = (size_t)(end - in.data) + 4;
        int state = feed(&r, &d, in.data + head, in.len - head, sink, ctx);
        while (state == 0) {
            ssize_t n = gs__khttp_read(c, chunk, sizeof(chunk));
            if (n == 0 && !r.chunked && !r.has_length)
                break; /* the body ends with the connection */
            state = n > 0 ? feed(&r, &d, chunk, (size_t)n, sink, ctx) : n == 0 ? GS_EPROTO : (int)n;
        }
        result = state < 0 ? state : 0;
    }
    free(in.data);
    if (result != 0)
        gs_fail(err, errlen, result, "%s",
                result == GS_EPROTO      ? "not an HTTP response, or "
                                           "cut short"
                : result == GS_ETIMEDOUT ? "timed out"
                                         : gs_strerror(result));
    return result;
}

int gs__khttp_request(const gs__khttp_client_t *cl, const char *method, const char *text,
                      const char *const *headers, size_t nheaders, const char *body, size_t len,
                      gs__khttp_sink_t sink, void *ctx, long *status, char *err, size_t errlen)
{
    url_t u;
    double start = gs__khttp_now_ms();
    gs__khttp_conn_t c = {.fd = -1, .stop = cl->stop, .deadline = start + (double)cl->connect_ms};
    SSL_CTX *ctx_tls = NULL;
    *status = 0;
    if (parse_url(text, &u) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "malformed URL %s", text);
    int result = dial(&u, &c, err, errlen);
    if (result == 0 && u.tls)
        result = tls_start(cl, &u, &c, &ctx_tls, err, errlen);
    if (result == 0) {
        c.deadline = cl->total_ms > 0 ? start + (double)cl->total_ms : 0;
        c.idle_ms = cl->idle_ms;
        c.last = gs__khttp_now_ms();
        result = send_request(&c, method, &u, headers, nheaders, body, len);
        if (result != 0)
            gs_fail(err, errlen, result, "sending the request: %s", gs_strerror(result));
        else
            result = gs__khttp_response(&c, sink, ctx, status, err, errlen);
    }
    if (c.ssl != NULL)
        SSL_free(c.ssl);
    SSL_CTX_free(ctx_tls);
    if (c.fd >= 0)
        close(c.fd);
    return result;
}
