/* SPDX-License-Identifier: Apache-2.0 */
/* `gpushare plan` for operators: nodes, GPUs and monthly cost a workload needs with GPU sharing
 * (gpushare's placement) and with one job per GPU, for each node type offered. */
#include "cli.h"
#include "daemon_cli.h"
#include "plan_cli.h"

#include "gpushare/error.h"
#include "gpushare/quantity.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#define HELP_SHOWN      (-1)
#define DEFAULT_HOURS   720.0 /* 30 days: what cloud price calculators call a month */
#define DEFAULT_MAXNODE 100000u

typedef struct capacity_args {
    gs__cli_t cli;
    const char *workload, *types_file;
    gs_place_policy_t policy;
    double hours;
    unsigned long long max_nodes;
    gs_place_pods_t jobs;   /* --workload and --job, in order */
    gs_place_nodes_t types; /* --node-type (the first flag_types), then --node-types */
    size_t flag_types;
} capacity_args_t;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpushare plan (--workload FILE | --job GPU[xCOUNT]...)\n"
        "                     (--node-type NAME:gpus=N,price=P[,...]... | --node-types FILE)\n"
        "                     [--policy NAME] [--hours-per-month H] [--max-nodes N] [--json]\n"
        "\n"
        "How many nodes (and GPUs) a workload needs when jobs share GPUs, placed by gpushare's\n"
        "policy, against one job per GPU, and what each costs per month.\n"
        "\n"
        "  --workload FILE     jobs: a pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "                      [,gpu_spec]) or a job list with a gpu column (0.25, 25%% or a\n"
        "                      whole number of GPUs) and optional name, count, cpu_milli,\n"
        "                      memory_mib, gpu_spec columns\n"
        "  --job GPU[xCOUNT]   COUNT jobs (default 1) taking GPU: 0.25, 25%% or 2 (whole GPUs),\n"
        "                      or memory of one GPU, 10G (its share of each node type's GPU\n"
        "                      model: the node type needs model=)\n"
        "  --node-type SPEC    NAME:gpus=N,price=DOLLARS_PER_HOUR[,cpu_milli=M][,memory_mib=M]\n"
        "                      [,model=M]; repeat to compare node types. gpus is 1..16; CPU\n"
        "                      and memory left out are unlimited; the model is one gpushare\n"
        "                      knows (A100-40GB, T4, ...) or one the jobs' gpu_spec names\n"
        "  --node-types FILE   node types: name,gpus,price_per_hour[,cpu_milli,memory_mib,model]\n"
        "  --policy NAME       placement when sharing (default: gpushare)\n"
        "  --hours-per-month H hours billed per month (default: 720 = 30 days)\n"
        "  --max-nodes N       give up beyond N nodes of a type (default: 100000)\n"
        "  --json              the plan as one JSON object (docs/placement.md)\n"
        "  -h, --help          this help\n"
        "\n"
        "Exit status: 0 with a plan; 1 when no node type can hold the workload or an input file\n"
        "is bad; 2 for bad options.\n"
        "example: gpushare plan --job 0.25x4 --node-type g4dn.2xlarge:gpus=1,price=0.752\n");
}

/* Drops the "source:line: " prefix of a parser message about a one-row synthetic file. */
static const char *reason(const char *err)
{
    const char *p = strstr(err, ":2: ");
    return p != NULL ? p + 4 : err;
}

static int append_pods(gs_place_pods_t *dst, gs_place_pods_t *src)
{
    if (src->count == 0)
        return 0;
    gs_place_pod_t *grown = realloc(dst->pods, (dst->count + src->count) * sizeof(*grown));
    if (grown == NULL)
        return GS_ENOMEM;
    memcpy(grown + dst->count, src->pods, src->count * sizeof(*grown));
    dst->pods = grown;
    dst->count += src->count;
    gs_place_pods_free(src);
    return 0;
}

static int append_nodes(gs_place_nodes_t *dst, gs_place_nodes_t *src)
{
    if (src->count == 0)
        return 0;
    gs_place_node_row_t *grown = realloc(dst->nodes, (dst->count + src->count) * sizeof(*grown));
    if (grown == NULL)
        return GS_ENOMEM;
    memcpy(grown + dst->count, src->nodes, src->count * sizeof(*grown));
    dst->nodes = grown;
    dst->count += src->count;
    gs_place_nodes_free(src);
    return 0;
}

