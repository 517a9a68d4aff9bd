/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger: SQLite in WAL mode with group commit; one row per live lease. */
#include "ledger.h"
#include "ledger_internal.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA_VERSION 3

/* A checkpoint copies the WAL into the database and syncs both to disk: milliseconds on a disk.
 * SQLite would do it inside whichever commit crosses 1000 pages, stalling the requests waiting
 * behind that commit; gpushared does it when it is idle instead, or after this many commits
 * when it never is (bounding the WAL's size). */
#define CHECKPOINT_FORCE_COMMITS 50000

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS leases ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,"
    " command TEXT NOT NULL,"
    " client_pid INTEGER NOT NULL, client_start INTEGER NOT NULL,"
    " request TEXT NOT NULL," /* the acquire request, as the protocol's JSON */
    " parts TEXT NOT NULL,"   /* JSON array of {uuid, slots, memory, compute} */
    " compute_share INTEGER NOT NULL,"
    " region TEXT NOT NULL," /* gpushared:ID:SOCKET, how its processes join its region */
    " state TEXT NOT NULL,"  /* active | suspended | ending */
    " granted_at INTEGER NOT NULL,"
    " updated_at INTEGER NOT NULL,"
    " region_ino INTEGER NOT NULL DEFAULT 0," /* its memfd's inode, found again after a restart */
    " submitted_at INTEGER NOT NULL DEFAULT 0)"; /* when it was asked for (issue 27), 0 unknown */

/* Schema 2: ended leases, kept for `gpushare history`. */
static const char *const history_schema =
    "CREATE TABLE IF NOT EXISTS history ("
    " id INTEGER PRIMARY KEY,"
    " uid INTEGER NOT NULL, user TEXT NOT NULL, name TEXT NOT NULL, command TEXT NOT NULL,"
    " request TEXT NOT NULL," /* the acquire request, as the protocol's JSON */
    " gpus TEXT NOT NULL,"    /* JSON array of {index, uuid, memory_limit, peak_memory} */
    " granted_at INTEGER NOT NULL, ended_at INTEGER NOT NULL,"
    " memory_limit INTEGER NOT NULL, peak_memory INTEGER NOT NULL, oom_events INTEGER NOT NULL,"
    " exit_status INTEGER, signal INTEGER," /* NULL: not reported */
    " end_reason TEXT NOT NULL,"
    " submitted_at INTEGER NOT NULL DEFAULT 0);" /* issue 27; 0: not known (rows before it) */
    "CREATE INDEX IF NOT EXISTS history_ended ON history (ended_at);"
    /* Issue 28: a user's history (or a name's, root's view) by an index of its own: a user with
     * few rows reads few rows. An index's entries end with the rowid (id): (uid, ended_at, id). */
    "CREATE INDEX IF NOT EXISTS history_uid ON history (uid, ended_at);"
    "CREATE INDEX IF NOT EXISTS history_user ON history (user, ended_at)";

