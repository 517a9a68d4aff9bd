/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal HTTP/1.1 for src/k8s: a server of small request/response exchanges (the extender's
 * verbs) and a client with streamed response bodies over TCP or TLS (the API server's LIST and
 * Own code on OpenSSL rather than libmicrohttpd and libcurl: two verbs and a GET need little,
 * and those libraries bring dozens of others (GnuTLS, Kerberos, LDAP, libidn2, whose Debian
 * copyright files scripts/licence-check.sh reads as GPL-only) into a component that runs beside
 * the control plane.
 *
 * Every wait has a deadline: the server closes a connection idle for 30 s or slower than 10 s
 * to send a request, the client gives up on a connection or a silence past its limits; both
 * notice a stop within 200 ms. Thread-safe: each server and request owns its state. */
#ifndef GS_K8S_HTTP_H
#define GS_K8S_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- server ---- */

/* Answers one request: returns a malloc'ed body (the server frees it), sets *status and
 * *type; NULL answers 500. Called on the server's worker threads. */
typedef char *(*gs__khttp_handler_t)(void *ctx, const char *method, const char *path,
                                     const char *body, size_t len, int *status, const char **type);

typedef struct gs__khttp_server gs__khttp_server_t;

/* Listens on addr:port (IPv4; port 0: any free one, in *bound) and serves requests with
 * `threads` workers, up to 64 connections waiting. Request bodies over max_body bytes are
 * answered 413 and the connection closed. Returns 0, GS_EINVAL (address), GS_EIO (socket) or
 * GS_ENOMEM. */
int gs__khttp_serve(const char *addr, uint16_t port, int threads, size_t max_body,
                    gs__khttp_handler_t handler, void *ctx, gs__khttp_server_t **out,
                    uint16_t *bound);

/* Stops accepting, ends every connection and joins the threads (within about 200 ms). */
void gs__khttp_stop(gs__khttp_server_t *server);

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
typedef int (*gs__khttp_sink_t)(void *ctx, const char *data, size_t len);

/* A request to url ("http://host:port/path?query" or https): method, extra header lines
 * ("Name: value"), a body (NULL: none) sent with its Content-Length; the response's body is
 * streamed to sink, its status code in *status. Returns 0 (any status), or GS_ETIMEDOUT,
 * GS_ECONNREFUSED, GS_EIO (network, TLS), GS_EAGAIN (stopped), GS_EPROTO (not HTTP) or
 * GS_EINVAL (URL) with "what happened" in err. */
int gs__khttp_request(const gs__khttp_client_t *client, const char *method, const char *url,
                      const char *const *headers, size_t nheaders, const char *body, size_t len,
                      gs__khttp_sink_t sink, void *ctx, long *status, char *err, size_t errlen);

#endif
