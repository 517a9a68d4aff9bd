/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare cdi: a keyed lease as a CDI device for containers (add, remove), the OCI hooks its
 * spec names (hook attach, hook release: run by the container runtime on the host), and gpusim's
 * node spec (gpusim). See gpushare/cdi.h and docs/containers.md. */
#include "cli.h"
#include "daemon_cli.h"
#include "run.h"
#include "shim_path.h"

#include "gpushare/cdi.h"
#include "gpushare/error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_DIR  "/var/run/cdi"
#define STATE_MAX    65536 /* the OCI state a hook reads on stdin */
#define CDI_OPTS_MAX 24

typedef struct cdi_opts {
    gs__run_opts_t run; /* the lease options, --no-wait, --socket, --json */
    const char *dir, *name, *shim, *sim, *state, *devices;
} cdi_opts_t;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpushare cdi add NAME LEASE OPTIONS [--key KEY] [--user USER] [--cgroup PATH]\n"
        "                        [--dir DIR] [--shim PATH]\n"
        "       gpushare cdi remove NAME [--dir DIR]\n"
        "       gpushare cdi gpusim NAME --sim DIR --state DIR [--devices MODELS] [--dir DIR]\n"
        "       gpushare cdi hook attach|release --key KEY (run by the container runtime)\n"
        "\n"
        "add gets a keyed lease (key KEY, default cdi/NAME; the same key gives the same lease)\n"
        "and writes a CDI spec for it, device %s=NAME, in DIR (default %s): a container\n"
        "run with --device %s=NAME uses the lease, whatever its uid and namespaces; the\n"
        "lease ends when the container does. LEASE OPTIONS are gpushare run's (--gpu-memory,\n"
        "--compute, --gpu, --gpus, --mig-profile, --name, --time, --no-wait, ...). --user\n"
        "and --cgroup: root or gpushared's lease_admin_group only.\n"
        "remove releases the lease of device NAME and removes its spec.\n"
        "gpusim writes the spec of gpusim's node, %s=NAME, for containers on gpusim.\n"
        "Options: --socket PATH (gpushared's), --json, -h/--help. See docs/containers.md.\n",
        GS_CDI_KIND, DEFAULT_DIR, GS_CDI_KIND, GS_CDI_GPUSIM_KIND);
}

/* One option of the table: a lease option, or one of cdi's own. */
static int one_option(void *ctx, int c, const char *value)
{
    cdi_opts_t *o = ctx;
    char err[GS_CLIENT_ERR_MAX];
    gs_lease_request_t *req = &o->run.req;
    switch (c) {
    case 'W':
        req->wait = 0;
        return 0;
    case 'k':
        if (gs_lease_key_check(value, err, sizeof(err)) != 0)
            return gs__cli_usage(&o->run.cli, "--key: %s", err);
        snprintf(req->key, sizeof(req->key), "%s", value);
        return 0;
    case 'g':
        if (gs_cgroup_path_check(value, err, sizeof(err)) != 0)
            return gs__cli_usage(&o->run.cli, "--cgroup: %s", err);
        snprintf(req->cgroup, sizeof(req->cgroup), "%s", value);
        return 0;
    case 'u':
        if (strlen(value) >= sizeof(req->owner.user))
            return gs__cli_usage(&o->run.cli, "--user: too long");
        snprintf(req->owner.user, sizeof(req->owner.user), "%s", value);
        req->owner.set = 1;
        return 0;
    case 'd':
    case 'S':
    case 'i':
    case 'a':
    case 'D':
        *(c == 'd'   ? &o->dir
          : c == 'S' ? &o->shim
          : c == 'i' ? &o->sim
          : c == 'a' ? &o->state
                     : &o->devices) = value;
        return 0;
    }
    return gs__run_lease_option(&o->run.cli, c, value, req);
}

/* run's lease options (not --verbose) and cdi's own, in table. */
static void options_of(gs__cli_opt_t *table)
{
    static const gs__cli_opt_t own[] = {
        {"key", 1, 'k', 0},   {"cgroup", 1, 'g', 0},  {"user", 1, 'u', 0},
        {"dir", 1, 'd', 0},   {"shim", 1, 'S', 0},    {"sim", 1, 'i', 0},
        {"state", 1, 'a', 0}, {"devices", 1, 'D', 0}, {NULL, 0, 0, 0},
    };
    size_t n = 0;
    for (const gs__cli_opt_t *o = gs__run_options; o->name != NULL; o++) {
        if (o->code != 'v')
            table[n++] = *o;
    }
    for (const gs__cli_opt_t *o = own; n + 1 < CDI_OPTS_MAX; o++) {
        table[n++] = *o;
        if (o->name == NULL)
            break;
    }
}

