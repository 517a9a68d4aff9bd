/* SPDX-License-Identifier: Apache-2.0 */
/* The history's retention (rows per user, rows in all, days), the marker of live leases beside
 * the ledger, and the room kept for the leases' rows when the filesystem fills up. */
#include "ledger_internal.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define EXPIRE_SLICE    1000  /* rows past the retention's days removed per tick */
#define EXPIRE_EVERY_MS 60000 /* how often old rows are looked for once none is left */

/* Rows per uid: a small open hash (one entry per user that ever had a row kept). */
typedef struct history_count {
    uint32_t uid;
    int used;
    uint64_t rows;
} history_count_t;

struct history_counts {
    history_count_t *v;
    unsigned cap, n; /* cap: a power of two */
    uint64_t total;
};

static history_count_t *count_slot(struct history_counts *c, uint32_t uid)
{
    unsigned mask = c->cap - 1;
    for (unsigned k = (uid * 2654435761u) & mask;; k = (k + 1) & mask) {
        if (!c->v[k].used || c->v[k].uid == uid)
            return &c->v[k];
    }
}

/* uid's entry, made when new. NULL when out of memory. */
static history_count_t *count_of(struct history_counts *c, uint32_t uid)
{
    if (2 * (c->n + 1) > c->cap) {
        struct history_counts grown = {.cap = c->cap != 0 ? 2 * c->cap : 64, .total = c->total};
        grown.v = calloc(grown.cap, sizeof(*grown.v));
        if (grown.v == NULL)
            return NULL;
        for (unsigned i = 0; i < c->cap; i++) {
            if (c->v[i].used) {
                *count_slot(&grown, c->v[i].uid) = c->v[i];
                grown.n++;
            }
        }
        free(c->v);
        *c = grown;
    }
    history_count_t *e = count_slot(c, uid);
    if (!e->used) {
        *e = (history_count_t){.uid = uid, .used = 1};
        c->n++;
    }
    return e;
}

int gs__history_counts_load(gs__ledger_t *ledger)
{
    ledger->counts = calloc(1, sizeof(*ledger->counts));
    sqlite3_stmt *stmt = NULL;
    if (ledger->counts == NULL ||
        sqlite3_prepare_v2(ledger->db, "SELECT uid, COUNT(*) FROM history GROUP BY uid", -1, &stmt,
                           NULL) != SQLITE_OK)
        return GS_EIO;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        history_count_t *e = count_of(ledger->counts, (uint32_t)sqlite3_column_int64(stmt, 0));
        if (e == NULL)
            break;
        e->rows = (uint64_t)sqlite3_column_int64(stmt, 1);
        ledger->counts->total += e->rows;
    }
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? 0 : GS_EIO;
}

void gs__history_counts_free(gs__ledger_t *ledger)
{
    if (ledger->counts != NULL)
        free(ledger->counts->v);
    free(ledger->counts);
    ledger->counts = NULL;
}

/* Runs a DELETE ... RETURNING uid (bound by the caller) and takes the rows off the counts.
 * Returns how many went, or -1 when it failed. */
static int delete_returning(gs__ledger_t *ledger, sqlite3_stmt *stmt)
{
    int rc, n = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        history_count_t *e = count_of(ledger->counts, (uint32_t)sqlite3_column_int64(stmt, 0));
        if (e != NULL && e->rows > 0)
            e->rows--;
        if (ledger->counts->total > 0)
            ledger->counts->total--;
        n++;
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) {
        gs_warn("ledger: history retention: %s", sqlite3_errmsg(ledger->db));
        return -1;
    }
    ledger->commits_since_checkpoint++;
    return n;
}

/* Removes the n oldest rows (of uid, or of everyone when all). */
static void drop_oldest(gs__ledger_t *ledger, int all, uint32_t uid, uint64_t n)
{
    sqlite3_stmt *stmt = NULL;
    const char *sql = all ? "DELETE FROM history WHERE id IN (SELECT id FROM history "
                            "ORDER BY ended_at, id LIMIT ?1) RETURNING uid"
                          : "DELETE FROM history WHERE id IN (SELECT id FROM history WHERE uid = "
                            "?2 ORDER BY ended_at, id LIMIT ?1) RETURNING uid";
    if (sqlite3_prepare_v2(ledger->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        gs_warn("ledger: history retention: %s", sqlite3_errmsg(ledger->db));
        return;
    }
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)n);
    if (!all)
        sqlite3_bind_int64(stmt, 2, uid);
    delete_returning(ledger, stmt);
}

