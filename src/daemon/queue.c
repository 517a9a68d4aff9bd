/* The wait queue: an intrusive doubly-linked list kept in service order. */
#include "queue.h"

#include <stddef.h>

void gs__queue_init(gs__queue_t *q)
{
    q->head = NULL;
    q->tail = NULL;
    q->next_seq = 1;
    q->length = 0;
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
}

unsigned gs__queue_position(const gs__queue_t *q, const gs__waiter_t *w)
{
    unsigned pos = 1;
    for (const gs__waiter_t *it = q->head; it != NULL && it != w; it = it->next)
        pos++;
    return pos;
}
