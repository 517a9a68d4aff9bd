/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the JSON-lines protocol: request parsing, validation and encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/client.h"
#include "gpushare/error.h"

#define GIB (UINT64_C(1) << 30)

static char err[GS_CLIENT_ERR_MAX];

static int parse(const char *line, gs_request_t *req)
{
    err[0] = '\0';
    return gs_proto_parse_request(line, strlen(line), req, err, sizeof(err));
}

static void expect(const char *line, int code, const char *message)
{
    gs_request_t req;
    assert_int_equal(parse(line, &req), code);
    assert_string_equal(err, message);
}

static void test_simple_ops(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"hello\",\"version\":1,\"client\":\"t\"}\n", &req), 0);
    assert_int_equal(req.op, GS_OP_HELLO);
    assert_int_equal(parse("{\"op\":\"list\"}", &req), 0);
    assert_int_equal(req.op, GS_OP_LIST);
    assert_int_equal(parse("{\"op\":\"status\"}\r\n", &req), 0);
    assert_int_equal(req.op, GS_OP_STATUS);
    assert_int_equal(parse("{\"op\":\"release\",\"lease\":42}", &req), 0);
    assert_int_equal(req.op, GS_OP_RELEASE);
    assert_int_equal(req.lease_id, 42);
}

static void test_acquire_kinds(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu_memory\":\"4G\",\"compute\":30,"
                           "\"compute_max\":\"50%\",\"priority\":-5,\"wait\":false,"
                           "\"timeout_ms\":1500,\"command\":\"python infer.py\"}",
                           &req),
                     0);
    assert_int_equal(req.op, GS_OP_ACQUIRE);
    assert_int_equal(req.lease.kind, GS_LEASE_MEMORY);
    assert_int_equal(req.lease.memory, 4 * GIB);
    assert_int_equal(req.lease.compute, 30);
    assert_int_equal(req.lease.compute_max, 50);
    assert_int_equal(req.lease.priority, -5);
    assert_int_equal(req.lease.wait, 0);
    assert_int_equal(req.lease.timeout_ms, 1500);
    assert_string_equal(req.lease.command, "python infer.py");

    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu_memory\":1048576}", &req), 0);
    assert_int_equal(req.lease.memory, 1048576);
    assert_int_equal(req.lease.wait, 1);

    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu\":0.25}", &req), 0);
    assert_int_equal(req.lease.kind, GS_LEASE_FRACTION);
    assert_int_equal(req.lease.fraction_milli, 250);
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu\":\"1\"}", &req), 0);
    assert_int_equal(req.lease.fraction_milli, 1000);
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu\":1}", &req), 0);
    assert_int_equal(req.lease.fraction_milli, 1000);

    assert_int_equal(parse("{\"op\":\"acquire\",\"gpus\":2}", &req), 0);
    assert_int_equal(req.lease.kind, GS_LEASE_GPUS);
    assert_int_equal(req.lease.gpus, 2);
}

