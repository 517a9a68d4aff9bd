/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare suspend and gpushare resume (issue 40): a lease's CUDA processes are checkpointed to
 * host memory and its capacity goes back to the pool; resume brings them back when it fits. */
#include "cli.h"
#include "daemon_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out, const char *op)
{
    if (strcmp(op, "suspend") == 0)
        fprintf(out,
                "usage: gpushare suspend [--json] [--socket PATH] ID\n\n"
                "Suspends lease ID (yours; root: any): its CUDA processes are locked (their\n"
                "CUDA calls wait) and their GPU memory moved to host memory, all or none; its\n"
                "memory and compute return to the pool until gpushare resume.\n");
    else
        fprintf(out,
                "usage: gpushare resume [--json] [--socket PATH] ID\n\n"
                "Resumes suspended lease ID (yours; root: any) when its memory fits on its GPU\n"
                "again: its processes get their GPU memory back and go on.\n");
    fprintf(out,
            "  --json               the daemon's reply (docs/api.md)\n"
            "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
            "  -h, --help           this help\n",
            GS_DEFAULT_SOCKET);
}

/* gpushare suspend|resume ID. */
static int lease_op(int argc, char **argv, const char *op)
{
    static const gs__cli_opt_t no_options[] = {{NULL, 0, 0, 0}};
    gs__cli_args_t args = {.opts = no_options, .flags = GS__CLI_CHECK | GS__CLI_SOCKET};
    gs__cli_t cli;
    gs__cli_init(&cli, op);
    int next = 0, result = gs__cli_options(&cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP)
        usage(stdout, op);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    char *end = NULL;
    unsigned long long id = next + 1 == argc ? strtoull(argv[next], &end, 10) : 0;
    if (id == 0 || id > INT64_MAX || *end != '\0' || argv[next][0] < '0' || argv[next][0] > '9')
        return gs__cli_usage(&cli, "give one lease ID (see gpushare leases)");
    gs_client_t *client = NULL;
    json_t *reply = NULL;
    result = gs__cli_connect(&cli, &client);
    if (result == GS_EXIT_OK)
        result = gs__cli_call(&cli, client,
                              json_pack("{s:s, s:I}", "op", op, "lease", (json_int_t)id), &reply);
    gs_client_close(client);
    if (result != GS_EXIT_OK)
        return result;
    if (cli.json)
        gs__cli_print_json(reply);
    else if (strcmp(gs__cli_str(reply, "resume"), "waiting") == 0)
        printf("lease %llu resumes by itself when it fits: %s\n", id, gs__cli_str(reply, "reason"));
    else
        printf("lease %llu %s (%llu processes)\n", id,
               strcmp(op, "suspend") == 0 ? "suspended" : "resumed",
               (unsigned long long)gs__cli_uint(reply, "processes"));
    json_decref(reply);
    return GS_EXIT_OK;
}

int gs_cli_suspend(int argc, char **argv)
{
    return lease_op(argc, argv, "suspend");
}

int gs_cli_resume(int argc, char **argv)
{
    return lease_op(argc, argv, "resume");
}