/* Parses argv (argv[0] "cdi", argv[1] the action, argv[2] NAME where it takes one). Returns 0,
 * a negative number after --help, or the exit status of a usage error (printed). */
static int parse_args(int argc, char **argv, cdi_opts_t *o, int named)
{
    gs__cli_opt_t table[CDI_OPTS_MAX];
    options_of(table);
    gs__cli_args_t args = {
        .opts = table, .flags = GS__CLI_CHECK | GS__CLI_SOCKET, .handle = one_option, .ctx = o};
    memset(o, 0, sizeof(*o));
    gs__cli_init_args(&o->run.cli, "cdi", argc, argv);
    gs_lease_request_init(&o->run.req);
    o->dir = DEFAULT_DIR;
    o->devices = getenv("GPUSIM_DEVICES");
    int next = 0, result = gs__cli_options(&o->run.cli, argc - 1, argv + 1, &args, &next);
    if (result == GS__CLI_HELP)
        usage(stdout);
    if (result != 0)
        return result;
    next++; /* argv + 1 was parsed */
    if (named && next + 1 != argc)
        return gs__cli_usage(&o->run.cli, "%s needs one NAME", argv[1]);
    if (!named && next != argc)
        return gs__cli_usage(&o->run.cli, "unexpected argument \"%s\"", argv[next]);
    o->name = named ? argv[next] : NULL;
    char err[GS_CLIENT_ERR_MAX];
    if (named && gs_cdi_name_check(o->name, err, sizeof(err)) != 0)
        return gs__cli_usage(&o->run.cli, "\"%s\": %s", o->name, err);
    return 0;
}

/* Sends req (stolen) on a new connection and waits for its reply: GS_EXIT_OK with *reply, or
 * the exit status (printed). */
static int call(const gs__cli_t *cli, json_t *req, json_t **reply)
{
    gs_client_t *client = NULL;
    int status = gs__cli_connect(cli, &client);
    if (status == GS_EXIT_OK)
        status = gs__cli_call(cli, client, req, reply);
    else
        json_decref(req);
    gs_client_close(client);
    return status;
}

static int release_key(const gs__cli_t *cli, const char *key)
{
    json_t *reply = NULL;
    int status = call(cli, json_pack("{s:s, s:s}", "op", "release", "key", key), &reply);
    json_decref(reply);
    return status;
}

/* The spec of the granted lease, written in o->dir. Returns GS_EXIT_OK or the exit status
 * (printed). */
static int write_spec(const cdi_opts_t *o, const json_t *granted)
{
    char exe[PATH_MAX], shim[PATH_MAX], err[PATH_MAX + 128];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    const char *preload = json_string_value(json_object_get(granted, "preload"));
    if (o->shim != NULL)
        snprintf(shim, sizeof(shim), "%s", o->shim);
    else if (gs__cli_shim_path(preload, shim, sizeof(shim)) != 0)
        return gs__cli_fail(&o->run.cli, GS_EXIT_FAIL, "not_found",
                            "no libgpushare.so to mount (tried %s; give --shim)", shim);
    gs_cdi_lease_t lease = {.name = o->name,
                            .key = o->run.req.key,
                            .env = json_object_get(granted, "env"),
                            .socket = json_string_value(json_object_get(granted, "socket")),
                            .shim = shim,
                            .gpushare = exe,
                            /* hooks run with the runtime's environment, not this one's */
                            .main_socket = o->run.cli.socket != NULL ? o->run.cli.socket
                                                                     : getenv("GPUSHARE_SOCKET"),
                            .spec_dir = o->dir};
    json_t *spec = gs_cdi_lease_spec(&lease, err, sizeof(err));
    int result = spec != NULL ? gs_cdi_write(o->dir, spec, err, sizeof(err)) : GS_EINVAL;
    json_decref(spec);
    if (result != 0)
        return gs__cli_fail(&o->run.cli, GS_EXIT_FAIL, result == GS_EEXIST ? "exists" : "failed",
                            "%s", err);
    return GS_EXIT_OK;
}

