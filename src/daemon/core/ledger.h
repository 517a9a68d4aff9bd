/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger: live leases in SQLite (WAL), so that a restarted gpushared finds every one again.
 *
 * Durability: journal_mode=WAL with synchronous=NORMAL. Every write is its own transaction,
 * committed before the call returns: a write that returned 0 survives the daemon being killed
 * (kill -9) at any instruction, and one that failed (a full disk, an I/O error) left nothing
 * behind, so the operation it belongs to fails with it (a lease whose row was not written is
 * not granted). After a power loss or kernel crash the last transactions before the crash may be
 * lost (WAL frames not yet checkpointed to disk), never the database's consistency.
 *
 * Trust: the ledger is root's file, but a damaged one must not make the daemon act on garbage.
 * Opening runs SQLite's integrity_check and refuses a ledger that fails it (with one line, see
 * gpushared(8) for the recovery); every read checks its errors; a row that cannot be decoded is
 * reported and skipped. Paths are never taken from the ledger (the region column names the
 * lease's region, see regions.h). */
#ifndef GS_DAEMON_LEDGER_H
#define GS_DAEMON_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "gpushare/client.h"

#define GS__USER_MAX 64

/* What a lease holds of one GPU, as stored (the GPU by UUID: indexes may change on reboot). */
typedef struct gs__record_part {
    char uuid[GS__UUID_MAX];
    unsigned slots;
    uint64_t memory;
    uint32_t compute;            /* thousandths */
    char instance[GS__UUID_MAX]; /* the mode's unit it holds ("MIG-..."), "" = none */
} gs__record_part_t;

typedef enum gs__lease_state {
    GS__LEASE_ACTIVE = 0, /* granted, its holder is connected or alive */
    GS__LEASE_ENDING,     /* released or its holder is gone, but processes still use it */
} gs__lease_state_t;

/* Everything needed to rebuild a lease after a restart. */
typedef struct gs__lease_record {
    uint64_t id;
    uint32_t uid, gid;
    char user[GS__USER_MAX];
    int32_t client_pid;    /* the holder, from SO_PEERCRED */
    uint64_t client_start; /* its start time (/proc/PID/stat), so a reused pid is not it */
    gs_lease_request_t request;
    unsigned n_parts;
    gs__record_part_t parts[GS_MAX_DEVICES];
    uint32_t compute_share;    /* percent given to the shim, 0 = not limited */
    char region[GS__PATH_MAX]; /* how its processes join its region (regions.h) */
    uint64_t region_ino;       /* its region's inode: the one a restarted daemon looks for */
    gs__lease_state_t state;
    int suspended;           /* active and suspended (core/suspend.c: its processes checkpointed,
                                its capacity back in the pool); the row's state is "suspended" */
    int64_t granted_at_ms;   /* CLOCK_REALTIME */
    int64_t submitted_at_ms; /* CLOCK_REALTIME: when it was asked for (it waited until granted);
                                0 = not known (a row from before this was kept) */
    char damaged[160];       /* why the row could not be read whole ("" when it could): such a
                                lease keeps its capacity, never ends by itself, root releases it */
} gs__lease_record_t;

/* How much history is kept: beyond any bound, the oldest rows go first (the oldest of the user
 * over rows_per_user; of everyone over rows; any older than days). */
typedef struct gs__history_retention {
    unsigned rows;
    unsigned rows_per_user;
    unsigned days;
} gs__history_retention_t;

typedef struct gs__ledger gs__ledger_t;

/* Opens (creating when missing, mode 0600) the ledger at path and checks it. Returns 0 and
 * *out, or GS_EIO (unreadable, or damaged: integrity_check failed) / GS_EVERSION (written by a
 * newer gpushared) with one line in err. */
int gs__ledger_open(const char *path, gs__ledger_t **out, char *err, size_t errlen);

/* Closes (NULL is fine). */
void gs__ledger_close(gs__ledger_t *ledger);

/* The marker beside the ledger (PATH.live) says leases are live: the id of the first such lease
 * is written (and synced to disk) once the row of a lease granted while none was is committed
 * (never before: a marker naming a lease whose row failed would refuse every later start; a
 * crash between the two leaves it unset, and the next start sets it from the rows), 0 once the
 * last lease's row is deleted; the file keeps its size, so a full filesystem cannot fail it. One
 * that cannot be written is written again by gs__ledger_tick. Opening refuses a ledger without
 * its leases table, or whose id sequence is behind that first id, while the marker is there
 * (gpushared(8), RECOVERY). Returns 0 or -errno (logged once; until written, that check is
 * weaker). */
int gs__ledger_mark(gs__ledger_t *ledger, int live, uint64_t first_id);

/* Sets the history's retention (the defaults until called); applied as rows are written and by
 * gs__ledger_tick. */
void gs__ledger_set_retention(gs__ledger_t *ledger, const gs__history_retention_t *keep);

/* Every second or so: removes rows older than the retention's days, a bounded slice at a time;
 * and once the ledger's filesystem has room again after it filled, keeps the reserve again. */
void gs__ledger_tick(gs__ledger_t *ledger, int64_t wall_ms);

/* Nonzero while the ledger's filesystem is full: the room kept for the leases' rows is in use
 * and the history is not written (*dropped: rows not written since). */
int gs__ledger_disk_full(const gs__ledger_t *ledger, uint64_t *dropped);

/* The ledger's path. */
const char *gs__ledger_path(const gs__ledger_t *ledger);

/* Returns an id never used before in this ledger (ids are never reused, even after a lease's
 * row is deleted or a failed write). */
uint64_t gs__ledger_next_id(gs__ledger_t *ledger);

/* Inserts or replaces the lease's row, committed. Returns 0, or GS_EIO with SQLite's reason in
 * why (the row is not there). */
int gs__ledger_put(gs__ledger_t *ledger, const gs__lease_record_t *rec, char *why, size_t whylen);

/* Updates a lease's state, committed. Returns 0, or GS_EIO with the reason in why (logged). */
int gs__ledger_set_state(gs__ledger_t *ledger, uint64_t id, gs__lease_state_t state, char *why,
                         size_t whylen);

/* Deletes a lease's row (the lease ended), committed. Returns 0, or GS_EIO with the reason in
 * why (the row is still there). */
int gs__ledger_delete(gs__ledger_t *ledger, uint64_t id, char *why, size_t whylen);

/* Moves the write-ahead log into the database file (call when idle). Never fails: a failed
 * checkpoint is logged and retried next time; the data is safe in the log meanwhile. */
void gs__ledger_checkpoint(gs__ledger_t *ledger);

/* A lease that ended, for the history: its record and how it went. */
typedef struct gs__history_entry {
    const gs__lease_record_t *rec;
    int64_t ended_at_ms;            /* CLOCK_REALTIME */
    unsigned index[GS_MAX_DEVICES]; /* NVML index of each part's GPU */
    uint64_t peak[GS_MAX_DEVICES];  /* the most each part's processes held at once */
    uint64_t oom_events;            /* allocations refused over the limit */
    gs_job_end_t job_end;           /* as its holder reported it (release) */
    const char *reason;             /* why it ended: "released", "time limit", ... */
} gs__history_entry_t;

/* Records an ended lease in the history table (its own transaction, committed), then drops the
 * oldest rows beyond the retention. Returns 0, GS_ENOSPC (the filesystem is full: not written,
 * counted) or GS_EIO (logged). */
int gs__ledger_history_add(gs__ledger_t *ledger, const gs__history_entry_t *entry);

/* One page of the ended leases that q asks for, most recent first from q's cursor on, as a JSON
 * array of history objects (docs/api.md); uid >= 0 keeps only that user's, user (not NULL) only
 * that user name's. A page holds at most GS_HISTORY_PAGE rows and about GS_HISTORY_PAGE_BYTES,
 * read through an index of the filter: its cost is bounded whatever the table holds. *more is
 * nonzero when rows may follow, with *next the query for them (cursor and the limit left).
 * Returns 0 and *out (a new reference), or GS_EIO / GS_ENOMEM. */
int gs__ledger_history(gs__ledger_t *ledger, const gs_history_query_t *q, int64_t uid,
                       const char *user, json_t **out, gs_history_query_t *next, int *more);

/* Calls fn for every stored lease, in id order; stops at the first nonzero return, which it
 * returns. A row that cannot be decoded whole is logged and given with rec->damaged set (what
 * could be read of it: its id, user and holder, its parts when they can be read, n_parts 0 when
 * not). Returns GS_EIO (logged) when the ledger cannot be read to its end. */
int gs__ledger_load(gs__ledger_t *ledger, int (*fn)(void *arg, const gs__lease_record_t *rec),
                    void *arg);

/* Nonzero while the ledger's file is the one opened (not removed or replaced). */
int gs__ledger_intact(const gs__ledger_t *ledger);

/* Writes a new ledger at the same path from recs (n rows), keeping the id sequence, and
 * continues with it; for a file that was removed under the daemon. Returns 0 or -errno with one
 * line in err (the ledger is then unusable). */
int gs__ledger_rewrite(gs__ledger_t *ledger, const gs__lease_record_t *const *recs, unsigned n,
                       char *err, size_t errlen);

#endif