static const char *const sql[ST_COUNT] = {
    [ST_PUT] =
        ("INSERT OR REPLACE INTO leases (id, uid, gid, user, command, client_pid, "
         "client_start, request, parts, compute_share, region, state, granted_at, "
         "updated_at, region_ino, submitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
         "?11, ?12, ?13, ?13, ?14, ?15)"),
    [ST_STATE] = ("UPDATE leases SET state = ?2, updated_at = strftime('%s','now') * 1000 "
                  "WHERE id = ?1"),
    [ST_DELETE] = "DELETE FROM leases WHERE id = ?1",
    [ST_HISTORY] = ("INSERT OR REPLACE INTO history (id, uid, user, name, command, request, gpus, "
                    "granted_at, ended_at, memory_limit, peak_memory, oom_events, exit_status, "
                    "signal, end_reason, submitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                    "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"),
};

static const char *state_name(gs__lease_state_t state)
{
    return state == GS__LEASE_ENDING ? "ending" : "active";
}

/* Runs statements; SQLite's message goes into err. Returns 0 or GS_EIO. */
int gs__ledger_exec(gs__ledger_t *ledger, const char *statement, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(ledger->db, statement, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    int result = gs_fail(err, errlen, GS_EIO, "%s", msg != NULL ? msg : sqlite3_errmsg(ledger->db));
    sqlite3_free(msg);
    return result;
}

/* Reads a single integer from a query into *value (0 when it has no row). Returns 0, or GS_EIO
 * with SQLite's message in err. */
int gs__ledger_query_int(gs__ledger_t *ledger, const char *query, int64_t *value, char *err,
                         size_t errlen)
{
    sqlite3_stmt *stmt = NULL;
    *value = 0;
    int rc = sqlite3_prepare_v2(ledger->db, query, -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW)
            *value = sqlite3_column_int64(stmt, 0);
    }
    int result = 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        result = gs_fail(err, errlen, GS_EIO, "%s", sqlite3_errmsg(ledger->db));
    sqlite3_finalize(stmt);
    return result;
}

/* Creates the file with mode 0600 first: it holds every user's commands. */
static int create_private(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

/* SQLite's integrity_check: "ok", or the first problem in err. */
static int check_integrity(gs__ledger_t *ledger, char *err, size_t errlen)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(ledger->db, "PRAGMA integrity_check(1)", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    const unsigned char *text = rc == SQLITE_ROW ? sqlite3_column_text(stmt, 0) : NULL;
    int ok = text != NULL && strcmp((const char *)text, "ok") == 0;
    int result = 0;
    if (!ok)
        result = gs_fail(err, errlen, GS_EIO, "%s",
                         text != NULL ? (const char *)text : sqlite3_errmsg(ledger->db));
    for (char *p = err; !ok && *p != '\0'; p++)
        *p = *p == '\n' ? ' ' : *p; /* one line */
    sqlite3_finalize(stmt);
    return result;
}

/* The first lease id the marker names, 0 when there is no marker or it says none is live. */
static uint64_t marker_id(const gs__ledger_t *ledger)
{
    char buf[64] = "";
    int fd = open(ledger->marker, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strtoull(buf, NULL, 10); /* 0: no lease was live */
}

/* A ledger without its leases table (a file emptied, truncated to 0 bytes, or whose table was
 * dropped), or whose id sequence is behind the lease that made the marker, while the marker says
 * leases were live: those leases' jobs may still run, and starting would forget them. */
static int check_marker(gs__ledger_t *ledger, char *err, size_t errlen)
{
    uint64_t live = marker_id(ledger);
    int64_t tables = 0, seq = 0;
    char why[256];
    if (live == 0)
        return 0;
    int result = gs__ledger_query_int(ledger,
                                      "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                                      "name = 'leases'",
                                      &tables, why, sizeof(why));
    if (result == 0 && tables > 0)
        result = gs__ledger_query_int(ledger, "SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence",
                                      &seq, why, sizeof(why));
    if (result != 0)
        return gs_fail(err, errlen, GS_EIO, "cannot read the ledger %s: %s", ledger->path, why);
    if (tables > 0 && (uint64_t)seq >= live)
        return 0;
    return gs_fail(err, errlen, GS_EIO,
                   "the ledger %s %s, but %s says leases were live (from lease %llu on): "
                   "gpushared will not start and forget them; see RECOVERY in gpushared(8)",
                   ledger->path,
                   tables == 0 ? "has no leases (empty or replaced)"
                               : "is older than its leases (rows lost)",
                   ledger->marker, (unsigned long long)live);
}

/* Ledgers from before issue 27 have no submitted_at: their rows read 0 (not known). */
static int add_submitted(gs__ledger_t *ledger, char *why, size_t whylen)
{
    static const char *const tables[] = {"leases", "history"};
    for (int i = 0; i < 2; i++) {
        char query[160], alter[128];
        int64_t has = 0;
        snprintf(query, sizeof(query),
                 "SELECT COUNT(*) FROM pragma_table_info('%s') WHERE name = 'submitted_at'",
                 tables[i]);
        snprintf(alter, sizeof(alter),
                 "ALTER TABLE %s ADD COLUMN submitted_at INTEGER NOT NULL DEFAULT 0", tables[i]);
        int result = gs__ledger_query_int(ledger, query, &has, why, whylen);
        if (result == 0 && has == 0)
            result = gs__ledger_exec(ledger, alter, why, whylen);
        if (result != 0)
            return result;
    }
    return 0;
}

static int setup(gs__ledger_t *ledger, char *err, size_t errlen)
{
    char why[256] = "";
    int64_t version = 0, seq = 0;
    int result = gs__ledger_query_int(ledger, "PRAGMA user_version", &version, why, sizeof(why));
    if (result == 0 && version > SCHEMA_VERSION)
        return gs_fail(err, errlen, GS_EVERSION,
                       "the ledger was written by a newer gpushared (schema %d > %d)", (int)version,
                       SCHEMA_VERSION);
    /* Exclusive: the daemon is the ledger's only user (a second gpushared on the same state
     * directory fails here), and SQLite keeps the WAL index in memory without file locks. */
    if (result == 0)
        result = gs__ledger_exec(ledger,
                                 "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; "
                                 "PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0",
                                 why, sizeof(why));
    if (result == 0 && check_integrity(ledger, why, sizeof(why)) != 0)
        return gs_fail(
            err, errlen, GS_EIO,
            "the ledger %s is damaged (SQLite integrity_check: %.200s): gpushared will not "
            "guess which leases it held; see RECOVERY in gpushared(8)",
            ledger->path, why);
    if (result == 0 && !ledger->rewriting && (result = check_marker(ledger, err, errlen)) != 0)
        return result;
    if (result == 0)
        result = gs__ledger_exec(ledger, schema, why, sizeof(why));
    if (result == 0)
        result = gs__ledger_exec(ledger, history_schema, why, sizeof(why));
    /* Schemas 1 and 2 had no region_ino: their leases come back with new regions. */
    int64_t has_ino = 0;
    if (result == 0)
        result = gs__ledger_query_int(ledger,
                                      "SELECT COUNT(*) FROM pragma_table_info('leases') "
                                      "WHERE name = 'region_ino'",
                                      &has_ino, why, sizeof(why));
    if (result == 0 && has_ino == 0)
        result = gs__ledger_exec(
            ledger, "ALTER TABLE leases ADD COLUMN region_ino INTEGER NOT NULL DEFAULT 0", why,
            sizeof(why));
    if (result == 0)
        result = add_submitted(ledger, why, sizeof(why));
    if (result == 0)
        result = gs__ledger_exec(ledger, "PRAGMA user_version=3", why, sizeof(why));
    for (int i = 0; result == 0 && i < ST_COUNT; i++) {
        if (sqlite3_prepare_v3(ledger->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &ledger->stmt[i],
                               NULL) != SQLITE_OK) {
            snprintf(why, sizeof(why), "%s", sqlite3_errmsg(ledger->db));
            result = GS_EIO;
        }
    }
    /* AUTOINCREMENT's sequence remembers the largest id ever stored, deleted rows included. */
    if (result == 0)
        result =
            gs__ledger_query_int(ledger, "SELECT seq FROM sqlite_sequence WHERE name = 'leases'",
                                 &seq, why, sizeof(why));
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot read the ledger %s: %s", ledger->path, why);
    if ((uint64_t)seq + 1 > ledger->next_id)
        ledger->next_id = (uint64_t)seq + 1;
    return 0;
}

static void close_db(gs__ledger_t *ledger)
{
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(ledger->stmt[i]);
        ledger->stmt[i] = NULL;
    }
    sqlite3_close(ledger->db);
    ledger->db = NULL;
}

/* Opens (creating) the database at ledger->path and sets it up. */
static int open_db(gs__ledger_t *ledger, char *err, size_t errlen)
{
    int result = create_private(ledger->path);
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot create the ledger %s: %s", ledger->path,
                       gs_strerror(result));
    if (sqlite3_open_v2(ledger->path, &ledger->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return gs_fail(err, errlen, GS_EIO, "cannot open the ledger %s: %s", ledger->path,
                       ledger->db != NULL ? sqlite3_errmsg(ledger->db) : "out of memory");
    sqlite3_busy_timeout(ledger->db, 2000);
    struct stat st;
    if (stat(ledger->path, &st) == 0) {
        ledger->dev = st.st_dev;
        ledger->ino = st.st_ino;
    }
    return setup(ledger, err, errlen);
}

int gs__ledger_open(const char *path, gs__ledger_t **out, char *err, size_t errlen)
{
    gs__ledger_t *ledger = calloc(1, sizeof(*ledger));
    if (ledger == NULL)
        return GS_ENOMEM;
    snprintf(ledger->path, sizeof(ledger->path), "%s", path);
    snprintf(ledger->marker, sizeof(ledger->marker), "%s.live", path);
    snprintf(ledger->reserve, sizeof(ledger->reserve), "%s.reserve", path);
    ledger->next_id = 1;
    ledger->keep = (gs__history_retention_t){.rows = GS__DEFAULT_HISTORY_ROWS,
                                             .rows_per_user = GS__DEFAULT_HISTORY_USER_ROWS,
                                             .days = GS__DEFAULT_HISTORY_DAYS};
    int result = open_db(ledger, err, errlen);
    if (result == 0 && gs__history_counts_load(ledger) != 0)
        result = gs_fail(err, errlen, GS_EIO, "cannot read the history of the ledger %s: %s",
                         ledger->path, sqlite3_errmsg(ledger->db));
    if (result != 0) {
        gs__ledger_close(ledger);
        return result;
    }
    gs__ledger_keep_reserve(ledger);
    if (access(ledger->marker, F_OK) != 0)
        gs__ledger_mark(ledger, 0, 0); /* its block is taken while there is room */
    *out = ledger;
    return 0;
}

void gs__ledger_close(gs__ledger_t *ledger)
{
    if (ledger == NULL)
        return;
    close_db(ledger);
    gs__history_counts_free(ledger);
    free(ledger);
}

const char *gs__ledger_path(const gs__ledger_t *ledger)
{
    return ledger->path;
}

uint64_t gs__ledger_next_id(gs__ledger_t *ledger)
{
    return ledger->next_id++;
}

void gs__ledger_checkpoint(gs__ledger_t *ledger)
{
    if (ledger->db == NULL || ledger->commits_since_checkpoint == 0)
        return;
    if (sqlite3_wal_checkpoint_v2(ledger->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) !=
        SQLITE_OK)
        gs_warn("ledger checkpoint: %s", sqlite3_errmsg(ledger->db));
    ledger->commits_since_checkpoint = 0;
}

/* Runs a prepared statement that returns no rows (its own transaction, committed when it
 * returns), and resets it. Returns 0, or GS_EIO with SQLite's message in why. */
int gs__ledger_run(gs__ledger_t *ledger, sqlite3_stmt *stmt, char *why, size_t whylen)
{
    int rc = ledger->db != NULL ? sqlite3_step(stmt) : SQLITE_MISUSE;
    /* A full filesystem: the room kept beside the ledger goes to this write and the next ones
     * (the history stops; status and the log say so). */
    if (rc == SQLITE_FULL && stmt != NULL) {
        sqlite3_reset(stmt);
        if (gs__ledger_use_reserve(ledger))
            rc = sqlite3_step(stmt);
    }
    int result = 0;
    if (rc != SQLITE_DONE)
        result = gs_fail(why, whylen, GS_EIO, "%s",
                         ledger->db != NULL ? sqlite3_errmsg(ledger->db) : "the ledger is closed");
    if (stmt != NULL) {
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
    }
    if (result != 0) {
        gs_error("ledger: %s", why);
        return result;
    }
    if (++ledger->commits_since_checkpoint >= CHECKPOINT_FORCE_COMMITS)
        gs__ledger_checkpoint(ledger);
    return 0;
}

static json_t *parts_json(const gs__lease_record_t *rec)
{
    json_t *parts = json_array();
    for (unsigned i = 0; parts != NULL && i < rec->n_parts; i++) {
        const gs__record_part_t *p = &rec->parts[i];
        json_t *part =
            json_pack("{s:s, s:I, s:I, s:I}", "uuid", p->uuid, "slots", (json_int_t)p->slots,
                      "memory", (json_int_t)p->memory, "compute", (json_int_t)p->compute);
        if (part != NULL && p->instance[0] != '\0')
            json_object_set_new(part, "instance", json_string(p->instance));
        json_array_append_new(parts, part);
    }
    return parts;
}

/* Binds a JSON value as text (the statement keeps its own copy). */
static int bind_json(sqlite3_stmt *stmt, int index, json_t *value)
{
    char *text = value != NULL ? json_dumps(value, JSON_COMPACT) : NULL;
    json_decref(value);
    if (text == NULL)
        return GS_ENOMEM;
    int rc = sqlite3_bind_text(stmt, index, text, -1, SQLITE_TRANSIENT);
    free(text);
    return rc == SQLITE_OK ? 0 : GS_EIO;
}

int gs__ledger_put(gs__ledger_t *ledger, const gs__lease_record_t *rec, char *why, size_t whylen)
{
    sqlite3_stmt *stmt = ledger->stmt[ST_PUT];
    if (stmt == NULL)
        return gs__ledger_run(ledger, NULL, why, whylen);
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)rec->id);
    sqlite3_bind_int64(stmt, 2, rec->uid);
    sqlite3_bind_int64(stmt, 3, rec->gid);
    sqlite3_bind_text(stmt, 4, rec->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 5, rec->request.command, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 6, rec->client_pid);
    sqlite3_bind_int64(stmt, 7, (sqlite3_int64)rec->client_start);
    int result = bind_json(stmt, 8, gs_proto_acquire_json(&rec->request));
    if (result == 0)
        result = bind_json(stmt, 9, parts_json(rec));
    sqlite3_bind_int64(stmt, 10, rec->compute_share);
    sqlite3_bind_text(stmt, 11, rec->region, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 12,
                      rec->state == GS__LEASE_ACTIVE && rec->suspended ? "suspended"
                                                                       : state_name(rec->state),
                      -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 13, rec->granted_at_ms);
    sqlite3_bind_int64(stmt, 14, (sqlite3_int64)rec->region_ino);
    sqlite3_bind_int64(stmt, 15, rec->submitted_at_ms);
    if (result != 0) {
        result = gs_fail(why, whylen, GS_EIO, "%s", gs_strerror(result));
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        return result;
    }
    return gs__ledger_run(ledger, stmt, why, whylen);
}

int gs__ledger_set_state(gs__ledger_t *ledger, uint64_t id, gs__lease_state_t state, char *why,
                         size_t whylen)
{
    sqlite3_stmt *stmt = ledger->stmt[ST_STATE];
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)id);
        sqlite3_bind_text(stmt, 2, state_name(state), -1, SQLITE_STATIC);
    }
    return gs__ledger_run(ledger, stmt, why, whylen);
}

