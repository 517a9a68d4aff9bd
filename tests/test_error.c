/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gs_strerror. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpushare/error.h"

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(gs_strerror(0), "success");
    assert_string_equal(gs_strerror(GS_EINVAL), "Invalid argument");
    assert_string_equal(gs_strerror(GS_ENOMEM), "Cannot allocate memory");
    assert_string_equal(gs_strerror(GS_EFORMAT), "malformed input");
    assert_string_equal(gs_strerror(GS_ENOFIT), "no resources fit the request");
    assert_string_equal(gs_strerror(1), "unknown error");
    assert_string_equal(gs_strerror(-99999), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_strerror)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
