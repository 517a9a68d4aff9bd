/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare doctor: checks that this node is ready for leases, one line a check with a hint. */
#include "cli.h"
#include "daemon_cli.h"
#include "doctor_config.h"
#include "doctor_nvml.h"
#include "shim_path.h"

#include "gpushare/error.h"
#include "gpushare/nvml_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GS_CUDA_VERSION
#error "GS_CUDA_VERSION (cuda.h's CUDA_VERSION) must be defined by the build"
#endif

typedef enum level { LEVEL_OK, LEVEL_WARN, LEVEL_FAIL } level_t;

typedef struct doctor {
    const char *socket;      /* resolved path */
    const char *config_file; /* --config, NULL: the running daemon's, else gpushared's default */
    int json;
    json_t *status;  /* gpushared's status reply, NULL when it did not answer */
    json_t *config;  /* gpushared --check-config --json, NULL when it could not be read */
    json_t *checks;  /* the results, for --json */
    unsigned failed; /* checks at LEVEL_FAIL */
    gs__doctor_nvml_t nvml;
    int nvml_ok;
} doctor_t;

static const char *const level_names[] = {"ok", "warn", "fail"};

/* Records one check's result and prints its line (unless --json). hint may be NULL. */
static void report(doctor_t *doc, level_t level, const char *check, const char *hint,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report(doctor_t *doc, level_t level, const char *check, const char *hint,
                   const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    if (level == LEVEL_FAIL)
        doc->failed++;
    json_t *entry = json_pack("{s:s, s:s, s:s}", "check", check, "status", level_names[level],
                              "message", message);
    if (entry != NULL && hint != NULL && level != LEVEL_OK)
        json_object_set_new(entry, "hint", json_string(hint));
    json_array_append_new(doc->checks, entry);
    if (doc->json)
        return;
    printf("%-4s  %-8s %s",
           level == LEVEL_OK     ? "ok"
           : level == LEVEL_WARN ? "WARN"
                                 : "FAIL",
           check, message);
    if (hint != NULL && level != LEVEL_OK)
        printf("; fix: %s", hint);
    printf("\n");
}

/* The daemon's node object (NULL without a status). */
static const json_t *node_info(const doctor_t *doc)
{
    return doc->status != NULL ? json_object_get(doc->status, "node") : NULL;
}

/* A setting as the running daemon has it, else as the configuration says ("" when neither). */
static const char *setting(const doctor_t *doc, const char *key)
{
    const char *live = gs__cli_str(node_info(doc), key);
    return live[0] != '\0' || doc->status != NULL ? live : gs__cli_str(doc->config, key);
}

/* The GPUs with their modes: gpushared's status, else its configuration (NULL when neither). */
static const json_t *gpus_known(const doctor_t *doc)
{
    if (doc->status != NULL)
        return json_object_get(doc->status, "gpus");
    return doc->config != NULL ? json_object_get(doc->config, "gpus") : NULL;
}

static void check_daemon(doctor_t *doc)
{
    gs_client_t *client = NULL;
    char err[GS_CLIENT_ERR_MAX + 128];
    json_t *reply = NULL;
    int result = gs_client_connect(doc->socket, &client, err, sizeof(err));
    if (result == 0) {
        result = gs_client_call(client, json_pack("{s:s}", "op", "status"), GS_CLI_CALL_TIMEOUT_MS,
                                &reply);
        if (result != 0)
            snprintf(err, sizeof(err), "no reply from gpushared at %s: %s", doc->socket,
                     gs_strerror(result));
    }
    gs_client_close(client);
    if (result == 0 && gs_reply_error(reply, NULL) == NULL) {
        doc->status = reply;
        report(doc, LEVEL_OK, "daemon", NULL, "%s answers on %s",
               gs__cli_str(node_info(doc), "daemon"), doc->socket);
        return;
    }
    if (result == 0)
        snprintf(err, sizeof(err), "gpushared at %s refused its status", doc->socket);
    json_decref(reply);
    report(doc, LEVEL_FAIL, "daemon",
           "start it: systemctl start gpushared (or gpushared --config FILE)", "%s", err);
}

static void check_socket(doctor_t *doc)
{
    struct stat st;
    if (stat(doc->socket, &st) != 0) {
        report(doc, LEVEL_FAIL, "socket",
               "start gpushared, or point GPUSHARE_SOCKET / --socket at its socket", "%s: %s",
               doc->socket, strerror(errno));
    } else if (!S_ISSOCK(st.st_mode)) {
        report(doc, LEVEL_FAIL, "socket", "remove it and restart gpushared", "%s is not a socket",
               doc->socket);
    } else if ((st.st_mode & 0666) != 0666) {
        report(
            doc, LEVEL_FAIL, "socket",
            "restart gpushared (it makes its socket 0666; callers are told apart by SO_PEERCRED)",
            "%s has mode %04o: users other than its owner cannot ask for leases", doc->socket,
            (unsigned)(st.st_mode & 07777));
    } else {
        report(doc, LEVEL_OK, "socket", NULL, "%s is a socket anyone may use (mode %04o)",
               doc->socket, (unsigned)(st.st_mode & 07777));
    }
}

/* Reads the configuration with gpushared --check-config: the file a (re)start would read. */
static void check_config(doctor_t *doc)
{
    char daemon[PATH_MAX], err[768];
    const char *file =
        doc->config_file != NULL ? doc->config_file : gs__cli_str(node_info(doc), "config");
    const char *hint = "fix it; gpushared --check-config [--config FILE] says what it reads";
    if (gs__cli_daemon_path(daemon, sizeof(daemon)) != 0) {
        report(doc, LEVEL_WARN, "config", "install gpushared beside gpushare, or set GPUSHARED",
               "not read: gpushared not found (last tried %s)", daemon);
        return;
    }
    int result = gs__doctor_read_config(daemon, file, gs__cli_str(node_info(doc), "gpusim_state"),
                                        &doc->config, err, sizeof(err));
    if (result == GS_EINVAL) {
        report(doc, LEVEL_FAIL, "config", hint, "%s", err);
    } else if (result != 0) {
        report(doc, LEVEL_WARN, "config", hint, "not read: %s", err);
    } else {
        const char *path = gs__cli_str(doc->config, "config");
        size_t n = json_array_size(json_object_get(doc->config, "gpus"));
        report(doc, LEVEL_OK, "config", NULL, "%s is valid: %zu GPU%s, enforce %s",
               path[0] != '\0' ? path : "no file (the defaults)", n, n == 1 ? "" : "s",
               gs__cli_str(doc->config, "enforce"));
    }
}

static void check_driver(doctor_t *doc)
{
    const json_t *node = node_info(doc);
    const char *library = setting(doc, "nvml_library");
    /* NVML as the daemon reads it: on gpusim, its node. */
    const char *sim = setting(doc, "gpusim_state");
    if (sim[0] != '\0')
        setenv("GPUSIM_STATE", sim, 1);
    char err[512];
    int result = gs__doctor_read_nvml(library[0] != '\0' ? library : "libnvidia-ml.so.1",
                                      &doc->nvml, err, sizeof(err));
    doc->nvml_ok = result == 0;
    if (!doc->nvml_ok) {
        report(
            doc, LEVEL_FAIL, "driver",
            "install the NVIDIA driver; a node without GPUs can use gpusim (package gpushare-sim, "
            "nvml_library = its libnvidia-ml.so.1)",
            "NVML: %s", err);
        return;
    }
    int simulated = node != NULL ? json_is_true(json_object_get(node, "simulated"))
                                 : access("/proc/driver/nvidia/version", F_OK) != 0;
    if (simulated)
        report(doc, LEVEL_OK, "driver", NULL,
               "gpusim (simulated GPUs, no NVIDIA driver): %u GPU%s, NVML %s", doc->nvml.count,
               doc->nvml.count == 1 ? "" : "s", doc->nvml.library);
    else
        report(doc, LEVEL_OK, "driver", NULL, "NVIDIA driver %s: %u GPU%s, NVML %s",
               node != NULL ? gs__cli_str(node, "driver") : "(gpushared did not say which)",
               doc->nvml.count, doc->nvml.count == 1 ? "" : "s", doc->nvml.library);
}

static void check_cuda(doctor_t *doc)
{
    if (!doc->nvml_ok)
        return;
    int have = doc->nvml.cuda_version, want = GS_CUDA_VERSION;
    char text[64];
    snprintf(text, sizeof(text), "the shim was built against CUDA %d.%d", want / 1000,
             want % 1000 / 10);
    if (have == 0)
        report(doc, LEVEL_WARN, "cuda", "check the driver with nvidia-smi",
               "NVML does not say which CUDA version the driver supports; %s", text);
    else if (have / 1000 < want / 1000)
        report(doc, LEVEL_FAIL, "cuda",
               "install a driver for this CUDA major version (CUDA 13: R580 or newer), or build "
               "gpushare against the driver's CUDA toolkit",
               "the driver supports CUDA %d.%d; %s", have / 1000, have % 1000 / 10, text);
    else if (have < want)
        report(
            doc, LEVEL_WARN, "cuda", "update the driver when you can",
            "the driver supports CUDA %d.%d, older than the CUDA %d.%d the shim was built against",
            have / 1000, have % 1000 / 10, want / 1000, want % 1000 / 10);
    else
        report(doc, LEVEL_OK, "cuda", NULL, "the driver supports CUDA %d.%d; %s", have / 1000,
               have % 1000 / 10, text);
}

/* The GPU entry of gpushared's status (or configuration) with this UUID (NULL when unknown). */
static const json_t *status_gpu(const doctor_t *doc, const char *uuid)
{
    const json_t *gpus = gpus_known(doc);
    size_t i;
    const json_t *gpu;
    json_array_foreach(gpus, i, gpu)
    {
        if (strcmp(gs__cli_str(gpu, "uuid"), uuid) == 0)
            return gpu;
    }
    return NULL;
}

static const char *compute_mode_name(int mode)
{
    switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT:
        return "Default";
    case NVML_COMPUTEMODE_PROHIBITED:
        return "Prohibited";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
        return "Exclusive_Process";
    default:
        return "unknown";
    }
}