static void test_bad_requests(void **state)
{
    (void)state;
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"0\"}", GS_EINVAL,
           "invalid memory size \"0\": must be above zero");
    expect("{\"op\":\"acquire\",\"gpu_memory\":0}", GS_EINVAL,
           "invalid memory size \"0\": must be above zero");
    expect("{\"op\":\"acquire\",\"gpu\":1.5}", GS_EINVAL,
           "invalid GPU fraction \"1.5\": must be above 0 and at most 1");
    expect("{\"op\":\"acquire\",\"gpu\":\"0.3333\"}", GS_EINVAL,
           "invalid GPU fraction \"0.3333\": at most 3 decimals (0.001 GPU)");
    expect("{\"op\":\"acquire\",\"gpus\":0}", GS_EINVAL, "\"gpus\" must be from 1 to 64");
    expect("{\"op\":\"acquire\",\"gpus\":\"2\"}", GS_EINVAL, "\"gpus\" must be an integer");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpu\":\"0.5\"}", GS_EINVAL,
           "give only one of \"gpus\", \"gpu\", \"gpu_memory\" and \"mig_profile\" (--gpus, --gpu, "
           "--gpu-memory, --mig-profile)");
    expect("{\"op\":\"acquire\"}", GS_EINVAL,
           "a lease needs a size: whole GPUs (--gpus), a fraction (--gpu), memory "
           "(--gpu-memory) or a MIG profile (--mig-profile)");
    expect("{\"op\":\"acquire\",\"gpu\":\"0.5\",\"compute\":10}", GS_EINVAL,
           "a compute share (--compute) goes with --gpu-memory only: --gpu F sets compute to F, "
           "--gpus to whole logical GPUs");
    expect("{\"op\":\"acquire\",\"gpu\":\"0.5\",\"compute_max\":40}", GS_EINVAL,
           "the compute cap (--compute-max 40%) is below the lease's share (50%)");
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"1G\",\"compute\":101}", GS_EINVAL,
           "invalid percentage \"101\": above 100");
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"1G\",\"priority\":1000}", GS_EINVAL,
           "\"priority\" must be from -100 to 100");
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"1G\",\"wait\":1}", GS_EINVAL,
           "\"wait\" must be true or false");
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"1G\",\"pid\":0}", GS_EINVAL,
           "unknown field \"pid\" in acquire");
    expect("{\"op\":\"release\"}", GS_EINVAL,
           "release needs \"lease\": the lease id (or \"key\": a keyed lease's key), not both");
    expect("{\"op\":\"release\",\"lease\":-1}", GS_EINVAL,
           "\"lease\" must be from 1 to 9223372036854775807");
    expect("{\"op\":\"list\",\"all\":true}", GS_EINVAL, "unknown or invalid field \"all\" in list");
    expect("{\"op\":\"steal\"}", GS_EINVAL,
           "unknown op \"steal\" (hello, acquire, release, list, status, history, join, "
           "compute_join, attach, suspend or resume)");
    expect("{\"op\":\"suspend\"}", GS_EINVAL, "suspend needs \"lease\": the lease id");
    expect("{\"op\":\"resume\",\"lease\":3,\"key\":\"k\"}", GS_EINVAL,
           "unknown field \"key\" in resume");
    expect("{\"op\":7}", GS_EINVAL, "a request needs \"op\": a string");
    expect("[1,2]", GS_EFORMAT, "a request must be a JSON object");
    expect("{\"op\":\"list\"", GS_EFORMAT,
           "malformed JSON at column 12: '}' expected near end of file");
    expect("{\"op\":\"list\",\"op\":\"status\"}", GS_EFORMAT,
           "malformed JSON at column 17: duplicate object key near '\"op\"'");
    expect("", GS_EFORMAT, "malformed JSON at column 0: '[' or '{' expected near end of file");
}

/* "uid", "gid", "user": a lease on behalf of another user (the daemon takes them from root). */
static void test_owner_fields(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu_memory\":\"1G\"}", &req), 0);
    assert_int_equal(req.lease.owner.set, 0);
    assert_int_equal(
        parse("{\"op\":\"acquire\",\"gpu_memory\":\"1G\",\"uid\":1000,\"gid\":100}", &req), 0);
    assert_int_equal(req.lease.owner.set, 1);
    assert_int_equal(req.lease.owner.has_uid, 1);
    assert_int_equal(req.lease.owner.uid, 1000);
    assert_int_equal(req.lease.owner.has_gid, 1);
    assert_int_equal(req.lease.owner.gid, 100);
    assert_string_equal(req.lease.owner.user, "");
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu\":0.5,\"user\":\"alice\"}", &req), 0);
    assert_int_equal(req.lease.owner.set, 1);
    assert_int_equal(req.lease.owner.has_uid, 0);
    assert_string_equal(req.lease.owner.user, "alice");
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpus\":1,\"uid\":0}", &req), 0);
    assert_int_equal(req.lease.owner.uid, 0);

    expect("{\"op\":\"acquire\",\"gpus\":1,\"gid\":100}", GS_EINVAL,
           "a lease on behalf of a user needs \"uid\" or \"user\" (\"gid\" alone names nobody)");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"uid\":-1}", GS_EINVAL,
           "\"uid\" must be from 0 to 4294967294");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"uid\":4294967295}", GS_EINVAL,
           "\"uid\" must be from 0 to 4294967294");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"uid\":\"1000\"}", GS_EINVAL,
           "\"uid\" must be an integer");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"uid\":5,\"gid\":true}", GS_EINVAL,
           "\"gid\" must be an integer");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"user\":\"a b\"}", GS_EINVAL,
           "\"user\" must be 1 to 63 printable characters without blanks or '/'");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"user\":\"\"}", GS_EINVAL,
           "a lease on behalf of a user needs \"uid\" or \"user\" (\"gid\" alone names nobody)");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"user\":7}", GS_EINVAL,
           "\"user\" must be a string of at most 63 bytes");
    char line[256];
    snprintf(line, sizeof(line), "{\"op\":\"acquire\",\"gpus\":1,\"user\":\"%064d\"}", 0);
    expect(line, GS_EINVAL, "\"user\" must be a string of at most 63 bytes");
}

