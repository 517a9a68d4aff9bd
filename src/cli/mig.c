/* gpushare mig: MIG layouts without touching a GPU (the built-in profile tables).
 *   gpushare mig plan --model A100-40GB --gpu-memory 4G,4G,12G
 *   gpushare mig profiles --model H100-80GB */
#include "cli.h"
#include "daemon_cli.h"

#include "gpushare/error.h"
#include "gpushare/mig.h"
#include "gpushare/quantity.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQUESTS GS_MIG_INSTANCES_MAX * 4

/* One request of the plan: memory (and compute) or a profile by name. */
typedef struct mig_request {
    char text[GS_MIG_NAME_MAX]; /* as given */
    uint64_t memory;            /* 0 for a profile by name */
} mig_request_t;

typedef struct mig_opts {
    const char *model;
    uint32_t compute;
    unsigned n;
    mig_request_t req[MAX_REQUESTS];
} mig_opts_t;

static void usage(FILE *out)
{
    char models[256];
    gs_mig_builtin_models(models, sizeof(models));
    fprintf(out,
            "usage: gpushare mig plan --model MODEL [--gpu-memory SIZE,...] [--compute PCT]\n"
            "                         [--mig-profile NAME,...]\n"
            "       gpushare mig profiles --model MODEL\n"
            "\n"
            "plan: the MIG instances gpushared would create on one idle GPU of MODEL for these\n"
            "requests, in order (each gets the smallest profile that holds it, placed to keep\n"
            "the largest profiles possible), and what is left. profiles: the model's table.\n"
            "Nothing touches a GPU. Models: %s.\n"
            "  --model MODEL        the GPU model\n"
            "  --gpu-memory LIST    memory of each request (4G,4G,12G)\n"
            "  --compute PCT        the compute share every --gpu-memory request needs\n"
            "  --mig-profile LIST   requests by profile name (1g.5gb,3g.20gb)\n"
            "Exit status: 0, 1 when a request does not fit, 2 usage.\n",
            models);
}

/* One line: what, and the value given (NULL: none). */
static int usage_error(const char *what, const char *value)
{
    if (value != NULL)
        fprintf(stderr, "gpushare mig: %s \"%s\" (see gpushare mig --help)\n", what, value);
    else
        fprintf(stderr, "gpushare mig: %s (see gpushare mig --help)\n", what);
    return GS_EXIT_USAGE;
}

/* Appends the comma-separated items of list as requests. */
static int add_requests(mig_opts_t *opts, const char *list, int memory)
{
    char copy[1024], *save = NULL;
    if (strlen(list) >= sizeof(copy) || list[0] == '\0')
        return usage_error(memory ? "--gpu-memory: a bad list" : "--mig-profile: a bad list", list);
    snprintf(copy, sizeof(copy), "%s", list);
    for (char *item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        if (opts->n == MAX_REQUESTS)
            return usage_error("too many requests in", list);
        mig_request_t *r = &opts->req[opts->n];
        char err[GS_QTY_ERR_MAX];
        if (strlen(item) >= sizeof(r->text))
            return usage_error("too long an item", item);
        if (memory && gs_qty_parse_bytes(item, 0, &r->memory, err, sizeof(err)) != 0)
            return usage_error("--gpu-memory: not a size", item);
        snprintf(r->text, sizeof(r->text), "%s", item);
        opts->n++;
    }
    return 0;
}

static int parse_args(int argc, char **argv, mig_opts_t *opts)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"gpu-memory", required_argument, NULL, 'g'},
        {"mig-profile", required_argument, NULL, 'p'},
        {"compute", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(opts, 0, sizeof(*opts));
    opterr = 0;
    optind = 1;
    int c, result = 0;
    char err[GS_QTY_ERR_MAX];
    while (result == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        } else if (c == 'm') {
            opts->model = optarg;
        } else if (c == 'g' || c == 'p') {
            result = add_requests(opts, optarg, c == 'g');
        } else if (c == 'c') {
            if (gs_qty_parse_percent(optarg, 0, &opts->compute, err, sizeof(err)) != 0)
                result = usage_error("--compute: not a percentage", optarg);
        } else {
            result = usage_error("unknown or incomplete option", argv[optind - 1]);
        }
    }
    if (result == 0 && optind < argc)
        result = usage_error("unexpected argument", argv[optind]);
    if (result == 0 && opts->model == NULL)
        result = usage_error("--model is required", NULL);
    return result;
}

static int load_catalog(const char *model, gs_mig_catalog_t *cat)
{
    int result = gs_mig_catalog_builtin(model, cat);
    if (result == 0)
        return 0;
    char models[256];
    gs_mig_builtin_models(models, sizeof(models));
    if (result == GS_ENOSYS)
        fprintf(stderr, "gpushare mig: %s has no MIG (models with MIG: %s)\n", model, models);
    else
        fprintf(stderr, "gpushare mig: unknown model \"%s\" (models with MIG: %s)\n", model,
                models);
    return GS_EXIT_USAGE;
}

