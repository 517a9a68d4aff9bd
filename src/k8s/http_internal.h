/* SPDX-License-Identifier: Apache-2.0 */
/* Private parts of src/k8s's HTTP client (http_io.c, http_client.c): connections with
 * deadlines. http.h says what they are for; the chunked decoder is src/http's (http/chunks.h). */
#ifndef GS_K8S_HTTP_INTERNAL_H
#define GS_K8S_HTTP_INTERNAL_H

#include "http.h"
#include "http/chunks.h"

#include <openssl/ssl.h>
#include <sys/types.h>

#define GS__KHTTP_SLICE_MS 200 /* how often a wait looks at the stop flag */

/* A connection: a non-blocking socket, TLS on it when ssl is set. */
typedef struct gs__khttp_conn {
    int fd;
    SSL *ssl;
    const atomic_int *stop; /* may be NULL */
    double deadline;        /* absolute, ms of gs__khttp_now_ms; 0: none */
    long idle_ms;           /* the longest wait for the peer; 0: none */
    double last;            /* when the peer was last heard */
} gs__khttp_conn_t;

double gs__khttp_now_ms(void);

/* Waits until the connection is ready for events (POLLIN, POLLOUT). Returns 0, GS_ETIMEDOUT,
 * GS_EAGAIN (stop asked) or GS_EIO. */
int gs__khttp_wait(gs__khttp_conn_t *c, short events);

/* Reads what is there (waiting for something): > 0 bytes, 0 at the end, or an error code. */
ssize_t gs__khttp_read(gs__khttp_conn_t *c, char *buf, size_t len);

/* Writes everything. Returns 0 or an error code. */
int gs__khttp_write(gs__khttp_conn_t *c, const char *buf, size_t len);

/* For tests and fuzzing: reads a response from a connection, as gs__khttp_request does after
 * sending its request. Same returns. */
int gs__khttp_response(gs__khttp_conn_t *c, gs__khttp_sink_t sink, void *ctx, long *status,
                       char *err, size_t errlen);

#endif
