/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the table of gpushared's error codes (gpushare/wire_errors.def): each code is in
 * it once, parses back to itself, has the CLI exit status 1 or 75, and has its line in
 * docs/api.md's table of codes with that same exit status; the doc's table has no other code.
 * The daemon can send no code outside the table: its error replies take a gs_wire_error_t
 * (serve/api.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/wire_error.h"

#define DOC_ROWS_MAX 64
#define LINE_MAX_LEN 1024

/* One row of docs/api.md's table of codes: "| `name` | meaning | exit status ... |". */
typedef struct doc_row {
    char name[64];
    int exit; /* the first number of the last column, -1 when none */
} doc_row_t;

/* The first number in the last column of a table row, -1 when it has none. */
static int last_column_number(const char *line)
{
    const char *end = strrchr(line, '|');
    const char *start = end;
    while (start != NULL && start > line && start[-1] != '|')
        start--;
    for (const char *p = start; p != NULL && p < end; p++) {
        if (*p >= '0' && *p <= '9')
            return atoi(p);
    }
    return -1;
}

/* Reads the rows of the table that follows the line "| code | meaning | ... exit status |". */
static unsigned read_doc(doc_row_t *rows)
{
    char path[4096], line[LINE_MAX_LEN];
    const char *source = getenv("GS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/docs/api.md", source != NULL ? source : ".");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    unsigned n = 0;
    int in_table = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "| code | meaning |", 18) == 0 && strstr(line, "exit status") != NULL) {
            in_table = 1;
            continue;
        }
        if (!in_table || strncmp(line, "|---", 4) == 0)
            continue;
        if (strncmp(line, "| `", 3) != 0)
            break; /* the table ended */
        assert_true(n < DOC_ROWS_MAX);
        size_t len = strcspn(line + 3, "`");
        assert_true(len < sizeof(rows[n].name));
        memcpy(rows[n].name, line + 3, len);
        rows[n].name[len] = '\0';
        rows[n].exit = last_column_number(line);
        n++;
    }
    fclose(f);
    return n;
}

static void test_table(void **state)
{
    (void)state;
    for (unsigned i = GS_WIRE_OK + 1; i < GS_WIRE_UNKNOWN; i++) {
        const char *name = gs_wire_error_name((gs_wire_error_t)i);
        assert_true(name[0] != '\0');
        assert_int_equal(gs_wire_error_parse(name), i);
        int exit = gs_wire_error_exit((gs_wire_error_t)i);
        assert_true(exit == 1 || exit == 75 || exit == 78); /* 78: the administrator's to fix */
        assert_true(gs_wire_error_meaning((gs_wire_error_t)i)[0] != '\0');
        for (unsigned k = i + 1; k < GS_WIRE_UNKNOWN; k++)
            assert_string_not_equal(name, gs_wire_error_name((gs_wire_error_t)k));
    }
    assert_int_equal(gs_wire_error_parse("no_such_code"), GS_WIRE_UNKNOWN);
    assert_int_equal(gs_wire_error_parse(NULL), GS_WIRE_UNKNOWN);
    assert_int_equal(gs_wire_error_exit(GS_WIRE_UNKNOWN), 1);
    assert_int_equal(gs_wire_error_exit(GS_WIRE_NO_FIT), 75);
    assert_string_equal(gs_wire_error_name(GS_WIRE_GPU_FAILED), "gpu_failed");
}

static void test_documented(void **state)
{
    (void)state;
    doc_row_t rows[DOC_ROWS_MAX];
    unsigned n = read_doc(rows);
    assert_true(n > 0);
    for (unsigned i = GS_WIRE_OK + 1; i < GS_WIRE_UNKNOWN; i++) {
        const char *name = gs_wire_error_name((gs_wire_error_t)i);
        unsigned found = 0;
        for (unsigned r = 0; r < n; r++) {
            if (strcmp(rows[r].name, name) != 0)
                continue;
            found++;
            if (rows[r].exit != gs_wire_error_exit((gs_wire_error_t)i))
                fail_msg("docs/api.md: %s has exit status %d, the table %d", name, rows[r].exit,
                         gs_wire_error_exit((gs_wire_error_t)i));
        }
        if (found != 1)
            fail_msg("docs/api.md: %u lines for %s, not 1", found, name);
    }
    for (unsigned r = 0; r < n; r++) {
        if (gs_wire_error_parse(rows[r].name) == GS_WIRE_UNKNOWN)
            fail_msg("docs/api.md documents %s, which is not in wire_errors.def", rows[r].name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
