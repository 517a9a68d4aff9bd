/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare mig: MIG layouts without touching a GPU (the built-in profile tables).
 *   gpushare mig plan --model A100-40GB --gpu-memory 4G,4G,12G
 *   gpushare mig profiles --model H100-80GB */
#include "cli.h"
#include "daemon_cli.h"

#include "gpushare/error.h"
#include "gpushare/mig.h"
#include "gpushare/quantity.h"

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
    gs__cli_t cli;
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
            "                         [--mig-profile NAME,...] [--json]\n"
            "       gpushare mig profiles --model MODEL [--json]\n"
            "\n"
            "plan: the MIG instances gpushared would create on one idle GPU of MODEL for these\n"
            "requests, in order (each gets the smallest profile that holds it, placed to keep\n"
            "the largest profiles possible), and what is left. profiles: the model's table.\n"
            "Nothing touches a GPU. Models: %s.\n"
            "  --model MODEL        the GPU model\n"
            "  --gpu-memory LIST    memory of each request (4G,4G,12G)\n"
            "  --compute PCT        the compute share every --gpu-memory request needs\n"
            "  --mig-profile LIST   requests by profile name (1g.5gb,3g.20gb)\n"
            "  --json               the plan or the table as one JSON object (docs/modes.md)\n"
            "Exit status: 0, 1 when a request does not fit, 2 usage.\n",
            models);
}

/* One line: what, and the value given (NULL: none). */
static int usage_error(const mig_opts_t *opts, const char *what, const char *value)
{
    if (value != NULL)
        return gs__cli_usage(&opts->cli, "%s \"%s\"", what, value);
    return gs__cli_usage(&opts->cli, "%s", what);
}

/* Appends the comma-separated items of list as requests. */
static int add_requests(mig_opts_t *opts, const char *list, int memory)
{
    char copy[1024], *save = NULL;
    if (strlen(list) >= sizeof(copy) || list[0] == '\0')
        return usage_error(opts, memory ? "--gpu-memory: a bad list" : "--mig-profile: a bad list",
                           list);
    snprintf(copy, sizeof(copy), "%s", list);
    for (char *item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        if (opts->n == MAX_REQUESTS)
            return usage_error(opts, "too many requests in", list);
        mig_request_t *r = &opts->req[opts->n];
        char err[GS_QTY_ERR_MAX];
        if (strlen(item) >= sizeof(r->text))
            return usage_error(opts, "too long an item", item);
        if (memory && gs_qty_parse_bytes(item, 0, &r->memory, err, sizeof(err)) != 0)
            return usage_error(opts, "--gpu-memory: not a size", item);
        snprintf(r->text, sizeof(r->text), "%s", item);
        opts->n++;
    }
    return 0;
}

static int one_option(void *ctx, int c, const char *value)
{
    mig_opts_t *opts = ctx;
    char err[GS_QTY_ERR_MAX];
    if (c == 'm') {
        opts->model = value;
        return 0;
    }
    if (c == 'g' || c == 'p')
        return add_requests(opts, value, c == 'g');
    if (gs_qty_parse_percent(value, 0, &opts->compute, err, sizeof(err)) != 0) /* --compute */
        return usage_error(opts, "--compute: not a percentage", value);
    return 0;
}

static int parse_args(int argc, char **argv, mig_opts_t *opts)
{
    static const gs__cli_opt_t options[] = {
        {"model", 1, 'm', 0},   {"gpu-memory", 1, 'g', 0}, {"mig-profile", 1, 'p', 0},
        {"compute", 1, 'c', 0}, {NULL, 0, 0, 0},
    };
    gs__cli_args_t args = {.opts = options, .handle = one_option, .ctx = opts};
    int next = 0, result = gs__cli_options(&opts->cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP) {
        usage(stdout);
        return -1;
    }
    if (result == 0 && next < argc)
        result = usage_error(opts, "unexpected argument", argv[next]);
    if (result == 0 && opts->model == NULL)
        result = usage_error(opts, "--model is required", NULL);
    return result;
}

