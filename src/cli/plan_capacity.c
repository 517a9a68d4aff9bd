/* `gpushare plan` for operators: nodes, GPUs and monthly cost a workload needs with GPU sharing
 * (gpushare's placement) and with one job per GPU, for each node type offered. */
#include "cli.h"
#include "plan_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define HELP_SHOWN      (-1)
#define DEFAULT_HOURS   720.0 /* 30 days: what cloud price calculators call a month */
#define DEFAULT_MAXNODE 100000u

typedef struct capacity_args {
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
        "                     [--policy NAME] [--hours-per-month H] [--max-nodes N]\n"
        "\n"
        "How many nodes (and GPUs) a workload needs when jobs share GPUs, placed by gpushare's\n"
        "policy, against one job per GPU, and what each costs per month.\n"
        "\n"
        "  --workload FILE     jobs: a pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "                      [,gpu_spec]) or a job list with a gpu column (0.25, 25%% or a\n"
        "                      whole number of GPUs) and optional name, count, cpu_milli,\n"
        "                      memory_mib, gpu_spec columns\n"
        "  --job GPU[xCOUNT]   COUNT jobs (default 1) taking GPU: 0.25, 25%% or 2 (whole GPUs)\n"
        "  --node-type SPEC    NAME:gpus=N,price=DOLLARS_PER_HOUR[,cpu_milli=M][,memory_mib=M]\n"
        "                      [,model=M]; repeat to compare node types. gpus is 1..16; CPU\n"
        "                      and memory left out are unlimited; the model is one gpushare\n"
        "                      knows (A100-40GB, T4, ...) or one the jobs' gpu_spec names\n"
        "  --node-types FILE   node types: name,gpus,price_per_hour[,cpu_milli,memory_mib,model]\n"
        "  --policy NAME       placement when sharing (default: gpushare)\n"
        "  --hours-per-month H hours billed per month (default: 720 = 30 days)\n"
        "  --max-nodes N       give up beyond N nodes of a type (default: 100000)\n"
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
        return -1;
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
        return -1;
    memcpy(grown + dst->count, src->nodes, src->count * sizeof(*grown));
    dst->nodes = grown;
    dst->count += src->count;
    gs_place_nodes_free(src);
    return 0;
}

/* --job 0.25x4: a one-row job list. */
static int add_job(capacity_args_t *a, const char *spec)
{
    char text[256], gpu[64], err[GS_PLACE_ERR_MAX];
    const char *x = strrchr(spec, 'x');
    const char *count = x != NULL ? x + 1 : "1";
    size_t n = x != NULL ? (size_t)(x - spec) : strlen(spec);
    if (n == 0 || n >= sizeof(gpu) || strchr(spec, ',') != NULL || strchr(spec, '\n') != NULL) {
        gs__plan_error("--job \"%s\": expected GPU[xCOUNT], e.g. 0.25x4", spec);
        return GS_EXIT_USAGE;
    }
    memcpy(gpu, spec, n);
    gpu[n] = '\0';
    snprintf(text, sizeof(text), "gpu,count\n%s,%s\n", gpu, count);
    gs_place_pods_t one;
    if (gs_place_pods_parse(text, strlen(text), "--job", &one, err, sizeof(err)) != 0) {
        gs__plan_error("--job \"%s\": %s", spec, reason(err));
        return GS_EXIT_USAGE;
    }
    if (one.count > 0 && one.pods[0].num_gpu == 0) {
        gs_place_pods_free(&one);
        gs__plan_error("--job \"%s\": a job takes some GPU: a share (0.25 or 25%%) or a whole "
                       "number of GPUs",
                       spec);
        return GS_EXIT_USAGE;
    }
    for (size_t i = 0; i < one.count; i++)
        snprintf(one.pods[i].name, sizeof(one.pods[i].name), "job-%zu", a->jobs.count + i + 1);
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
        gs__plan_error("--node-type \"%s\": expected NAME:gpus=N,price=P[,...]", spec);
        return GS_EXIT_USAGE;
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
            gs__plan_error("--node-type \"%s\": unknown or malformed \"%s\" (keys: gpus, price, "
                           "cpu_milli, memory_mib, model)",
                           spec, kv);
            return GS_EXIT_USAGE;
        }
        if (list_has(header, ',', col)) {
            gs__plan_error("--node-type \"%s\": %s given twice", spec, kv);
            return GS_EXIT_USAGE;
        }
        strcat(strcat(header, ","), col);
        strcat(strcat(row, ","), eq + 1);
    }
    char text[1024];
    snprintf(text, sizeof(text), "%s\n%s\n", header, row);
    gs_place_nodes_t one;
    if (gs_place_nodes_parse(text, strlen(text), "--node-type", &one, err, sizeof(err)) != 0) {
        gs__plan_error("--node-type \"%s\": %s", spec, reason(err));
        return GS_EXIT_USAGE;
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
        if (gs_place_pods_read(a->workload, &pods, err, sizeof(err)) != 0) {
            gs__plan_error("%s", err);
            return GS_EXIT_FAIL;
        }
        /* The file's jobs come first, then those of --job. */
        gs_place_pods_t jobs = a->jobs;
        a->jobs = pods;
        if (append_pods(&a->jobs, &jobs) != 0)
            return GS_EXIT_FAIL;
    }
    a->flag_types = a->types.count;
    if (a->types_file != NULL) {
        if (gs_place_nodes_read(a->types_file, &types, err, sizeof(err)) != 0) {
            gs__plan_error("%s", err);
            return GS_EXIT_FAIL;
        }
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
    if (from_flag) {
        gs__plan_error("node type %s %s", t->name, why);
        return GS_EXIT_USAGE;
    }
    gs__plan_error("%s: node type %s %s", a->types_file, t->name, why);
    return GS_EXIT_FAIL;
}

