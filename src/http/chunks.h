/* SPDX-License-Identifier: Apache-2.0 */
/* The chunked transfer coding's decoder (RFC 9112 7.1): bytes in as they arrive, in any split,
 * the data out to a sink. Used by the HTTP server of src/http (request bodies) and the API
 * client of src/k8s (responses). No allocation, no globals: one decoder per message, owned by
 * its caller; thread-safe as long as a decoder is used by one thread at a time. */
#ifndef GS_HTTP_CHUNKS_H
#define GS_HTTP_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

/* Body data as it is decoded. Return 0 to go on, nonzero to stop. */
typedef int (*gs__http_sink_t)(void *ctx, const char *data, size_t len);

/* A decoder's state: zero it ({0}) before the first byte of a message. */
typedef struct gs__http_chunks {
    int state;
    int digits;
    uint64_t left; /* of the current chunk, or its size being read */
    size_t line;   /* length of the trailer line being read */
} gs__http_chunks_t;

/* Decodes in[0..len), giving the data to sink; *used: bytes consumed (the bytes after the last
 * chunk's trailers are not). Returns 0 (more wanted), 1 (the sink asked to stop), 2 (the last
 * chunk and its trailers are read) or GS_EPROTO (not chunked coding). */
int gs__http_chunks(gs__http_chunks_t *d, const char *in, size_t len, gs__http_sink_t sink,
                    void *ctx, size_t *used);

#endif