int gs__ledger_delete(gs__ledger_t *ledger, uint64_t id, char *why, size_t whylen)
{
    sqlite3_stmt *stmt = ledger->stmt[ST_DELETE];
    if (stmt != NULL)
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)id);
    return gs__ledger_run(ledger, stmt, why, whylen);
}

const char *gs__ledger_text(sqlite3_stmt *stmt, int col)
{
    const unsigned char *text = sqlite3_column_text(stmt, col);
    return text != NULL ? (const char *)text : "";
}

static int decode_parts(const char *text, gs__lease_record_t *rec)
{
    json_t *parts = json_loads(text, 0, NULL);
    int result = json_is_array(parts) && json_array_size(parts) <= GS_MAX_DEVICES ? 0 : GS_EFORMAT;
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p)
    {
        if (result != 0)
            break;
        const char *uuid = NULL, *instance = "";
        json_int_t slots = 0, memory = 0, compute = 0;
        if (json_unpack(p, "{s:s, s:I, s:I, s:I, s?s}", "uuid", &uuid, "slots", &slots, "memory",
                        &memory, "compute", &compute, "instance", &instance) != 0 ||
            slots < 0 || memory < 0 || compute < 0 || compute > 1000) {
            result = GS_EFORMAT;
            break;
        }
        gs__record_part_t *part = &rec->parts[rec->n_parts++];
        snprintf(part->uuid, sizeof(part->uuid), "%s", uuid);
        part->slots = (unsigned)slots;
        part->memory = (uint64_t)memory;
        part->compute = (uint32_t)compute;
        snprintf(part->instance, sizeof(part->instance), "%s", instance);
    }
    json_decref(parts);
    return result;
}

