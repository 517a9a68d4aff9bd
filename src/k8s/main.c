/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare-scheduler-extender: kube-scheduler's extender on gpushare's placement policy
 * (`serve`, the default), and the online replay that proves it on the openb traces (`replay`). */
#include "extender.h"
#include "kube.h"
#include "main.h"

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/version.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct serve_args {
    char listen[64];
    uint16_t port;
    gs_kube_config_t kube;
    int have_server;
    gs_place_policy_t policy;
    uint64_t seed;
    const char *workload;
    double assume_seconds;
    const char *port_file;
} serve_args_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpushare-scheduler-extender [serve] [options]\n"
            "       gpushare-scheduler-extender replay --nodes FILE --pods FILE [options]\n"
            "\n"
            "serve: kube-scheduler's extender (POST /filter, /prioritize; GET /healthz, /readyz)\n"
            "  --listen ADDR:PORT          where to listen (127.0.0.1:8888; in a pod, where\n"
            "                              kube-scheduler calls it, 0.0.0.0:8888)\n"
            "  --server URL                the API server (default: in-cluster service account)\n"
            "  --token-file FILE           bearer token, re-read at each connection\n"
            "  --ca-file FILE              the API server's CA\n"
            "  --insecure-skip-tls-verify  (tests only)\n"
            "  --watch-seconds N           timeoutSeconds of each WATCH (300)\n"
            "  --backoff-max S             longest wait between failed attempts (30)\n"
            "  --policy gpushare|fgd       the placement policy (gpushare)\n"
            "  --seed N                    the policy's fixed order of equal nodes (42)\n"
            "  --workload FILE             target workload (pod or job list as `gpushare plan`\n"
            "                              reads); default: learned from the pods scored\n"
            "  --assume-seconds S          assume a scored pod on its best node until the API\n"
            "                              server shows it, at most S seconds (30; 0: off)\n"
            "  --port-file FILE            write the port listened on (with --listen ADDR:0)\n"
            "  --log-level LEVEL           error, warn, info (default), debug\n"
            "\n"
            "replay: see `gpushare-scheduler-extender replay --help`\n");
}

static int parse_listen(const char *text, serve_args_t *a)
{
    const char *colon = strrchr(text, ':');
    char *end;
    if (colon == NULL || (size_t)(colon - text) >= sizeof(a->listen))
        return GS_EINVAL;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port > 65535 || colon[1] == '\0')
        return GS_EINVAL;
    memcpy(a->listen, text, (size_t)(colon - text));
    a->listen[colon - text] = '\0';
    a->port = (uint16_t)port;
    return 0;
}

/* Applies one option; returns 0, or 2 (usage error, with a line printed). */
static int serve_option(serve_args_t *a, int opt, const char *arg)
{
    char *end = NULL;
    enum gs_log_level level;
    switch (opt) {
    case 'l':
        return parse_listen(arg, a) == 0 ? 0 : gs__ext_usage("--listen wants ADDR:PORT");
    case 's':
        a->have_server = 1;
        return snprintf(a->kube.server, sizeof(a->kube.server), "%s", arg) <
                       (int)sizeof(a->kube.server)
                   ? 0
                   : gs__ext_usage("--server: URL too long");
    case 't':
        snprintf(a->kube.token_file, sizeof(a->kube.token_file), "%s", arg);
        return 0;
    case 'c':
        snprintf(a->kube.ca_file, sizeof(a->kube.ca_file), "%s", arg);
        return 0;
    case 'k':
        a->kube.insecure = 1;
        return 0;
    case 'w':
        a->kube.watch_seconds = strtol(arg, &end, 10);
        return *end == '\0' && a->kube.watch_seconds > 0 ? 0 : gs__ext_usage("--watch-seconds");
    case 'b':
        a->kube.backoff_max_ms = (long)(strtod(arg, &end) * 1000);
        return *end == '\0' && a->kube.backoff_max_ms >= 500 ? 0 : gs__ext_usage("--backoff-max");
    case 'p':
        return gs_place_policy_parse(arg, &a->policy) == 0 &&
                       (a->policy == GS_PLACE_GPUSHARE || a->policy == GS_PLACE_FGD)
                   ? 0
                   : gs__ext_usage("--policy is gpushare or fgd");
    case 'S':
        a->seed = strtoull(arg, &end, 10);
        return *end == '\0' && arg[0] != '\0' ? 0 : gs__ext_usage("--seed wants a number");
    case 'W':
        a->workload = arg;
        return 0;
    case 'a':
        a->assume_seconds = strtod(arg, &end);
        return *end == '\0' && a->assume_seconds >= 0 ? 0 : gs__ext_usage("--assume-seconds");
    case 'P':
        a->port_file = arg;
        return 0;
    case 'L':
        if (gs_log_level_parse(arg, &level) != 0)
            return gs__ext_usage("--log-level is error, warn, info or debug");
        gs_log_init("gpushare-scheduler-extender", level);
        return 0;
    default:
        return 2;
    }
}

int gs__ext_usage(const char *msg)
{
    fprintf(stderr, "gpushare-scheduler-extender: %s (see --help)\n", msg);
    return 2;
}