/* The flags of a mode by its name (gpushare/gpu_modes.def); 0 for a name this CLI does not
 * know. */
static unsigned mode_flags(const char *mode)
{
    gs_gpu_mode_t m;
    return gs_gpu_mode_parse(mode, &m) == 0 ? gs_gpu_mode_flags(m) : 0;
}

/* The verdict on one GPU's compute mode for the mode gpushared runs it in: one process at a time
 * is what an MPS server wants, a nuisance where leases never share the GPU, and wrong elsewhere. */
static level_t compute_mode_level(int compute, const char *mode, const char **why)
{
    unsigned flags = mode_flags(mode);
    *why = NULL;
    if (compute == NVML_COMPUTEMODE_PROHIBITED) {
        *why = "no process may create a context on it";
        return LEVEL_FAIL;
    }
    if (compute == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS && !(flags & GS_MODE_MPS_SERVER)) {
        *why = "only one process at a time may use it, so leases cannot share it";
        return flags & GS_MODE_SHARES_GPU ? LEVEL_FAIL : LEVEL_WARN;
    }
    return LEVEL_OK;
}

/* The verdict on one GPU's MIG mode for the mode gpushared runs it in (why: into buf). */
static level_t mig_level(const gs__doctor_gpu_t *g, const char *mode, const char **why, char *buf,
                         size_t len)
{
    int on = g->mig_supported && g->mig_current == NVML_DEVICE_MIG_ENABLE;
    int wants = (mode_flags(mode) & GS_MODE_MIG_INSTANCES) != 0;
    *why = NULL;
    if (wants && !on) {
        snprintf(buf, len, "it is configured %s but MIG mode is off", mode);
        *why = buf;
        return LEVEL_FAIL;
    }
    if (!wants && on) {
        char modes[64];
        snprintf(buf, len,
                 "MIG mode is on but it is not configured %s: CUDA cannot use the whole GPU",
                 gs_gpu_mode_list(GS_MODE_MIG_INSTANCES, 0, 0, NULL, modes, sizeof(modes)));
        *why = buf;
        return LEVEL_FAIL;
    }
    if (g->mig_supported && g->mig_pending != g->mig_current) {
        *why = "a MIG mode change is pending until the GPU is reset";
        return LEVEL_WARN;
    }
    return LEVEL_OK;
}