/* The memory of --job 10G, 0 when the GPU part is a share or a GPU count (no unit letter). */
static uint64_t job_memory(const char *gpu)
{
    size_t n = strlen(gpu);
    uint64_t bytes = 0;
    char why[GS_QTY_ERR_MAX];
    if (n == 0 || gpu[n - 1] == '%' || (gpu[n - 1] >= '0' && gpu[n - 1] <= '9'))
        return 0;
    return gs_qty_parse_bytes(gpu, GS_QTY_REQUIRE_UNIT, &bytes, why, sizeof(why)) == 0 ? bytes : 0;
}

/* --job 0.25x4 or --job 10Gx4: a one-row job list. */
static int add_job(capacity_args_t *a, const char *spec)
{
    char text[256], gpu[64], err[GS_PLACE_ERR_MAX];
    const char *x = strrchr(spec, 'x');
    const char *count = x != NULL ? x + 1 : "1";
    size_t n = x != NULL ? (size_t)(x - spec) : strlen(spec);
    if (n == 0 || n >= sizeof(gpu) || strchr(spec, ',') != NULL || strchr(spec, '\n') != NULL) {
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "--job \"%s\": expected GPU[xCOUNT], e.g. 0.25x4", spec);
    }
    memcpy(gpu, spec, n);
    gpu[n] = '\0';
    uint64_t memory = job_memory(gpu);
    snprintf(text, sizeof(text), "gpu,count\n%s,%s\n", memory > 0 ? "1" : gpu, count);
    gs_place_pods_t one;
    if (gs_place_pods_parse(text, strlen(text), "--job", &one, err, sizeof(err)) != 0) {
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage", "--job \"%s\": %s", spec, reason(err));
    }
    if (one.count > 0 && one.pods[0].num_gpu == 0) {
        gs_place_pods_free(&one);
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "--job \"%s\": a job takes some GPU: a share (0.25 or 25%%) or a "
                            "whole number of GPUs",
                            spec);
    }
    for (size_t i = 0; i < one.count; i++) {
        snprintf(one.pods[i].name, sizeof(one.pods[i].name), "job-%zu", a->jobs.count + i + 1);
        one.pods[i].gpu_mem_bytes = memory; /* its share: that memory of each node type's GPU */
    }
    return append_pods(&a->jobs, &one) == 0 ? GS_EXIT_OK : GS_EXIT_FAIL;
}

/* Maps a --node-type key to its CSV column; NULL for an unknown key. */
static const char *column_of(const char *key)
{
    static const char *const keys[][2] = {{"gpus", "gpus"},
                                          {"gpu", "gpus"},
                                          {"price", "price_per_hour"},
                                          {"price_per_hour", "price_per_hour"},
                                          {"cpu_milli", "cpu_milli"},
                                          {"memory_mib", "memory_mib"},
                                          {"model", "model"}};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strcmp(key, keys[i][0]) == 0)
            return keys[i][1];
    }
    return NULL;
}

/* Nonzero when item is one of the sep-separated entries of list ("price" in "name,price"). */
static int list_has(const char *list, char sep, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, (char[]){sep, '\0'});
        if (len == n && strncmp(p, item, n) == 0)
            return 1;
        p += len;
        p += *p == sep;
    }
    return 0;
}

/* --node-type NAME:gpus=1,price=0.752: a one-row node type list. */
static int add_type(capacity_args_t *a, const char *spec)
{
    char copy[512], header[256] = "name", row[512], err[GS_PLACE_ERR_MAX];
    const char *colon = strchr(spec, ':');
    if (colon == NULL || colon == spec || strlen(spec) >= sizeof(copy) ||
        strpbrk(spec, "\n\"") != NULL) {
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "--node-type \"%s\": expected NAME:gpus=N,price=P[,...]", spec);
    }
    snprintf(row, sizeof(row), "%.*s", (int)(colon - spec), spec);
    strcpy(copy, colon + 1);
    for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv != NULL;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq != NULL)
            *eq = '\0';
        const char *col = eq != NULL ? column_of(kv) : NULL;
        if (col == NULL || strlen(header) + strlen(col) + 2 > sizeof(header) ||
            strlen(row) + strlen(eq + 1) + 2 > sizeof(row)) {
            return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                                "--node-type \"%s\": unknown or malformed \"%s\" (keys: gpus, "
                                "price, cpu_milli, memory_mib, model)",
                                spec, kv);
        }
        if (list_has(header, ',', col)) {
            return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                                "--node-type \"%s\": %s given twice", spec, kv);
        }
        strcat(strcat(header, ","), col);
        strcat(strcat(row, ","), eq + 1);
    }
    char text[1024];
    snprintf(text, sizeof(text), "%s\n%s\n", header, row);
    gs_place_nodes_t one;
    if (gs_place_nodes_parse(text, strlen(text), "--node-type", &one, err, sizeof(err)) != 0) {
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage", "--node-type \"%s\": %s", spec,
                            reason(err));
    }
    return append_nodes(&a->types, &one) == 0 ? GS_EXIT_OK : GS_EXIT_FAIL;
}