static int check_args(capacity_args_t *a)
{
    if (a->jobs.count == 0) {
        gs__plan_error("no jobs: give --workload FILE or --job GPU[xCOUNT] (see --help)");
        return GS_EXIT_USAGE;
    }
    if (a->types.count == 0) {
        gs__plan_error("no node type: give --node-type or --node-types (see --help)");
        return GS_EXIT_USAGE;
    }
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
        gs__plan_error("--policy \"%s\": unknown policy", arg);
        return GS_EXIT_USAGE;
    case 'H':
        if (gs__plan_parse_double(arg, 1, 744, &a->hours) == 0)
            return GS_EXIT_OK;
        gs__plan_error("--hours-per-month \"%s\": expected hours between 1 and 744", arg);
        return GS_EXIT_USAGE;
    case 'm':
        if (gs__plan_parse_seeds(arg, &a->max_nodes, 1) == 1 && a->max_nodes > 0 &&
            a->max_nodes <= 10000000)
            return GS_EXIT_OK;
        gs__plan_error("--max-nodes \"%s\": expected 1..10000000", arg);
        return GS_EXIT_USAGE;
    default:
        return GS_EXIT_USAGE;
    }
}

static int parse_args(int argc, char **argv, capacity_args_t *a)
{
    static const struct option options[] = {{"workload", required_argument, NULL, 'w'},
                                            {"job", required_argument, NULL, 'j'},
                                            {"node-type", required_argument, NULL, 't'},
                                            {"node-types", required_argument, NULL, 'T'},
                                            {"policy", required_argument, NULL, 'p'},
                                            {"hours-per-month", required_argument, NULL, 'H'},
                                            {"max-nodes", required_argument, NULL, 'm'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int opt, status;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return HELP_SHOWN;
        }
        if (opt == ':' || opt == '?') {
            gs__plan_error(opt == ':' ? "%s needs a value"
                                      : "unknown option \"%s\" (see gpushare plan --help)",
                           argv[optind - 1]);
            return GS_EXIT_USAGE;
        }
        if ((status = parse_option(a, opt, optarg)) != GS_EXIT_OK)
            return status;
    }
    if (optind < argc) {
        gs__plan_error("unexpected argument \"%s\"", argv[optind]);
        return GS_EXIT_USAGE;
    }
    if ((status = read_files(a)) != GS_EXIT_OK)
        return status;
    return check_args(a);
}

static void describe_workload(const capacity_args_t *a)
{
    size_t share = 0, whole = 0, cpu = 0;
    uint64_t milli = 0;
    for (size_t i = 0; i < a->jobs.count; i++) {
        const gs_place_pod_t *p = &a->jobs.pods[i];
        if (p->num_gpu == 0)
            cpu++;
        else if (p->gpu_milli < GS_PLACE_MILLI)
            share++;
        else
            whole++;
        milli += (uint64_t)p->num_gpu * p->gpu_milli;
    }
    printf("workload: %zu job%s (%zu sharing a GPU, %zu on whole GPUs, %zu CPU only), "
           "GPU demand %.2f GPU\n",
           a->jobs.count, a->jobs.count == 1 ? "" : "s", share, whole, cpu, milli / 1000.0);
    printf("monthly cost: %g hours per month; sharing placed by the %s policy\n", a->hours,
           gs_place_policy_name(a->policy));
}

static void print_row(const capacity_args_t *a, const char *what, const gs_place_plan_t *p,
                      uint64_t demand, double hourly)
{
    char money[64];
    if (!p->feasible && p->misfit < a->jobs.count) {
        const gs_place_pod_t *job = &a->jobs.pods[p->misfit];
        printf("  %-18s job %s (%u GPU x %u milli, %u milli-CPU, %llu MiB) fits no node of "
               "this type\n",
               what, job->name, job->num_gpu, job->gpu_milli, job->cpu_milli,
               (unsigned long long)job->mem_mib);
        return;
    }
    if (!p->feasible) {
        printf("  %-18s needs more than %llu nodes (--max-nodes)\n", what, a->max_nodes);
        return;
    }
    gs__plan_money(p->nodes * hourly * a->hours, money, sizeof(money));
    printf("  %-18s %8u %8u %15.1f%% %15s\n", what, p->nodes, p->gpus,
           p->gpus ? 100.0 * (double)demand / (p->gpus * 1000.0) : 0.0, money);
}