static int load_catalog(const mig_opts_t *opts, gs_mig_catalog_t *cat)
{
    int result = gs_mig_catalog_builtin(opts->model, cat);
    if (result == 0)
        return 0;
    char models[256];
    gs_mig_builtin_models(models, sizeof(models));
    if (result == GS_ENOSYS)
        return gs__cli_fail(&opts->cli, GS_EXIT_USAGE, "usage",
                            "%s has no MIG (models with MIG: %s)", opts->model, models);
    return gs__cli_fail(&opts->cli, GS_EXIT_USAGE, "usage",
                        "unknown model \"%s\" (models with MIG: %s)", opts->model, models);
}

/* What became of one request: the profile chosen (-1: none) and its instance's first slot, or
 * why it has none. */
typedef struct mig_outcome {
    int profile;
    uint32_t start;
    const char *why; /* NULL when placed */
} mig_outcome_t;

/* Plans one request on layout, in place. */
static mig_outcome_t plan_one(const gs_mig_catalog_t *cat, gs_mig_layout_t *layout,
                              const mig_request_t *r, uint32_t compute)
{
    mig_outcome_t o = {.profile = r->memory > 0 ? gs_mig_profile_for(cat, r->memory, compute)
                                                : gs_mig_profile_find(cat, r->text)};
    gs_mig_plan_t plan;
    if (o.profile < 0)
        o.why = r->memory > 0 ? "larger than any profile" : "no such profile";
    else if (gs_mig_plan(cat, layout, o.profile, &plan) != 0)
        o.why = "does not fit next to the requests above";
    else
        o.start = layout->inst[gs_mig_apply(layout, o.profile, &plan)].start;
    return o;
}

static void print_one(const gs_mig_catalog_t *cat, const mig_request_t *r, const mig_outcome_t *o,
                      unsigned number)
{
    if (o->why != NULL) {
        printf("%3u  %-10s %-10s %s\n", number, r->text,
               o->profile >= 0 ? cat->profiles[o->profile].name : "-", o->why);
        return;
    }
    const gs_mig_profile_t *prof = &cat->profiles[o->profile];
    char slots[16], memory[32];
    if (prof->size > 1)
        snprintf(slots, sizeof(slots), "%u-%u", o->start, o->start + prof->size - 1);
    else
        snprintf(slots, sizeof(slots), "%u", o->start);
    gs__cli_bytes(prof->memory_bytes, memory, sizeof(memory));
    printf("%3u  %-10s %-10s %-6s %-10s %u%%\n", number, r->text, prof->name, slots, memory,
           gs_mig_compute_percent(cat, o->profile));
}

/* Compute slices and memory slots the layout's instances take. */
static void layout_used(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout,
                        uint32_t *compute, uint32_t *slots)
{
    *compute = *slots = 0;
    for (unsigned i = 0; i < layout->n; i++) {
        *compute += cat->profiles[layout->inst[i].profile].compute;
        *slots += cat->profiles[layout->inst[i].profile].size;
    }
}