/* Reads --workload and --node-types, which may come along with --job and --node-type. */
static int read_files(capacity_args_t *a)
{
    char err[GS_PLACE_ERR_MAX];
    gs_place_pods_t pods = {0};
    gs_place_nodes_t types = {0};
    if (a->workload != NULL) {
        if (gs_place_pods_read(a->workload, &pods, err, sizeof(err)) != 0)
            return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "bad_input", "%s", err);
        /* The file's jobs come first, then those of --job. */
        gs_place_pods_t jobs = a->jobs;
        a->jobs = pods;
        if (append_pods(&a->jobs, &jobs) != 0)
            return GS_EXIT_FAIL;
    }
    a->flag_types = a->types.count;
    if (a->types_file != NULL) {
        if (gs_place_nodes_read(a->types_file, &types, err, sizeof(err)) != 0)
            return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "bad_input", "%s", err);
        if (append_nodes(&a->types, &types) != 0)
            return GS_EXIT_FAIL;
    }
    return GS_EXIT_OK;
}

/* Nonzero when some job's gpu_spec names model ("T4" in "T4|V100M32"). */
static int jobs_name_model(const capacity_args_t *a, const char *model)
{
    for (size_t i = 0; i < a->jobs.count; i++) {
        if (list_has(a->jobs.pods[i].gpu_spec, '|', model))
            return 1;
    }
    return 0;
}

/* The GPU models gpushare knows, "A100-40GB, A100-80GB, ...", into buf. */
static void known_models(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; gs_place_gpu_model_name(i) != NULL && used < len; i++) {
        int n =
            snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "", gs_place_gpu_model_name(i));
        used += n > 0 ? (size_t)n : 0;
    }
}

/* A node type can host jobs: it has GPUs and a price, no zero CPU or memory, and a GPU model
 * gpushare knows or the workload names. One error line otherwise: bad usage for --node-type,
 * bad input for a --node-types file. */
static int check_type(const capacity_args_t *a, const gs_place_node_row_t *t, int from_flag)
{
    char why[512] = "";
    if (t->num_gpu == 0)
        snprintf(why, sizeof(why), "has no GPU (gpus=N, 1..%d)", GS_PLACE_MAX_GPUS);
    else if (t->price_per_hour < 0)
        snprintf(why, sizeof(why), "has no price (price=DOLLARS_PER_HOUR)");
    else if (t->cpu_milli == 0 || t->mem_mib == 0)
        snprintf(why, sizeof(why), "has %s 0 (leave it out for no limit)",
                 t->cpu_milli == 0 ? "cpu_milli" : "memory_mib");
    else if (strcmp(t->model, GS_PLACE_DEFAULT_MODEL) != 0 && !gs_place_gpu_model_known(t->model) &&
             !jobs_name_model(a, t->model)) {
        char known[160];
        known_models(known, sizeof(known));
        snprintf(why, sizeof(why),
                 "has an unknown GPU model \"%s\" (known: %s, their families such as A100, "
                 "and the models the jobs' gpu_spec names)",
                 t->model, known);
    }
    if (why[0] == '\0')
        return GS_EXIT_OK;
    if (from_flag)
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage", "node type %s %s", t->name, why);
    return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "bad_input", "%s: node type %s %s", a->types_file,
                        t->name, why);
}

