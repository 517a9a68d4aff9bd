/* SPDX-License-Identifier: Apache-2.0 */
/* `gpushare plan replay`: the ATC'23 experiment for several policies and seeds, its result table
 * in the published CSV format, one table comparing the policies (with the published figures) and
 * a chart of their allocation curves (PNG or SVG). */
#include "cli.h"
#include "daemon_cli.h"
#include "plan_cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEEDS_MAX 1000
/* parse_args's answer when it printed the help: stop, successfully. */
#define HELP_SHOWN (-1)
/* A usage error (exit status 2) about the replay_args_t *a in scope; returns its status. */
#define USAGE_ERROR(...) gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage", __VA_ARGS__)

typedef struct replay_args {
    gs__cli_t cli;
    const char *nodes, *pods, *out, *plot, *published, *workload;
    gs_place_policy_t policies[GS_PLACE_POLICY_COUNT];
    int npolicies;
    unsigned long long seeds[SEEDS_MAX];
    int nseeds;
    double tune;
} replay_args_t;

/* What one policy did over all seeds. */
typedef struct policy_summary {
    double unalloc_sum, unalloc_min, unalloc_max;
    int runs;
    unsigned total_gpus;
    double seconds[SEEDS_MAX];
    gs__plan_curve_t curve;
    size_t curve_runs[GS_PLACE_TABLE_MAX + 1];
} policy_summary_t;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpushare plan replay --nodes NODES.csv --pods PODS.csv [OPTIONS]\n"
        "\n"
        "Replays a workload trace (Alibaba openb CSV format) on a cluster the way the FGD\n"
        "paper's artifact (USENIX ATC'23) does: pods sorted by name and shuffled with the\n"
        "seed, grown to --inflate x the cluster's GPU capacity by drawing pods again, each\n"
        "scheduled once (a pod that fits nowhere is dropped). Prints the unallocated GPU %%\n"
        "when the arrived GPU demand reaches 100%% of capacity.\n"
        "\n"
        "  --nodes FILE       node list (sn,cpu_milli,memory_mib,gpu,model)\n"
        "  --pods FILE        pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])\n"
        "  --policy LIST      comma-separated: random, dotprod, clustering, packing, bestfit,\n"
        "                     fgd, gpushare, spread; or all (default: gpushare)\n"
        "  --seed SEEDS       42, 42-51 or 42,45 (default: 42)\n"
        "  --inflate RATIO    workload size in units of GPU capacity, 1.3 or 130%%; 0 keeps it\n"
        "                     (default: 1.3)\n"
        "  --out FILE         write one row per (policy, seed) in the published CSV format:\n"
        "                     allocation %% at arrived %% 0..130 (- for stdout)\n"
        "  --plot FILE        draw unallocated %% against arrived %% (seed means) of every\n"
        "                     policy on one chart: FILE.png or FILE.svg\n"
        "  --published FILE   compare with the published results (published_allocation_*.csv)\n"
        "  --workload NAME    the workload column (default: the pod file's name without .csv)\n"
        "  --json             the comparison as one JSON object, with each policy's curve\n"
        "                     (docs/placement.md)\n"
        "  -h, --help         this help\n");
}

/* Takes the value of one option. */
static int parse_option(replay_args_t *a, int opt, const char *arg)
{
    const char *bad = NULL;
    switch (opt) {
    case 'n':
        a->nodes = arg;
        return GS_EXIT_OK;
    case 'p':
        a->pods = arg;
        return GS_EXIT_OK;
    case 'o':
        a->out = arg;
        return GS_EXIT_OK;
    case 'g':
        a->plot = arg;
        if (gs__plan_plot_format_ok(arg))
            return GS_EXIT_OK;
        return USAGE_ERROR("--plot \"%s\": the file name must end in .png or .svg", arg);
    case 'c':
        a->published = arg;
        return GS_EXIT_OK;
    case 'w':
        a->workload = arg;
        return GS_EXIT_OK;
    case 'P':
        a->npolicies = gs__plan_parse_policies(arg, a->policies, GS_PLACE_POLICY_COUNT, &bad);
        if (a->npolicies >= 0)
            return GS_EXIT_OK;
        return USAGE_ERROR("--policy \"%s\": unknown policy (see --help)", arg);
    case 's':
        a->nseeds = gs__plan_parse_seeds(arg, a->seeds, SEEDS_MAX);
        if (a->nseeds >= 0)
            return GS_EXIT_OK;
        return USAGE_ERROR("--seed \"%s\": expected N, N-M or N,M,... (at most %d)", arg,
                           SEEDS_MAX);
    default: /* 'i' */
        if (gs__plan_parse_ratio(arg, 0, 100, &a->tune) == 0)
            return GS_EXIT_OK;
        return USAGE_ERROR("--inflate \"%s\": expected a ratio between 0 and 100 (1.3 or 130%%)",
                           arg);
    }
}

