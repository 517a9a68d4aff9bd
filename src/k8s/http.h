/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal HTTP/1.1 client for src/k8s: streamed response bodies over TCP or TLS (the API
 * server's LIST and WATCH). The extender's server is src/http's (http/httpd.h).
 *
 * Own code on OpenSSL rather than libcurl: a GET and a watch need little, and libcurl brings
 * dozens of other libraries (GnuTLS, Kerberos, LDAP, libidn2, whose Debian copyright files
 * scripts/licence-check.sh reads as GPL-only) into a component that runs beside the control
 * plane.
 *
 * Every wait has a deadline: the client gives up on a connection or a silence past its limits,
 * and notices a stop within 200 ms. Thread-safe: each request owns its state. */
#ifndef GS_K8S_HTTP_H
#define GS_K8S_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "http/chunks.h"

/* ---- client ---- */

typedef struct gs__khttp_client {
    const char *ca_file;    /* PEM CAs for https; NULL or "": the system's */
    int insecure;           /* https without verifying the server (tests only) */
    long connect_ms;        /* to connect (and the TLS handshake) */
    long total_ms;          /* the whole exchange; 0: no limit */
    long idle_ms;           /* the longest silence once connected; 0: no limit */
    const atomic_int *stop; /* nonzero: give up (checked every 200 ms); may be NULL */
} gs__khttp_client_t;

/* Body data as it arrives (chunked transfer decoded). Return 0 to go on, nonzero to stop (the
 * request then returns 0 if the status line was read). */
typedef gs__http_sink_t gs__khttp_sink_t;

/* A request to url ("http://host:port/path?query" or https): method, extra header lines
 * ("Name: value"), a body (NULL: none) sent with its Content-Length; the response's body is
 * streamed to sink, its status code in *status. Returns 0 (any status), or GS_ETIMEDOUT,
 * GS_ECONNREFUSED, GS_EIO (network, TLS), GS_EAGAIN (stopped), GS_EPROTO (not HTTP) or
 * GS_EINVAL (URL) with "what happened" in err. */
int gs__khttp_request(const gs__khttp_client_t *client, const char *method, const char *url,
                      const char *const *headers, size_t nheaders, const char *body, size_t len,
                      gs__khttp_sink_t sink, void *ctx, long *status, char *err, size_t errlen);

#endif