/* The fix for a GPU whose compute or MIG mode is wrong. */
static void gpu_hint(const char *mode, int compute_wrong, unsigned index, char *hint, size_t len)
{
    if (compute_wrong)
        snprintf(hint, len, "as root: nvidia-smi -i %u -c DEFAULT (gpushare never changes it)",
                 index);
    else if (mode_flags(mode) & GS_MODE_MIG_INSTANCES)
        snprintf(hint, len,
                 "as root, while the GPU is idle: nvidia-smi -i %u -mig 1 (some systems need a "
                 "reset); gpushared never toggles MIG",
                 index);
    else
        snprintf(hint, len,
                 "set mode = %s for it in gpushare.conf ([gpu:%u]), or disable MIG: nvidia-smi "
                 "-i %u -mig 0",
                 gs_gpu_mode_name(gs_gpu_mode_with(GS_MODE_MIG_INSTANCES)), index, index);
}

static void check_gpu(doctor_t *doc, const gs__doctor_gpu_t *g)
{
    const json_t *configured = status_gpu(doc, g->uuid);
    const char *mode = configured != NULL ? gs__cli_str(configured, "mode")
                                          : gs_gpu_mode_name(GS_GPU_MODE_DEFAULT);
    const char *why_compute, *why_mig;
    char why_buf[160];
    level_t compute = compute_mode_level(g->compute_mode, mode, &why_compute);
    level_t mig = mig_level(g, mode, &why_mig, why_buf, sizeof(why_buf));
    level_t level = compute > mig ? compute : mig;
    char name[32], hint[256];
    snprintf(name, sizeof(name), "gpu %u", g->index);
    gpu_hint(mode, compute == level, g->index, hint, sizeof(hint));
    const char *state = !g->mig_supported ? "no MIG" : g->mig_current ? "MIG on" : "MIG off";
    report(doc, level, name, hint, "%s: compute mode %s, %s, configured %s%s%s", g->uuid,
           compute_mode_name(g->compute_mode), state, mode, level == LEVEL_OK ? "" : ": ",
           level == LEVEL_OK  ? ""
           : compute == level ? why_compute
                              : why_mig);
}