static int one_option(void *ctx, int opt, const char *arg)
{
    return parse_option(ctx, opt, arg);
}

static int parse_args(int argc, char **argv, replay_args_t *a)
{
    static const gs__cli_opt_t options[] = {
        {"nodes", 1, 'n', 0}, {"pods", 1, 'p', 0},      {"policy", 1, 'P', 0},
        {"seed", 1, 's', 0},  {"inflate", 1, 'i', 0},   {"out", 1, 'o', 0},
        {"plot", 1, 'g', 0},  {"published", 1, 'c', 0}, {"workload", 1, 'w', 0},
        {NULL, 0, 0, 0},
    };
    gs__cli_args_t args = {.opts = options, .handle = one_option, .ctx = a};
    int next = 0, status = gs__cli_options(&a->cli, argc, argv, &args, &next);
    if (status == GS__CLI_HELP) {
        usage(stdout);
        return HELP_SHOWN;
    }
    if (status != GS_EXIT_OK)
        return status;
    if (next < argc)
        return USAGE_ERROR("unexpected argument \"%s\"", argv[next]);
    if (a->nodes == NULL || a->pods == NULL)
        return USAGE_ERROR("replay needs --nodes and --pods (see gpushare plan replay --help)");
    if (a->cli.json && a->out != NULL && strcmp(a->out, "-") == 0)
        return USAGE_ERROR("--json and --out - both write to standard output: give --out FILE");
    return GS_EXIT_OK;
}

/* The workload's name: the pod file's base name without ".csv". */
static void workload_name(const replay_args_t *a, char *buf, size_t len)
{
    const char *base = a->workload;
    if (base == NULL) {
        base = strrchr(a->pods, '/');
        base = base != NULL ? base + 1 : a->pods;
    }
    snprintf(buf, len, "%s", base);
    size_t n = strlen(buf);
    if (a->workload == NULL && n > 4 && strcmp(buf + n - 4, ".csv") == 0)
        buf[n - 4] = '\0';
}