/* Decodes the current row of a "SELECT *" into rec. A row that cannot be read whole is still
 * given, with rec->damaged saying what is wrong: its id, user and holder are plain integers,
 * its request and parts JSON (parts missing: n_parts 0). */
static void decode_row(sqlite3_stmt *stmt, gs__lease_record_t *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->id = (uint64_t)sqlite3_column_int64(stmt, 0);
    rec->uid = (uint32_t)sqlite3_column_int64(stmt, 1);
    rec->gid = (uint32_t)sqlite3_column_int64(stmt, 2);
    snprintf(rec->user, sizeof(rec->user), "%s", gs__ledger_text(stmt, 3));
    rec->client_pid = (int32_t)sqlite3_column_int64(stmt, 5);
    rec->client_start = (uint64_t)sqlite3_column_int64(stmt, 6);
    const char *request = gs__ledger_text(stmt, 7);
    gs_request_t req;
    char why[GS_CLIENT_ERR_MAX];
    gs_lease_request_init(&rec->request);
    if (gs_proto_parse_request(request, strlen(request), &req, why, sizeof(why)) != 0 ||
        req.op != GS_OP_ACQUIRE) {
        gs_error("ledger: lease %llu: bad request %.200s: %s", (unsigned long long)rec->id, request,
                 why);
        snprintf(rec->damaged, sizeof(rec->damaged), "its request cannot be read: %.100s", why);
    } else {
        rec->request = req.lease;
    }
    if (decode_parts(gs__ledger_text(stmt, 8), rec) != 0) {
        gs_error("ledger: lease %llu: bad parts", (unsigned long long)rec->id);
        rec->n_parts = 0;
        snprintf(rec->damaged, sizeof(rec->damaged), "its parts cannot be read");
    }
    rec->compute_share = (uint32_t)sqlite3_column_int64(stmt, 9);
    snprintf(rec->region, sizeof(rec->region), "%s", gs__ledger_text(stmt, 10));
    rec->state =
        strcmp(gs__ledger_text(stmt, 11), "ending") == 0 ? GS__LEASE_ENDING : GS__LEASE_ACTIVE;
    rec->suspended = strcmp(gs__ledger_text(stmt, 11), "suspended") == 0;
    rec->granted_at_ms = sqlite3_column_int64(stmt, 12);
    rec->region_ino = (uint64_t)sqlite3_column_int64(stmt, 13);
    rec->submitted_at_ms = sqlite3_column_int64(stmt, 14);
}

