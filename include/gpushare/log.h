/* SPDX-License-Identifier: Apache-2.0 */
/* Logging: one line per event to stderr, filtered by level. */
#ifndef GPUSHARE_LOG_H
#define GPUSHARE_LOG_H

enum gs_log_level { GS_LOG_ERROR = 0, GS_LOG_WARN = 1, GS_LOG_INFO = 2, GS_LOG_DEBUG = 3 };

/* Sets the program name printed at the start of every line (the string is copied, truncated to
 * 31 bytes) and the level above which messages are dropped. Not thread-safe against concurrent
 * gs_log calls: call it once at start-up. */
void gs_log_init(const char *program, enum gs_log_level level);

/* Starts every line with the time, RFC 3339 with milliseconds in local time
 * ("2025-06-01T12:00:00.123+02:00 gpushared[42]: info: ..."), when on is nonzero. Call it at
 * start-up (thread-safe, but lines being written may or may not have the stamp). */
void gs_log_set_timestamps(int on);

/* Nonzero when standard error is systemd's journal (JOURNAL_STREAM names its device and inode),
 * which stamps every line itself. */
int gs_log_stderr_is_journal(void);

/* Parses "error", "warn", "info" or "debug" into *level. Returns 0, or GS_EINVAL for any other
 * text (*level untouched). */
int gs_log_level_parse(const char *text, enum gs_log_level *level);

/* Returns nonzero when messages at level would be printed. Thread-safe. */
int gs_log_enabled(enum gs_log_level level);

/* Prints "[time ]program[pid]: level: message\n" with a single write(2), so lines from concurrent
 * threads and processes never interleave. Lines are capped at 1 KiB. Thread-safe and
 * async-signal-safe apart from vsnprintf. Preserves errno. */
void gs_log(enum gs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GS_LOG(level, ...)                                                                         \
    do {                                                                                           \
        if (gs_log_enabled(level))                                                                 \
            gs_log(level, __VA_ARGS__);                                                            \
    } while (0)
#define gs_error(...) GS_LOG(GS_LOG_ERROR, __VA_ARGS__)
#define gs_warn(...)  GS_LOG(GS_LOG_WARN, __VA_ARGS__)
#define gs_info(...)  GS_LOG(GS_LOG_INFO, __VA_ARGS__)
#define gs_debug(...) GS_LOG(GS_LOG_DEBUG, __VA_ARGS__)

#endif
