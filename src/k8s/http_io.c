/* SPDX-License-Identifier: Apache-2.0 */
/* The I/O under src/k8s's HTTP client: connections (TCP, or TLS with OpenSSL) read and written
 * against deadlines and a stop flag (http_internal.h). */
#include "http_internal.h"

#include "gpushare/error.h"

#include <errno.h>
#include <openssl/err.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

double gs__khttp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The time left before the nearer of the connection's deadlines (ms; < 0: past), and whether
 * the idle one is the nearer. */
static double time_left(const gs__khttp_conn_t *c, int *idle)
{
    double now = gs__khttp_now_ms(), left = 1e18;
    *idle = 0;
    if (c->deadline > 0)
        left = c->deadline - now;
    if (c->idle_ms > 0 && c->last + (double)c->idle_ms - now < left) {
        left = c->last + (double)c->idle_ms - now;
        *idle = 1;
    }
    return left;
}

int gs__khttp_wait(gs__khttp_conn_t *c, short events)
{
    for (;;) {
        int idle;
        double left = time_left(c, &idle);
        if (left <= 0)
            return GS_ETIMEDOUT;
        if (c->stop != NULL && atomic_load(c->stop))
            return GS_EAGAIN; /* stopped */
        struct pollfd p = {.fd = c->fd, .events = events};
        int n = poll(&p, 1, left < GS__KHTTP_SLICE_MS ? (int)left + 1 : GS__KHTTP_SLICE_MS);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return GS_EIO;
    }
}

/* After an OpenSSL call failed with code: waits for what it needs, or says why it failed. */
static int ssl_retry(gs__khttp_conn_t *c, int code)
{
    int e = SSL_get_error(c->ssl, code);
    if (e == SSL_ERROR_WANT_READ)
        return gs__khttp_wait(c, POLLIN);
    if (e == SSL_ERROR_WANT_WRITE)
        return gs__khttp_wait(c, POLLOUT);
    if (e == SSL_ERROR_ZERO_RETURN)
        return GS_ENOENT; /* closed cleanly */
    return GS_EIO;
}

ssize_t gs__khttp_read(gs__khttp_conn_t *c, char *buf, size_t len)
{
    for (;;) {
        int result;
        if (c->ssl != NULL) {
            ERR_clear_error();
            int n = SSL_read(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
            if (n > 0) {
                c->last = gs__khttp_now_ms();
                return n;
            }
            result = ssl_retry(c, n);
            if (result == GS_ENOENT)
                return 0;
        } else {
            ssize_t n = recv(c->fd, buf, len, 0);
            if (n >= 0) {
                c->last = gs__khttp_now_ms();
                return n;
            }
            result = errno == EAGAIN || errno == EINTR ? gs__khttp_wait(c, POLLIN) : GS_EIO;
        }
        if (result != 0)
            return result;
    }
}

int gs__khttp_write(gs__khttp_conn_t *c, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n;
        int result = 0;
        if (c->ssl != NULL) {
            ERR_clear_error();
            int w = SSL_write(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
            n = w;
            if (w <= 0)
                result = ssl_retry(c, w);
        } else {
            n = send(c->fd, buf, len, MSG_NOSIGNAL);
            if (n < 0)
                result = errno == EAGAIN || errno == EINTR ? gs__khttp_wait(c, POLLOUT) : GS_EIO;
        }
        if (result != 0)
            return result == GS_ENOENT ? GS_EIO : result;
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        }
    }
    return 0;
}
