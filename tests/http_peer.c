/* SPDX-License-Identifier: Apache-2.0 */
/* Raw HTTP peers for the server's tests (http_peer.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_peer.h"

double gs_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int gs_test_dial(uint16_t port, const char *from)
{
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &src.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    dst.sin_port = htons(port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
    return fd;
}

void gs_test_put(int fd, const char *text)
{
    size_t len = strlen(text);
    assert_int_equal(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
}

int gs_test_read_until(int fd, char *out, size_t cap, const char *want, int ms)
{
    size_t n = strlen(out);
    double end = gs_test_now_ms() + ms;
    while (n + 1 < cap && (want == NULL || strstr(out, want) == NULL)) {
        int left = (int)(end - gs_test_now_ms());
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return 0;
        ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
        if (r <= 0)
            return 1;
        n += (size_t)r;
        out[n] = '\0';
    }
    return 0;
}

int gs_test_response(int fd, char *out, size_t cap, int ms)
{
    double end = gs_test_now_ms() + ms;
    out[0] = '\0';
    gs_test_read_until(fd, out, cap, "\r\n\r\n", ms);
    const char *head_end = strstr(out, "\r\n\r\n"), *cl = strstr(out, "Content-Length: ");
    if (head_end == NULL || cl == NULL)
        return -1;
    size_t want = (size_t)(head_end + 4 - out) + strtoul(cl + 16, NULL, 10);
    while (strlen(out) < want && gs_test_now_ms() < end) {
        int left = (int)(end - gs_test_now_ms());
        if (gs_test_read_until(fd, out, cap, NULL, left > 0 ? left : 1))
            break;
    }
    return strlen(out) >= want ? 0 : -1;
}

int gs_test_closed_within(int fd, int ms)
{
    char out[4096];
    double end = gs_test_now_ms() + ms;
    while (gs_test_now_ms() < end) {
        out[0] = '\0';
        int left = (int)(end - gs_test_now_ms());
        if (gs_test_read_until(fd, out, sizeof(out), NULL, left > 0 ? left : 1))
            return 1;
    }
    return 0;
}
