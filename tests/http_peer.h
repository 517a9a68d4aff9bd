/* SPDX-License-Identifier: Apache-2.0 */
/* Raw HTTP peers for the server's tests (test_httpd.c, test_extender_server.c): connections
 * from a chosen loopback address, bytes sent as they are, replies read against a deadline.
 * Each function fails the running cmocka test on a socket error; one thread per peer. */
#ifndef GS_TESTS_HTTP_PEER_H
#define GS_TESTS_HTTP_PEER_H

#include <stddef.h>
#include <stdint.h>

double gs_test_now_ms(void);

/* A blocking connection to 127.0.0.1:port from address `from` ("127.0.0.2"). */
int gs_test_dial(uint16_t port, const char *from);

/* Sends text whole. */
void gs_test_put(int fd, const char *text);

/* Appends what arrives to out (a NUL-terminated string of cap bytes at most) until it holds
 * `want` (NULL: until the peer closes) or ms pass. Returns 1 when the peer closed, else 0. */
int gs_test_read_until(int fd, char *out, size_t cap, const char *want, int ms);

/* Reads one whole response (head and Content-Length body) into out within ms. Returns 0, or
 * -1 when it did not come whole. */
int gs_test_response(int fd, char *out, size_t cap, int ms);

/* Whether the server closes fd within ms (what it sends meanwhile is discarded). */
int gs_test_closed_within(int fd, int ms);

#endif
