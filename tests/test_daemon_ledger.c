/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the ledger: round trip, ids never reused, kill -9 durability, integrity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "core/ledger.h"

#define GIB (UINT64_C(1) << 30)

static char dir[] = "/tmp/gs-ledger-test-XXXXXX";
static char path[256];
static char why[256];

static gs__lease_record_t record(uint64_t id)
{
    gs__lease_record_t rec;
    memset(&rec, 0, sizeof(rec));
    rec.id = id;
    rec.uid = 1000 + (uint32_t)id;
    rec.gid = 100;
    snprintf(rec.user, sizeof(rec.user), "user%llu", (unsigned long long)id);
    rec.client_pid = 4242;
    rec.client_start = 123456789;
    gs_lease_request_init(&rec.request);
    rec.request.kind = GS_LEASE_MEMORY;
    rec.request.memory = 4 * GIB;
    rec.request.compute = 30;
    rec.request.priority = 2;
    snprintf(rec.request.command, sizeof(rec.request.command), "python infer.py --id %llu",
             (unsigned long long)id);
    rec.n_parts = 2;
    snprintf(rec.parts[0].uuid, sizeof(rec.parts[0].uuid), "GPU-aaaa");
    rec.parts[0].memory = 4 * GIB;
    rec.parts[0].compute = 300;
    snprintf(rec.parts[1].uuid, sizeof(rec.parts[1].uuid), "GPU-bbbb");
    rec.parts[1].slots = 2;
    rec.parts[1].memory = 40 * GIB;
    rec.parts[1].compute = 500;
    rec.compute_share = 30;
    snprintf(rec.region, sizeof(rec.region), "/var/lib/gpushare/regions/%llu",
             (unsigned long long)id);
    rec.region_ino = 4242 + id;
    rec.state = GS__LEASE_ACTIVE;
    rec.granted_at_ms = 1700000000000;
    rec.submitted_at_ms = 1699999990000; /* it waited 10 s (issue 27) */
    return rec;
}

typedef struct loaded {
    int count;
    gs__lease_record_t recs[8];
} loaded_t;

static int collect(void *arg, const gs__lease_record_t *rec)
{
    loaded_t *l = arg;
    if (l->count < 8)
        l->recs[l->count] = *rec;
    l->count++;
    return 0;
}

static gs__ledger_t *open_ledger(void)
{
    gs__ledger_t *ledger = NULL;
    char err[256];
    assert_int_equal(gs__ledger_open(path, &ledger, err, sizeof(err)), 0);
    return ledger;
}

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/state.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_round_trip(void **state)
{
    (void)state;
    gs__ledger_t *ledger = open_ledger();
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    uint64_t a = gs__ledger_next_id(ledger), b = gs__ledger_next_id(ledger);
    assert_int_equal(a, 1);
    assert_int_equal(b, 2);
    gs__lease_record_t ra = record(a), rb = record(b);
    rb.state = GS__LEASE_ENDING;
    /* A MIG lease's part names its instance. */
    snprintf(rb.parts[0].instance, sizeof(rb.parts[0].instance), "MIG-5f2d9a1c");
    assert_int_equal(gs__ledger_put(ledger, &ra, why, sizeof(why)), 0);
    assert_int_equal(gs__ledger_put(ledger, &rb, why, sizeof(why)), 0);
    gs__ledger_close(ledger);

    ledger = open_ledger();
    loaded_t l = {0};
    assert_int_equal(gs__ledger_load(ledger, collect, &l), 0);
    assert_int_equal(l.count, 2);
    assert_memory_equal(&l.recs[0], &ra, sizeof(ra));
    assert_memory_equal(&l.recs[1], &rb, sizeof(rb));

    /* Ids are never reused, even when the largest was deleted. */
    assert_int_equal(gs__ledger_delete(ledger, b, why, sizeof(why)), 0);
    assert_int_equal(gs__ledger_set_state(ledger, a, GS__LEASE_ENDING, why, sizeof(why)), 0);
    gs__ledger_close(ledger);
    ledger = open_ledger();
    assert_int_equal(gs__ledger_next_id(ledger), 3);
    memset(&l, 0, sizeof(l));
    assert_int_equal(gs__ledger_load(ledger, collect, &l), 0);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.recs[0].id, a);
    assert_int_equal(l.recs[0].state, GS__LEASE_ENDING);
    assert_int_equal(gs__ledger_delete(ledger, a, why, sizeof(why)), 0);
    gs__ledger_close(ledger);
}

