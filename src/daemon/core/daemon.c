/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's state at start and at shutdown (daemon.h). */
#include "daemon.h"
#include "place_engine.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void gs__daemon_init(gs__daemon_t *d)
{
    memset(d, 0, sizeof(*d));
    d->self = gs__regions_self();
    gs__queue_init(&d->queue);
    d->next_expiry_ms = INT64_MAX;
    d->started_ms = gs__now_ms();
    if (gethostname(d->hostname, sizeof(d->hostname) - 1) != 0)
        snprintf(d->hostname, sizeof(d->hostname), "localhost");
}

void gs__daemon_close(gs__daemon_t *d)
{
    gs__leases_free(d);
    gs__place_engine_free();
    gs__ledger_close(d->ledger);
    d->ledger = NULL;
    gs__users_free(&d->users);
}
