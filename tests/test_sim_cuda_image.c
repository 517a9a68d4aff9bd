/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gpusim's module image parser (sim/cuda/image.c): the text format, opaque images,
 * every error with its line number, and reading no further than allowed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "cuda_internal.h"

static int parse(const char *text, gsim_cu_image_t *img, char *err)
{
    return gsim_cu_image_parse(text, strlen(text) + 1, img, err, 200);
}

static void test_valid_image(void **state)
{
    (void)state;
    gsim_cu_image_t img;
    char err[200];
    const char *text = "gpusim-module 1\r\n"
                       "# comment line\n"
                       "\n"
                       "  kernel   vecAdd   1ms   # trailing\n"
                       "kernel _Z4stepPf 2.5us\n"
                       "kernel slow 3 s\n"
                       "kernel instant 0ns\n"
                       "kernel n 750ns\n"
                       "global counter 64K\n"
                       "global table 4096\n"
                       "global big 1G\n";
    assert_int_equal(parse(text, &img, err), 0);
    assert_int_equal(img.known, 1);
    assert_int_equal(img.n_kernels, 5);
    assert_string_equal(img.kernels[0].name, "vecAdd");
    assert_int_equal(img.kernels[0].duration_ns, 1000000);
    assert_int_equal(img.kernels[1].duration_ns, 2500);
    assert_int_equal(img.kernels[2].duration_ns, INT64_C(3000000000));
    assert_int_equal(img.kernels[3].duration_ns, 0);
    assert_int_equal(img.kernels[4].duration_ns, 750);
    assert_int_equal(img.n_globals, 3);
    assert_int_equal(img.globals[0].bytes, 65536);
    assert_int_equal(img.globals[1].bytes, 4096);
    assert_int_equal(img.globals[2].bytes, UINT64_C(1) << 30);
    assert_ptr_equal(gsim_cu_image_kernel(&img, "slow"), &img.kernels[2]);
    assert_null(gsim_cu_image_kernel(&img, "missing"));
    gsim_cu_image_t copy;
    assert_int_equal(gsim_cu_image_copy(&img, &copy), 0);
    assert_int_equal(copy.n_kernels, 5);
    assert_string_equal(copy.globals[2].name, "big");
    gsim_cu_image_free(&copy);
    gsim_cu_image_free(&img);
}

static void test_opaque_images(void **state)
{
    (void)state;
    gsim_cu_image_t img;
    char err[200];
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F'};
    assert_int_equal(gsim_cu_image_parse(elf, sizeof(elf), &img, err, sizeof(err)), 0);
    assert_int_equal(img.known, 0);
    assert_int_equal(parse(".version 8.5\n.target sm_90\n", &img, err), 0);
    assert_int_equal(img.known, 0);
    assert_int_equal(parse("", &img, err), 0);
    assert_int_equal(img.known, 0);
    /* A prefix of the magic word that stops at the buffer's end is not a gpusim image. */
    assert_int_equal(gsim_cu_image_parse("gpusim-modul", 12, &img, err, sizeof(err)), 0);
    assert_int_equal(img.known, 0);
}

static void expect_error(const char *text, const char *message)
{
    gsim_cu_image_t img;
    char err[200];
    assert_int_equal(parse(text, &img, err), -EINVAL);
    if (strstr(err, message) == NULL)
        fail_msg("error \"%s\" does not contain \"%s\"", err, message);
    assert_int_equal(img.n_kernels, 0);
    assert_null(img.kernels);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("gpusim-module 2\n", "line 1: unsupported format version");
    expect_error("gpusim-module\nkernel k 1ms\n", "line 1: expected");
    expect_error("gpusim-module 1\nfunction k 1ms\n", "line 2: unknown directive");
    expect_error("gpusim-module 1\nkernel k\n", "line 2: expected \"kernel NAME DURATION\"");
    expect_error("gpusim-module 1\nkernel k fast\n", "line 2: bad duration");
    expect_error("gpusim-module 1\nkernel k 1 hour\n", "line 2: bad duration");
    expect_error("gpusim-module 1\nkernel k -1ms\n", "line 2: bad duration");
    expect_error("gpusim-module 1\nkernel k 2h\n", "line 2: bad duration");
    expect_error("gpusim-module 1\nkernel k 7200s\n", "line 2: bad duration");
    expect_error("gpusim-module 1\n\nkernel k 1ms\nkernel k 2ms\n", "line 4: \"k\" declared twice");
    expect_error("gpusim-module 1\nkernel bad-name 1ms\n", "line 2: expected");
    expect_error("gpusim-module 1\nglobal g 0\n", "line 2: bad size");
    expect_error("gpusim-module 1\nglobal g 12Q\n", "line 2: bad size");
    expect_error("gpusim-module 1\nglobal g 2000G\n", "line 2: bad size");
    char longline[1200];
    memset(longline, 'a', sizeof(longline));
    memcpy(longline, "gpusim-module 1\nkernel ", 23);
    longline[sizeof(longline) - 1] = '\0';
    expect_error(longline, "line 2: longer than");
}

static void test_reads_no_further_than_max(void **state)
{
    (void)state;
    gsim_cu_image_t img;
    char err[200];
    /* The buffer has no NUL: the parser must stop at max. */
    static const char text[] = {'g', 'p', 'u', 's', 'i', 'm',  '-', 'm', 'o', 'd',
                                'u', 'l', 'e', ' ', '1', '\n', 'k', 'e', 'r', 'n',
                                'e', 'l', ' ', 'k', ' ', '1',  'u', 's'};
    assert_int_equal(gsim_cu_image_parse(text, sizeof(text), &img, err, sizeof(err)), 0);
    assert_int_equal(img.n_kernels, 1);
    assert_int_equal(img.kernels[0].duration_ns, 1000);
    gsim_cu_image_free(&img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_image),
        cmocka_unit_test(test_opaque_images),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_reads_no_further_than_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
