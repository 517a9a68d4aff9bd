/* SPDX-License-Identifier: Apache-2.0 */
/* `gpushare-scheduler-extender replay`: the online replay of a trace beside the offline one, in
 * the figures of `gpushare plan replay` (unallocated GPU % when the arrived demand reaches 100 %
 * of the capacity). */
#include "k8s.h"
#include "main.h"
#include "replay.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEEDS_MAX   64
#define CONFIGS_MAX 8

typedef struct config {
    const char *label; /* the CSV's sc_policy */
    int offline;       /* gs_place_replay with gpushare's policy */
    gs_place_order_t order;
} config_t;

typedef struct summary {
    double sum, min, max, seconds[SEEDS_MAX];
    int runs;
    size_t neutral, below_max, republished, failed;
} summary_t;

typedef struct replay_args {
    const char *nodes, *pods, *published, *out;
    uint64_t seeds[SEEDS_MAX];
    int nseeds;
    double inflate;
    config_t configs[CONFIGS_MAX];
    int nconfigs;
    gs_k8s_replay_opts_t opts;
} replay_args_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpushare-scheduler-extender replay --nodes FILE --pods FILE [options]\n"
            "Replays the pods through the extender's filter and prioritize (ExtenderArgs JSON)\n"
            "and a model of the DRA allocator (first fit in slice order, consumable capacity).\n"
            "  --seed S            seeds: 42, 42-46 or 42,44 (42-46)\n"
            "  --inflate R         grow the workload to R x capacity (1.3)\n"
            "  --device-order O    the plugins' device order: index, tightest, policy or all\n"
            "                      (index); repeatable\n"
            "  --offline           also the offline replay (gpushare plan replay's figure)\n"
            "  --learn             the extender learns the workload instead of being given it\n"
            "  --lag N             results reach the extender N pods late (0)\n"
            "  --assume-seconds S  the extender's assumptions (30)\n"
            "  --score-policy-gpus the extender scores the policy's own GPU choice on each node,\n"
            "                      not the allocator's first fit (for comparison)\n"
            "  --published FILE    published_allocation_fgd_atc23.csv: FGD's published figure\n"
            "  --out FILE          one CSV row per (configuration, seed), published format\n");
}

static int parse_seeds(const char *text, replay_args_t *a)
{
    char copy[512], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", text);
    a->nseeds = 0;
    for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long long lo = strtoull(t, &end, 10), hi = lo;
        if (*end == '-')
            hi = strtoull(end + 1, &end, 10);
        if (*end != '\0' || hi < lo || hi - lo >= SEEDS_MAX)
            return -1;
        for (unsigned long long s = lo; s <= hi; s++) {
            if (a->nseeds == SEEDS_MAX)
                return -1;
            a->seeds[a->nseeds++] = s;
        }
    }
    return a->nseeds > 0 ? 0 : -1;
}

static int add_order(replay_args_t *a, const char *name)
{
    static const char *const labels[GS_PLACE_ORDER_COUNT] = {
        "07-gpushare-online-index", "07-gpushare-online-tightest", "07-gpushare-online-policy"};
    for (int o = 0; o < GS_PLACE_ORDER_COUNT; o++) {
        if ((strcmp(name, "all") == 0 ||
             strcmp(name, gs_place_order_name((gs_place_order_t)o)) == 0) &&
            a->nconfigs < CONFIGS_MAX)
            a->configs[a->nconfigs++] =
                (config_t){.label = labels[o], .order = (gs_place_order_t)o};
    }
    gs_place_order_t how;
    return strcmp(name, "all") == 0 || gs_place_order_parse(name, &how) == 0 ? 0 : -1;
}

/* Applies one option; returns 0, 1 (help shown) or 2 (usage error). */
static int replay_option(replay_args_t *a, int opt, const char *arg, int *offline)
{
    char *end = NULL;
    switch (opt) {
    case 'n':
        a->nodes = arg;
        return 0;
    case 'p':
        a->pods = arg;
        return 0;
    case 's':
        return parse_seeds(arg, a) == 0 ? 0 : gs__ext_usage("--seed wants 42, 42-46 or 42,44");
    case 'i':
        a->inflate = strtod(arg, &end);
        return *end == '\0' && a->inflate >= 0 && a->inflate < 100 ? 0 : gs__ext_usage("--inflate");
    case 'o':
        return add_order(a, arg) == 0
                   ? 0
                   : gs__ext_usage("--device-order is index, tightest, policy or all");
    case 'f':
        *offline = 1;
        return 0;
    case 'l':
        a->opts.learn = 1;
        return 0;
    case 'g':
        a->opts.lag = (unsigned)strtoul(arg, &end, 10);
        return *end == '\0' && arg[0] != '\0' ? 0 : gs__ext_usage("--lag wants a count");
    case 'a':
        a->opts.assume_seconds = strtod(arg, &end);
        return *end == '\0' && a->opts.assume_seconds >= 0 ? 0 : gs__ext_usage("--assume-seconds");
    case 'G':
        a->opts.policy_gpus = 1;
        return 0;
    case 'P':
        a->published = arg;
        return 0;
    case 'O':
        a->out = arg;
        return 0;
    case 'h':
        usage(stdout);
        return 1;
    default:
        return 2;
    }
}

