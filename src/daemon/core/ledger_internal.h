/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger's insides, shared by ledger.c (the leases) and history.c (the history's pages,
 * retention and the room kept for a full disk). Private to those two files. One thread. */
#ifndef GS_DAEMON_LEDGER_INTERNAL_H
#define GS_DAEMON_LEDGER_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>
#include <sys/types.h>

#include "ledger.h"

/* The room kept beside the ledger for the leases' rows when its filesystem fills up: thousands
 * of grants and ends (a row is about 1 KiB, written twice through the WAL). */
#define RESERVE_BYTES (8u << 20)

enum { ST_PUT, ST_STATE, ST_DELETE, ST_HISTORY, ST_COUNT };

struct gs__ledger {
    sqlite3 *db;
    sqlite3_stmt *stmt[ST_COUNT];
    uint64_t next_id;
    unsigned commits_since_checkpoint;
    char path[GS__PATH_MAX + 16];
    char marker[GS__PATH_MAX + 24];  /* path.live: leases were live (gs__ledger_mark) */
    char reserve[GS__PATH_MAX + 24]; /* path.reserve: room kept for the leases' rows */
    dev_t dev;                       /* the file opened, to notice it removed or replaced */
    ino_t ino;
    int rewriting;    /* written again from the live leases: the marker is not asked */
    int disk_full;    /* its filesystem filled up: the reserve was given to the leases' rows */
    uint64_t dropped; /* history rows not written since (the disk was full) */
    gs__history_retention_t keep;
    struct history_counts *counts; /* rows per uid (history.c's retention) */
    int64_t next_expire_ms;        /* when rows past history_max_days are looked for next */
    int mark_pending;              /* the marker could not be written: written again by the tick */
    int mark_live;                 /* ... what it should say */
    uint64_t mark_id;
};

/* Runs statements; SQLite's message goes into err. Returns 0 or GS_EIO. */
int gs__ledger_exec(gs__ledger_t *ledger, const char *statement, char *err, size_t errlen);

/* Reads a single integer from a query into *value (0 when it has no row). Returns 0, or GS_EIO
 * with SQLite's message in err. */
int gs__ledger_query_int(gs__ledger_t *ledger, const char *query, int64_t *value, char *err,
                         size_t errlen);

/* Runs a prepared statement that returns no rows (its own transaction, committed when it
 * returns), and resets it; on a full filesystem it gives the reserve up and tries once more
 * (history.c). Returns 0, or GS_EIO with SQLite's message in why. */
int gs__ledger_run(gs__ledger_t *ledger, sqlite3_stmt *stmt, char *why, size_t whylen);

/* A text column, "" when NULL. */
const char *gs__ledger_text(sqlite3_stmt *stmt, int col);

/* history.c: after a full filesystem's write failed, gives the reserve up (once) so that the
 * leases' rows can still be written; returns nonzero when the write is worth trying again. */
int gs__ledger_use_reserve(gs__ledger_t *ledger);

/* history.c: keeps RESERVE bytes beside the ledger (at open, and when room is back). */
void gs__ledger_keep_reserve(gs__ledger_t *ledger);

/* history.c: reads the rows per user (at open); frees them (at close). */
int gs__history_counts_load(gs__ledger_t *ledger);
void gs__history_counts_free(gs__ledger_t *ledger);

/* history.c: one more row of uid was written: drops that user's oldest, and the oldest of all,
 * beyond the retention. */
void gs__history_written(gs__ledger_t *ledger, uint32_t uid);

#endif