/* What is left: free slices and slots, and how many more of each profile would fit. */
static void print_left(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout)
{
    uint32_t compute, slots;
    layout_used(cat, layout, &compute, &slots);
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

/* The "left" member of the plan's --json object. */
static json_t *left_json(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout)
{
    uint32_t compute, slots;
    layout_used(cat, layout, &compute, &slots);
    json_t *fits = json_object();
    for (unsigned p = 0; fits != NULL && p < cat->n_profiles; p++) {
        unsigned room = gs_mig_room(cat, layout, (int)p);
        if (room > 0 && !cat->profiles[p].media)
            json_object_set_new(fits, cat->profiles[p].name, json_integer(room));
    }
    return json_pack("{s:I, s:I, s:o}", "compute_slices",
                     (json_int_t)(cat->compute_slices - compute), "memory_slots",
                     (json_int_t)(cat->memory_slots - slots), "fits", fits);
}

/* Request number (from 1) r as a row of "requests", and its instance in "instances". */
static void add_json(json_t *doc, const gs_mig_catalog_t *cat, const mig_request_t *r,
                     const mig_outcome_t *o, unsigned number)
{
    const gs_mig_profile_t *prof = o->profile >= 0 ? &cat->profiles[o->profile] : NULL;
    json_array_append_new(json_object_get(doc, "requests"),
                          json_pack("{s:I, s:s, s:o?, s:s?, s:b, s:s?}", "request",
                                    (json_int_t)number, "asked", r->text, "memory_bytes",
                                    r->memory > 0 ? json_integer((json_int_t)r->memory) : NULL,
                                    "profile", prof != NULL ? prof->name : NULL, "placed",
                                    o->why == NULL, "why", o->why));
    if (o->why != NULL)
        return;
    json_array_append_new(
        json_object_get(doc, "instances"),
        json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "request", (json_int_t)number,
                  "profile", prof->name, "profile_id", (json_int_t)prof->id, "start",
                  (json_int_t)o->start, "memory_slots", (json_int_t)prof->size, "memory_bytes",
                  (json_int_t)prof->memory_bytes, "compute_slices", (json_int_t)prof->compute,
                  "compute_percent", (json_int_t)gs_mig_compute_percent(cat, o->profile)));
}

/* Plans every request into layout: the table's rows, or doc's members with --json. Returns the
 * number of the first request that got no instance (0: all did). */
static unsigned plan_all(const mig_opts_t *opts, const gs_mig_catalog_t *cat,
                         gs_mig_layout_t *layout, json_t *doc)
{
    unsigned failed = 0;
    for (unsigned i = 0; i < opts->n; i++) {
        mig_outcome_t o = plan_one(cat, layout, &opts->req[i], opts->compute);
        if (doc != NULL)
            add_json(doc, cat, &opts->req[i], &o, i + 1);
        else
            print_one(cat, &opts->req[i], &o, i + 1);
        if (o.why != NULL && failed == 0)
            failed = i + 1;
    }
    return failed;
}

/* The plan's --json object (docs/modes.md): the requests, the instances, the layout and what
 * is left; "ok": false with an error when a request got no instance. */
static int print_plan_json(const mig_opts_t *opts, const gs_mig_catalog_t *cat)
{
    gs_mig_layout_t layout = {0};
    json_t *doc = json_pack(
        "{s:b, s:s, s:I, s:I, s:o?, s:[], s:[]}", "ok", 1, "model", cat->model, "compute_slices",
        (json_int_t)cat->compute_slices, "memory_slots", (json_int_t)cat->memory_slots, "compute",
        opts->compute > 0 ? json_integer(opts->compute) : NULL, "requests", "instances");
    if (doc == NULL)
        return gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "internal", "out of memory");
    unsigned failed = plan_all(opts, cat, &layout, doc);
    char drawn[512], why[256];
    gs_mig_draw(cat, &layout, drawn, sizeof(drawn));
    json_object_set_new(doc, "layout", json_string(drawn));
    json_object_set_new(doc, "left", left_json(cat, &layout));
    if (failed > 0) {
        const json_t *row = json_array_get(json_object_get(doc, "requests"), failed - 1);
        snprintf(why, sizeof(why), "request %u (%s): %s", failed, gs__cli_str(row, "asked"),
                 gs__cli_str(row, "why"));
        gs__cli_set_error(doc, "no_plan", why);
    }
    gs__cli_print_json(doc);
    json_decref(doc);
    return failed ? GS_EXIT_FAIL : GS_EXIT_OK;
}

