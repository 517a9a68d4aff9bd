/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare status: what a GPU's mode adds under its row (MIG instances, the MPS server), each
 * line at most 80 columns (what is cut is in status --json); a GPU's problem, with its fix, is
 * wrapped, never cut. */
#include "daemon_cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 80

static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints one line, cut to WIDTH columns. */
static void line(const char *fmt, ...)
{
    char text[1024], fitted[WIDTH + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    printf("%s\n", gs__cli_fit(text, WIDTH, fitted, sizeof(fitted)));
}

static void print_mig(const json_t *mig)
{
    line("     MIG %s: %llu created, %llu reused, %llu destroyed", gs__cli_str(mig, "layout"),
         (unsigned long long)gs__cli_uint(mig, "created"),
         (unsigned long long)gs__cli_uint(mig, "reused"),
         (unsigned long long)gs__cli_uint(mig, "destroyed"));
    const json_t *instances = json_object_get(mig, "instances");
    if (json_array_size(instances) == 0)
        return;
    printf("     %5s  %-10s %-6s %-10s %-7s %5s  %s\n", "GI", "PROFILE", "SLOTS", "MEMORY", "STATE",
           "LEASE", "UUID");
    size_t i;
    const json_t *in;
    json_array_foreach(instances, i, in)
    {
        char memory[32], slots[16], lease[24] = "-";
        gs__cli_bytes(gs__cli_uint(in, "memory"), memory, sizeof(memory));
        uint64_t start = gs__cli_uint(in, "start"), n = gs__cli_uint(in, "slots");
        if (n > 1)
            snprintf(slots, sizeof(slots), "%llu-%llu", (unsigned long long)start,
                     (unsigned long long)(start + n - 1));
        else
            snprintf(slots, sizeof(slots), "%llu", (unsigned long long)start);
        if (json_is_integer(json_object_get(in, "lease")))
            snprintf(lease, sizeof(lease), "%llu", (unsigned long long)gs__cli_uint(in, "lease"));
        line("     %5llu  %-10s %-6s %-10s %-7s %5s  %s",
             (unsigned long long)gs__cli_uint(in, "gpu_instance"), gs__cli_str(in, "profile"),
             slots, memory, gs__cli_str(in, "state"), lease, gs__cli_str(in, "uuid"));
    }
}

static void print_mps(const json_t *mps)
{
    if (strcmp(gs__cli_str(mps, "state"), "up") != 0) {
        line("     MPS control daemon down: %s (restarted %llu times)", gs__cli_str(mps, "error"),
             (unsigned long long)gs__cli_uint(mps, "restarts"));
        return;
    }
    line("     MPS control daemon pid %llu, %llu client%s, restarted %llu times, pipe %s",
         (unsigned long long)gs__cli_uint(mps, "pid"),
         (unsigned long long)gs__cli_uint(mps, "clients"),
         gs__cli_uint(mps, "clients") == 1 ? "" : "s",
         (unsigned long long)gs__cli_uint(mps, "restarts"), gs__cli_str(mps, "pipe_directory"));
    const json_t *servers = json_object_get(mps, "servers");
    const json_t *clients = json_object_get(mps, "client_pids");
    size_t i;
    const json_t *pid;
    json_array_foreach(servers, i, pid)
    {
        char text[512];
        size_t off = (size_t)snprintf(text, sizeof(text), "     MPS server pid %lld, clients:",
                                      (long long)json_integer_value(pid));
        size_t k;
        const json_t *c;
        json_array_foreach(clients, k, c)
        {
            if (off < sizeof(text))
                off += (size_t)snprintf(text + off, sizeof(text) - off, " %lld",
                                        (long long)json_integer_value(c));
        }
        line("%s%s", text, json_array_size(clients) == 0 ? " none" : "");
    }
}

/* Prints label then text wrapped at spaces to WIDTH columns, the lines after the first under the
 * text: a problem's fix is the part an operator needs, and it comes last. */
static void wrapped(const char *label, const char *text)
{
    size_t indent = strlen(label), room = WIDTH - indent;
    const char *lead = label;
    while (*text != '\0') {
        size_t n = strlen(text);
        if (n > room) {
            n = room;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0) /* a word longer than the room: cut it there */
                n = room;
        }
        printf("%s%.*s\n", lead, (int)n, text);
        text += n;
        while (*text == ' ')
            text++;
        lead = "";
        printf("%*s", *text != '\0' ? (int)indent : 0, "");
    }
}

void gs__cli_print_modes(const json_t *gpu)
{
    const char *problem = gs__cli_str(gpu, "problem");
    if (problem[0] != '\0')
        wrapped("     problem: ", problem);
    const json_t *mig = json_object_get(gpu, "mig");
    if (json_is_object(mig) && json_is_true(json_object_get(mig, "enabled")))
        print_mig(mig);
    const json_t *mps = json_object_get(gpu, "mps");
    if (json_is_object(mps))
        print_mps(mps);
}