/* "gpus_at": the GPUs a lease must use, in CUDA order. */
static void test_pinned_gpus(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu_memory\":\"4G\",\"gpus_at\":[1,0]}", &req),
                     0);
    assert_int_equal(req.lease.n_pinned, 2);
    assert_int_equal(req.lease.pinned[0], 1);
    assert_int_equal(req.lease.pinned[1], 0);
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpus\":4,\"gpus_at\":[2,3]}", &req), 0);
    assert_int_equal(req.lease.n_pinned, 2);
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu\":\"0.5\",\"gpus_at\":[15]}", &req), 0);
    assert_int_equal(req.lease.pinned[0], 15);

    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpus_at\":[]}", GS_EINVAL,
           "\"gpus_at\" must be a list of 1 to 16 GPU indexes");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpus_at\":0}", GS_EINVAL,
           "\"gpus_at\" must be a list of 1 to 16 GPU indexes");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpus_at\":[16]}", GS_EINVAL,
           "\"gpus_at\" must be from 0 to 15");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpus_at\":[\"0\"]}", GS_EINVAL,
           "\"gpus_at\" must be an integer");
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"1G\",\"gpus_at\":[1,1]}", GS_EINVAL,
           "\"gpus_at\" names GPU 1 twice");
    expect("{\"op\":\"acquire\",\"gpus\":3,\"gpus_at\":[0,1]}", GS_EINVAL,
           "3 logical GPUs cannot be spread evenly over the 2 GPUs of \"gpus_at\"");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpus_at\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,"
           "15,0]}",
           GS_EINVAL, "\"gpus_at\" must be a list of 1 to 16 GPU indexes");
}

static void test_line_cap(void **state)
{
    (void)state;
    size_t len = GS_PROTO_LINE_MAX + 1;
    char *line = malloc(len);
    assert_non_null(line);
    memset(line, ' ', len);
    gs_request_t req;
    assert_int_equal(gs_proto_parse_request(line, len, &req, err, sizeof(err)), GS_EMSGSIZE);
    assert_string_equal(err, "request longer than 65536 bytes");
    free(line);
}

static void test_command_is_sanitised(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(
        parse("{\"op\":\"acquire\",\"gpus\":1,\"command\":\"evil\\u001b[2Jx\\n\"}", &req), 0);
    assert_string_equal(req.lease.command, "evil\\x1b[2Jx\\x0a");
    /* C1 (U+009B, CSI), DEL, bidirectional overrides and isolates, a line separator. */
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpus\":1,\"command\":\"a\\u009b31mb\\u007fc"
                           "\\u202eevil.txt\\u202c\\u2066x\\u2069\\u2028y\\u061cz\\u200fq\"}",
                           &req),
                     0);
    assert_string_equal(req.lease.command, "a\\u009b31mb\\x7fc\\u202eevil.txt\\u202c\\u2066x"
                                           "\\u2069\\u2028y\\u061cz\\u200fq");
    /* Printable text beyond ASCII is kept as it is. */
    assert_int_equal(
        parse("{\"op\":\"acquire\",\"gpus\":1,\"command\":\"caf\u00e9 \u65e5\"}", &req), 0);
    assert_string_equal(req.lease.command, "caf\u00e9 \u65e5");
    /* An escape that does not fit whole is left out. */
    char shown[8];
    gs_display_escape(shown, sizeof(shown), "abcd\x1b");
    assert_string_equal(shown, "abcd");
    /* A long command is cut at a character boundary (here inside a 2-byte character). */
    char line[1024];
    int n = snprintf(line, sizeof(line), "{\"op\":\"acquire\",\"gpus\":1,\"command\":\"");
    for (int i = 0; i < 254; i++)
        line[n++] = 'a';
    n += snprintf(line + n, sizeof(line) - (size_t)n, "\xc3\xa9\"}");
    assert_int_equal(parse(line, &req), 0);
    assert_int_equal(strlen(req.lease.command), 254);
}