/* A child writes two leases and deletes one, and is killed with SIGKILL: every write that
 * returned is there (each is its own transaction), and the ids go on after the largest. */
static void test_kill_9_keeps_committed(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gs__ledger_t *ledger = NULL;
        char err[256];
        if (gs__ledger_open(path, &ledger, err, sizeof(err)) != 0)
            _exit(1);
        gs__lease_record_t r10 = record(10), r11 = record(11);
        if (gs__ledger_put(ledger, &r10, why, sizeof(why)) != 0 ||
            gs__ledger_put(ledger, &r11, why, sizeof(why)) != 0 ||
            gs__ledger_delete(ledger, 11, why, sizeof(why)) != 0)
            _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    close(ready[0]);
    close(ready[1]);

    gs__ledger_t *ledger = open_ledger();
    loaded_t l = {0};
    assert_int_equal(gs__ledger_load(ledger, collect, &l), 0);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.recs[0].id, 10);
    assert_int_equal(gs__ledger_next_id(ledger), 12);
    assert_int_equal(gs__ledger_delete(ledger, 10, why, sizeof(why)), 0);
    gs__ledger_close(ledger);
}

/* Overwrites the bytes of page (1-based, 4096-byte pages) of file with a pattern. */
static void spoil_page(const char *file, int page)
{
    FILE *f = fopen(file, "r+b");
    assert_non_null(f);
    char junk[4096];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (char)(i * 7919 + 13);
    assert_int_equal(fseek(f, (long)(page - 1) * 4096, SEEK_SET), 0);
    assert_int_equal(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
    fclose(f);
}

/* A ledger with a page of garbage, and a file that is no database at all: refused with one line
 * naming the file and the recovery, never read as "no leases". */
static void test_damaged_ledger_is_refused(void **state)
{
    (void)state;
    char damaged[300], err[512];
    snprintf(damaged, sizeof(damaged), "%s/damaged.db", dir);
    gs__ledger_t *ledger = NULL;
    assert_int_equal(gs__ledger_open(damaged, &ledger, err, sizeof(err)), 0);
    for (uint64_t id = 1; id <= 40; id++) {
        gs__lease_record_t rec = record(id);
        assert_int_equal(gs__ledger_put(ledger, &rec, why, sizeof(why)), 0);
    }
    gs__ledger_checkpoint(ledger);
    gs__ledger_close(ledger);
    spoil_page(damaged, 3);
    ledger = NULL;
    assert_int_equal(gs__ledger_open(damaged, &ledger, err, sizeof(err)), GS_EIO);
    assert_null(ledger);
    char expected[400];
    snprintf(expected, sizeof(expected),
             "the ledger %s is damaged (SQLite integrity_check: ", damaged);
    assert_memory_equal(err, expected, strlen(expected));
    assert_non_null(strstr(err, "see RECOVERY in gpushared(8)"));

    spoil_page(damaged, 1);
    assert_int_equal(gs__ledger_open(damaged, &ledger, err, sizeof(err)), GS_EIO);
    snprintf(expected, sizeof(expected), "cannot read the ledger %s: file is not a database",
             damaged);
    assert_string_equal(err, expected);
}

/* The ledger's file removed under a running daemon: noticed, and written again with the live
 * leases; ids go on where they were. A file put in its place is noticed too. */
static void test_rewrite_after_removal(void **state)
{
    (void)state;
    char err[512];
    gs__ledger_t *ledger = open_ledger();
    uint64_t first = gs__ledger_next_id(ledger), second = gs__ledger_next_id(ledger);
    gs__lease_record_t r1 = record(first), r2 = record(second);
    assert_int_equal(gs__ledger_put(ledger, &r1, why, sizeof(why)), 0);
    assert_int_equal(gs__ledger_put(ledger, &r2, why, sizeof(why)), 0);
    assert_int_equal(gs__ledger_intact(ledger), 1);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(gs__ledger_intact(ledger), 0);
    const gs__lease_record_t *live[] = {&r2};
    assert_int_equal(gs__ledger_rewrite(ledger, live, 1, err, sizeof(err)), 0);
    assert_int_equal(gs__ledger_intact(ledger), 1);
    gs__ledger_close(ledger);
    ledger = open_ledger();
    loaded_t l = {0};
    assert_int_equal(gs__ledger_load(ledger, collect, &l), 0);
    assert_int_equal(l.count, 1);
    assert_memory_equal(&l.recs[0], &r2, sizeof(r2));
    assert_int_equal(gs__ledger_next_id(ledger), second + 1);
    char other[300];
    snprintf(other, sizeof(other), "%s/other", dir);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(gs__ledger_intact(ledger), -1);
    gs__ledger_close(ledger);
    unlink(path);
}

static void test_newer_schema_is_refused(void **state)
{
    (void)state;
    char other[300], cmd[600], err[256];
    snprintf(other, sizeof(other), "%s/newer.db", dir);
    snprintf(cmd, sizeof(cmd), "sqlite3 %s 'PRAGMA user_version=7;'", other);
    assert_int_equal(system(cmd), 0);
    gs__ledger_t *ledger = NULL;
    assert_int_equal(gs__ledger_open(other, &ledger, err, sizeof(err)), GS_EVERSION);
    assert_string_equal(err, "the ledger was written by a newer gpushared (schema 7 > 3)");
}

/* Ended leases go to the history (issue 14): kept across a reopen, most recent first, filtered
 * by time, uid and user; a schema 1 ledger gains the table (and the regions' inodes). */
static void test_history(void **state)
{
    (void)state;
    char old[300], cmd[700];
    snprintf(old, sizeof(old), "%s/v1.db", dir);
    snprintf(cmd, sizeof(cmd), "sqlite3 %s 'PRAGMA user_version=1;'", old);
    assert_int_equal(system(cmd), 0);
    gs__ledger_t *ledger = NULL;
    char err[256];
    assert_int_equal(gs__ledger_open(old, &ledger, err, sizeof(err)), 0);
    gs__lease_record_t r1 = record(1), r2 = record(2);
    snprintf(r1.request.name, sizeof(r1.request.name), "train");
    gs__history_entry_t e = {.rec = &r1,
                             .ended_at_ms = 1700000060000,
                             .peak = {GIB, 2 * GIB},
                             .index = {0, 1},
                             .oom_events = 3,
                             .reason = "released"};
    e.job_end.known = 1;
    e.job_end.exit_status = 7;
    assert_int_equal(gs__ledger_history_add(ledger, &e), 0);
    gs__history_entry_t f = {.rec = &r2, .ended_at_ms = 1700000090000, .reason = "time limit"};
    f.job_end.known = 1;
    f.job_end.signal = 9;
    assert_int_equal(gs__ledger_history_add(ledger, &f), 0);
    gs__ledger_close(ledger);

    assert_int_equal(gs__ledger_open(old, &ledger, err, sizeof(err)), 0);
    gs_history_query_t q = {.limit = 10}, next;
    int more = 0;
    json_t *rows = NULL;
    assert_int_equal(gs__ledger_history(ledger, &q, -1, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 2);
    char *text = json_dumps(json_array_get(rows, 1), JSON_COMPACT);
    assert_string_equal(
        text, "{\"id\":1,\"user\":\"user1\",\"uid\":1001,\"name\":\"train\",\"command\":"
              "\"python infer.py --id 1\",\"request\":{\"gpu_memory\":\"4G\",\"compute\":30,"
              "\"priority\":2},\"gpus\":[{\"index\":0,\"uuid\":\"GPU-aaaa\",\"memory_limit\":"
              "4294967296,\"peak_memory\":1073741824},{\"index\":1,\"uuid\":\"GPU-bbbb\","
              "\"memory_limit\":42949672960,\"peak_memory\":2147483648}],\"granted_at_ms\":"
              "1700000000000,\"ended_at_ms\":1700000060000,\"duration_ms\":60000,"
              "\"memory_limit\":47244640256,\"peak_memory\":3221225472,\"oom_events\":3,"
              "\"exit_status\":7,\"signal\":null,\"end_reason\":\"released\","
              "\"submitted_at_ms\":1699999990000,\"queue_wait_ms\":10000}");
    free(text);
    const json_t *first = json_array_get(rows, 0);
    assert_int_equal(json_integer_value(json_object_get(first, "id")), 2);
    assert_true(json_is_null(json_object_get(first, "exit_status")));
    assert_int_equal(json_integer_value(json_object_get(first, "signal")), 9);
    json_decref(rows);

    q.since_ms = 1700000070000;
    assert_int_equal(gs__ledger_history(ledger, &q, -1, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    q.since_ms = 0;
    assert_int_equal(gs__ledger_history(ledger, &q, 1001, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    assert_int_equal(gs__ledger_history(ledger, &q, -1, "user2", &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    q.limit = 1;
    assert_int_equal(gs__ledger_history(ledger, &q, -1, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    gs__ledger_close(ledger);
    snprintf(cmd, sizeof(cmd), "test \"$(sqlite3 %s 'PRAGMA user_version;')\" = 3", old);
    assert_int_equal(system(cmd), 0);
}

/* Adds n history rows of uid, ending at ms, ms + 1000, ... (ids from id on). */
static void add_rows(gs__ledger_t *ledger, uint64_t id, uint32_t uid, unsigned n, int64_t ms)
{
    for (unsigned i = 0; i < n; i++) {
        gs__lease_record_t r = record(id + i);
        r.uid = uid;
        snprintf(r.user, sizeof(r.user), "u%u", (unsigned)uid);
        gs__history_entry_t e = {.rec = &r, .ended_at_ms = ms + 1000 * (int64_t)i, .reason = "x"};
        assert_int_equal(gs__ledger_history_add(ledger, &e), 0);
    }
}

/* Issue 28, finding 4: the history comes in pages of bounded size through an index of the
 * user's own rows; "next" goes on where a page stopped until the limit asked. */
static void test_history_pages(void **state)
{
    (void)state;
    char db[300], cmd[900];
    snprintf(db, sizeof(db), "%s/pages.db", dir);
    gs__ledger_t *ledger = NULL;
    char err[256];
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0);
    add_rows(ledger, 1, 7, 1200, 1700000000000);
    add_rows(ledger, 5001, 8, 3, 1700000000500);
    gs_history_query_t q = {.limit = 1000}, next;
    int more = 0;
    json_t *rows = NULL;
    assert_int_equal(gs__ledger_history(ledger, &q, 8, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 3);
    assert_int_equal(more, 0);
    json_decref(rows);
    assert_int_equal(gs__ledger_history(ledger, &q, 7, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), GS_HISTORY_PAGE);
    assert_int_equal(more, 1);
    assert_int_equal(next.limit, 500);
    assert_int_equal(next.before_id, 701); /* the newest 500 of ids 1..1200 */
    assert_int_equal(next.before_ms, 1700000000000 + 700 * 1000);
    json_decref(rows);
    q = next;
    assert_int_equal(gs__ledger_history(ledger, &q, 7, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 500);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 0), "id")), 700);
    assert_int_equal(more, 0); /* 1000 given: the limit */
    json_decref(rows);
    gs__ledger_close(ledger);
    /* A user's page reads that user's index, root's filter by name its own, everyone's by time. */
    const char *plans[][2] = {
        {"uid = 7", "history_uid"}, {"user = 'u7'", "history_user"}, {"1", "history_ended"}};
    for (unsigned i = 0; i < 3; i++) {
        snprintf(cmd, sizeof(cmd),
                 "sqlite3 %s \"EXPLAIN QUERY PLAN SELECT id FROM history WHERE %s AND ended_at "
                 ">= 0 AND (ended_at, id) < (9e18, 9e18) ORDER BY ended_at DESC, id DESC LIMIT "
                 "500\" | grep -Eq 'USING (COVERING )?INDEX %s '",
                 db, plans[i][0], plans[i][1]);
        assert_int_equal(system(cmd), 0);
    }
}

/* Issue 25 and 28: the history is kept within its retention: a user's rows beyond theirs go
 * first (the oldest), then the oldest of all, then those past the days. */
static void test_history_retention(void **state)
{
    (void)state;
    char db[300];
    snprintf(db, sizeof(db), "%s/keep.db", dir);
    gs__ledger_t *ledger = NULL;
    char err[256];
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0);
    gs__history_retention_t keep = {.rows = 15, .rows_per_user = 10, .days = 1};
    gs__ledger_set_retention(ledger, &keep);
    int64_t now = 1700000000000;
    add_rows(ledger, 1, 1, 15, now - 3 * 86400000LL); /* three days old */
    add_rows(ledger, 101, 2, 10, now - 1000000);
    gs_history_query_t q = {.limit = 100}, next;
    int more = 0;
    json_t *rows = NULL;
    assert_int_equal(gs__ledger_history(ledger, &q, 1, NULL, &rows, &next, &more), 0);
    /* User 1's newest 10 were kept, then the 5 oldest of everyone went: its ids 11..15. */
    assert_int_equal(json_array_size(rows), 5);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 4), "id")), 11);
    json_decref(rows);
    gs__ledger_tick(ledger, now);
    assert_int_equal(gs__ledger_history(ledger, &q, -1, NULL, &rows, &next, &more), 0);
    assert_int_equal(json_array_size(rows), 10); /* user 1's rows were older than a day */
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 9), "id")), 101);
    json_decref(rows);
    gs__ledger_close(ledger);
}