static int parse_args(int argc, char **argv, replay_args_t *a)
{
    static const struct option opts[] = {{"nodes", required_argument, NULL, 'n'},
                                         {"pods", required_argument, NULL, 'p'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"inflate", required_argument, NULL, 'i'},
                                         {"device-order", required_argument, NULL, 'o'},
                                         {"offline", no_argument, NULL, 'f'},
                                         {"learn", no_argument, NULL, 'l'},
                                         {"lag", required_argument, NULL, 'g'},
                                         {"assume-seconds", required_argument, NULL, 'a'},
                                         {"score-policy-gpus", no_argument, NULL, 'G'},
                                         {"published", required_argument, NULL, 'P'},
                                         {"out", required_argument, NULL, 'O'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int opt, result, offline = 0;
    memset(a, 0, sizeof(*a));
    a->inflate = 1.3;
    a->opts.assume_seconds = 30;
    parse_seeds("42-46", a);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if ((result = replay_option(a, opt, optarg, &offline)) != 0)
            return result;
    }
    if (optind < argc || a->nodes == NULL || a->pods == NULL)
        return gs__ext_usage("replay needs --nodes and --pods");
    if (a->nconfigs == 0)
        add_order(a, "index");
    if (offline) { /* first, as the reference */
        memmove(&a->configs[1], &a->configs[0], (size_t)a->nconfigs * sizeof(a->configs[0]));
        a->configs[0] = (config_t){.label = "07-gpushare", .offline = 1};
        a->nconfigs++;
    }
    a->opts.tune = a->inflate;
    return 0;
}

/* The workload's name as the published file has it: the pods file's name without ".csv". */
static void workload_name(const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    snprintf(buf, len, "%s", base != NULL ? base + 1 : path);
    size_t n = strlen(buf);
    if (n > 4 && strcmp(buf + n - 4, ".csv") == 0)
        buf[n - 4] = '\0';
}

/* FGD's published mean unallocated % at 100 % arrival over the seeds; -1 when unknown. */
static double published_fgd(const replay_args_t *a, const char *workload)
{
    FILE *f = a->published != NULL ? fopen(a->published, "r") : NULL;
    char line[8192];
    int col = -1, n = 0;
    double sum = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        char *field[160], *save = NULL;
        int nf = 0;
        for (char *t = strtok_r(line, ",\r\n", &save); t != NULL && nf < 160;
             t = strtok_r(NULL, ",\r\n", &save))
            field[nf++] = t;
        for (int i = 0; col < 0 && i < nf; i++)
            col = strcmp(field[i], "100") == 0 ? i : -1;
        if (col < 0 || nf <= col || strcmp(field[0], workload) != 0 ||
            strcmp(field[1], "06-FGD") != 0)
            continue;
        for (int s = 0; s < a->nseeds; s++) {
            if (strtoull(field[3], NULL, 10) == a->seeds[s]) {
                sum += 100.0 - strtod(field[col], NULL);
                n++;
            }
        }
    }
    if (f != NULL)
        fclose(f);
    return n > 0 ? sum / n : -1;
}

static void write_row(FILE *out, const char *workload, const char *label, double tune,
                      uint64_t seed, const gs_place_replay_result_t *r)
{
    fprintf(out, "%s,%s,%g,%llu,%u", workload, label, tune, (unsigned long long)seed,
            r->total_gpus);
    for (int x = 0; x <= GS_PLACE_TABLE_MAX; x++) {
        if (r->valid[x])
            fprintf(out, ",%.2f", r->table[x]);
        else
            fprintf(out, ",");
    }
    fprintf(out, "\n");
}

static void account(summary_t *s, const gs_place_replay_result_t *r, double seconds)
{
    double u = 100.0 - r->table[100];
    s->min = s->runs == 0 || u < s->min ? u : s->min;
    s->max = s->runs == 0 || u > s->max ? u : s->max;
    s->sum += u;
    s->seconds[s->runs++] = seconds;
}

