/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user counters behind the per-user limits (connections, queued requests, unread output of
 * each uid), the per-user, per-cause rate limit of the lines a user's actions make the daemon
 * log, and each user's share of the daemon's time for history reads. */
#ifndef GS_DAEMON_USERS_H
#define GS_DAEMON_USERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a user's warnings are about: each cause is rate-limited on its own. */
typedef enum gs__warn_cause {
    GS__WARN_CONNS = 0, /* refused a connection: at its limit */
    GS__WARN_DENIED,    /* asked for what it may not (another user's lease, root's options) */
    GS__WARN_BAD_LINE,  /* sent a line that is not a request, or too long */
    GS__WARN_OUTPUT,    /* does not read its replies */
    GS__WARN_STUCK,     /* a lease of its cannot end */
    GS__WARN_REFUSED,   /* requests refused (info lines: never fits, gave up, no room) */
    GS__WARN_IDLE,      /* idle connections closed (info lines) */
    GS__WARN_N
} gs__warn_cause_t;

/* At most GS__WARN_BURST lines of one cause per GS__WARN_WINDOW_MS per user; the next line
 * logged says how many were left out. */
#define GS__WARN_BURST     5
#define GS__WARN_WINDOW_MS 10000

typedef struct gs__warn_state {
    int64_t window_ms;   /* when the current window started (CLOCK_MONOTONIC) */
    unsigned logged;     /* lines logged in it */
    uint64_t suppressed; /* lines left out since the last one logged */
} gs__warn_state_t;

/* History pages cost the daemon's one thread work that a user can ask for on many connections
 * at once: each user (root excepted) has GS__HISTORY_SHARE_MS of it per second, at most
 * GS__HISTORY_BURST_MS at once; beyond, its history requests wait their turn (never refused),
 * and other users' requests are served meanwhile. */
#define GS__HISTORY_SHARE_MS 100
#define GS__HISTORY_BURST_MS 20

typedef struct gs__user {
    struct gs__user *next; /* in its bucket */
    uid_t uid;
    char name[64];   /* from the passwd database, looked up once (or the uid in digits) */
    unsigned conns;  /* connections open */
    unsigned queued; /* requests waiting */
    size_t output;   /* bytes of replies its connections have not read yet */
    unsigned leases; /* leases it holds (each a region memfd the daemon maps) */
    gs__warn_state_t warn[GS__WARN_N];
    int64_t history_credit_us; /* history work it may still have now (negative: in debt) */
    int64_t history_at_ms;     /* when that was last brought up to date (CLOCK_MONOTONIC) */
    char note[80];             /* gs__users_suppressed's text */
} gs__user_t;

#define GS__USERS_BUCKETS 64

/* Entries live until gs__users_free (there is one per uid that ever connected: a bounded set of
 * the node's accounts), so pointers to them stay valid. */
typedef struct gs__users {
    gs__user_t *bucket[GS__USERS_BUCKETS];
} gs__users_t;

/* Returns uid's entry, created with zero counts (and its name looked up) when new; NULL when
 * out of memory. */
gs__user_t *gs__users_get(gs__users_t *users, uid_t uid);

/* Nonzero when a line of u about cause may be logged now; otherwise counts it as left out. */
int gs__users_warn_due(gs__user_t *u, gs__warn_cause_t cause, int64_t now_ms);

/* For the line being logged (after gs__users_warn_due said yes): " (N more like this left out
 * since the last one)", or "" when none was; clears the count. The text lives in u until the
 * next call. u may be NULL (""). */
const char *gs__users_suppressed(gs__user_t *u, gs__warn_cause_t cause);

/* 0 when a history request of u may be served now, else the ms until it may (its share of the
 * daemon's time is spent). */
int64_t gs__users_history_wait(gs__user_t *u, int64_t now_ms);

/* Charges u with us microseconds of history work. */
void gs__users_history_spent(gs__user_t *u, int64_t us);

/* Frees every entry. */
void gs__users_free(gs__users_t *users);

#endif