int gs__ledger_load(gs__ledger_t *ledger, int (*fn)(void *arg, const gs__lease_record_t *rec),
                    void *arg)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(ledger->db,
                           "SELECT id, uid, gid, user, command, client_pid, client_start, "
                           "request, parts, compute_share, region, state, granted_at, region_ino, "
                           "submitted_at FROM leases ORDER BY id",
                           -1, &stmt, NULL) != SQLITE_OK) {
        gs_error("cannot read the ledger %s: %s", ledger->path, sqlite3_errmsg(ledger->db));
        return GS_EIO;
    }
    gs__lease_record_t *rec = malloc(sizeof(*rec));
    int result = rec != NULL ? 0 : GS_ENOMEM;
    int rc = SQLITE_DONE;
    while (result == 0 && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        decode_row(stmt, rec);
        result = fn(arg, rec);
    }
    /* A read that stops on an error must not pass for the end of the table. */
    if (result == 0 && rc != SQLITE_DONE) {
        gs_error("cannot read the ledger %s to its end: %s", ledger->path,
                 sqlite3_errmsg(ledger->db));
        result = GS_EIO;
    }
    free(rec);
    sqlite3_finalize(stmt);
    return result;
}

int gs__ledger_intact(const gs__ledger_t *ledger)
{
    struct stat st;
    if (stat(ledger->path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : 1;
    return st.st_dev == ledger->dev && st.st_ino == ledger->ino ? 1 : -1;
}

/* Sets the id sequence so that no id below next is ever given again. */
static int keep_sequence(gs__ledger_t *ledger, uint64_t next, char *why, size_t whylen)
{
    char statement[160];
    snprintf(statement, sizeof(statement),
             "UPDATE sqlite_sequence SET seq = %llu WHERE name = 'leases'",
             (unsigned long long)(next - 1));
    int result = gs__ledger_exec(ledger, statement, why, whylen);
    if (result == 0 && sqlite3_changes(ledger->db) == 0) {
        snprintf(statement, sizeof(statement),
                 "INSERT INTO sqlite_sequence (name, seq) VALUES ('leases', %llu)",
                 (unsigned long long)(next - 1));
        result = gs__ledger_exec(ledger, statement, why, whylen);
    }
    return result;
}

int gs__ledger_rewrite(gs__ledger_t *ledger, const gs__lease_record_t *const *recs, unsigned n,
                       char *err, size_t errlen)
{
    uint64_t next = ledger->next_id;
    char why[256] = "";
    close_db(ledger);
    ledger->rewriting = 1;
    int result = open_db(ledger, err, errlen);
    ledger->rewriting = 0;
    if (result != 0)
        return result;
    result = gs__ledger_exec(ledger, "BEGIN", why, sizeof(why));
    for (unsigned i = 0; result == 0 && i < n; i++)
        result = gs__ledger_put(ledger, recs[i], why, sizeof(why));
    if (result == 0)
        result = keep_sequence(ledger, next, why, sizeof(why));
    if (result == 0)
        result = gs__ledger_exec(ledger, "COMMIT", why, sizeof(why));
    if (result != 0) {
        result = gs_fail(err, errlen, result, "cannot write the ledger %s: %s", ledger->path, why);
        close_db(ledger);
        return result;
    }
    ledger->next_id = next > ledger->next_id ? next : ledger->next_id;
    return 0;
}

/* The parts of an ended lease with their peaks, as stored in history.gpus. */
static json_t *history_gpus(const gs__history_entry_t *e, uint64_t *limit, uint64_t *peak)
{
    json_t *gpus = json_array();
    *limit = 0;
    *peak = 0;
    for (unsigned i = 0; gpus != NULL && i < e->rec->n_parts && i < GS_MAX_DEVICES; i++) {
        const gs__record_part_t *p = &e->rec->parts[i];
        *limit += p->memory;
        *peak += e->peak[i];
        json_array_append_new(gpus,
                              json_pack("{s:I, s:s, s:I, s:I}", "index", (json_int_t)e->index[i],
                                        "uuid", p->uuid, "memory_limit", (json_int_t)p->memory,
                                        "peak_memory", (json_int_t)e->peak[i]));
    }
    return gpus;
}

int gs__ledger_history_add(gs__ledger_t *ledger, const gs__history_entry_t *e)
{
    sqlite3_stmt *stmt = ledger->stmt[ST_HISTORY];
    const gs__lease_record_t *rec = e->rec;
    char why[256];
    if (ledger->disk_full) {
        ledger->dropped++; /* the room left goes to the leases' rows */
        return GS_ENOSPC;
    }
    if (stmt == NULL)
        return gs__ledger_run(ledger, NULL, why, sizeof(why));
    uint64_t limit = 0, peak = 0;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)rec->id);
    sqlite3_bind_int64(stmt, 2, rec->uid);
    sqlite3_bind_text(stmt, 3, rec->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, rec->request.name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 5, rec->request.command, -1, SQLITE_STATIC);
    int result = bind_json(stmt, 6, gs_proto_acquire_json(&rec->request));
    if (result == 0)
        result = bind_json(stmt, 7, history_gpus(e, &limit, &peak));
    sqlite3_bind_int64(stmt, 8, rec->granted_at_ms);
    sqlite3_bind_int64(stmt, 9, e->ended_at_ms);
    sqlite3_bind_int64(stmt, 10, (sqlite3_int64)limit);
    sqlite3_bind_int64(stmt, 11, (sqlite3_int64)peak);
    sqlite3_bind_int64(stmt, 12, (sqlite3_int64)e->oom_events);
    if (e->job_end.known && e->job_end.signal == 0)
        sqlite3_bind_int64(stmt, 13, e->job_end.exit_status);
    if (e->job_end.known && e->job_end.signal != 0)
        sqlite3_bind_int64(stmt, 14, e->job_end.signal);
    sqlite3_bind_text(stmt, 15, e->reason != NULL ? e->reason : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 16, rec->submitted_at_ms);
    if (result != 0) {
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        return result;
    }
    result = gs__ledger_run(ledger, stmt, why, sizeof(why));
    if (result == 0)
        gs__history_written(ledger, rec->uid);
    return result;
}