static void test_encode_round_trip(void **state)
{
    (void)state;
    gs_lease_request_t in;
    gs_lease_request_init(&in);
    in.kind = GS_LEASE_MEMORY;
    in.memory = 3 * GIB + 512;
    in.compute = 30;
    in.compute_max = 60;
    in.priority = 7;
    in.wait = 0;
    in.timeout_ms = 2500;
    snprintf(in.command, sizeof(in.command), "sleep 1");
    json_t *obj = gs_proto_acquire_json(&in);
    assert_non_null(obj);
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    gs_request_t out;
    assert_int_equal(parse(text, &out), 0);
    free(text);
    assert_memory_equal(&out.lease, &in, sizeof(in));

    gs_lease_request_init(&in);
    in.kind = GS_LEASE_FRACTION;
    in.fraction_milli = 125;
    obj = gs_proto_acquire_json(&in);
    text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    assert_string_equal(text, "{\"op\":\"acquire\",\"gpu\":\"0.125\",\"wait\":true}");
    free(text);

    /* On behalf of a user, pinned to GPUs: both survive the trip (the ledger relies on it). */
    gs_lease_request_init(&in);
    in.kind = GS_LEASE_MEMORY;
    in.memory = 4 * GIB;
    in.owner.set = in.owner.has_uid = in.owner.has_gid = 1;
    in.owner.uid = 1000;
    in.owner.gid = 1000;
    snprintf(in.owner.user, sizeof(in.owner.user), "alice");
    in.n_pinned = 2;
    in.pinned[0] = 1;
    in.pinned[1] = 0;
    obj = gs_proto_acquire_json(&in);
    text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    assert_string_equal(text, "{\"op\":\"acquire\",\"gpu_memory\":\"4G\",\"wait\":true,"
                              "\"uid\":1000,\"gid\":1000,\"user\":\"alice\",\"gpus_at\":[1,0]}");
    assert_int_equal(parse(text, &out), 0);
    free(text);
    assert_memory_equal(&out.lease, &in, sizeof(in));
}

/* Issue 28, finding 9: every invisible character is refused in a name, at any place in it; what
 * shows as itself (letters of any script, marks, digits, punctuation, symbols, the space) is
 * accepted. */
