/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare-k8s: gpushare's DRA kubelet plugin, driver gpu.gpushare.io (docs/kubernetes.md). It
 * registers with the kubelet through the plugin registry, serves DRAPlugin v1, and publishes the
 * node's GPUs as ResourceSlices; gpushared gives the leases. */
#include "service.h"

#include "gpushare/cdi.h"
#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/version.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct args {
    gs__plugin_cfg_t cfg;
    const char *kubeconfig;
    int have_server;
} args_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpushare-k8s [options]\n"
            "gpushare's DRA kubelet plugin (driver " GS_DRA_DRIVER
            "): registers with the kubelet,\n"
            "prepares ResourceClaims as gpushared leases, publishes the node's ResourceSlices.\n"
            "\n"
            "  --node-name NAME          this node (default: $NODE_NAME, else the host name)\n"
            "  --registry-dir DIR        the kubelet's plugin registry\n"
            "                            (/var/lib/kubelet/plugins_registry)\n"
            "  --plugin-dir DIR          the plugin's socket and records\n"
            "                            (/var/lib/kubelet/plugins/" GS_DRA_DRIVER ")\n"
            "  --kubelet-endpoint PATH   dra.sock as the kubelet sees it (default: the same)\n"
            "  --cdi-dir DIR             where CDI specs go (/var/run/cdi)\n"
            "  --gpushared-socket PATH   gpushared's socket (default: $GPUSHARE_SOCKET, else\n"
            "                            " GS_DEFAULT_SOCKET ")\n"
            "  --shim PATH               libgpushare.so on the host (default: gpushared's)\n"
            "  --gpushare PATH           the gpushare program, for the CDI hooks (default: the\n"
            "                            one beside gpushare-k8s)\n"
            "  --driver-cdi KIND         the GPU driver's CDI devices to add, by GPU UUID\n"
            "                            (nvidia.com/gpu; default: none)\n"
            "  --gpusim-cdi NAME         add gpusim's node device " GS_CDI_GPUSIM_KIND "=NAME "
            "(tests)\n"
            "  --lease-user NAME         the user the leases are for, in gpushared's listings,\n"
            "                            history and metrics (default: root, the plugin's)\n"
            "  --kubeconfig FILE         the API server and credentials of a kubeconfig\n"
            "  --server URL              the API server (default: the pod's service account)\n"
            "  --token-file FILE         bearer token, re-read at each request\n"
            "  --ca-file FILE            the API server's CA\n"
            "  --insecure-skip-tls-verify  (tests only)\n"
            "  --device-order ORDER      index or tightest (default: tightest)\n"
            "  --resync SECONDS          how often gpushared is looked at for the slices (2)\n"
            "  --no-publish              do not publish ResourceSlices\n"
            "  --log-level LEVEL         error, warn, info (default), debug\n"
            "  --version, --help\n");
}

static int bad(const char *what)
{
    fprintf(stderr, "gpushare-k8s: %s (see --help)\n", what);
    return 2;
}

static int copy_opt(char *dst, size_t size, const char *arg, const char *name)
{
    if (snprintf(dst, size, "%s", arg) >= (int)size)
        return bad(name);
    return 0;
}

/* Applies one option of the API server; 1 when opt is not one of them. */
static int api_option(args_t *a, int opt, const char *arg)
{
    gs__kapi_cfg_t *api = &a->cfg.api;
    switch (opt) {
    case 'K':
        a->kubeconfig = arg;
        return 0;
    case 's':
        a->have_server = 1;
        return copy_opt(api->server, sizeof(api->server), arg, "--server: URL too long");
    case 't':
        return copy_opt(api->token_file, sizeof(api->token_file), arg, "--token-file: too long");
    case 'c':
        return copy_opt(api->ca_file, sizeof(api->ca_file), arg, "--ca-file: too long");
    case 'k':
        api->insecure = 1;
        return 0;
    default:
        return 1;
    }
}