/* Sets key to the integer of column col, or to null when the column is NULL. */
static void set_nullable(json_t *obj, const char *key, sqlite3_stmt *stmt, int col)
{
    if (sqlite3_column_type(stmt, col) == SQLITE_NULL)
        json_object_set_new(obj, key, json_null());
    else
        json_object_set_new(obj, key, json_integer(sqlite3_column_int64(stmt, col)));
}

/* The history object of the current row (columns as in gs__ledger_history's query). */
static json_t *history_row(sqlite3_stmt *stmt)
{
    json_t *request = json_loads(gs__ledger_text(stmt, 5), 0, NULL);
    json_t *gpus = json_loads(gs__ledger_text(stmt, 6), 0, NULL);
    if (request != NULL) {
        static const char *const hidden[] = {"op", "wait", "command", "uid", "gid", "user", "name"};
        for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
            json_object_del(request, hidden[i]);
    }
    int64_t granted = sqlite3_column_int64(stmt, 7), ended = sqlite3_column_int64(stmt, 8);
    json_t *obj = json_pack(
        "{s:I, s:s, s:I, s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "id",
        (json_int_t)sqlite3_column_int64(stmt, 0), "user", gs__ledger_text(stmt, 2), "uid",
        (json_int_t)sqlite3_column_int64(stmt, 1), "name", gs__ledger_text(stmt, 3), "command",
        gs__ledger_text(stmt, 4), "request", request != NULL ? request : json_object(), "gpus",
        json_is_array(gpus) ? gpus : json_array(), "granted_at_ms", (json_int_t)granted,
        "ended_at_ms", (json_int_t)ended, "duration_ms", (json_int_t)(ended - granted),
        "memory_limit", (json_int_t)sqlite3_column_int64(stmt, 9), "peak_memory",
        (json_int_t)sqlite3_column_int64(stmt, 10), "oom_events",
        (json_int_t)sqlite3_column_int64(stmt, 11));
    if (!json_is_array(gpus))
        json_decref(gpus);
    if (obj == NULL)
        return NULL;
    set_nullable(obj, "exit_status", stmt, 12);
    set_nullable(obj, "signal", stmt, 13);
    json_object_set_new(obj, "end_reason", json_string(gs__ledger_text(stmt, 14)));
    /* When it was asked for and how long it waited (issue 27); null for rows from before. */
    int64_t submitted = sqlite3_column_int64(stmt, 15);
    json_object_set_new(obj, "submitted_at_ms",
                        submitted > 0 ? json_integer(submitted) : json_null());
    json_object_set_new(obj, "queue_wait_ms",
                        submitted > 0 ? json_integer(granted > submitted ? granted - submitted : 0)
                                      : json_null());
    return obj;
}

