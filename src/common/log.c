/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr: one write(2) per line, level filter, program prefix. */
#include "gpushare/log.h"
#include "gpushare/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char log_program[32] = "gpushare";
static _Atomic int log_level = GS_LOG_ERROR;
static _Atomic int log_timestamps;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gs_log_init(const char *program, enum gs_log_level level)
{
    if (program != NULL)
        snprintf(log_program, sizeof(log_program), "%s", program);
    atomic_store(&log_level, (int)level);
}

int gs_log_level_parse(const char *text, enum gs_log_level *level)
{
    for (int i = 0; i < 4; i++) {
        if (text != NULL && strcmp(text, level_names[i]) == 0) {
            *level = (enum gs_log_level)i;
            return 0;
        }
    }
    return GS_EINVAL;
}

void gs_log_set_timestamps(int on)
{
    atomic_store(&log_timestamps, on != 0);
}

int gs_log_stderr_is_journal(void)
{
    const char *stream = getenv("JOURNAL_STREAM");
    unsigned long long dev = 0, ino = 0;
    struct stat st;
    if (stream == NULL || sscanf(stream, "%llu:%llu", &dev, &ino) != 2 ||
        fstat(STDERR_FILENO, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Writes "2025-06-01T12:00:00.123+02:00 " (RFC 3339, local time, milliseconds) into buf. */
static int stamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    char date[32], zone[8];
    clock_gettime(CLOCK_REALTIME, &ts);
    if (localtime_r(&ts.tv_sec, &tm) == NULL ||
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0 ||
        strftime(zone, sizeof(zone), "%z", &tm) != 5)
        return 0;
    int n = snprintf(buf, len, "%s.%03ld%.3s:%.2s ", date, ts.tv_nsec / 1000000, zone, zone + 3);
    return n > 0 && (size_t)n < len ? n : 0;
}

int gs_log_enabled(enum gs_log_level level)
{
    return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void gs_log(enum gs_log_level level, const char *fmt, ...)
{
    int saved_errno = errno;
    char line[1024];
    int lvl = (int)level < 0 || (int)level > 3 ? 0 : (int)level;
    int t = atomic_load_explicit(&log_timestamps, memory_order_relaxed) ? stamp(line, 64) : 0;
    int n = snprintf(line + t, sizeof(line) - (size_t)t, "%s[%d]: %s: ", log_program, (int)getpid(),
                     level_names[lvl]);
    n = n < 0 || (size_t)(n + t) >= sizeof(line) - 1 ? 0 : n + t;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
    errno = saved_errno;
}