/* Plans one node type; *cost gets the shared plan's monthly cost (-1 when infeasible). */
static int plan_type(const capacity_args_t *a, const gs_place_node_row_t *type, double *cost,
                     size_t *misfit)
{
    char err[GS_PLACE_ERR_MAX], money[64];
    gs_place_plan_t shared, alone;
    uint32_t max = (uint32_t)a->max_nodes;
    if (gs_place_plan_nodes(type, &a->jobs, a->policy, 0, max, &shared, err, sizeof(err)) != 0 ||
        gs_place_plan_nodes(type, &a->jobs, a->policy, 1, max, &alone, err, sizeof(err)) != 0) {
        gs__plan_error("%s", err);
        return GS_EXIT_FAIL;
    }
    /* Hourly prices have up to 4 decimals (0.752, 32.7726): print them as given. */
    snprintf(money, sizeof(money), "%.4f", type->price_per_hour);
    for (size_t n = strlen(money); n > 0 && money[n - 1] == '0' && money[n - 2] != '.'; n--)
        money[n - 1] = '\0';
    printf("\n%s (%u GPU%s per node, $%s/hour)\n", type->name, type->num_gpu,
           type->num_gpu == 1 ? "" : "s", money);
    printf("  %-18s %8s %8s %16s %15s\n", "placement", "nodes", "GPUs", "GPU demand/GPUs",
           "monthly cost");
    print_row(a, gs_place_policy_name(a->policy), &shared, shared.requested_milli,
              type->price_per_hour);
    print_row(a, "one job per GPU", &alone, shared.requested_milli, type->price_per_hour);
    *cost = shared.feasible ? shared.nodes * type->price_per_hour * a->hours : -1;
    *misfit = shared.misfit;
    if (shared.feasible && alone.feasible && alone.nodes > shared.nodes) {
        double saved = (alone.nodes - shared.nodes) * type->price_per_hour * a->hours;
        gs__plan_money(saved, money, sizeof(money));
        printf("  sharing needs %u fewer node%s: saves %s per month (%.1f%%)\n",
               alone.nodes - shared.nodes, alone.nodes - shared.nodes == 1 ? "" : "s", money,
               100.0 * (alone.nodes - shared.nodes) / alone.nodes);
    }
    return GS_EXIT_OK;
}

/* No node type can hold the workload: one line saying why, and a non-zero exit. type is a node
 * type on which job misfit fits no node (SIZE_MAX when every type only needs too many nodes). */
static int no_plan(const capacity_args_t *a, size_t type, size_t misfit)
{
    if (type < a->types.count && misfit < a->jobs.count) {
        const gs_place_pod_t *job = &a->jobs.pods[misfit];
        gs__plan_error("no plan: no node type holds the workload; job %s (%u GPU x %u milli, %u "
                       "milli-CPU, %llu MiB) fits no node of type %s",
                       job->name, job->num_gpu, job->gpu_milli, job->cpu_milli,
                       (unsigned long long)job->mem_mib, a->types.nodes[type].name);
    } else {
        gs__plan_error("no plan: every node type needs more than %llu nodes (--max-nodes)",
                       a->max_nodes);
    }
    return GS_EXIT_FAIL;
}

static int plan_all(const capacity_args_t *a)
{
    double best = -1;
    size_t best_type = 0, misfit_type = SIZE_MAX, first_misfit = SIZE_MAX;
    describe_workload(a);
    for (size_t i = 0; i < a->types.count; i++) {
        double cost;
        size_t misfit;
        int status = plan_type(a, &a->types.nodes[i], &cost, &misfit);
        if (status != GS_EXIT_OK)
            return status;
        if (cost >= 0 && (best < 0 || cost < best)) {
            best = cost;
            best_type = i;
        }
        if (cost < 0 && misfit < a->jobs.count && misfit_type == SIZE_MAX) {
            misfit_type = i;
            first_misfit = misfit;
        }
    }
    fflush(stdout);
    if (best < 0)
        return no_plan(a, misfit_type, first_misfit);
    if (a->types.count > 1) {
        char money[64];
        gs__plan_money(best, money, sizeof(money));
        printf("\ncheapest: %s with GPU sharing, %s per month\n", a->types.nodes[best_type].name,
               money);
    }
    return GS_EXIT_OK;
}

int gs__plan_capacity_main(int argc, char **argv)
{
    capacity_args_t a = {
        .policy = GS_PLACE_GPUSHARE, .hours = DEFAULT_HOURS, .max_nodes = DEFAULT_MAXNODE};
    int status = parse_args(argc, argv, &a);
    if (status == GS_EXIT_OK)
        status = plan_all(&a);
    else if (status == HELP_SHOWN)
        status = GS_EXIT_OK;
    gs_place_pods_free(&a.jobs);
    gs_place_nodes_free(&a.types);
    return status;
}
