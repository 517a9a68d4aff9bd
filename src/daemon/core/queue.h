/* SPDX-License-Identifier: Apache-2.0 */
/* The wait queue of lease requests: by priority (higher first), FIFO within a priority. */
#ifndef GS_DAEMON_QUEUE_H
#define GS_DAEMON_QUEUE_H

#include <stdint.h>

#include "gpushare/client.h"

/* Why a request waits, as the last pass of the queue (queue_pass.h) found it. */
typedef enum gs__wait_kind {
    GS__WAIT_NEW = 0, /* not looked at yet */
    GS__WAIT_NO_ROOM, /* no GPU it may use has room for it now */
    GS__WAIT_BEHIND,  /* it fits now, but only on GPUs held for requests ahead of it */
    GS__WAIT_HELD,    /* every GPU it may use is held for requests ahead of it */
    GS__WAIT_OWN,     /* it would fit but for its own user's leases: it holds nothing */
    GS__WAIT_SECOND,  /* an earlier request of its user holds GPUs: it holds nothing */
} gs__wait_kind_t;

typedef struct gs__wait {
    gs__wait_kind_t kind;
    unsigned position; /* 1 = served next (priority with aging, then arrival) */
    int gpu;           /* NO_ROOM: the GPU it is closest to fitting on (held for it), else -1 */
    unsigned ahead;    /* BEHIND / HELD: requests ahead of it holding the GPUs it could use */
    uint32_t held;     /* the GPUs (by position) held for it */
} gs__wait_t;

/* A queued request. The queue links it (intrusive list) but does not own it. */
typedef struct gs__waiter {
    struct gs__waiter *prev, *next;
    struct gs__waiter *dl_prev, *dl_next; /* among those with a deadline, soonest first */
    uint64_t seq;                         /* arrival order, set by gs__queue_push */
    int64_t deadline_ms;                  /* CLOCK_MONOTONIC ms when it gives up, 0 = never */
    int64_t queued_ms;                    /* CLOCK_MONOTONIC ms when it arrived */
    void *owner;                          /* the connection that asked */
    uint32_t uid;                         /* the lease's user (the caller, or whom root asks for) */
    gs_lease_request_t req;
    gs__wait_t wait;
} gs__waiter_t;

typedef struct gs__queue {
    gs__waiter_t *head, *tail;
    gs__waiter_t *dl_head, *dl_tail; /* waiters with a deadline, soonest first */
    uint64_t next_seq;
    unsigned length;
} gs__queue_t;

/* Empties q (does not touch waiters that were linked). */
void gs__queue_init(gs__queue_t *q);

/* Appends w behind every waiter of the same or higher priority (w->req.priority) and sets
 * w->seq; a waiter with a deadline also joins the deadline order. w must not be in a queue. */
void gs__queue_push(gs__queue_t *q, gs__waiter_t *w);

/* Unlinks w, which must be in q. */
void gs__queue_remove(gs__queue_t *q, gs__waiter_t *w);

/* The waiter whose deadline comes first, NULL when none has one: timeouts are found without
 * looking at the others. */
gs__waiter_t *gs__queue_first_deadline(const gs__queue_t *q);

/* Returns w's 1-based position in q (1 = served next). w must be in q. */
unsigned gs__queue_position(const gs__queue_t *q, const gs__waiter_t *w);

#endif