static int cmd_plan(const mig_opts_t *opts)
{
    gs_mig_catalog_t cat;
    int status = load_catalog(opts, &cat);
    if (status != 0)
        return status;
    if (opts->n == 0)
        return usage_error(opts, "nothing to plan: give --gpu-memory or --mig-profile", NULL);
    if (opts->cli.json)
        return print_plan_json(opts, &cat);
    printf("MIG plan for one idle %s (%u compute slices, %u memory slots), requests in order:\n",
           cat.model, cat.compute_slices, cat.memory_slots);
    printf("%3s  %-10s %-10s %-6s %-10s %s\n", "#", "REQUEST", "PROFILE", "SLOTS", "MEMORY",
           "COMPUTE");
    gs_mig_layout_t layout = {0};
    unsigned failed = plan_all(opts, &cat, &layout, NULL);
    char drawn[512];
    gs_mig_draw(&cat, &layout, drawn, sizeof(drawn));
    printf("layout: %s\n", drawn);
    print_left(&cat, &layout);
    return failed ? GS_EXIT_FAIL : GS_EXIT_OK;
}

/* The first memory slots an instance of prof may start at: "0,4" into buf, or [0,4] as JSON. */
static void profile_starts(const gs_mig_profile_t *prof, char *buf, size_t len, json_t *list)
{
    size_t off = 0;
    buf[0] = '\0';
    for (uint32_t s = 0; s < 32; s++) {
        if (!((prof->starts >> s) & 1))
            continue;
        if (list != NULL)
            json_array_append_new(list, json_integer(s));
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%u", off > 0 ? "," : "", s);
    }
}

static int print_profiles_json(const mig_opts_t *opts, const gs_mig_catalog_t *cat)
{
    json_t *doc = json_pack("{s:b, s:s, s:I, s:I, s:[]}", "ok", 1, "model", cat->model,
                            "compute_slices", (json_int_t)cat->compute_slices, "memory_slots",
                            (json_int_t)cat->memory_slots, "profiles");
    for (unsigned p = 0; doc != NULL && p < cat->n_profiles; p++) {
        const gs_mig_profile_t *prof = &cat->profiles[p];
        char starts[64];
        json_t *list = json_array();
        profile_starts(prof, starts, sizeof(starts), list);
        json_array_append_new(
            json_object_get(doc, "profiles"),
            json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:b}", "name", prof->name, "id",
                      (json_int_t)prof->id, "compute_slices", (json_int_t)prof->compute,
                      "memory_slots", (json_int_t)prof->size, "memory_bytes",
                      (json_int_t)prof->memory_bytes, "max_instances",
                      (json_int_t)prof->max_instances, "starts", list, "media", prof->media));
    }
    if (doc == NULL)
        return gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "internal", "out of memory");
    gs__cli_print_json(doc);
    json_decref(doc);
    return GS_EXIT_OK;
}

static int cmd_profiles(const mig_opts_t *opts)
{
    gs_mig_catalog_t cat;
    int status = load_catalog(opts, &cat);
    if (status != 0)
        return status;
    if (opts->cli.json)
        return print_profiles_json(opts, &cat);
    printf("%s: %u compute slices, %u memory slots\n", cat.model, cat.compute_slices,
           cat.memory_slots);
    printf("%-12s %4s %8s %6s %10s %9s  %s\n", "PROFILE", "ID", "COMPUTE", "SLOTS", "MEMORY",
           "INSTANCES", "STARTS");
    for (unsigned p = 0; p < cat.n_profiles; p++) {
        const gs_mig_profile_t *prof = &cat.profiles[p];
        char memory[32], starts[64];
        gs__cli_bytes(prof->memory_bytes, memory, sizeof(memory));
        profile_starts(prof, starts, sizeof(starts), NULL);
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
    mig_opts_t *opts = calloc(1, sizeof(*opts));
    if (opts == NULL)
        return GS_EXIT_FAIL;
    gs__cli_init_args(&opts->cli, "mig", argc, argv);
    opts->cli.offline = 1;
    const char *what = argv[1];
    int status;
    if (strcmp(what, "plan") != 0 && strcmp(what, "profiles") != 0)
        status = usage_error(opts, "unknown subcommand", what);
    else if ((status = parse_args(argc - 1, argv + 1, opts)) == 0)
        status = strcmp(what, "plan") == 0 ? cmd_plan(opts) : cmd_profiles(opts);
    free(opts);
    return status < 0 ? GS_EXIT_OK : status;
}