static void test_name_invisible(void **state)
{
    (void)state;
    static const uint32_t refused[] = {
        0x200B,  /* zero width space */
        0xFEFF,  /* byte order mark, zero width no-break space */
        0x00AD,  /* soft hyphen */
        0x2060,  /* word joiner */
        0x180E,  /* Mongolian vowel separator */
        0xFFF9,  /* interlinear annotation anchor */
        0xE0001, /* language tag */
        0xE0041, /* tag latin capital letter A */
        0xE007F, /* cancel tag */
        0x200C,  0x200D,  0x200E, 0x202E, 0x2066, 0x061C, 0x034F, 0x115F, 0x3164, 0xFE0F,
        0xFFA0,  0xE0100, 0x180B, 0x00A0, 0x2028, 0x3000, 0x0085, 0xE000, 0x0378,
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        char utf8[5] = {0}, name[32], why[256];
        uint32_t cp = refused[i];
        if (cp < 0x800)
            snprintf(utf8, sizeof(utf8), "%c%c", 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F));
        else if (cp < 0x10000)
            snprintf(utf8, sizeof(utf8), "%c%c%c", 0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F),
                     0x80 | (cp & 0x3F));
        else
            snprintf(utf8, sizeof(utf8), "%c%c%c%c", 0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F),
                     0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F));
        for (size_t f = 0; f < 3; f++) {
            if (f == 0)
                snprintf(name, sizeof(name), "%salice", utf8);
            else if (f == 1)
                snprintf(name, sizeof(name), "ali%sce", utf8);
            else
                snprintf(name, sizeof(name), "alice%s", utf8);
            assert_int_equal(gs_lease_name_check(name, why, sizeof(why)), GS_EINVAL);
            char want[256];
            snprintf(want, sizeof(want),
                     "a name must be printable text (letters, marks, digits, punctuation, symbols "
                     "and spaces): U+%04X is not",
                     (unsigned)cp);
            assert_string_equal(why, want);
        }
    }
    char why[256];
    static const char *const fine[] = {"train \xc3\xa9",
                                       "\xe8\xae\xad\xe7\xbb\x83 job-1",
                                       "cafe\xcc\x81",
                                       "r\xc3\xa9sum\xc3\xa9 (v2) #3 $5 \xe2\x82\xac",
                                       "\xd0\xbc\xd0\xbe\xd0\xb4\xd0\xb5\xd0\xbb\xd1\x8c",
                                       "a b"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
        assert_int_equal(gs_lease_name_check(fine[i], why, sizeof(why)), 0);
    /* Not UTF-8: an overlong encoding, a surrogate, beyond U+10FFFF, a stray byte. */
    static const char *const bad[] = {"a\xc0\xaf"
                                      "b",
                                      "a\xe0\x80\xaf"
                                      "b",
                                      "a\xed\xa0\x80"
                                      "b",
                                      "a\xf4\x90\x80\x80"
                                      "b",
                                      "a\xff"
                                      "b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(gs_lease_name_check(bad[i], why, sizeof(why)), GS_EINVAL);
        assert_string_equal(why, "a name must be valid UTF-8");
    }
}

/* --name, --gpu-type and --time (issue 14): parsed, checked and encoded back. */
static void test_labels(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpus\":1,\"name\":\"train \u00e9\","
                           "\"gpu_type\":[\"A100-40GB\",\"T4\"],\"time_limit_ms\":7200000}",
                           &req),
                     0);
    assert_string_equal(req.lease.name, "train \xc3\xa9");
    assert_int_equal(req.lease.n_gpu_types, 2);
    assert_string_equal(req.lease.gpu_types[0], "A100-40GB");
    assert_string_equal(req.lease.gpu_types[1], "T4");
    assert_int_equal(req.lease.time_limit_ms, 7200000);
    json_t *obj = gs_proto_acquire_json(&req.lease);
    char *text = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(obj);
    assert_string_equal(text, "{\"op\":\"acquire\",\"gpus\":1,\"wait\":true,\"name\":\"train "
                              "\\u00E9\",\"gpu_type\":[\"A100-40GB\",\"T4\"],\"time_limit_ms\":"
                              "7200000}");
    gs_request_t back;
    assert_int_equal(parse(text, &back), 0);
    free(text);
    assert_memory_equal(&back.lease, &req.lease, sizeof(req.lease));
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpus\":1,\"gpu_type\":\"T4,L4\"}", &req), 0);
    assert_int_equal(req.lease.n_gpu_types, 2);
    assert_string_equal(req.lease.gpu_types[1], "L4");

    expect("{\"op\":\"acquire\",\"gpus\":1,\"name\":\"a\\u001b[2J\"}", GS_EINVAL,
           "\"name\": a name must be printable text (letters, marks, digits, punctuation, "
           "symbols and spaces): U+001B is not");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"name\":\"\"}", GS_EINVAL, "\"name\": missing value");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpu_type\":[\"T4,L4\"]}", GS_EINVAL,
           "\"gpu_type\": one model per entry");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpu_type\":\"T4;rm\"}", GS_EINVAL,
           "\"gpu_type\": a GPU type is letters, digits, '-', '_' and '.' (T4, A100-40GB, H100)");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpu_type\":[]}", GS_EINVAL,
           "\"gpu_type\" must be a GPU model or a list of 1 to 8 models");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"time_limit_ms\":0}", GS_EINVAL,
           "\"time_limit_ms\" must be from 1 to 31622400000");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"gpu_type\":\"T4\",\"gpus_at\":[0]}", GS_EINVAL,
           "a request pinned to GPUs (\"gpus_at\") takes no GPU type");

    assert_true(gs_gpu_type_matches("A100", "NVIDIA A100-SXM4-40GB"));
    assert_true(gs_gpu_type_matches("a100-40gb", "NVIDIA A100-SXM4-40GB"));
    assert_true(gs_gpu_type_matches("A100-40GB", "NVIDIA A100-40GB"));
    assert_false(gs_gpu_type_matches("A100-80GB", "NVIDIA A100-40GB"));
    assert_true(gs_gpu_type_matches("T4", "Tesla T4"));
    assert_true(gs_gpu_type_matches("T4", "NVIDIA T4-16GB"));
    assert_false(gs_gpu_type_matches("T4", "NVIDIA T400"));
    assert_true(gs_gpu_type_matches("H100", "NVIDIA H100 80GB HBM3"));
    assert_false(gs_gpu_type_matches("-", "NVIDIA H100"));

    char buf[32];
    const uint64_t ms[] = {250, 1500, 45000, 60000, 90000, 7200000, 5400000, 90000000, 86400000};
    const char *want[] = {"250ms", "1.5s", "45s", "1m", "1m30s", "2h", "1h30m", "1d01h", "1d"};
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        gs_format_duration(ms[i], buf, sizeof(buf));
        assert_string_equal(buf, want[i]);
    }
}