void gs__history_written(gs__ledger_t *ledger, uint32_t uid)
{
    struct history_counts *c = ledger->counts;
    history_count_t *e = c != NULL ? count_of(c, uid) : NULL;
    if (e == NULL)
        return;
    e->rows++;
    c->total++;
    /* A few rows at a time, through the indexes: the cost of a write stays bounded. */
    if (e->rows > ledger->keep.rows_per_user)
        drop_oldest(ledger, 0, uid, e->rows - ledger->keep.rows_per_user);
    if (c->total > ledger->keep.rows)
        drop_oldest(ledger, 1, 0, c->total - ledger->keep.rows);
}

void gs__ledger_set_retention(gs__ledger_t *ledger, const gs__history_retention_t *keep)
{
    ledger->keep = *keep;
    ledger->next_expire_ms = 0;
}

/* Removes a slice of the rows older than the retention's days. */
static void expire_days(gs__ledger_t *ledger, int64_t wall_ms)
{
    if (wall_ms < ledger->next_expire_ms || ledger->db == NULL || ledger->disk_full)
        return;
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(ledger->db,
                           "DELETE FROM history WHERE id IN (SELECT id FROM history WHERE "
                           "ended_at < ?1 ORDER BY ended_at, id LIMIT ?2) RETURNING uid",
                           -1, &stmt, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(stmt, 1, wall_ms - (int64_t)ledger->keep.days * 86400000);
    sqlite3_bind_int64(stmt, 2, EXPIRE_SLICE);
    int n = delete_returning(ledger, stmt);
    /* A full slice: more may be due, next tick; else look again in a while. */
    ledger->next_expire_ms = n == EXPIRE_SLICE ? wall_ms : wall_ms + EXPIRE_EVERY_MS;
}

/* ---- the room kept for a full filesystem ---- */

void gs__ledger_keep_reserve(gs__ledger_t *ledger)
{
    int fd = open(ledger->reserve, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    int result = fd >= 0 ? posix_fallocate(fd, 0, RESERVE_BYTES) : errno;
    if (fd >= 0)
        close(fd);
    if (result != 0) {
        unlink(ledger->reserve);
        gs_warn("cannot keep %u MiB beside the ledger (%s): %s; a full filesystem will fail "
                "grants at once",
                RESERVE_BYTES >> 20, ledger->reserve, gs_strerror(-result));
    }
}

int gs__ledger_use_reserve(gs__ledger_t *ledger)
{
    if (ledger->disk_full)
        return 0;
    ledger->disk_full = 1;
    ledger->dropped = 0;
    int had = unlink(ledger->reserve) == 0;
    gs_error("the filesystem of the ledger %s is full: the history is not written any more%s; "
             "free space there (gpushare status says when it is back)",
             ledger->path,
             had ? ", the room kept for the leases' rows goes to them (grants and releases go on)"
                 : " and no room was kept: grants fail until there is room");
    return had;
}

/* Once there is room for the reserve and as much again, it is kept again and the history goes
 * on. */
static void check_room(gs__ledger_t *ledger)
{
    struct statvfs st;
    if (!ledger->disk_full || statvfs(ledger->path, &st) != 0 ||
        (uint64_t)st.f_bavail * st.f_frsize < 2 * (uint64_t)RESERVE_BYTES)
        return;
    ledger->disk_full = 0;
    gs__ledger_keep_reserve(ledger);
    gs_info("the filesystem of the ledger %s has room again: the history is written again (%llu "
            "ended leases were not recorded meanwhile)",
            ledger->path, (unsigned long long)ledger->dropped);
}

void gs__ledger_tick(gs__ledger_t *ledger, int64_t wall_ms)
{
    if (ledger == NULL)
        return;
    check_room(ledger);
    expire_days(ledger, wall_ms);
    if (ledger->mark_pending)
        gs__ledger_mark(ledger, ledger->mark_live, ledger->mark_id);
}

int gs__ledger_disk_full(const gs__ledger_t *ledger, uint64_t *dropped)
{
    *dropped = ledger->dropped;
    return ledger->disk_full;
}

/* ---- the marker of live leases ---- */

int gs__ledger_mark(gs__ledger_t *ledger, int live, uint64_t first_id)
{
    /* Written in place, always the same size: the file's block is there from the first start
     * on, so a full filesystem cannot fail it. */
    char text[24];
    snprintf(text, sizeof(text), "%020llu\n", live ? (unsigned long long)first_id : 0ULL);
    int fd = open(ledger->marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    int result = fd >= 0 && pwrite(fd, text, 21, 0) == 21 && (!live || fsync(fd) == 0) ? 0 : -errno;
    if (fd >= 0)
        close(fd);
    /* Not written: the tick tries again (a marker left naming a lease whose row never was would
     * refuse the next start). Said once until it is written. */
    int said = ledger->mark_pending;
    ledger->mark_pending = result != 0;
    ledger->mark_live = live;
    ledger->mark_id = first_id;
    if (result != 0 && !said)
        gs_warn("cannot write %s: %s (a damaged ledger may then go unnoticed)", ledger->marker,
                gs_strerror(result));
    return result;
}