/* Plans one request: prints its row and returns 0, or 1 when it does not fit. */
static int plan_one(const gs_mig_catalog_t *cat, gs_mig_layout_t *layout, const mig_request_t *r,
                    uint32_t compute, unsigned number)
{
    int p = r->memory > 0 ? gs_mig_profile_for(cat, r->memory, compute)
                          : gs_mig_profile_find(cat, r->text);
    gs_mig_plan_t plan;
    if (p < 0) {
        printf("%3u  %-10s %-10s %s\n", number, r->text, "-",
               r->memory > 0 ? "larger than any profile" : "no such profile");
        return 1;
    }
    if (gs_mig_plan(cat, layout, p, &plan) != 0) {
        printf("%3u  %-10s %-10s %s\n", number, r->text, cat->profiles[p].name,
               "does not fit next to the requests above");
        return 1;
    }
    int at = gs_mig_apply(layout, p, &plan);
    const gs_mig_profile_t *prof = &cat->profiles[p];
    char slots[16], memory[32];
    uint32_t start = layout->inst[at].start;
    if (prof->size > 1)
        snprintf(slots, sizeof(slots), "%u-%u", start, start + prof->size - 1);
    else
        snprintf(slots, sizeof(slots), "%u", start);
    gs__cli_bytes(prof->memory_bytes, memory, sizeof(memory));
    printf("%3u  %-10s %-10s %-6s %-10s %u%%\n", number, r->text, prof->name, slots, memory,
           gs_mig_compute_percent(cat, p));
    return 0;
}

/* What is left: free slices and slots, and how many more of each profile would fit. */
static void print_left(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout)
{
    uint32_t compute = 0, slots = 0;
    for (unsigned i = 0; i < layout->n; i++) {
        compute += cat->profiles[layout->inst[i].profile].compute;
        slots += cat->profiles[layout->inst[i].profile].size;
    }
    printf("left: %u of %u compute slices, %u of %u memory slots; still fits:",
           cat->compute_slices - compute, cat->compute_slices, cat->memory_slots - slots,
           cat->memory_slots);
    int any = 0;
    for (unsigned p = 0; p < cat->n_profiles; p++) {
        unsigned room = gs_mig_room(cat, layout, (int)p);
        if (room == 0 || cat->profiles[p].media)
            continue;
        printf("%s %s x%u", any ? "," : "", cat->profiles[p].name, room);
        any = 1;
    }
    printf("%s\n", any ? "" : " nothing");
}

static int cmd_plan(const mig_opts_t *opts)
{
    gs_mig_catalog_t cat;
    int status = load_catalog(opts->model, &cat);
    if (status != 0)
        return status;
    if (opts->n == 0)
        return usage_error("nothing to plan: give --gpu-memory or --mig-profile", NULL);
    printf("MIG plan for one idle %s (%u compute slices, %u memory slots), requests in order:\n",
           cat.model, cat.compute_slices, cat.memory_slots);
    printf("%3s  %-10s %-10s %-6s %-10s %s\n", "#", "REQUEST", "PROFILE", "SLOTS", "MEMORY",
           "COMPUTE");
    gs_mig_layout_t layout = {0};
    int failed = 0;
    for (unsigned i = 0; i < opts->n; i++)
        failed |= plan_one(&cat, &layout, &opts->req[i], opts->compute, i + 1);
    char drawn[512];
    gs_mig_draw(&cat, &layout, drawn, sizeof(drawn));
    printf("layout: %s\n", drawn);
    print_left(&cat, &layout);
    return failed ? GS_EXIT_FAIL : GS_EXIT_OK;
}

static int cmd_profiles(const mig_opts_t *opts)
{
    gs_mig_catalog_t cat;
    int status = load_catalog(opts->model, &cat);
    if (status != 0)
        return status;
    printf("%s: %u compute slices, %u memory slots\n", cat.model, cat.compute_slices,
           cat.memory_slots);
    printf("%-12s %4s %8s %6s %10s %9s  %s\n", "PROFILE", "ID", "COMPUTE", "SLOTS", "MEMORY",
           "INSTANCES", "STARTS");
    for (unsigned p = 0; p < cat.n_profiles; p++) {
        const gs_mig_profile_t *prof = &cat.profiles[p];
        char memory[32], starts[64] = "";
        size_t off = 0;
        gs__cli_bytes(prof->memory_bytes, memory, sizeof(memory));
        for (uint32_t s = 0; s < 32 && off < sizeof(starts); s++) {
            if ((prof->starts >> s) & 1)
                off += (size_t)snprintf(starts + off, sizeof(starts) - off, "%s%u",
                                        off > 0 ? "," : "", s);
        }
        printf("%-12s %4u %8u %6u %10s %9u  %s\n", prof->name, prof->id, prof->compute, prof->size,
               memory, prof->max_instances, starts);
    }
    return GS_EXIT_OK;
}

int gs_cli_mig(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? GS_EXIT_USAGE : GS_EXIT_OK;
    }
    const char *what = argv[1];
    if (strcmp(what, "plan") != 0 && strcmp(what, "profiles") != 0)
        return usage_error("unknown subcommand", what);
    mig_opts_t *opts = calloc(1, sizeof(*opts));
    if (opts == NULL)
        return GS_EXIT_FAIL;
    int status = parse_args(argc - 1, argv + 1, opts);
    if (status == 0)
        status = strcmp(what, "plan") == 0 ? cmd_plan(opts) : cmd_profiles(opts);
    free(opts);
    return status < 0 ? GS_EXIT_OK : status;
}