static int check_args(capacity_args_t *a)
{
    if (a->jobs.count == 0)
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "no jobs: give --workload FILE or --job GPU[xCOUNT] (see --help)");
    if (a->types.count == 0)
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "no node type: give --node-type or --node-types (see --help)");
    for (size_t i = 0; i < a->types.count; i++) {
        int status = check_type(a, &a->types.nodes[i], i < a->flag_types);
        if (status != GS_EXIT_OK)
            return status;
    }
    return GS_EXIT_OK;
}

static int parse_option(capacity_args_t *a, int opt, const char *arg)
{
    switch (opt) {
    case 'w':
        a->workload = arg;
        return GS_EXIT_OK;
    case 'T':
        a->types_file = arg;
        return GS_EXIT_OK;
    case 'j':
        return add_job(a, arg);
    case 't':
        return add_type(a, arg);
    case 'p':
        if (gs_place_policy_parse(arg, &a->policy) == 0)
            return GS_EXIT_OK;
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage", "--policy \"%s\": unknown policy",
                            arg);
    case 'H':
        if (gs__plan_parse_double(arg, 1, 744, &a->hours) == 0)
            return GS_EXIT_OK;
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "--hours-per-month \"%s\": expected hours between 1 and 744", arg);
    case 'm':
        if (gs__plan_parse_seeds(arg, &a->max_nodes, 1) == 1 && a->max_nodes > 0 &&
            a->max_nodes <= 10000000)
            return GS_EXIT_OK;
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage",
                            "--max-nodes \"%s\": expected 1..10000000", arg);
    default:
        return GS_EXIT_USAGE;
    }
}

static int one_option(void *ctx, int opt, const char *arg)
{
    return parse_option(ctx, opt, arg);
}