static int option(args_t *a, int opt, const char *arg)
{
    gs__plugin_cfg_t *c = &a->cfg;
    char *end = NULL;
    enum gs_log_level level;
    int result = api_option(a, opt, arg);
    if (result != 1)
        return result;
    switch (opt) {
    case 'n':
        return copy_opt(c->node, sizeof(c->node), arg, "--node-name: too long");
    case 'r':
        return copy_opt(c->registry_dir, sizeof(c->registry_dir), arg, "--registry-dir");
    case 'p':
        return copy_opt(c->plugin_dir, sizeof(c->plugin_dir), arg, "--plugin-dir");
    case 'e':
        return copy_opt(c->endpoint, sizeof(c->endpoint), arg, "--kubelet-endpoint");
    case 'C':
        return copy_opt(c->cdi_dir, sizeof(c->cdi_dir), arg, "--cdi-dir");
    case 'g':
        return copy_opt(c->gpushared, sizeof(c->gpushared), arg, "--gpushared-socket");
    case 'S':
        return copy_opt(c->shim, sizeof(c->shim), arg, "--shim");
    case 'G':
        return copy_opt(c->gpushare, sizeof(c->gpushare), arg, "--gpushare");
    case 'D':
        return copy_opt(c->driver_cdi, sizeof(c->driver_cdi), arg, "--driver-cdi");
    case 'M':
        return copy_opt(c->gpusim_cdi, sizeof(c->gpusim_cdi), arg, "--gpusim-cdi");
    case 'U':
        return copy_opt(c->lease_user, sizeof(c->lease_user), arg, "--lease-user");
    case 'o':
        return gs_place_order_parse(arg, &c->order) == 0 && c->order != GS_PLACE_ORDER_POLICY
                   ? 0
                   : bad("--device-order is index or tightest");
    case 'R':
        c->resync_ms = (long)(strtod(arg, &end) * 1000);
        return *end == '\0' && c->resync_ms >= 100 ? 0 : bad("--resync wants seconds, >= 0.1");
    case 'P':
        c->publish = 0;
        return 0;
    case 'L':
        if (gs_log_level_parse(arg, &level) != 0)
            return bad("--log-level is error, warn, info or debug");
        gs_log_init(GS_PLUGIN_NAME, level);
        return 0;
    default:
        return bad("unknown option");
    }
}

static int parse(args_t *a, int argc, char **argv)
{
    static const struct option opts[] = {{"node-name", 1, 0, 'n'},
                                         {"registry-dir", 1, 0, 'r'},
                                         {"plugin-dir", 1, 0, 'p'},
                                         {"kubelet-endpoint", 1, 0, 'e'},
                                         {"cdi-dir", 1, 0, 'C'},
                                         {"gpushared-socket", 1, 0, 'g'},
                                         {"shim", 1, 0, 'S'},
                                         {"gpushare", 1, 0, 'G'},
                                         {"driver-cdi", 1, 0, 'D'},
                                         {"gpusim-cdi", 1, 0, 'M'},
                                         {"lease-user", 1, 0, 'U'},
                                         {"kubeconfig", 1, 0, 'K'},
                                         {"server", 1, 0, 's'},
                                         {"token-file", 1, 0, 't'},
                                         {"ca-file", 1, 0, 'c'},
                                         {"insecure-skip-tls-verify", 0, 0, 'k'},
                                         {"device-order", 1, 0, 'o'},
                                         {"resync", 1, 0, 'R'},
                                         {"no-publish", 0, 0, 'P'},
                                         {"log-level", 1, 0, 'L'},
                                         {"version", 0, 0, 'V'},
                                         {"help", 0, 0, 'h'},
                                         {0, 0, 0, 0}};
    int opt, result;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'h' || opt == 'V') {
            opt == 'h' ? usage(stdout) : (void)printf("gpushare-k8s %s\n", GS_VERSION);
            return 1;
        }
        if (opt == '?' || (result = option(a, opt, optarg)) != 0)
            return opt == '?' ? bad("unknown option") : result;
    }
    return optind < argc ? bad("unexpected argument") : 0;
}

/* dst = a + b; GS_EINVAL with one line when it does not fit. */
static int join(char *dst, size_t size, const char *a, const char *b, char *err, size_t errlen)
{
    if (snprintf(dst, size, "%s%s", a, b) >= (int)size)
        return gs_fail(err, errlen, GS_EINVAL, "path too long: %.64s...", a);
    return 0;
}

