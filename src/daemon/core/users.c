/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user counters: a small chained hash of uids. */
#include "users.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>

/* The user's name, or its uid in digits when it has none. */
static void lookup_name(gs__user_t *u)
{
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(u->uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
        snprintf(u->name, sizeof(u->name), "%s", found->pw_name);
    else
        snprintf(u->name, sizeof(u->name), "%u", (unsigned)u->uid);
}

gs__user_t *gs__users_get(gs__users_t *users, uid_t uid)
{
    gs__user_t **head = &users->bucket[(unsigned)uid % GS__USERS_BUCKETS];
    for (gs__user_t *u = *head; u != NULL; u = u->next) {
        if (u->uid == uid)
            return u;
    }
    gs__user_t *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return NULL;
    u->uid = uid;
    for (unsigned c = 0; c < GS__WARN_N; c++)
        u->warn[c].window_ms = INT64_MIN / 2;
    lookup_name(u);
    u->next = *head;
    *head = u;
    return u;
}

int gs__users_warn_due(gs__user_t *u, gs__warn_cause_t cause, int64_t now_ms)
{
    if (u == NULL || cause >= GS__WARN_N)
        return 1;
    gs__warn_state_t *w = &u->warn[cause];
    if (now_ms - w->window_ms >= GS__WARN_WINDOW_MS) {
        w->window_ms = now_ms;
        w->logged = 0;
    }
    if (w->logged >= GS__WARN_BURST) {
        w->suppressed++;
        return 0;
    }
    w->logged++;
    return 1;
}

const char *gs__users_suppressed(gs__user_t *u, gs__warn_cause_t cause)
{
    if (u == NULL || cause >= GS__WARN_N || u->warn[cause].suppressed == 0)
        return "";
    snprintf(u->note, sizeof(u->note), " (%llu more like this left out since the last one)",
             (unsigned long long)u->warn[cause].suppressed);
    u->warn[cause].suppressed = 0;
    return u->note;
}

/* Microseconds of history work a user earns per ms of time. */
#define HISTORY_RATE_US_PER_MS (GS__HISTORY_SHARE_MS * 1000 / 1000)

static void history_refill(gs__user_t *u, int64_t now_ms)
{
    if (now_ms <= u->history_at_ms)
        return;
    int64_t credit = u->history_credit_us + (now_ms - u->history_at_ms) * HISTORY_RATE_US_PER_MS;
    u->history_credit_us =
        credit < GS__HISTORY_BURST_MS * 1000 ? credit : GS__HISTORY_BURST_MS * 1000;
    u->history_at_ms = now_ms;
}

int64_t gs__users_history_wait(gs__user_t *u, int64_t now_ms)
{
    history_refill(u, now_ms);
    if (u->history_credit_us >= 0)
        return 0;
    return (-u->history_credit_us + HISTORY_RATE_US_PER_MS - 1) / HISTORY_RATE_US_PER_MS;
}

void gs__users_history_spent(gs__user_t *u, int64_t us)
{
    u->history_credit_us -= us;
}

void gs__users_free(gs__users_t *users)
{
    for (unsigned b = 0; b < GS__USERS_BUCKETS; b++) {
        while (users->bucket[b] != NULL) {
            gs__user_t *u = users->bucket[b];
            users->bucket[b] = u->next;
            free(u);
        }
    }
}