static void check_gpus(doctor_t *doc)
{
    if (!doc->nvml_ok)
        return;
    if (doc->nvml.count == 0)
        report(doc, LEVEL_FAIL, "gpus", "check the driver with nvidia-smi", "NVML lists no GPU");
    for (unsigned i = 0; i < doc->nvml.count; i++)
        check_gpu(doc, &doc->nvml.gpus[i]);
}

/* dlopen()s path in a child process (its constructors run there, not here). Returns 0, or
 * GS_EIO with dlerror's words in why (or why it could not try). */
static int loads(const char *path, char *why, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0)
        return gs_fail(why, len, -errno, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (dlopen(path, RTLD_NOW | RTLD_LOCAL) != NULL)
            _exit(0);
        const char *e = dlerror();
        ssize_t n = write(fds[1], e, strlen(e));
        _exit(n >= 0 ? 1 : 2);
    }
    close(fds[1]);
    ssize_t n = pid > 0 ? read(fds[0], why, len - 1) : -1;
    why[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        if (why[0] == '\0')
            return gs_fail(why, len, GS_EIO, "%s", pid < 0 ? strerror(errno) : "the loader failed");
        return GS_EIO;
    }
    return 0;
}

static void check_shim(doctor_t *doc)
{
    char path[PATH_MAX], why[512];
    if (gs__cli_shim_path(gs__cli_str(node_info(doc), "shim"), path, sizeof(path)) != 0)
        report(doc, LEVEL_FAIL, "shim",
               "install gpushare's package, or name the shim in gpushare.conf (shim =) or "
               "GPUSHARE_SHIM",
               "libgpushare.so not found (last tried %s): jobs would run without limits, so "
               "gpushare run refuses them",
               path);
    else if (loads(path, why, sizeof(why)) != 0)
        report(doc, LEVEL_FAIL, "shim", "reinstall it (it must be built for this machine)",
               "%s cannot be loaded: %s", path, why);
    else
        report(doc, LEVEL_OK, "shim", NULL, "%s loads", path);
}