static int parse_args(int argc, char **argv, capacity_args_t *a)
{
    static const gs__cli_opt_t options[] = {
        {"workload", 1, 'w', 0},   {"job", 1, 'j', 0},    {"node-type", 1, 't', 0},
        {"node-types", 1, 'T', 0}, {"policy", 1, 'p', 0}, {"hours-per-month", 1, 'H', 0},
        {"max-nodes", 1, 'm', 0},  {NULL, 0, 0, 0},
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
        return gs__cli_fail(&a->cli, GS_EXIT_USAGE, "usage", "unexpected argument \"%s\"",
                            argv[next]);
    if ((status = read_files(a)) != GS_EXIT_OK)
        return status;
    return check_args(a);
}

/* The workload in numbers: jobs sharing a GPU, on whole GPUs, CPU only; GPU demand in milli. */
typedef struct workload_sum {
    size_t share, whole, cpu, by_memory;
    uint64_t milli, memory;
} workload_sum_t;

static workload_sum_t sum_workload(const capacity_args_t *a)
{
    workload_sum_t w = {0};
    for (size_t i = 0; i < a->jobs.count; i++) {
        const gs_place_pod_t *p = &a->jobs.pods[i];
        if (p->gpu_mem_bytes > 0) {
            /* Its share depends on the node type's GPU: its memory is its demand. */
            w.share++;
            w.by_memory++;
            w.memory += p->gpu_mem_bytes;
            continue;
        }
        if (p->num_gpu == 0)
            w.cpu++;
        else if (p->gpu_milli < GS_PLACE_MILLI)
            w.share++;
        else
            w.whole++;
        w.milli += (uint64_t)p->num_gpu * p->gpu_milli;
    }
    return w;
}

static void describe_workload(const capacity_args_t *a)
{
    workload_sum_t w = sum_workload(a);
    char memory[32] = "";
    if (w.by_memory > 0)
        gs_qty_format_human(w.memory, memory, sizeof(memory));
    printf("workload: %zu job%s (%zu sharing a GPU, %zu on whole GPUs, %zu CPU only), "
           "GPU demand %.2f GPU%s%s%s\n",
           a->jobs.count, a->jobs.count == 1 ? "" : "s", w.share, w.whole, w.cpu, w.milli / 1000.0,
           w.by_memory > 0 ? " and " : "", memory,
           w.by_memory > 0 ? " of GPU memory (jobs given by their memory)" : "");
    printf("monthly cost: %g hours per month; sharing placed by the %s policy\n", a->hours,
           gs_place_policy_name(a->policy));
}

/* One node type's plans: its GPUs shared by the policy, and one job per GPU. */
typedef struct type_plans {
    gs_place_plan_t shared, alone;
} type_plans_t;

/* What n nodes of type cost per month, in dollars. */
static double monthly(const capacity_args_t *a, const gs_place_node_row_t *type, uint32_t n)
{
    return n * type->price_per_hour * a->hours;
}

/* Dollars rounded to cents, as the tables print them. */
static double cents(double dollars)
{
    return (double)llround(dollars * 100.0) / 100.0;
}

/* The share of the GPUs the jobs' demand fills, in percent (0 with no GPU). */
static double utilization(const gs_place_plan_t *p, uint64_t demand)
{
    return p->gpus ? 100.0 * (double)demand / (p->gpus * 1000.0) : 0.0;
}

static void print_row(const capacity_args_t *a, const char *what, const gs_place_plan_t *p,
                      uint64_t demand, const gs_place_node_row_t *type)
{
    char money[64];
    if (!p->feasible && p->misfit < a->jobs.count) {
        const gs_place_pod_t *job = &a->jobs.pods[p->misfit];
        char gpu[64];
        if (job->gpu_mem_bytes > 0) {
            char mem[32];
            gs_qty_format_human(job->gpu_mem_bytes, mem, sizeof(mem));
            snprintf(gpu, sizeof(gpu), "%s of one GPU", mem);
        } else {
            snprintf(gpu, sizeof(gpu), "%u GPU x %u milli", job->num_gpu, job->gpu_milli);
        }
        printf("  %-18s job %s (%s, %u milli-CPU, %llu MiB) fits no node of this type\n", what,
               job->name, gpu, job->cpu_milli, (unsigned long long)job->mem_mib);
        return;
    }
    if (!p->feasible) {
        printf("  %-18s needs more than %llu nodes (--max-nodes)\n", what, a->max_nodes);
        return;
    }
    gs__plan_money(monthly(a, type, p->nodes), money, sizeof(money));
    printf("  %-18s %8u %8u %15.1f%% %15s\n", what, p->nodes, p->gpus, utilization(p, demand),
           money);
}

/* Plans one node type both ways. */
static int plan_type(const capacity_args_t *a, const gs_place_node_row_t *type, type_plans_t *r)
{
    char err[GS_PLACE_ERR_MAX];
    uint32_t max = (uint32_t)a->max_nodes;
    if (gs_place_plan_nodes(type, &a->jobs, a->policy, 0, max, &r->shared, err, sizeof(err)) != 0 ||
        gs_place_plan_nodes(type, &a->jobs, a->policy, 1, max, &r->alone, err, sizeof(err)) != 0)
        return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "bad_input", "%s", err);
    return GS_EXIT_OK;
}

/* Nodes sharing saves against one job per GPU; 0 when it saves none or either is infeasible. */
static uint32_t saved_nodes(const type_plans_t *r)
{
    if (!r->shared.feasible || !r->alone.feasible || r->alone.nodes <= r->shared.nodes)
        return 0;
    return r->alone.nodes - r->shared.nodes;
}

static void print_type(const capacity_args_t *a, const gs_place_node_row_t *type,
                       const type_plans_t *r)
{
    char money[64];
    /* Hourly prices have up to 4 decimals (0.752, 32.7726): print them as given. */
    snprintf(money, sizeof(money), "%.4f", type->price_per_hour);
    for (size_t n = strlen(money); n > 0 && money[n - 1] == '0' && money[n - 2] != '.'; n--)
        money[n - 1] = '\0';
    printf("\n%s (%u GPU%s per node, $%s/hour)\n", type->name, type->num_gpu,
           type->num_gpu == 1 ? "" : "s", money);
    printf("  %-18s %8s %8s %16s %15s\n", "placement", "nodes", "GPUs", "GPU demand/GPUs",
           "monthly cost");
    uint64_t demand = r->shared.requested_milli;
    print_row(a, gs_place_policy_name(a->policy), &r->shared, demand, type);
    print_row(a, "one job per GPU", &r->alone, demand, type);
    uint32_t saved = saved_nodes(r);
    if (saved > 0) {
        gs__plan_money(monthly(a, type, saved), money, sizeof(money));
        printf("  sharing needs %u fewer node%s: saves %s per month (%.1f%%)\n", saved,
               saved == 1 ? "" : "s", money, 100.0 * saved / r->alone.nodes);
    }
}