static int parse_serve(int argc, char **argv, serve_args_t *a)
{
    static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                         {"server", required_argument, NULL, 's'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"ca-file", required_argument, NULL, 'c'},
                                         {"insecure-skip-tls-verify", no_argument, NULL, 'k'},
                                         {"watch-seconds", required_argument, NULL, 'w'},
                                         {"backoff-max", required_argument, NULL, 'b'},
                                         {"policy", required_argument, NULL, 'p'},
                                         {"seed", required_argument, NULL, 'S'},
                                         {"workload", required_argument, NULL, 'W'},
                                         {"assume-seconds", required_argument, NULL, 'a'},
                                         {"port-file", required_argument, NULL, 'P'},
                                         {"log-level", required_argument, NULL, 'L'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int opt, result;
    memset(a, 0, sizeof(*a));
    /* Loopback unless told: the verbs are unauthenticated, and a pod's manifest says 0.0.0.0
     * (its own network namespace) where kube-scheduler must reach it (docs/kubernetes.md). */
    snprintf(a->listen, sizeof(a->listen), "127.0.0.1");
    a->port = 8888;
    a->policy = GS_PLACE_GPUSHARE;
    a->seed = 42;
    a->assume_seconds = 30;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 1;
        }
        if ((result = serve_option(a, opt, optarg)) != 0)
            return result;
    }
    if (optind < argc)
        return gs__ext_usage("unexpected argument");
    return 0;
}

/* Blocks until SIGTERM or SIGINT. */
static void wait_for_signal(void)
{
    sigset_t set;
    int sig;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigwait(&set, &sig);
    gs_info("signal %d: stopping", sig);
}

static int write_port(const char *path, uint16_t port)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return GS_EIO;
    fprintf(f, "%u\n", port);
    return fclose(f) == 0 && rename(tmp, path) == 0 ? 0 : GS_EIO;
}

static int serve(const serve_args_t *a)
{
    char err[GS_PLACE_ERR_MAX];
    gs_place_pods_t workload = {0};
    gs_k8s_model_t *model = NULL;
    gs_kube_watch_t *watch = NULL;
    gs_ext_server_t *server = NULL;
    uint16_t port = 0;
    int status = 1;
    if (a->workload != NULL && gs_place_pods_read(a->workload, &workload, err, sizeof(err)) != 0) {
        fprintf(stderr, "gpushare-scheduler-extender: %s\n", err);
        return 1;
    }
    gs_k8s_model_opts_t mo = {.policy = a->policy,
                              .seed = a->seed,
                              .workload = a->workload != NULL ? &workload : NULL,
                              .assume_seconds = a->assume_seconds};
    int result = gs_k8s_model_new(&mo, &model, err, sizeof(err));
    if (result == 0 && (result = gs_kube_watch_start(&a->kube, model, &watch)) != 0)
        snprintf(err, sizeof(err), "cannot follow the API server: %s", gs_strerror(result));
    if (result == 0 &&
        (result = gs_ext_server_start(a->listen, a->port, model, &server, &port)) != 0)
        snprintf(err, sizeof(err), "cannot listen on %s:%u: %s", a->listen, a->port,
                 gs_strerror(result));
    if (result == 0 && a->port_file != NULL && (result = write_port(a->port_file, port)) != 0)
        snprintf(err, sizeof(err), "cannot write %s", a->port_file);
    if (result == 0) {
        gs_info("listening on %s:%u; API server %s; policy %s; workload %s", a->listen, port,
                a->kube.server, gs_place_policy_name(a->policy),
                a->workload != NULL ? a->workload : "learned");
        wait_for_signal();
        status = 0;
    } else {
        fprintf(stderr, "gpushare-scheduler-extender: %s\n", err);
    }
    gs_ext_server_stop(server);
    gs_kube_watch_stop(watch);
    gs_k8s_model_free(model);
    gs_place_pods_free(&workload);
    return status;
}

int main(int argc, char **argv)
{
    gs_log_init("gpushare-scheduler-extender", GS_LOG_INFO);
    gs_log_set_timestamps(!gs_log_stderr_is_journal());
    if (argc > 1 && strcmp(argv[1], "replay") == 0)
        return gs__ext_replay_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("gpushare-scheduler-extender %s\n", GS_VERSION);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "serve") == 0) {
        argc--;
        argv++;
    }
    serve_args_t a;
    int result = parse_serve(argc, argv, &a);
    if (result != 0)
        return result == 1 ? 0 : result;
    gs_kube_config_t pod;
    if (!a.have_server) { /* the pod's service account, for what the options leave unset */
        if (gs_kube_config_in_cluster(&pod, NULL, 0) != 0)
            return gs__ext_usage("not in a pod: give --server (and --token-file, --ca-file)");
        memcpy(a.kube.server, pod.server, sizeof(pod.server));
        if (a.kube.token_file[0] == '\0')
            memcpy(a.kube.token_file, pod.token_file, sizeof(pod.token_file));
        if (a.kube.ca_file[0] == '\0')
            memcpy(a.kube.ca_file, pod.ca_file, sizeof(pod.ca_file));
    }
    /* Signals are taken by sigwait in the main thread: block them before any thread starts. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    return serve(&a);
}
