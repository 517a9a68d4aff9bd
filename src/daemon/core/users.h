/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user counters behind the per-user limits: connections and queued requests of each uid. */
#ifndef GS_DAEMON_USERS_H
#define GS_DAEMON_USERS_H

#include <stdint.h>
#include <sys/types.h>

typedef struct gs__user {
    struct gs__user *next; /* in its bucket */
    uid_t uid;
    char name[64];     /* from the passwd database, looked up once (or the uid in digits) */
    unsigned conns;    /* connections open */
    unsigned queued;   /* requests waiting */
    int64_t warned_ms; /* when a refusal of this user was last logged (CLOCK_MONOTONIC) */
    uint64_t refused;  /* refusals not logged since */
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

/* Nonzero when a refusal of u should be logged now (at most one line per 5 s per user; the
 * count of the others is in u->refused, which the caller reports and clears). */
int gs__users_log_due(gs__user_t *u, int64_t now_ms);

/* Frees every entry. */
void gs__users_free(gs__users_t *users);

#endif
