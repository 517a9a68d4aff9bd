/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the trace readers: openb pod and node lists, job lists, node types, and the
 * exact "file:line: reason" of every malformed row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/placement.h"

static gs_place_pods_t pods_ok(const char *text)
{
    gs_place_pods_t p;
    char err[GS_PLACE_ERR_MAX] = "";
    assert_int_equal(gs_place_pods_parse(text, strlen(text), "p.csv", &p, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    return p;
}

static void pods_bad(const char *text, const char *message)
{
    gs_place_pods_t p = {(gs_place_pod_t *)1, 99};
    char err[GS_PLACE_ERR_MAX] = "";
    assert_int_equal(gs_place_pods_parse(text, strlen(text), "p.csv", &p, err, sizeof(err)),
                     GS_EFORMAT);
    assert_string_equal(err, message);
    assert_null(p.pods);
    assert_int_equal(p.count, 0);
}

static void nodes_bad(const char *text, const char *message)
{
    gs_place_nodes_t n;
    char err[GS_PLACE_ERR_MAX] = "";
    assert_int_equal(gs_place_nodes_parse(text, strlen(text), "n.csv", &n, err, sizeof(err)),
                     GS_EFORMAT);
    assert_string_equal(err, message);
    assert_int_equal(n.count, 0);
}

#define OPENB "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"

static void test_openb_pods(void **state)
{
    (void)state;
    gs_place_pods_t p = pods_ok(OPENB "pod-0,12000,16384,1,1000,,LS\r\n"
                                      "\n"
                                      "pod-1,6000,12288,1,460,T4|P100,BE\n"
                                      "\"pod,2\",8000.0,30517,0,0,,BE");
    assert_int_equal(p.count, 3);
    assert_string_equal(p.pods[0].name, "pod-0");
    assert_int_equal(p.pods[0].cpu_milli, 12000);
    assert_int_equal(p.pods[0].mem_mib, 16384);
    assert_int_equal(p.pods[0].num_gpu, 1);
    assert_int_equal(p.pods[0].gpu_milli, 1000);
    assert_string_equal(p.pods[1].gpu_spec, "T4|P100");
    assert_int_equal(p.pods[1].gpu_milli, 460);
    assert_string_equal(p.pods[2].name, "pod,2");
    assert_int_equal(p.pods[2].cpu_milli, 8000);
    assert_int_equal(p.pods[2].num_gpu, 0);
    gs_place_pods_free(&p);
    assert_null(p.pods);
    /* The multigpu files have only the first five columns. */
    p = pods_ok("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,2,8,1000\n");
    assert_int_equal(p.pods[0].num_gpu, 8);
    assert_string_equal(p.pods[0].gpu_spec, "");
    gs_place_pods_free(&p);
}

static void test_job_list(void **state)
{
    (void)state;
    gs_place_pods_t p = pods_ok("name,gpu,count\nweb,0.25,3\ntrain,2,1\nbatch,50%,1\netl,0,1\n");
    assert_int_equal(p.count, 6);
    assert_int_equal(p.pods[2].gpu_milli, 250);
    assert_int_equal(p.pods[2].num_gpu, 1);
    assert_int_equal(p.pods[3].num_gpu, 2);
    assert_int_equal(p.pods[3].gpu_milli, 1000);
    assert_int_equal(p.pods[4].gpu_milli, 500);
    assert_int_equal(p.pods[5].num_gpu, 0);
    assert_int_equal(p.pods[5].gpu_milli, 0);
    gs_place_pods_free(&p);
    p = pods_ok("gpu\n1.0\n");
    assert_string_equal(p.pods[0].name, "job-2");
    assert_int_equal(p.pods[0].gpu_milli, 1000);
    gs_place_pods_free(&p);
}

static void test_pod_errors(void **state)
{
    (void)state;
    pods_bad("", "p.csv:1: empty file (expected a header)");
    pods_bad("name,cpu\n", "p.csv:1: header has neither num_gpu (pod list) nor gpu (job list) "
                           "column");
    pods_bad("name,cpu_milli,num_gpu,gpu_milli\n", "p.csv:1: header has no memory_mib column");
    pods_bad(OPENB "a,1,1,1,1000,,LS\nb,x,1,1,1000,,LS\n",
             "p.csv:3: cpu_milli \"x\" is not a whole number");
    pods_bad(OPENB "a,1,1,1,1000,,LS\nb,-5,1,1,1000,,LS\n",
             "p.csv:3: cpu_milli \"-5\" is not a whole number");
    pods_bad(OPENB "a,1,1,1,1000,,LS\nb,1,1,1\n", "p.csv:3: 4 fields where the header has 7");
    pods_bad(OPENB "b,1,1,2,500,,LS\n",
             "p.csv:2: gpu_milli 500 below 1000 with num_gpu 2 (a share is of one GPU)");
    pods_bad(OPENB "b,1,1,1,1001,,LS\n", "p.csv:2: gpu_milli 1001 is not in 1..1000");
    pods_bad(OPENB "b,1,1,0,5,,LS\n", "p.csv:2: gpu_milli 5 on a pod with num_gpu 0");
    pods_bad(OPENB "b,1,1,17,1000,,LS\n", "p.csv:2: num_gpu \"17\" is out of range (at most 16)");
    pods_bad(OPENB "b,99999999999,1,1,1000,,LS\n",
             "p.csv:2: cpu_milli \"99999999999\" is out of range (at most 4294967294)");
    pods_bad(OPENB "\"b,1,1,1,1000,,LS\n", "p.csv:2: unterminated quoted field");
    pods_bad(OPENB "\"b\"x,1,1,1,1000,,LS\n", "p.csv:2: text after a quoted field");
    pods_bad(OPENB "b\"x,1,1,1,1000,,LS\n", "p.csv:2: quote inside an unquoted field");
    pods_bad("name,gpu\na,1.5\n", "p.csv:2: gpu: invalid GPU fraction \"1.5\": must be above 0 "
                                  "and at most 1 (a share of one GPU, or a whole number of GPUs)");
    pods_bad("name,gpu,count\na,1,0\n", "p.csv:2: count must be at least 1");
    char nul[] = OPENB "b,1,1,1,1000,,LS\n";
    nul[sizeof(OPENB) + 1] = '\0';
    gs_place_pods_t p;
    char err[GS_PLACE_ERR_MAX];
    assert_int_equal(gs_place_pods_parse(nul, sizeof(nul) - 1, "p.csv", &p, err, sizeof(err)),
                     GS_EFORMAT);
    assert_string_equal(err, "p.csv:2: NUL byte in line");
}

static void test_long_lines(void **state)
{
    (void)state;
    static char text[8192];
    strcpy(text, OPENB);
    size_t n = strlen(text);
    memset(text + n, 'a', 5000);
    strcpy(text + n + 5000, ",1,1,1,1000,,LS\n");
    pods_bad(text, "p.csv:2: line longer than 4095 bytes");
    strcpy(text, "gpu");
    for (int i = 0; i < 70; i++)
        strcat(text, ",x");
    pods_bad(text, "p.csv:1: more than 64 fields");
    char name[200];
    memset(name, 'n', 100);
    name[100] = '\0';
    snprintf(text, sizeof(text), OPENB "%s,1,1,1,1000,,LS\n", name);
    pods_bad(text, "p.csv:2: name is longer than 63 bytes");
}

static void test_nodes(void **state)
{
    (void)state;
    const char *text = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"
                       "n1,32000,131072,0,\n";
    gs_place_nodes_t n;
    char err[GS_PLACE_ERR_MAX];
    assert_int_equal(gs_place_nodes_parse(text, strlen(text), "n.csv", &n, err, sizeof(err)), 0);
    assert_int_equal(n.count, 2);
    assert_string_equal(n.nodes[0].model, "P100");
    assert_int_equal(n.nodes[0].num_gpu, 2);
    assert_int_equal(n.nodes[1].cpu_milli, 32000);
    assert_true(n.nodes[0].price_per_hour < 0);
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_from_nodes(&n, &c, err, sizeof(err)), 0);
    assert_int_equal(gs_place_cluster_gpu_milli(c), 2000);
    gs_place_cluster_free(c);
    gs_place_nodes_free(&n);
    text = "name,gpus,price\ng4dn.2xlarge,1,0.752\n";
    assert_int_equal(gs_place_nodes_parse(text, strlen(text), "t.csv", &n, err, sizeof(err)), 0);
    assert_true(n.nodes[0].price_per_hour == 0.752);
    assert_true(n.nodes[0].cpu_milli == UINT32_MAX);
    assert_true(n.nodes[0].mem_mib == UINT64_MAX);
    assert_string_equal(n.nodes[0].model, "gpu");
    gs_place_nodes_free(&n);
    nodes_bad("name,cpu_milli\n", "n.csv:1: header has no gpu (or gpus) column");
    nodes_bad("gpu\n", "n.csv:1: header has no sn (or name) column");
    nodes_bad("name,gpus,price\na,1,cheap\n",
              "n.csv:2: price \"cheap\" is not a price per hour (a number like 0.752)");
    nodes_bad("name,gpus,price\na,1,-1\n",
              "n.csv:2: price \"-1\" is not a price per hour (a number like 0.752)");
    nodes_bad("name,gpus,model\na,1,A|B\n", "n.csv:2: model \"A|B\" contains '|'");
    nodes_bad("name,gpus\na,99\n", "n.csv:2: gpu \"99\" is out of range (at most 16)");
}

static void test_files(void **state)
{
    (void)state;
    gs_place_pods_t p;
    char err[GS_PLACE_ERR_MAX];
    assert_int_equal(gs_place_pods_read("/nonexistent/p.csv", &p, err, sizeof(err)), GS_ENOENT);
    assert_string_equal(err, "/nonexistent/p.csv: No such file or directory");
    char path[] = "/tmp/gs-test-csv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("name,gpu\na,0.5\n", f);
    fclose(f);
    assert_int_equal(gs_place_pods_read(path, &p, err, sizeof(err)), 0);
    assert_int_equal(p.count, 1);
    gs_place_pods_free(&p);
    gs_place_nodes_t n;
    assert_int_equal(gs_place_nodes_read(path, &n, err, sizeof(err)), GS_EFORMAT);
    char want[128];
    snprintf(want, sizeof(want), "%s:2: gpu \"0.5\" is not a whole number", path);
    assert_string_equal(err, want);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openb_pods), cmocka_unit_test(test_job_list),
        cmocka_unit_test(test_pod_errors), cmocka_unit_test(test_long_lines),
        cmocka_unit_test(test_nodes),      cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
