/* Logging to stderr: one write(2) per line, level filter, program prefix. */
#include "gpushare/log.h"
#include "gpushare/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char log_program[32] = "gpushare";
static _Atomic int log_level = GS_LOG_ERROR;

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

int gs_log_enabled(enum gs_log_level level)
{
    return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void gs_log(enum gs_log_level level, const char *fmt, ...)
{
    int saved_errno = errno;
    char line[1024];
    int lvl = (int)level < 0 || (int)level > 3 ? 0 : (int)level;
    int n =
        snprintf(line, sizeof(line), "%s[%d]: %s: ", log_program, (int)getpid(), level_names[lvl]);
    if (n < 0 || (size_t)n >= sizeof(line) - 1)
        n = 0;
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