/* Python's repr of a value rounded to 2 decimals: "95.1", "100.0", "0.25". */
static void format_pct(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f", v);
    size_t n = strlen(buf);
    if (n >= 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
        buf[n - 1] = '\0';
}

static void write_header(FILE *out)
{
    fprintf(out, "workload,sc_policy,tune,seed,total_gpus");
    for (int x = 0; x <= GS_PLACE_TABLE_MAX; x++)
        fprintf(out, ",%d", x);
    fputc('\n', out);
}

static void write_row(FILE *out, const char *workload, gs_place_policy_t policy, double tune,
                      unsigned long long seed, const gs_place_replay_result_t *r)
{
    fprintf(out, "%s,%s,%g,%llu,%u", workload, gs_place_policy_label(policy), tune, seed,
            r->total_gpus);
    for (int x = 0; x <= GS_PLACE_TABLE_MAX; x++) {
        char v[32] = "";
        if (r->valid[x])
            format_pct(r->table[x], v, sizeof(v));
        fprintf(out, ",%s", v);
    }
    fputc('\n', out);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void account(policy_summary_t *s, const gs_place_replay_result_t *r, double seconds)
{
    double unalloc = 100.0 - r->table[100];
    if (s->runs == 0 || unalloc < s->unalloc_min)
        s->unalloc_min = unalloc;
    if (s->runs == 0 || unalloc > s->unalloc_max)
        s->unalloc_max = unalloc;
    s->unalloc_sum += unalloc;
    s->seconds[s->runs++] = seconds;
    s->total_gpus = r->total_gpus;
    for (int x = 0; x <= GS_PLACE_TABLE_MAX; x++) {
        if (r->valid[x]) {
            s->curve.alloc[x] += r->table[x];
            s->curve_runs[x]++;
        }
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Reads the published mean unallocated % at arrived 100% for (workload, label) over the given
 * seeds; returns -1 when the file has no such rows. */
static double published_mean(const char *path, const char *workload, const char *label,
                             const replay_args_t *a)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[8192];
    int col100 = -1, n = 0;
    double sum = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *field[200], *save = NULL;
        int nf = 0;
        for (char *t = strtok_r(line, ",\r\n", &save); t != NULL && nf < 200;
             t = strtok_r(NULL, ",\r\n", &save))
            field[nf++] = t;
        if (col100 < 0) {
            for (int i = 0; i < nf; i++)
                col100 = strcmp(field[i], "100") == 0 ? i : col100;
            continue;
        }
        if (nf <= col100 || nf < 4 || strcmp(field[0], workload) != 0 ||
            strcmp(field[1], label) != 0)
            continue;
        unsigned long long seed = strtoull(field[3], NULL, 10);
        for (int i = 0; i < a->nseeds; i++) {
            if (a->seeds[i] == seed) {
                sum += 100.0 - strtod(field[col100], NULL);
                n++;
                break;
            }
        }
    }
    fclose(f);
    return n > 0 ? sum / n : -1;
}

/* What the policies are compared with: FGD's published mean when the published file has it,
 * else FGD's mean replayed here; -1 when neither is known. *what says which. */
static double fgd_reference(const replay_args_t *a, const char *workload, policy_summary_t *sums,
                            const char **what)
{
    double p = a->published ? published_mean(a->published, workload, "06-FGD", a) : -1;
    *what = "published";
    if (p >= 0)
        return p;
    *what = "replayed here";
    for (int i = 0; i < a->npolicies; i++) {
        if (a->policies[i] == GS_PLACE_FGD)
            return sums[i].unalloc_sum / sums[i].runs;
    }
    return -1;
}

static void print_summary(FILE *out, const replay_args_t *a, const char *workload,
                          policy_summary_t *sums)
{
    const char *what;
    double ref = fgd_reference(a, workload, sums, &what);
    fprintf(out, "%-11s %-17s %11s %15s %10s %7s %13s\n", "policy", "label", "unalloc@100",
            "min..max", "published", "vs FGD", "replay (med)");
    for (int i = 0; i < a->npolicies; i++) {
        policy_summary_t *s = &sums[i];
        const char *label = gs_place_policy_label(a->policies[i]);
        char pub[32] = "-", range[48], ratio[32] = "-";
        double p = a->published ? published_mean(a->published, workload, label, a) : -1;
        double mean = s->unalloc_sum / s->runs;
        if (p >= 0)
            snprintf(pub, sizeof(pub), "%.2f", p);
        if (ref > 0)
            snprintf(ratio, sizeof(ratio), "%.3f", mean / ref);
        snprintf(range, sizeof(range), "%.2f..%.2f", s->unalloc_min, s->unalloc_max);
        fprintf(out, "%-11s %-17s %10.2f%% %15s %10s %7s %11.3f s\n",
                gs_place_policy_name(a->policies[i]), label, mean, range, pub, ratio,
                median(s->seconds, s->runs));
    }
    fprintf(out,
            "unalloc@100: unallocated GPU %% when the arrived demand reaches 100%% of the "
            "capacity, mean over %d seed(s)\n",
            a->nseeds);
    if (ref > 0)
        fprintf(out, "vs FGD: unalloc@100 divided by FGD's mean (%s: %.2f%%)\n", what, ref);
}

/* The mean allocation curve of policy i over its seeds. */
static gs__plan_curve_t mean_curve(const replay_args_t *a, const policy_summary_t *sums, int i)
{
    gs__plan_curve_t c = sums[i].curve;
    c.label = gs_place_policy_name(a->policies[i]);
    for (int x = 0; x <= GS_PLACE_TABLE_MAX; x++) {
        c.valid[x] = sums[i].curve_runs[x] > 0;
        if (c.valid[x])
            c.alloc[x] /= (double)sums[i].curve_runs[x];
    }
    return c;
}

static int draw_plot(const replay_args_t *a, const char *workload, const policy_summary_t *sums,
                     char *err, size_t errlen)
{
    gs__plan_curve_t curves[GS_PLACE_POLICY_COUNT];
    for (int i = 0; i < a->npolicies; i++)
        curves[i] = mean_curve(a, sums, i);
    return gs__plan_plot(a->plot, workload, curves, a->npolicies, err, errlen);
}

/* A percentage for the --json object: rounded to 6 decimals, as 100 - 95.18 is 4.82 and not
 * 4.81999999999999 (the replay's table is itself rounded to 2 decimals). */
static json_t *percent_json(double v)
{
    return json_real(round(v * 1e6) / 1e6);
}

/* One policy in the --json object (docs/placement.md). */
static json_t *policy_json(const replay_args_t *a, const char *workload, policy_summary_t *sums,
                           int i, double ref)
{
    const policy_summary_t *s = &sums[i];
    const char *label = gs_place_policy_label(a->policies[i]);
    double mean = s->unalloc_sum / s->runs;
    double pub = a->published ? published_mean(a->published, workload, label, a) : -1;
    gs__plan_curve_t c = mean_curve(a, sums, i);
    json_t *curve = json_array();
    for (int x = 0; curve != NULL && x <= GS_PLACE_TABLE_MAX; x++)
        json_array_append_new(curve, c.valid[x] ? percent_json(100.0 - c.alloc[x]) : json_null());
    return json_pack("{s:s, s:s, s:i, s:{s:o, s:o, s:o, s:o?}, s:o?, s:f, s:o}", "policy",
                     gs_place_policy_name(a->policies[i]), "label", label, "runs", s->runs,
                     "unallocated_at_100", "mean", percent_json(mean), "min",
                     percent_json(s->unalloc_min), "max", percent_json(s->unalloc_max), "published",
                     pub >= 0 ? percent_json(pub) : NULL, "vs_fgd",
                     ref > 0 ? json_real(mean / ref) : NULL, "replay_seconds_median",
                     median(sums[i].seconds, s->runs), "unallocated_at", curve);
}

/* The --json object: the replay's parameters, FGD's reference and each policy. */
static json_t *summary_json(const replay_args_t *a, const char *workload, policy_summary_t *sums)
{
    const char *what;
    double ref = fgd_reference(a, workload, sums, &what);
    json_t *seeds = json_array();
    for (int k = 0; seeds != NULL && k < a->nseeds; k++)
        json_array_append_new(seeds, json_integer((json_int_t)a->seeds[k]));
    json_t *doc = json_pack(
        "{s:b, s:s, s:f, s:o, s:I, s:o?, s:[]}", "ok", 1, "workload", workload, "inflate", a->tune,
        "seeds", seeds, "total_gpus", (json_int_t)sums[0].total_gpus, "fgd_reference",
        ref > 0 ? json_pack("{s:s, s:o}", "source", what, "unallocated_at_100", percent_json(ref))
                : NULL,
        "policies");
    json_t *list = json_object_get(doc, "policies");
    for (int i = 0; list != NULL && i < a->npolicies; i++) {
        if (json_array_append_new(list, policy_json(a, workload, sums, i, ref)) != 0) {
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}

/* After the runs: prints the comparison (text, or the --json object), draws the plot and closes
 * the CSV file. A failure is one error line, or the object's error with --json. */
static int report(const replay_args_t *a, const char *workload, policy_summary_t *sums, FILE *csv)
{
    char err[512] = "";
    const char *code = NULL;
    json_t *doc = a->cli.json ? summary_json(a, workload, sums) : NULL;
    if (a->cli.json && doc == NULL) {
        code = "internal";
        snprintf(err, sizeof(err), "out of memory");
    } else if (doc == NULL) {
        print_summary(csv == stdout ? stderr : stdout, a, workload, sums);
    }
    if (code == NULL && a->plot != NULL && draw_plot(a, workload, sums, err, sizeof(err)) != 0)
        code = "write_failed";
    if (csv != NULL && csv != stdout && fclose(csv) != 0 && code == NULL) {
        code = "write_failed";
        snprintf(err, sizeof(err), "%s: write error", a->out);
    }
    int status = GS_EXIT_OK;
    if (code != NULL && doc != NULL) {
        gs__cli_set_error(doc, code, err);
        status = GS_EXIT_FAIL;
    } else if (code != NULL) {
        status = gs__cli_fail(&a->cli, GS_EXIT_FAIL, code, "%s", err);
    }
    if (doc != NULL)
        gs__cli_print_json(doc);
    json_decref(doc);
    return status;
}

/* Replays every (policy, seed), writing rows to csv (may be NULL). */
static int run_all(const replay_args_t *a, const gs_place_nodes_t *nodes,
                   const gs_place_pods_t *pods, const char *workload, FILE *csv,
                   policy_summary_t *sums)
{
    char err[GS_PLACE_ERR_MAX];
    for (int i = 0; i < a->npolicies; i++) {
        for (int k = 0; k < a->nseeds; k++) {
            gs_place_replay_opts_t opts = {
                .policy = a->policies[i], .seed = a->seeds[k], .tune = a->tune};
            gs_place_replay_result_t r;
            double t0 = now();
            if (gs_place_replay(nodes, pods, &opts, &r, err, sizeof(err)) != 0)
                return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "bad_input", "replay: %s", err);
            account(&sums[i], &r, now() - t0);
            if (csv != NULL)
                write_row(csv, workload, a->policies[i], a->tune, a->seeds[k], &r);
            gs_place_replay_result_free(&r);
        }
    }
    return GS_EXIT_OK;
}

static int replay(const replay_args_t *a)
{
    char err[GS_PLACE_ERR_MAX], workload[256];
    gs_place_nodes_t nodes = {0};
    gs_place_pods_t pods = {0};
    policy_summary_t *sums = NULL;
    FILE *csv = NULL;
    int status = GS_EXIT_FAIL;
    if (gs_place_nodes_read(a->nodes, &nodes, err, sizeof(err)) != 0 ||
        gs_place_pods_read(a->pods, &pods, err, sizeof(err)) != 0) {
        status = gs__cli_fail(&a->cli, GS_EXIT_FAIL, "bad_input", "%s", err);
        goto out;
    }
    workload_name(a, workload, sizeof(workload));
    sums = calloc((size_t)a->npolicies, sizeof(*sums));
    if (sums == NULL) {
        status = gs__cli_fail(&a->cli, GS_EXIT_FAIL, "internal", "out of memory");
        goto out;
    }
    if (a->out != NULL) {
        csv = strcmp(a->out, "-") == 0 ? stdout : fopen(a->out, "w");
        if (csv == NULL) {
            status = gs__cli_fail(&a->cli, GS_EXIT_FAIL, "write_failed",
                                  "%s: cannot create the file", a->out);
            goto out;
        }
        write_header(csv);
    }
    if ((status = run_all(a, &nodes, &pods, workload, csv, sums)) != GS_EXIT_OK)
        goto out;
    status = report(a, workload, sums, csv);
    csv = NULL; /* report closed it */
out:
    if (csv != NULL && csv != stdout)
        fclose(csv);
    free(sums);
    gs_place_nodes_free(&nodes);
    gs_place_pods_free(&pods);
    return status;
}

int gs__plan_replay_main(int argc, char **argv)
{
    replay_args_t *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        gs__cli_t cli;
        gs__plan_cli_init(&cli, argc, argv);
        return gs__cli_fail(&cli, GS_EXIT_FAIL, "internal", "out of memory");
    }
    gs__plan_cli_init(&a->cli, argc, argv);
    a->cli.help = "plan replay";
    a->policies[0] = GS_PLACE_GPUSHARE;
    a->npolicies = 1;
    a->seeds[0] = 42;
    a->nseeds = 1;
    a->tune = 1.3;
    int status = parse_args(argc, argv, a);
    if (status == GS_EXIT_OK)
        status = replay(a);
    else if (status == HELP_SHOWN)
        status = GS_EXIT_OK;
    free(a);
    return status;
}