/* The query of one page: by the index of the filter (a user's uid, root's user name, or every
 * row by time), after the cursor (ended_at, id), most recent first. */
static const char *page_query(int64_t uid, const char *user)
{
#define HISTORY_COLUMNS                                                                            \
    "SELECT id, uid, user, name, command, request, gpus, granted_at, ended_at, memory_limit, "     \
    "peak_memory, oom_events, exit_status, signal, end_reason, submitted_at, "                     \
    "length(command) + length(request) + length(gpus) + length(name) + length(end_reason) "        \
    "FROM history "
#define HISTORY_PAGE                                                                               \
    "AND ended_at >= ?1 AND (ended_at, id) < (?4, ?5) ORDER BY ended_at DESC, id DESC LIMIT ?6"
    if (uid >= 0)
        return HISTORY_COLUMNS "WHERE uid = ?2 " HISTORY_PAGE;
    if (user != NULL)
        return HISTORY_COLUMNS "WHERE user = ?3 " HISTORY_PAGE;
    return HISTORY_COLUMNS "WHERE 1 " HISTORY_PAGE;
#undef HISTORY_PAGE
#undef HISTORY_COLUMNS
}

/* Reads the page's rows into rows; sets *next to the cursor after the last one when the page
 * was cut by its bounds (more rows may follow). */