/* Issue 28, finding 5: a ledger emptied (0 bytes) or whose leases table was dropped, while the
 * marker says leases were live, is refused with one line; without the marker it starts. */
static void test_marker(void **state)
{
    (void)state;
    char db[300], cmd[700], err[512], want[1024];
    snprintf(db, sizeof(db), "%s/marked.db", dir);
    gs__ledger_t *ledger = NULL;
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0);
    uint64_t id = gs__ledger_next_id(ledger);
    gs__lease_record_t r = record(id);
    assert_int_equal(gs__ledger_mark(ledger, 1, id), 0);
    assert_int_equal(gs__ledger_put(ledger, &r, why, sizeof(why)), 0);
    gs__ledger_close(ledger);
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0); /* intact */
    gs__ledger_close(ledger);
    snprintf(cmd, sizeof(cmd), "sqlite3 %s 'DROP TABLE leases'", db);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), GS_EIO);
    snprintf(want, sizeof(want),
             "the ledger %s has no leases (empty or replaced), but %s.live says leases were live "
             "(from lease 1 on): gpushared will not start and forget them; see RECOVERY in "
             "gpushared(8)",
             db, db);
    assert_string_equal(err, want);
    assert_int_equal(truncate(db, 0), 0);
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), GS_EIO);
    assert_string_equal(err, want);
    snprintf(cmd, sizeof(cmd), "%s.live", db);
    assert_int_equal(unlink(cmd), 0);
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0); /* root decided */
    gs__ledger_close(ledger);
}