/* release says how the job ended; history and status take their options. */
static void test_release_history_status(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"release\",\"lease\":3,\"exit_status\":42}", &req), 0);
    assert_true(req.job_end.known);
    assert_int_equal(req.job_end.exit_status, 42);
    assert_int_equal(parse("{\"op\":\"release\",\"lease\":3,\"signal\":9}", &req), 0);
    assert_int_equal(req.job_end.signal, 9);
    assert_int_equal(parse("{\"op\":\"release\",\"lease\":3}", &req), 0);
    assert_false(req.job_end.known);
    expect("{\"op\":\"release\",\"lease\":3,\"exit_status\":1,\"signal\":9}", GS_EINVAL,
           "give \"exit_status\" or \"signal\", not both");
    expect("{\"op\":\"release\",\"lease\":3,\"exit_status\":256}", GS_EINVAL,
           "\"exit_status\" must be from 0 to 255");

    assert_int_equal(parse("{\"op\":\"history\"}", &req), 0);
    assert_int_equal(req.op, GS_OP_HISTORY);
    assert_int_equal(req.history.limit, GS_HISTORY_DEFAULT);
    assert_int_equal(req.history.since_ms, 0);
    assert_int_equal(parse("{\"op\":\"history\",\"since_ms\":1700000000000,\"user\":\"bob\","
                           "\"limit\":5}",
                           &req),
                     0);
    assert_int_equal(req.history.since_ms, 1700000000000LL);
    assert_string_equal(req.history.user, "bob");
    assert_int_equal(req.history.limit, 5);
    expect("{\"op\":\"history\",\"limit\":0}", GS_EINVAL, "\"limit\" must be from 1 to 10000");
    expect("{\"op\":\"history\",\"user\":\"a b\"}", GS_EINVAL,
           "\"user\" must be 1 to 63 printable characters without blanks or '/'");

    assert_int_equal(parse("{\"op\":\"status\",\"processes\":true}", &req), 0);
    assert_true(req.processes);
    expect("{\"op\":\"list\",\"processes\":true}", GS_EINVAL,
           "unknown or invalid field \"processes\" in list");
}