/* One replay of configuration c with seed. */
static int run_one(const replay_args_t *a, const config_t *c, uint64_t seed,
                   const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                   gs_place_replay_result_t *r, summary_t *s, char *err, size_t errlen)
{
    if (c->offline) {
        gs_place_replay_opts_t po = {.policy = GS_PLACE_GPUSHARE, .seed = seed, .tune = a->inflate};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int result = gs_place_replay(nodes, pods, &po, r, err, errlen);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (result == 0)
            account(s, r,
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        return result;
    }
    gs_k8s_replay_opts_t o = a->opts;
    gs_k8s_replay_stats_t st;
    o.seed = seed;
    o.order = c->order;
    int result = gs_k8s_replay(nodes, pods, &o, r, &st, err, errlen);
    if (result != 0)
        return result;
    account(s, r, st.seconds);
    s->neutral += st.neutral;
    s->below_max += st.below_max;
    s->republished += st.republished;
    s->failed += st.failed;
    return 0;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static void print_summary(const replay_args_t *a, const char *workload, summary_t *sums, double fgd,
                          uint32_t gpus)
{
    printf("workload %s: seeds %llu..%llu (%d), inflate %g, %u GPUs; extender given the %s "
           "workload, lag %u pods%s\n",
           workload, (unsigned long long)a->seeds[0], (unsigned long long)a->seeds[a->nseeds - 1],
           a->nseeds, a->inflate, gpus, a->opts.learn ? "learned" : "trace's", a->opts.lag,
           a->opts.policy_gpus ? ", scoring the policy's GPU choice" : "");
    printf("%-30s %11s %13s %10s %8s %8s %9s %12s\n", "placement", "unalloc@100", "min..max",
           "vs first", "vs FGD", "neutral", "below-max", "replay (med)");
    double first = sums[0].sum / sums[0].runs;
    for (int i = 0; i < a->nconfigs; i++) {
        summary_t *s = &sums[i];
        double mean = s->sum / s->runs;
        char range[48], ratio[16] = "-";
        snprintf(range, sizeof(range), "%.2f..%.2f", s->min, s->max);
        if (fgd > 0)
            snprintf(ratio, sizeof(ratio), "%.3f", mean / fgd);
        qsort(s->seconds, (size_t)s->runs, sizeof(double), by_value);
        printf("%-30s %11.3f %13s %10.3f %8s %8zu %9zu %11.1fs\n", a->configs[i].label, mean, range,
               mean / first, ratio, s->neutral, s->below_max, s->seconds[s->runs / 2]);
    }
    if (fgd > 0)
        printf("%-30s %11.3f  (published, the same seeds)\n", "06-FGD", fgd);
}

int gs__ext_replay_main(int argc, char **argv)
{
    replay_args_t a;
    int result = parse_args(argc, argv, &a);
    if (result != 0)
        return result == 1 ? 0 : result;
    gs_log_init("gpushare-scheduler-extender", GS_LOG_WARN);
    char err[GS_PLACE_ERR_MAX], workload[256];
    gs_place_nodes_t nodes = {0};
    gs_place_pods_t pods = {0};
    summary_t sums[CONFIGS_MAX];
    memset(sums, 0, sizeof(sums));
    FILE *csv = NULL;
    uint32_t gpus = 0;
    workload_name(a.pods, workload, sizeof(workload));
    result = gs_place_nodes_read(a.nodes, &nodes, err, sizeof(err));
    if (result == 0)
        result = gs_place_pods_read(a.pods, &pods, err, sizeof(err));
    if (result == 0 && a.out != NULL && (csv = fopen(a.out, "w")) == NULL)
        result = gs_fail(err, sizeof(err), GS_EIO, "%s: cannot write", a.out);
    for (int c = 0; c < a.nconfigs && result == 0; c++) {
        for (int s = 0; s < a.nseeds && result == 0; s++) {
            gs_place_replay_result_t r;
            result = run_one(&a, &a.configs[c], a.seeds[s], &nodes, &pods, &r, &sums[c], err,
                             sizeof(err));
            if (result == 0 && csv != NULL)
                write_row(csv, workload, a.configs[c].label, a.inflate, a.seeds[s], &r);
            gpus = r.total_gpus;
            if (result == 0)
                gs_place_replay_result_free(&r);
        }
    }
    if (result == 0)
        print_summary(&a, workload, sums, published_fgd(&a, workload), gpus);
    else
        fprintf(stderr, "gpushare-scheduler-extender replay: %s\n", err);
    if (csv != NULL)
        fclose(csv);
    gs_place_nodes_free(&nodes);
    gs_place_pods_free(&pods);
    return result == 0 ? 0 : 1;
}
