/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's MPS control daemon: the command language of NVIDIA's nvidia-cuda-mps-control. */
#include "mps_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 8

typedef struct reply_buf {
    char *buf;
    size_t len, used;
} reply_buf_t;

static void say(reply_buf_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(reply_buf_t *r, const char *fmt, ...)
{
    if (r->used >= r->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->buf + r->used, r->len - r->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        r->used += (size_t)n < r->len - r->used ? (size_t)n : r->len - r->used - 1;
}

/* Parses a decimal pid/uid/device argument. Returns 0 or -1. */
static int parse_uint(const char *text, unsigned long max, unsigned long *out)
{
    char *end;
    if (text == NULL || *text < '0' || *text > '9')
        return -1;
    unsigned long v = strtoul(text, &end, 10);
    if (*end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

static int find_server(const mpsd_t *d, unsigned long pid)
{
    for (uint32_t i = 0; i < d->state.n_servers; i++) {
        if ((unsigned long)d->state.servers[i].pid == pid)
            return (int)i;
    }
    return -1;
}

static void cmd_server_list(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    (void)argc;
    (void)argv;
    for (uint32_t i = 0; i < d->state.n_servers; i++)
        say(r, "%d\n", (int)d->state.servers[i].pid);
}

static void cmd_start_server(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    unsigned long uid;
    if (argc != 3 || strcmp(argv[1], "-uid") != 0 || parse_uint(argv[2], UINT32_MAX, &uid) != 0)
        say(r, "Usage: start_server -uid UID\n");
    else if (mpsd_start_server(d, (uint32_t)uid) < 0)
        say(r, "Failed to start server for user %lu\n", uid);
}

static void cmd_client_list(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    unsigned long pid;
    int32_t pids[256];
    int s = argc == 2 && parse_uint(argv[1], INT32_MAX, &pid) == 0 ? find_server(d, pid) : -1;
    if (s < 0) {
        say(r, "Server %s not found\n", argc == 2 ? argv[1] : "");
        return;
    }
    int n = mpsd_client_pids(d, d->state.servers[s].uid, pids, 256);
    for (int i = 0; i < n && i < 256; i++)
        say(r, "%d\n", (int)pids[i]);
}

static void cmd_server_status(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    unsigned long pid;
    int s = argc == 2 && parse_uint(argv[1], INT32_MAX, &pid) == 0 ? find_server(d, pid) : -1;
    say(r, "%s\n", s >= 0 ? "ACTIVE" : "INVALID");
}

static void cmd_set_percentage(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    char *end = NULL;
    double pct = argc == 2 ? strtod(argv[1], &end) : 0.0;
    if (argc != 2 || end == argv[1] || *end != '\0' || !(pct > 0.0 && pct <= 100.0)) {
        say(r, "Invalid percentage: expected a number in (0, 100]\n");
        return;
    }
    d->state.default_thread_pct = pct;
    mpsd_save_state(d);
    say(r, "%.1f\n", pct);
}

static void cmd_get_percentage(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    (void)argc;
    (void)argv;
    say(r, "%.1f\n", d->state.default_thread_pct);
}

static void cmd_set_pinned(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    unsigned long dev;
    uint64_t bytes;
    if (argc != 3 || parse_uint(argv[1], GSIM_MAX_DEVICES - 1, &dev) != 0 ||
        gsim_mps_parse_size(argv[2], &bytes) != 0) {
        say(r, "Usage: set_default_device_pinned_mem_limit DEV VALUE (e.g. 0 1G)\n");
        return;
    }
    d->state.default_pinned[dev] = bytes;
    mpsd_save_state(d);
}

static void cmd_get_pinned(mpsd_t *d, int argc, char **argv, reply_buf_t *r)
{
    unsigned long dev;
    char text[32];
    if (argc != 2 || parse_uint(argv[1], GSIM_MAX_DEVICES - 1, &dev) != 0) {
        say(r, "Usage: get_default_device_pinned_mem_limit DEV\n");
        return;
    }
    gsim_mps_format_size(d->state.default_pinned[dev], text, sizeof(text));
    say(r, "%s\n", text);
}

typedef struct command {
    const char *name;
    void (*run)(mpsd_t *d, int argc, char **argv, reply_buf_t *r);
} command_t;

static const command_t commands[] = {
    {"get_server_list", cmd_server_list},
    {"start_server", cmd_start_server},
    {"get_client_list", cmd_client_list},
    {"get_server_status", cmd_server_status},
    {"set_default_active_thread_percentage", cmd_set_percentage},
    {"get_default_active_thread_percentage", cmd_get_percentage},
    {"set_default_device_pinned_mem_limit", cmd_set_pinned},
    {"get_default_device_pinned_mem_limit", cmd_get_pinned},
};

int mpsd_command(mpsd_t *d, const char *line, char *reply, size_t len)
{
    char copy[1024], *argv[MAX_ARGS], *save = NULL;
    int argc = 0;
    reply_buf_t r = {.buf = reply, .len = len, .used = 0};
    reply[0] = '\0';
    snprintf(copy, sizeof(copy), "%s", line);
    for (char *tok = strtok_r(copy, " \t", &save); tok != NULL && argc < MAX_ARGS;
         tok = strtok_r(NULL, " \t", &save))
        argv[argc++] = tok;
    if (argc == 0)
        return 0;
    mpsd_log(d, "Command: %s", line);
    if (strcmp(argv[0], "quit") == 0)
        return 1;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[0], commands[i].name) == 0) {
            commands[i].run(d, argc, argv, &r);
            return 0;
        }
    }
    say(&r, "Unrecognized command: %s\n", argv[0]);
    return 0;
}