/* A placement's row as JSON: the numbers are null when it is infeasible, misfit_job names the
 * job that fits no node (null when more than --max-nodes nodes are needed, or feasible). */
static json_t *placement_json(const capacity_args_t *a, const char *name, int sharing,
                              const gs_place_plan_t *p, uint64_t demand,
                              const gs_place_node_row_t *type)
{
    int ok = p->feasible;
    const char *misfit = !ok && p->misfit < a->jobs.count ? a->jobs.pods[p->misfit].name : NULL;
    return json_pack("{s:s, s:b, s:b, s:o?, s:o?, s:o?, s:o?, s:s?}", "placement", name, "sharing",
                     sharing, "feasible", ok, "nodes", ok ? json_integer(p->nodes) : NULL, "gpus",
                     ok ? json_integer(p->gpus) : NULL, "utilization_percent",
                     ok ? json_real(utilization(p, demand)) : NULL, "monthly_cost",
                     ok ? json_real(cents(monthly(a, type, p->nodes))) : NULL, "misfit_job",
                     misfit);
}

static json_t *type_json(const capacity_args_t *a, const gs_place_node_row_t *type,
                         const type_plans_t *r)
{
    uint64_t demand = r->shared.requested_milli;
    uint32_t saved = saved_nodes(r);
    json_t *savings = saved == 0 ? NULL
                                 : json_pack("{s:I, s:f, s:f}", "nodes", (json_int_t)saved,
                                             "monthly_cost", cents(monthly(a, type, saved)),
                                             "percent", 100.0 * saved / r->alone.nodes);
    return json_pack(
        "{s:s, s:I, s:f, s:o?, s:o?, s:s?, s:[o, o], s:o?}", "name", type->name, "gpus",
        (json_int_t)type->num_gpu, "price_per_hour", type->price_per_hour, "cpu_milli",
        type->cpu_milli == UINT32_MAX ? NULL : json_integer(type->cpu_milli), "memory_mib",
        type->mem_mib == UINT64_MAX ? NULL : json_integer((json_int_t)type->mem_mib), "model",
        strcmp(type->model, GS_PLACE_DEFAULT_MODEL) == 0 ? NULL : type->model, "placements",
        placement_json(a, gs_place_policy_name(a->policy), 1, &r->shared, demand, type),
        placement_json(a, "one_job_per_gpu", 0, &r->alone, demand, type), "savings", savings);
}

static json_t *jobs_json(const capacity_args_t *a)
{
    json_t *jobs = json_array();
    for (size_t i = 0; jobs != NULL && i < a->jobs.count; i++) {
        const gs_place_pod_t *p = &a->jobs.pods[i];
        json_t *job =
            json_pack("{s:s, s:f, s:I, s:I, s:I, s:I, s:s?}", "name", p->name, "gpu",
                      (double)p->num_gpu * p->gpu_milli / 1000.0, "num_gpu", (json_int_t)p->num_gpu,
                      "gpu_milli", (json_int_t)p->gpu_milli, "cpu_milli", (json_int_t)p->cpu_milli,
                      "memory_mib", (json_int_t)p->mem_mib, "gpu_spec",
                      p->gpu_spec[0] != '\0' ? p->gpu_spec : NULL);
        if (json_array_append_new(jobs, job) != 0) {
            json_decref(jobs);
            return NULL;
        }
    }
    return jobs;
}

/* The --json object before the node types are planned ("node_types" empty). */
static json_t *plan_doc(const capacity_args_t *a)
{
    workload_sum_t w = sum_workload(a);
    return json_pack("{s:b, s:s, s:f, s:I, s:{s:I, s:I, s:I, s:I, s:f}, s:o, s:[], s:n}", "ok", 1,
                     "policy", gs_place_policy_name(a->policy), "hours_per_month", a->hours,
                     "max_nodes", (json_int_t)a->max_nodes, "workload", "jobs",
                     (json_int_t)a->jobs.count, "sharing", (json_int_t)w.share, "whole_gpus",
                     (json_int_t)w.whole, "cpu_only", (json_int_t)w.cpu, "gpu_demand",
                     w.milli / 1000.0, "jobs", jobs_json(a), "node_types", "cheapest");
}