static const char *fs_name(long type)
{
    static const struct {
        long type;
        const char *name;
    } names[] = {{TMPFS_MAGIC, "tmpfs"},
                 {EXT4_SUPER_MAGIC, "ext4"},
                 {XFS_SUPER_MAGIC, "xfs"},
                 {BTRFS_SUPER_MAGIC, "btrfs"},
                 {OVERLAYFS_SUPER_MAGIC, "overlayfs"},
                 {NFS_SUPER_MAGIC, "nfs"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].type == type)
            return names[i].name;
    }
    return "a disk file system";
}

static void check_regions(doctor_t *doc)
{
    const char *dir = gs__cli_str(node_info(doc), "region_dir");
    struct statfs fs;
    if (strcmp(gs__cli_str(node_info(doc), "regions"), "memfd") == 0)
        report(doc, LEVEL_OK, "regions", NULL,
               "lease regions are sealed memfds of gpushared (no directory, no disk)");
    else if (dir[0] == '\0')
        report(doc, LEVEL_WARN, "regions", "fix the daemon check first",
               "not checked: gpushared did not say where its lease regions are");
    else if (statfs(dir, &fs) != 0)
        report(doc, LEVEL_FAIL, "regions", "restart gpushared (it creates the directory)",
               "the region directory %s: %s", dir, strerror(errno));
    else if (fs.f_type != TMPFS_MAGIC)
        report(doc, LEVEL_FAIL, "regions",
               "set region_dir = /run/gpushare/regions in gpushare.conf and restart gpushared",
               "the region directory %s is on %s, not tmpfs: every lease's accounting would cost "
               "disk writes",
               dir, fs_name((long)fs.f_type));
    else
        report(doc, LEVEL_OK, "regions", NULL, "the region directory %s is on tmpfs", dir);
}

/* One MPS GPU of the running daemon: its control daemon up, as the status says, and answering
 * (asked here as gpushared asks it). Returns 0, or 1 after reporting the failure. */
static int check_mps_gpu(doctor_t *doc, const json_t *gpu, const char *program)
{
    const json_t *mps = json_object_get(gpu, "mps");
    unsigned index = (unsigned)gs__cli_uint(gpu, "index");
    char err[512];
    if (strcmp(gs__cli_str(mps, "state"), "up") != 0) {
        report(doc, LEVEL_FAIL, "mps",
               "see gpushared's log (journalctl -u gpushared): it starts the control daemon again "
               "by itself, with a longer wait after each failure",
               "GPU %u's MPS control daemon is down: %s", index,
               gs__cli_str(mps, "error")[0] != '\0' ? gs__cli_str(mps, "error") : "not started");
        return 1;
    }
    if (gs__doctor_mps_answers(program, gs__cli_str(mps, "pipe_directory"), err, sizeof(err)) !=
        0) {
        report(doc, LEVEL_FAIL, "mps",
               "gpushared starts it again when it dies; one that hangs must be killed (its pid "
               "is in gpushare status)",
               "GPU %u's MPS control daemon (pid %llu) does not answer: %s", index,
               (unsigned long long)gs__cli_uint(mps, "pid"), err);
        return 1;
    }
    return 0;
}