/* "mig_profile" and "mode" (issue 11): parsed, checked, encoded back. */
static void test_modes_and_mig_profiles(void **state)
{
    (void)state;
    gs_request_t req;
    assert_int_equal(parse("{\"op\":\"acquire\",\"mig_profile\":\"1g.10gb+me\"}", &req), 0);
    assert_int_equal(req.lease.kind, GS_LEASE_MIG);
    assert_string_equal(req.lease.mig_profile, "1g.10gb+me");
    assert_int_equal(req.lease.mode, GS_GPU_MODE_ANY);
    assert_int_equal(parse("{\"op\":\"acquire\",\"gpu_memory\":\"4G\",\"mode\":\"mps\"}", &req), 0);
    assert_int_equal(req.lease.mode, GS_GPU_MODE_MPS);
    json_t *obj = gs_proto_acquire_json(&req.lease);
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(
        text, "{\"gpu_memory\":\"4G\",\"mode\":\"mps\",\"op\":\"acquire\",\"wait\":true}");
    free(text);
    json_decref(obj);
    assert_int_equal(
        parse("{\"op\":\"acquire\",\"mig_profile\":\"3g.40gb\",\"mode\":\"mig\"}", &req), 0);
    obj = gs_proto_acquire_json(&req.lease);
    text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(
        text, "{\"mig_profile\":\"3g.40gb\",\"mode\":\"mig\",\"op\":\"acquire\",\"wait\":true}");
    free(text);
    json_decref(obj);
    expect("{\"op\":\"acquire\",\"mig_profile\":\"3g 20gb\"}", GS_EINVAL,
           "a MIG profile is a name like 1g.10gb or 3g.20gb (at most 31 letters, digits, '.' and "
           "'+')");
    expect("{\"op\":\"acquire\",\"mig_profile\":\"\"}", GS_EINVAL,
           "a MIG profile is a name like 1g.10gb or 3g.20gb (at most 31 letters, digits, '.' and "
           "'+')");
    expect("{\"op\":\"acquire\",\"mig_profile\":7}", GS_EINVAL,
           "\"mig_profile\" must be a string of at most 31 bytes");
    expect("{\"op\":\"acquire\",\"mig_profile\":\"1g.5gb\",\"mode\":\"mps\"}", GS_EINVAL,
           "a MIG profile (--mig-profile) is served by mig GPUs only, not mps ones");
    expect("{\"op\":\"acquire\",\"gpus\":1,\"mode\":\"fast\"}", GS_EINVAL,
           "\"mode\" must be \"shared\", \"exclusive\", \"mps\", \"mig\" or \"any\"");
    expect("{\"op\":\"acquire\",\"mig_profile\":\"1g.5gb\",\"compute\":30}", GS_EINVAL,
           "a compute share (--compute) goes with --gpu-memory only: --gpu F sets compute to F, "
           "--gpus to whole logical GPUs");
    assert_string_equal(gs_gpu_mode_name(GS_GPU_MODE_EXCLUSIVE), "exclusive");
    assert_string_equal(gs_gpu_mode_name((gs_gpu_mode_t)9), "?");
    /* "mig_start": a placement chosen by the caller (gpushare-k8s), on one pinned GPU. */
    assert_int_equal(
        parse("{\"op\":\"acquire\",\"mig_profile\":\"3g.40gb\",\"mig_start\":4,\"gpus_at\":[1]}",
              &req),
        0);
    assert_int_equal(req.lease.has_mig_start, 1);
    assert_int_equal(req.lease.mig_start, 4);
    obj = gs_proto_acquire_json(&req.lease);
    text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"gpus_at\":[1],\"mig_profile\":\"3g.40gb\",\"mig_start\":4,"
                              "\"op\":\"acquire\",\"wait\":true}");
    free(text);
    json_decref(obj);
    expect("{\"op\":\"acquire\",\"mig_profile\":\"3g.40gb\",\"mig_start\":4}", GS_EINVAL,
           "\"mig_start\" is a memory slot from 0 to 15, on the one GPU of \"gpus_at\"");
    expect("{\"op\":\"acquire\",\"gpu_memory\":\"4G\",\"mig_start\":0,\"gpus_at\":[0]}", GS_EINVAL,
           "\"mig_start\" goes with \"mig_profile\" only");
    expect("{\"op\":\"acquire\",\"mig_profile\":\"1g.10gb\",\"mig_start\":16,\"gpus_at\":[0]}",
           GS_EINVAL, "\"mig_start\" must be from 0 to 15");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_ops),
        cmocka_unit_test(test_acquire_kinds),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_line_cap),
        cmocka_unit_test(test_command_is_sanitised),
        cmocka_unit_test(test_encode_round_trip),
        cmocka_unit_test(test_owner_fields),
        cmocka_unit_test(test_pinned_gpus),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_name_invisible),
        cmocka_unit_test(test_release_history_status),
        cmocka_unit_test(test_modes_and_mig_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