/* No node type can hold the workload: why, as one line, or in doc with --json; exit status 1.
 * type is a node type on which job misfit fits no node (SIZE_MAX when every type only needs too
 * many nodes). */
static int no_plan(const capacity_args_t *a, json_t *doc, size_t type, size_t misfit)
{
    char why[1024];
    if (type < a->types.count && misfit < a->jobs.count) {
        const gs_place_pod_t *job = &a->jobs.pods[misfit];
        snprintf(why, sizeof(why),
                 "no plan: no node type holds the workload; job %s (%u GPU x %u milli, %u "
                 "milli-CPU, %llu MiB) fits no node of type %s",
                 job->name, job->num_gpu, job->gpu_milli, job->cpu_milli,
                 (unsigned long long)job->mem_mib, a->types.nodes[type].name);
    } else {
        snprintf(why, sizeof(why),
                 "no plan: every node type needs more than %llu nodes (--max-nodes)", a->max_nodes);
    }
    if (doc == NULL)
        return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "no_plan", "%s", why);
    gs__cli_set_error(doc, "no_plan", why);
    return GS_EXIT_FAIL;
}

/* The cheapest node type with sharing: its monthly cost, or -1 when none holds the workload. */
typedef struct best_type {
    double cost;
    size_t type, misfit_type, misfit;
} best_type_t;

static void rank_type(const capacity_args_t *a, size_t i, const type_plans_t *r, best_type_t *b)
{
    double cost = r->shared.feasible ? monthly(a, &a->types.nodes[i], r->shared.nodes) : -1;
    if (cost >= 0 && (b->cost < 0 || cost < b->cost)) {
        b->cost = cost;
        b->type = i;
    }
    if (cost < 0 && r->shared.misfit < a->jobs.count && b->misfit_type == SIZE_MAX) {
        b->misfit_type = i;
        b->misfit = r->shared.misfit;
    }
}

static void print_cheapest(const capacity_args_t *a, const best_type_t *b, json_t *doc)
{
    char money[64];
    const char *name = a->types.nodes[b->type].name;
    if (doc != NULL) {
        json_object_set_new(
            doc, "cheapest",
            json_pack("{s:s, s:f}", "node_type", name, "monthly_cost", cents(b->cost)));
    } else if (a->types.count > 1) {
        gs__plan_money(b->cost, money, sizeof(money));
        printf("\ncheapest: %s with GPU sharing, %s per month\n", name, money);
    }
}

static int plan_all(const capacity_args_t *a)
{
    best_type_t best = {.cost = -1, .misfit_type = SIZE_MAX, .misfit = SIZE_MAX};
    json_t *doc = a->cli.json ? plan_doc(a) : NULL;
    int status = GS_EXIT_OK;
    if (a->cli.json && doc == NULL)
        return gs__cli_fail(&a->cli, GS_EXIT_FAIL, "internal", "out of memory");
    if (doc == NULL)
        describe_workload(a);
    for (size_t i = 0; i < a->types.count; i++) {
        type_plans_t r;
        if ((status = plan_type(a, &a->types.nodes[i], &r)) != GS_EXIT_OK)
            goto out;
        if (doc != NULL)
            json_array_append_new(json_object_get(doc, "node_types"),
                                  type_json(a, &a->types.nodes[i], &r));
        else
            print_type(a, &a->types.nodes[i], &r);
        rank_type(a, i, &r, &best);
    }
    fflush(stdout);
    if (best.cost < 0)
        status = no_plan(a, doc, best.misfit_type, best.misfit);
    else
        print_cheapest(a, &best, doc);
    if (doc != NULL)
        gs__cli_print_json(doc);
out:
    json_decref(doc);
    return status;
}

int gs__plan_capacity_main(int argc, char **argv)
{
    capacity_args_t a = {
        .policy = GS_PLACE_GPUSHARE, .hours = DEFAULT_HOURS, .max_nodes = DEFAULT_MAXNODE};
    gs__plan_cli_init(&a.cli, argc, argv);
    int status = parse_args(argc, argv, &a);
    if (status == GS_EXIT_OK)
        status = plan_all(&a);
    else if (status == HELP_SHOWN)
        status = GS_EXIT_OK;
    gs_place_pods_free(&a.jobs);
    gs_place_nodes_free(&a.types);
    return status;
}