static void check_mps(doctor_t *doc)
{
    const char *mps = gs_gpu_mode_name(gs_gpu_mode_with(GS_MODE_MPS_SERVER));
    const char *program = setting(doc, "mps_control");
    unsigned needed = 0, first = 0;
    size_t i;
    const json_t *gpu;
    json_array_foreach(gpus_known(doc), i, gpu)
    {
        if (!(mode_flags(gs__cli_str(gpu, "mode")) & GS_MODE_MPS_SERVER))
            continue;
        first = needed++ == 0 ? (unsigned)gs__cli_uint(gpu, "index") : first;
        if (program[0] != '\0' && doc->status != NULL && check_mps_gpu(doc, gpu, program) != 0)
            return;
    }
    if (needed > 0 && program[0] == '\0')
        report(doc, LEVEL_FAIL, "mps",
               "install NVIDIA's MPS control daemon, or name it in gpushare.conf (mps_control =)",
               "GPU %u is in %s mode but its control program (mps_control, "
               "nvidia-cuda-mps-control) is not found",
               first, mps);
    else if (needed > 0 && doc->status != NULL)
        report(doc, LEVEL_OK, "mps", NULL, "%s serves the %s GPUs: each control daemon answers",
               program, mps);
    else if (needed > 0)
        report(doc, LEVEL_OK, "mps", NULL,
               "%s is there for the %s GPUs (gpushared does not run: their control daemons are "
               "not checked)",
               program, mps);
    else
        report(doc, LEVEL_OK, "mps", NULL, "not needed (no GPU in %s mode)%s%s", mps,
               program[0] != '\0' ? "; found " : "", program);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpushare doctor [--json] [--socket PATH] [--config FILE]\n\n"
            "Checks that this node is ready for leases: the NVIDIA driver and NVML (or gpusim),\n"
            "gpushared and its socket, its configuration (read by gpushared --check-config,\n"
            "whether or not it runs), each GPU's compute and MIG mode for the mode it is\n"
            "configured in, the CUDA version, the shim, the lease regions and each MPS control\n"
            "daemon (up and answering). One line a check, with a fix for each that fails. Exit\n"
            "status 0 when the node is ready, 1 otherwise.\n"
            "  --json               the checks as one JSON object\n"
            "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
            "  --config FILE        the configuration to read (default: the running gpushared's,\n"
            "                       else gpushared's own default)\n",
            GS_DEFAULT_SOCKET);
}

static int take_option(void *ctx, int code, const char *value)
{
    doctor_t *doc = ctx;
    if (code == 'c')
        doc->config_file = value;
    return 0;
}

/* Returns -1 to run, else the exit status (help, usage error). */
static int parse_args(int argc, char **argv, doctor_t *doc)
{
    static const gs__cli_opt_t options[] = {{"config", 1, 'c', 0}, {NULL, 0, 0, 0}};
    gs__cli_args_t args = {.opts = options,
                           .flags = GS__CLI_CHECK | GS__CLI_SOCKET,
                           .handle = take_option,
                           .ctx = doc};
    gs__cli_t cli;
    gs__cli_init(&cli, "doctor");
    int next = 0, result = gs__cli_options(&cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    if (result == 0 && next < argc)
        result = gs__cli_usage(&cli, "unexpected argument \"%s\"", argv[next]);
    if (result != 0)
        return result;
    doc->json = cli.json;
    doc->socket = gs_client_socket_path(cli.socket);
    return -1;
}

int gs_cli_doctor(int argc, char **argv)
{
    doctor_t doc;
    memset(&doc, 0, sizeof(doc));
    int status = parse_args(argc, argv, &doc);
    if (status >= 0)
        return status;
    doc.checks = json_array();
    check_daemon(&doc);
    check_socket(&doc);
    check_config(&doc);
    check_driver(&doc);
    check_gpus(&doc);
    check_cuda(&doc);
    check_shim(&doc);
    check_regions(&doc);
    check_mps(&doc);
    if (doc.json) {
        json_t *out = json_pack("{s:b, s:O}", "ready", doc.failed == 0, "checks", doc.checks);
        gs__cli_print_json(out);
        json_decref(out);
    } else if (doc.failed == 0) {
        printf("gpushare doctor: this node is ready\n");
    } else {
        printf("gpushare doctor: %u check%s failed\n", doc.failed, doc.failed == 1 ? "" : "s");
    }
    json_decref(doc.checks);
    json_decref(doc.status);
    json_decref(doc.config);
    return doc.failed == 0 ? GS_EXIT_OK : GS_EXIT_FAIL;
}