/* Issue 28, finding 5: a row whose request cannot be read is given all the same, damaged, with
 * its parts (its capacity) and holder. */
static void test_damaged_row(void **state)
{
    (void)state;
    char db[300], cmd[700], err[256];
    snprintf(db, sizeof(db), "%s/bad-row.db", dir);
    gs__ledger_t *ledger = NULL;
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0);
    gs__lease_record_t r = record(gs__ledger_next_id(ledger));
    assert_int_equal(gs__ledger_put(ledger, &r, why, sizeof(why)), 0);
    gs__ledger_close(ledger);
    snprintf(cmd, sizeof(cmd), "sqlite3 %s \"UPDATE leases SET request = '{not json'\"", db);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(gs__ledger_open(db, &ledger, err, sizeof(err)), 0);
    loaded_t got = {0};
    assert_int_equal(gs__ledger_load(ledger, collect, &got), 0);
    assert_int_equal(got.count, 1);
    assert_int_equal(strncmp(got.recs[0].damaged, "its request cannot be read: ", 28), 0);
    assert_int_equal(got.recs[0].n_parts, 2);
    assert_int_equal(got.recs[0].parts[1].memory, 40 * GIB);
    assert_int_equal(got.recs[0].client_pid, 4242);
    gs__ledger_close(ledger);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_kill_9_keeps_committed),
        cmocka_unit_test(test_damaged_ledger_is_refused),
        cmocka_unit_test(test_rewrite_after_removal),
        cmocka_unit_test(test_newer_schema_is_refused),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_history_pages),
        cmocka_unit_test(test_history_retention),
        cmocka_unit_test(test_marker),
        cmocka_unit_test(test_damaged_row),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
