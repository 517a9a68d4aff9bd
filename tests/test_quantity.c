/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the quantity parser: every unit, every error, exact values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/quantity.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static uint64_t bytes_ok(const char *text, unsigned flags)
{
    uint64_t value = 12345;
    char err[GS_QTY_ERR_MAX] = "";
    assert_int_equal(gs_qty_parse_bytes(text, flags, &value, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    return value;
}

/* Asserts that text is rejected with code, the value is untouched and the message quotes text
 * and contains reason. */
static void bytes_bad(const char *text, int code, const char *reason)
{
    uint64_t value = 777;
    char err[GS_QTY_ERR_MAX] = "";
    assert_int_equal(gs_qty_parse_bytes(text, 0, &value, err, sizeof(err)), code);
    assert_int_equal(value, 777);
    char quoted[128];
    snprintf(quoted, sizeof(quoted), "\"%s\"", text);
    assert_non_null(strstr(err, quoted));
    assert_non_null(strstr(err, reason));
}

static void test_bytes_units(void **state)
{
    (void)state;
    assert_int_equal(bytes_ok("4096", 0), 4096);
    assert_int_equal(bytes_ok("4096B", 0), 4096);
    assert_int_equal(bytes_ok("1K", 0), 1024);
    assert_int_equal(bytes_ok("1k", 0), 1024);
    assert_int_equal(bytes_ok("512M", 0), 512 * MIB);
    assert_int_equal(bytes_ok("512MB", 0), 512 * MIB);
    assert_int_equal(bytes_ok("4G", 0), 4 * GIB);
    assert_int_equal(bytes_ok("4g", 0), 4 * GIB);
    assert_int_equal(bytes_ok("4Gi", 0), 4 * GIB);
    assert_int_equal(bytes_ok("4GiB", 0), 4 * GIB);
    /* Issue 27: 4gb as 4GB (lowercase), as people type it; 4Gb (gigabits) stays refused. */
    assert_int_equal(bytes_ok("4gb", 0), 4 * GIB);
    assert_int_equal(bytes_ok("4GB", 0), 4 * GIB);
    assert_int_equal(bytes_ok("512mb", 0), 512 * MIB);
    assert_int_equal(bytes_ok("4gib", 0), 4 * GIB);
    assert_int_equal(bytes_ok("1.5G", 0), 3 * GIB / 2);
    assert_int_equal(bytes_ok("2T", 0), 2 * 1024 * GIB);
    assert_int_equal(bytes_ok("1P", 0), UINT64_C(1) << 50);
    assert_int_equal(bytes_ok("15E", 0), UINT64_C(15) << 60);
    assert_int_equal(bytes_ok("18446744073709551615", 0), UINT64_MAX);
    assert_int_equal(bytes_ok("0", GS_QTY_ALLOW_ZERO), 0);
    assert_int_equal(bytes_ok("80.000G", 0), 80 * GIB);
    assert_int_equal(bytes_ok("4G", GS_QTY_REQUIRE_UNIT), 4 * GIB);
    assert_int_equal(bytes_ok("4096B", GS_QTY_REQUIRE_UNIT), 4096);
}

/* Sizes with decimals are rounded down to whole MiB, as GPU memory is counted (issue 14). */
static void test_bytes_decimals(void **state)
{
    (void)state;
    assert_int_equal(bytes_ok("1.1G", 0), 1126 * MIB); /* 1126.4 MiB */
    assert_int_equal(bytes_ok("2.3G", 0), 2355 * MIB); /* 2355.2 MiB */
    assert_int_equal(bytes_ok("0.1G", 0), 102 * MIB);  /* 102.4 MiB */
    assert_int_equal(bytes_ok("1.2M", 0), 1 * MIB);
    assert_int_equal(bytes_ok("1.999M", 0), 1 * MIB);
    assert_int_equal(bytes_ok("0.5T", 0), 512 * GIB);
    assert_int_equal(bytes_ok("1.1G", GS_QTY_REQUIRE_UNIT), 1126 * MIB);
    assert_int_equal(bytes_ok("1536.7K", 0), 1 * MIB);
    assert_int_equal(bytes_ok("14.99E", 0), UINT64_C(17282293354056384512)); /* 16481679300362M */
}

/* Like bytes_bad, with flags. */
static void bytes_bad_flags(const char *text, unsigned flags, int code, const char *message)
{
    uint64_t value = 777;
    char err[GS_QTY_ERR_MAX] = "";
    assert_int_equal(gs_qty_parse_bytes(text, flags, &value, err, sizeof(err)), code);
    assert_int_equal(value, 777);
    assert_string_equal(err, message);
}

static void test_bytes_need_unit(void **state)
{
    (void)state;
    bytes_bad_flags("4", GS_QTY_REQUIRE_UNIT, GS_EINVAL,
                    "invalid memory size \"4\": add a unit: 4G or 4096M");
    bytes_bad_flags("1.5", GS_QTY_REQUIRE_UNIT, GS_EINVAL,
                    "invalid memory size \"1.5\": add a unit: 1.5G or 1536M");
    bytes_bad_flags("0", GS_QTY_REQUIRE_UNIT, GS_EINVAL,
                    "invalid memory size \"0\": must be above zero");
    assert_int_equal(bytes_ok("0", GS_QTY_REQUIRE_UNIT | GS_QTY_ALLOW_ZERO), 0);
    bytes_bad_flags("", GS_QTY_REQUIRE_UNIT, GS_EINVAL, "missing value");
    bytes_bad_flags("", 0, GS_EINVAL, "missing value");
}

static void test_bytes_errors(void **state)
{
    (void)state;
    bytes_bad("0", GS_EINVAL, "above zero");
    bytes_bad("0G", GS_EINVAL, "above zero");
    bytes_bad("-1", GS_EINVAL, "negative");
    bytes_bad("-4G", GS_EINVAL, "negative");
    bytes_bad("abc", GS_EINVAL, "expected a number");
    bytes_bad(".", GS_EINVAL, "expected a number");
    bytes_bad("4X", GS_EINVAL, "unknown unit");
    bytes_bad("4GG", GS_EINVAL, "unknown unit");
    bytes_bad("4G ", GS_EINVAL, "unknown unit");
    bytes_bad(" 4G", GS_EINVAL, "expected a number");
    bytes_bad("4Gb", GS_EINVAL, "unknown unit");
    bytes_bad("4gbit", GS_EINVAL, "unknown unit");
    bytes_bad("1e9", GS_EINVAL, "unknown unit");
    bytes_bad("1.5", GS_EINVAL, "below 1M");
    bytes_bad("0.1K", GS_EINVAL, "below 1M");
    bytes_bad("0.5K", GS_EINVAL, "below 1M");
    bytes_bad("0.9M", GS_EINVAL, "below 1M");
    bytes_bad("18446744073709551616", GS_ERANGE, "too large");
    bytes_bad("16E", GS_ERANGE, "too large");
    bytes_bad("99999999999999999999999", GS_ERANGE, "too large");
    bytes_bad("1.0000000000000000001G", GS_ERANGE, "too large");
}

static void test_fraction(void **state)
{
    (void)state;
    uint32_t milli = 0;
    char err[GS_QTY_ERR_MAX];
    assert_int_equal(gs_qty_parse_fraction("0.25", &milli, err, sizeof(err)), 0);
    assert_int_equal(milli, 250);
    assert_int_equal(gs_qty_parse_fraction("1", &milli, err, sizeof(err)), 0);
    assert_int_equal(milli, 1000);
    assert_int_equal(gs_qty_parse_fraction("1.000", &milli, err, sizeof(err)), 0);
    assert_int_equal(milli, 1000);
    assert_int_equal(gs_qty_parse_fraction(".5", &milli, err, sizeof(err)), 0);
    assert_int_equal(milli, 500);
    assert_int_equal(gs_qty_parse_fraction("0.001", &milli, err, sizeof(err)), 0);
    assert_int_equal(milli, 1);
    assert_int_equal(gs_qty_parse_fraction("0.2500", &milli, err, sizeof(err)), 0);
    assert_int_equal(milli, 250);
    milli = 9;
    assert_int_equal(gs_qty_parse_fraction("1.5", &milli, err, sizeof(err)), GS_ERANGE);
    assert_non_null(strstr(err, "\"1.5\""));
    assert_int_equal(gs_qty_parse_fraction("2", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_fraction("1.001", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_fraction("0", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_fraction("0.0", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_fraction("-0.5", &milli, err, sizeof(err)), GS_ERANGE);
    assert_non_null(strstr(err, "negative"));
    assert_int_equal(gs_qty_parse_fraction("0.3333", &milli, err, sizeof(err)), GS_EINVAL);
    assert_non_null(strstr(err, "at most 3 decimals"));
    assert_int_equal(gs_qty_parse_fraction("0.25x", &milli, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_fraction("", &milli, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "missing value");
    assert_int_equal(gs_qty_parse_fraction("half", &milli, err, sizeof(err)), GS_EINVAL);
    assert_non_null(strstr(err, "\"half\""));
    assert_int_equal(milli, 9);
}

/* Percentages wherever fractions are: --gpu 50% (issue 14). */
static void test_fraction_percent(void **state)
{
    (void)state;
    uint32_t milli = 0;
    char err[GS_QTY_ERR_MAX];
    const char *ok[] = {"50%", "100%", "12.5%", "0.1%", "25.0%", "33.30%"};
    const uint32_t want[] = {500, 1000, 125, 1, 250, 333};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(gs_qty_parse_fraction(ok[i], &milli, err, sizeof(err)), 0);
        assert_int_equal(milli, want[i]);
    }
    milli = 9;
    assert_int_equal(gs_qty_parse_fraction("0%", &milli, err, sizeof(err)), GS_ERANGE);
    assert_string_equal(err, "invalid GPU fraction \"0%\": must be above 0% and at most 100%");
    assert_int_equal(gs_qty_parse_fraction("101%", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_fraction("100.1%", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_fraction("33.33%", &milli, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err,
                        "invalid GPU fraction \"33.33%\": at most 1 decimal in a percentage (0.1% "
                        "of a GPU)");
    assert_int_equal(gs_qty_parse_fraction("50%%", &milli, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_fraction("%", &milli, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_fraction("-50%", &milli, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(milli, 9);
}

static void test_percent(void **state)
{
    (void)state;
    uint32_t pct = 0;
    char err[GS_QTY_ERR_MAX];
    assert_int_equal(gs_qty_parse_percent("30", 0, &pct, err, sizeof(err)), 0);
    assert_int_equal(pct, 30);
    assert_int_equal(gs_qty_parse_percent("30%", 0, &pct, err, sizeof(err)), 0);
    assert_int_equal(pct, 30);
    assert_int_equal(gs_qty_parse_percent("100", 0, &pct, err, sizeof(err)), 0);
    assert_int_equal(pct, 100);
    assert_int_equal(gs_qty_parse_percent("0", GS_QTY_ALLOW_ZERO, &pct, err, sizeof(err)), 0);
    assert_int_equal(pct, 0);
    pct = 5;
    assert_int_equal(gs_qty_parse_percent("0", 0, &pct, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_percent("101", 0, &pct, err, sizeof(err)), GS_ERANGE);
    assert_non_null(strstr(err, "\"101\""));
    assert_int_equal(gs_qty_parse_percent("99999999999999", 0, &pct, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_percent("-5", 0, &pct, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_percent("30.5", 0, &pct, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_percent("30%%", 0, &pct, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_percent("%", 0, &pct, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_percent("", 0, &pct, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(pct, 5);
}

static void test_device_list(void **state)
{
    (void)state;
    gs_device_bytes_t d;
    char err[GS_QTY_ERR_MAX];
    assert_int_equal(gs_qty_parse_device_bytes("4G", 0, &d, err, sizeof(err)), 0);
    assert_true(d.has_all);
    assert_int_equal(d.present, 0);
    assert_int_equal(gs_device_bytes_get(&d, 0), 4 * GIB);
    assert_int_equal(gs_device_bytes_get(&d, 15), 4 * GIB);

    assert_int_equal(gs_qty_parse_device_bytes("0=4G,1=2G", 0, &d, err, sizeof(err)), 0);
    assert_false(d.has_all);
    assert_int_equal(d.present, 3);
    assert_int_equal(gs_device_bytes_get(&d, 0), 4 * GIB);
    assert_int_equal(gs_device_bytes_get(&d, 1), 2 * GIB);
    assert_int_equal(gs_device_bytes_get(&d, 2), 0);
    assert_int_equal(gs_device_bytes_get(&d, 99), 0);

    assert_int_equal(gs_qty_parse_device_bytes("15=512M", 0, &d, err, sizeof(err)), 0);
    assert_int_equal(gs_device_bytes_get(&d, 15), 512 * MIB);

    gs_device_bytes_t untouched;
    memset(&untouched, 0xab, sizeof(untouched));
    d = untouched;
    assert_int_equal(gs_qty_parse_device_bytes("0=4G,0=2G", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_non_null(strstr(err, "given twice"));
    assert_int_equal(gs_qty_parse_device_bytes("16=1G", 0, &d, err, sizeof(err)), GS_ERANGE);
    assert_int_equal(gs_qty_parse_device_bytes("0=4G,", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_device_bytes("0=4G,1", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_non_null(strstr(err, "DEVICE=SIZE"));
    assert_int_equal(gs_qty_parse_device_bytes("x=4G", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_int_equal(gs_qty_parse_device_bytes("0=0", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_non_null(strstr(err, "\"0=0\""));
    assert_int_equal(gs_qty_parse_device_bytes("0=4Q", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_non_null(strstr(err, "unknown unit"));
    assert_int_equal(gs_qty_parse_device_bytes("", 0, &d, err, sizeof(err)), GS_EINVAL);
    assert_memory_equal(&d, &untouched, sizeof(d));
}

static void test_format_round_trip(void **state)
{
    (void)state;
    const uint64_t values[] = {1,          1023, 1024,       4 * GIB,
                               1536 * MIB, 4097, UINT64_MAX, UINT64_C(15) << 60};
    const char *expected[] = {"1",  "1023", "1K", "4G", "1536M", "4097", "18446744073709551615",
                              "15E"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char buf[32];
        assert_true(gs_qty_format_bytes(values[i], buf, sizeof(buf)) > 0);
        assert_string_equal(buf, expected[i]);
        assert_int_equal(bytes_ok(buf, 0), values[i]);
    }
    char small[2];
    assert_int_equal(gs_qty_format_bytes(4096, small, sizeof(small)), GS_ENOSPC);
    char human[32];
    gs_qty_format_human(4 * GIB, human, sizeof(human));
    assert_string_equal(human, "4 GiB");
    gs_qty_format_human(1536 * MIB, human, sizeof(human));
    assert_string_equal(human, "1.50 GiB");
    gs_qty_format_human(1000, human, sizeof(human));
    assert_string_equal(human, "1000 B");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_units),       cmocka_unit_test(test_bytes_errors),
        cmocka_unit_test(test_bytes_decimals),    cmocka_unit_test(test_bytes_need_unit),
        cmocka_unit_test(test_fraction),          cmocka_unit_test(test_fraction_percent),
        cmocka_unit_test(test_percent),           cmocka_unit_test(test_device_list),
        cmocka_unit_test(test_format_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
