/* SPDX-License-Identifier: Apache-2.0 */
/* Private parts of src/k8s's HTTP (http_io.c, http_server.c, http_client.c): connections with
 * deadlines, the chunked decoder. http.h says what they are for. */
#ifndef GS_K8S_HTTP_INTERNAL_H
#define GS_K8S_HTTP_INTERNAL_H

#include "http.h"

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

/* The chunked transfer coding's decoder, fed bytes as they come. */
typedef struct gs__khttp_chunks {
    int state;
    int digits;
    uint64_t left; /* of the current chunk, or its size being read */
    size_t line;   /* length of the trailer line being read */
} gs__khttp_chunks_t;

/* Decodes in[0..len), giving the data to sink; *used: bytes consumed. Returns 0 (more wanted),
 * 1 (the sink asked to stop), 2 (the last chunk and trailers are read) or GS_EPROTO. */
int gs__khttp_chunks(gs__khttp_chunks_t *d, const char *in, size_t len, gs__khttp_sink_t sink,
                     void *ctx, size_t *used);

/* For tests and fuzzing: serves the requests of an already connected socket (non-blocking)
 * until it closes, as the server's workers do; the caller closes fd. */
void gs__khttp_serve_fd(gs__khttp_server_t *server, int fd);

/* For tests and fuzzing: reads a response from a connection, as gs__khttp_request does after
 * sending its request. Same returns. */
int gs__khttp_response(gs__khttp_conn_t *c, gs__khttp_sink_t sink, void *ctx, long *status,
                       char *err, size_t errlen);

#endif