static void say_added(const cdi_opts_t *o, const json_t *granted)
{
    const json_t *lease = json_object_get(granted, "lease");
    if (!o->run.cli.json) {
        printf("%s=%s\n", GS_CDI_KIND, o->name);
        return;
    }
    json_t *out =
        json_pack("{s:b, s:s+, s:s, s:O, s:O}", "ok", 1, "device", GS_CDI_KIND "=", o->name, "key",
                  o->run.req.key, "lease", lease, "existing", json_object_get(granted, "existing"));
    gs__cli_print_json(out);
    json_decref(out);
}

/* gpushare cdi add NAME ...: the lease, then its spec; a new lease is released again when its
 * spec cannot be written (nothing half-made). */
static int add(int argc, char **argv)
{
    cdi_opts_t o;
    char err[GS_CLIENT_ERR_MAX + PATH_MAX];
    int status = parse_args(argc, argv, &o, 1);
    if (status != 0)
        return status < 0 ? GS_EXIT_OK : status;
    if (o.run.req.key[0] == '\0')
        snprintf(o.run.req.key, sizeof(o.run.req.key), "cdi/%s", o.name);
    if (gs_lease_request_check(&o.run.req, err, sizeof(err)) != 0)
        return gs__cli_usage(&o.run.cli, "%s", err);
    if (gs_cdi_check(o.dir, GS_CDI_KIND, o.name, err, sizeof(err)) != 0) {
        /* A user's --user or --cgroup is the first thing wrong: say that, not the directory. */
        if (geteuid() != 0 && (o.run.req.owner.set || o.run.req.cgroup[0] != '\0'))
            return gs__cli_fail(&o.run.cli, GS_EXIT_FAIL, "permission_denied",
                                "--user and --cgroup are root's (or lease_admin_group's, with a "
                                "spec directory it can write: --dir DIR)");
        return gs__cli_fail(&o.run.cli, GS_EXIT_FAIL, "failed", "%s", err);
    }
    snprintf(o.run.req.command, sizeof(o.run.req.command), "cdi %s=%s", GS_CDI_KIND, o.name);
    gs_client_t *client = NULL;
    json_t *granted = NULL;
    status = gs__cli_connect(&o.run.cli, &client);
    if (status == GS_EXIT_OK)
        status = gs__run_acquire(client, &o.run, &granted);
    gs_client_close(client); /* a keyed lease outlives its connection */
    int existing = json_is_true(json_object_get(granted, "existing"));
    if (status == GS_EXIT_OK && existing && strcmp(gs__cli_str(granted, "state"), "granted") != 0)
        status = gs__cli_fail(&o.run.cli, GS_EXIT_TEMPFAIL, "unavailable",
                              "the lease of key %s is ending; try again when it has ended",
                              o.run.req.key);
    else if (status == GS_EXIT_OK && (status = write_spec(&o, granted)) != GS_EXIT_OK && !existing)
        release_key(&o.run.cli, o.run.req.key);
    if (status == GS_EXIT_OK)
        say_added(&o, granted);
    json_decref(granted);
    return status;
}

/* gpushare cdi remove NAME: releases the lease named in the spec, then removes the spec. */
static int remove_spec(int argc, char **argv)
{
    cdi_opts_t o;
    char key[GS_LEASE_KEY_MAX], err[PATH_MAX + 128];
    int status = parse_args(argc, argv, &o, 1);
    if (status != 0)
        return status < 0 ? GS_EXIT_OK : status;
    int result = gs_cdi_spec_key(o.dir, o.name, key, sizeof(key), err, sizeof(err));
    if (result != 0)
        return gs__cli_fail(&o.run.cli, GS_EXIT_FAIL,
                            result == GS_ENOENT ? "not_found" : "bad_request", "%s", err);
    status = release_key(&o.run.cli, key);
    if (status == GS_EXIT_OK && gs_cdi_remove(o.dir, GS_CDI_KIND, o.name, err, sizeof(err)) != 0)
        status = gs__cli_fail(&o.run.cli, GS_EXIT_FAIL, "failed", "%s", err);
    if (status == GS_EXIT_OK && o.run.cli.json) {
        json_t *out = json_pack("{s:b, s:s}", "ok", 1, "key", key);
        gs__cli_print_json(out);
        json_decref(out);
    }
    return status;
}

