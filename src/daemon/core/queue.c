/* SPDX-License-Identifier: Apache-2.0 */
/* The wait queue: an intrusive doubly-linked list kept in service order. */
#include "queue.h"

#include <stddef.h>

void gs__queue_init(gs__queue_t *q)
{
    q->head = NULL;
    q->tail = NULL;
    q->dl_head = NULL;
    q->dl_tail = NULL;
    q->next_seq = 1;
    q->length = 0;
}

/* Deadlines mostly come in order (the same timeout asked again): walk back from the last. */
static void deadline_insert(gs__queue_t *q, gs__waiter_t *w)
{
    gs__waiter_t *after = q->dl_tail;
    while (after != NULL && after->deadline_ms > w->deadline_ms)
        after = after->dl_prev;
    w->dl_prev = after;
    w->dl_next = after != NULL ? after->dl_next : q->dl_head;
    if (w->dl_next != NULL)
        w->dl_next->dl_prev = w;
    else
        q->dl_tail = w;
    if (after != NULL)
        after->dl_next = w;
    else
        q->dl_head = w;
}

static void deadline_remove(gs__queue_t *q, gs__waiter_t *w)
{
    if (w->dl_prev != NULL)
        w->dl_prev->dl_next = w->dl_next;
    else if (q->dl_head == w)
        q->dl_head = w->dl_next;
    if (w->dl_next != NULL)
        w->dl_next->dl_prev = w->dl_prev;
    else if (q->dl_tail == w)
        q->dl_tail = w->dl_prev;
    w->dl_prev = w->dl_next = NULL;
}

void gs__queue_push(gs__queue_t *q, gs__waiter_t *w)
{
    w->seq = q->next_seq++;
    /* Walk back from the tail past every waiter of lower priority: queues are short, and a
     * request of the common (equal) priority is appended in O(1). */
    gs__waiter_t *after = q->tail;
    while (after != NULL && after->req.priority < w->req.priority)
        after = after->prev;
    w->prev = after;
    w->next = after != NULL ? after->next : q->head;
    if (w->next != NULL)
        w->next->prev = w;
    else
        q->tail = w;
    if (after != NULL)
        after->next = w;
    else
        q->head = w;
    q->length++;
    if (w->deadline_ms != 0)
        deadline_insert(q, w);
}

void gs__queue_remove(gs__queue_t *q, gs__waiter_t *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->prev = NULL;
    w->next = NULL;
    q->length--;
    if (w->deadline_ms != 0)
        deadline_remove(q, w);
}

gs__waiter_t *gs__queue_first_deadline(const gs__queue_t *q)
{
    return q->dl_head;
}

unsigned gs__queue_position(const gs__queue_t *q, const gs__waiter_t *w)
{
    unsigned pos = 1;
    for (const gs__waiter_t *it = q->head; it != NULL && it != w; it = it->next)
        pos++;
    return pos;
}