/* Defaults for what the options left out, and the API server's settings. */
static int settle(args_t *a, char *err, size_t errlen)
{
    gs__plugin_cfg_t *c = &a->cfg;
    const char *node = getenv("NODE_NAME");
    if (c->node[0] == '\0' && node != NULL && node[0] != '\0')
        snprintf(c->node, sizeof(c->node), "%s", node);
    if (c->node[0] == '\0' && gethostname(c->node, sizeof(c->node) - 1) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "no node name: give --node-name");
    if (c->gpushare[0] == '\0') {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL)
            *slash = '\0';
        int result = join(c->gpushare, sizeof(c->gpushare), self, "/gpushare", err, errlen);
        if (result != 0)
            return result;
    }
    if (a->kubeconfig != NULL) {
        gs__kapi_cfg_t from;
        int result = gs__kapi_kubeconfig(a->kubeconfig, c->plugin_dir, &from, err, errlen);
        if (result != 0)
            return result;
        from.insecure |= c->api.insecure;
        c->api = from;
        return 0;
    }
    if (!a->have_server) {
        gs__kapi_cfg_t in;
        int result = gs__kapi_in_cluster(&in, err, errlen);
        if (result != 0)
            return result;
        in.insecure = c->api.insecure;
        c->api = in;
    }
    return 0;
}

static int make_dir(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0750) != 0 && errno != EEXIST)
        return gs_fail(err, errlen, -errno, "cannot create %s: %s", path, strerror(errno));
    return 0;
}

/* Starts everything, waits for SIGTERM or SIGINT, stops everything. */
static int run(gs__plugin_t *p, char *err, size_t errlen)
{
    gs__service_t s = {.plugin = p};
    pthread_t publisher;
    int publishing = 0, sig = 0, result;
    if ((result = join(s.dra_socket, sizeof(s.dra_socket), p->cfg.plugin_dir, "/dra.sock", err,
                       errlen)) != 0 ||
        (result = join(s.reg_socket, sizeof(s.reg_socket), p->cfg.registry_dir,
                       "/" GS_DRA_DRIVER "-reg.sock", err, errlen)) != 0 ||
        (result = join(s.endpoint, sizeof(s.endpoint),
                       p->cfg.endpoint[0] != '\0' ? p->cfg.endpoint : s.dra_socket, "", err,
                       errlen)) != 0 ||
        (result = join(p->records, sizeof(p->records), p->cfg.plugin_dir, "/claims", err,
                       errlen)) != 0 ||
        (result = make_dir(p->cfg.plugin_dir, err, errlen)) != 0 ||
        (result = make_dir(p->records, err, errlen)) != 0 ||
        (result = gs__kapi_open(&p->cfg.api, &p->api)) != 0)
        return result;
    if (p->cfg.publish && (result = gs__publish_start(p, &publisher)) != 0)
        return gs_fail(err, errlen, result, "cannot start the publisher");
    publishing = p->cfg.publish;
    result = gs__service_start(&s, err, errlen);
    if (result == 0) {
        gs_info("serving %s on %s, registration at %s; node %s, API server %s", GS_DRA_DRIVER,
                s.dra_socket, s.reg_socket, p->cfg.node, p->cfg.api.server);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigwait(&set, &sig);
        gs_info("signal %d: stopping", sig);
        gs__service_stop(&s);
    }
    atomic_store(&p->stop, 1);
    if (publishing) {
        gs__publish_poke(p);
        pthread_join(publisher, NULL);
    }
    gs__kapi_close(p->api);
    return result;
}

int main(int argc, char **argv)
{
    static args_t a;
    static gs__plugin_t p;
    char err[GS_PLUGIN_ERR_MAX];
    gs_log_init(GS_PLUGIN_NAME, GS_LOG_INFO);
    snprintf(a.cfg.registry_dir, sizeof(a.cfg.registry_dir), "/var/lib/kubelet/plugins_registry");
    snprintf(a.cfg.plugin_dir, sizeof(a.cfg.plugin_dir), "/var/lib/kubelet/plugins/%s",
             GS_DRA_DRIVER);
    snprintf(a.cfg.cdi_dir, sizeof(a.cfg.cdi_dir), "/var/run/cdi");
    a.cfg.order = GS_PLACE_ORDER_TIGHTEST;
    a.cfg.resync_ms = 2000;
    a.cfg.publish = 1;
    int result = parse(&a, argc, argv);
    if (result != 0)
        return result == 1 ? 0 : result;
    if (settle(&a, err, sizeof(err)) != 0) {
        gs_error("%s", err);
        return 1;
    }
    /* The signals go to sigwait in main: every thread started from here blocks them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    p.cfg = a.cfg;
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.wake, NULL);
    result = run(&p, err, sizeof(err));
    if (result != 0)
        gs_error("%s", err);
    curl_global_cleanup();
    return result != 0 ? 1 : 0;
}