/* gpushare cdi gpusim NAME --sim DIR --state DIR: gpusim's node for containers. */
static int gpusim(int argc, char **argv)
{
    cdi_opts_t o;
    char err[PATH_MAX + 128];
    int status = parse_args(argc, argv, &o, 1);
    if (status != 0)
        return status < 0 ? GS_EXIT_OK : status;
    /* --devices is optional, as its usage says: without it the container takes the node at
     * --state as it is (gpusim never rebuilds a node a process has open). */
    if (o.sim == NULL || o.state == NULL)
        return gs__cli_usage(&o.run.cli, "gpusim needs --sim DIR and --state DIR");
    json_t *spec = gs_cdi_gpusim_spec(o.name, o.sim, o.state, o.devices, err, sizeof(err));
    int result = spec != NULL ? gs_cdi_write(o.dir, spec, err, sizeof(err)) : GS_EINVAL;
    json_decref(spec);
    if (result != 0)
        return gs__cli_fail(&o.run.cli, GS_EXIT_FAIL, result == GS_EEXIST ? "exists" : "failed",
                            "%s", err);
    if (!o.run.cli.json)
        printf("%s=%s\n", GS_CDI_GPUSIM_KIND, o.name);
    return GS_EXIT_OK;
}

/* The container's pid from the OCI state on stdin (0 when it has none). */
static long state_pid(void)
{
    static char buf[STATE_MAX];
    size_t n = fread(buf, 1, sizeof(buf) - 1, stdin);
    buf[n] = '\0';
    json_t *state = json_loads(buf, 0, NULL);
    json_int_t pid = json_integer_value(json_object_get(state, "pid"));
    json_decref(state);
    return pid > 0 && pid <= INT_MAX ? (long)pid : 0;
}

/* gpushare cdi hook attach|release --key KEY [--dir DIR --name NAME]: an OCI hook of the spec.
 * attach (createRuntime): the lease's processes are the container's cgroup's; release
 * (poststop): the lease ends and its spec goes. */
static int hook(int argc, char **argv)
{
    cdi_opts_t o;
    int status = argc >= 3 ? parse_args(argc - 1, argv + 1, &o, 0) : GS_EXIT_USAGE;
    if (status != 0)
        return status < 0 ? GS_EXIT_OK : status;
    int attach = strcmp(argv[2], "attach") == 0;
    if ((!attach && strcmp(argv[2], "release") != 0) || o.run.req.key[0] == '\0')
        return gs__cli_usage(&o.run.cli, "hook needs attach or release, and --key KEY");
    long pid = state_pid();
    if (attach && pid == 0)
        return gs__cli_fail(&o.run.cli, GS_EXIT_FAIL, "bad_request",
                            "hook attach: no \"pid\" in the OCI state on stdin");
    json_t *reply = NULL;
    if (attach)
        status = call(
            &o.run.cli,
            json_pack("{s:s, s:s, s:i}", "op", "attach", "key", o.run.req.key, "pid", (int)pid),
            &reply);
    else
        status = call(&o.run.cli, json_pack("{s:s, s:s}", "op", "release", "key", o.run.req.key),
                      &reply);
    json_decref(reply);
    char err[PATH_MAX + 128];
    const char *name = o.run.req.name; /* --name: the spec's device */
    if (!attach && status == GS_EXIT_OK && name[0] != '\0' &&
        (gs_cdi_name_check(name, err, sizeof(err)) != 0 ||
         gs_cdi_remove(o.dir, GS_CDI_KIND, name, err, sizeof(err)) != 0))
        status = gs__cli_fail(&o.run.cli, GS_EXIT_FAIL, "failed", "%s", err);
    return status;
}

int gs_cli_cdi(int argc, char **argv)
{
    gs__cli_t cli;
    gs__cli_init_args(&cli, "cdi", argc, argv);
    if (argc < 2) {
        usage(stderr);
        return GS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    if (strcmp(argv[1], "add") == 0)
        return add(argc, argv);
    if (strcmp(argv[1], "remove") == 0)
        return remove_spec(argc, argv);
    if (strcmp(argv[1], "gpusim") == 0)
        return gpusim(argc, argv);
    if (strcmp(argv[1], "hook") == 0)
        return hook(argc, argv);
    return gs__cli_usage(&cli, "unknown action \"%s\" (add, remove, gpusim or hook)", argv[1]);
}
