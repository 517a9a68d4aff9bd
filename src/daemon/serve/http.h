/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics endpoint's HTTP server: one thread, epoll, a fixed table of connections.
 *
 * Why not libmicrohttpd: any local user can connect to the endpoint, and a scrape must never
 * wait behind other users' idle connections. libmicrohttpd can refuse connections beyond a
 * limit or time idle ones out, but not close an idle connection to make room for a new one, so
 * a user holding LIMIT idle connections (re-opened every timeout) blocks every scrape. Here a
 * connection that has not sent its request is evicted, oldest first, when the table is full;
 * requests are answered at once from a snapshot (so no connection waits on another), and no
 * select() limit applies (epoll). It serves GET and HEAD of one text document, HTTP/1.0 and
 * 1.1, one request per connection ("Connection: close"). */
#ifndef GS_DAEMON_HTTP_H
#define GS_DAEMON_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gs__http gs__http_t;

/* The document served at path (a copy, owned by the server from then on). */
typedef struct gs__http_doc {
    char *body; /* malloc'ed */
    size_t len;
} gs__http_doc_t;

/* Starts the server on addr:port (host order; port must not be 0) serving content_type at path
 * ("/metrics"; "/" gets a pointer to it). Returns 0 and *out, or -errno (GS_EBUSY: the port is
 * taken). */
int gs__http_start(uint32_t addr, uint16_t port, const char *path, const char *content_type,
                   gs__http_t **out);

/* Replaces the document (takes body, a malloc'ed buffer of len bytes). Thread-safe. */
void gs__http_publish(gs__http_t *http, char *body, size_t len);

/* Stops the thread, closes every connection and frees the server (NULL is fine). */
void gs__http_stop(gs__http_t *http);

#endif