static int read_page(gs__ledger_t *ledger, sqlite3_stmt *stmt, uint32_t limit, json_t *rows,
                     gs_history_query_t *next, int *more)
{
    int rc, result = 0;
    size_t bytes = 0;
    uint32_t n = 0;
    while (result == 0 && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        json_t *row = history_row(stmt);
        result = row != NULL && json_array_append_new(rows, row) == 0 ? 0 : GS_ENOMEM;
        bytes += (size_t)sqlite3_column_int64(stmt, 16) + 320; /* the keys and numbers */
        next->before_ms = sqlite3_column_int64(stmt, 8);
        next->before_id = sqlite3_column_int64(stmt, 0);
        if (++n == limit || bytes >= GS_HISTORY_PAGE_BYTES) {
            *more = 1; /* a row may follow: the client asks for the next page */
            break;
        }
    }
    if (result == 0 && !*more && rc != SQLITE_DONE) {
        gs_error("ledger: history: %s", sqlite3_errmsg(ledger->db));
        result = GS_EIO;
    }
    return result;
}

int gs__ledger_history(gs__ledger_t *ledger, const gs_history_query_t *q, int64_t uid,
                       const char *user, json_t **out, gs_history_query_t *next, int *more)
{
    sqlite3_stmt *stmt = NULL;
    *more = 0;
    *next = *q;
    if (sqlite3_prepare_v2(ledger->db, page_query(uid, user), -1, &stmt, NULL) != SQLITE_OK) {
        gs_error("ledger: %s", sqlite3_errmsg(ledger->db));
        return GS_EIO;
    }
    /* At most a page, whatever the limit asked: each reply costs a bounded read of an index
     * and a bounded buffer, and the client asks again from the cursor for the rest. */
    uint32_t limit = q->limit < GS_HISTORY_PAGE ? q->limit : GS_HISTORY_PAGE;
    sqlite3_bind_int64(stmt, 1, q->since_ms);
    sqlite3_bind_int64(stmt, 2, uid);
    if (user != NULL)
        sqlite3_bind_text(stmt, 3, user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 4, q->before_ms != 0 ? q->before_ms : INT64_MAX);
    sqlite3_bind_int64(stmt, 5, q->before_ms != 0 ? q->before_id : INT64_MAX);
    sqlite3_bind_int64(stmt, 6, limit);
    json_t *rows = json_array();
    int result = rows != NULL ? read_page(ledger, stmt, limit, rows, next, more) : GS_ENOMEM;
    sqlite3_finalize(stmt);
    if (result != 0) {
        json_decref(rows);
        return result;
    }
    /* The caller's limit reached: nothing more is wanted. */
    *more = *more && json_array_size(rows) < q->limit;
    next->limit = *more ? q->limit - (uint32_t)json_array_size(rows) : 0;
    *out = rows;
    return 0;
}
