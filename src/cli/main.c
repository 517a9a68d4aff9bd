/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare: the command-line entry point; dispatches to one subcommand. */
#include "cli.h"
#include "gpushare/version.h"

#include <stdio.h>
#include <string.h>

/* A subcommand built by another part of the project may be absent from this build. */
#pragma weak gs_cli_plan

static const gs_cli_command_t commands[] = {
    {"run", "run a command with a GPU lease: gpushare run --gpu-memory 4G -- CMD", gs_cli_run},
    {"status", "show the node's GPUs, their leases and waiting requests", gs_cli_status},
    {"top", "show the status, refreshed every second", gs_cli_top},
    {"leases", "list your leases and waiting requests (root: all)", gs_cli_leases},
    {"release", "release leases by id", gs_cli_release},
    {"suspend", "suspend a lease: its GPU memory to host memory, its capacity to others",
     gs_cli_suspend},
    {"resume", "resume a suspended lease when its memory fits again", gs_cli_resume},
    {"history", "list finished leases: who, what, when, how long, peak memory", gs_cli_history},
    {"cdi", "a lease for containers: gpushare cdi add NAME --gpu-memory 4G (CDI device)",
     gs_cli_cdi},
    {"doctor", "check that this node is ready for leases, with a fix for each problem",
     gs_cli_doctor},
    {"plan", "replay a workload trace or plan capacity and cost", gs_cli_plan},
    {"mig", "plan MIG layouts: gpushare mig plan --model A100-40GB --gpu-memory 4G,12G",
     gs_cli_mig},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: gpushare COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (commands[i].run != NULL)
            fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out, "\nRun 'gpushare help COMMAND' or 'gpushare COMMAND --help' for a command's "
                 "options;\n'gpushare --version' for the version. See gpushare(1).\n");
}

static const gs_cli_command_t *find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(name, commands[i].name) == 0 && commands[i].run != NULL)
            return &commands[i];
    }
    return NULL;
}

static int unknown(const char *name)
{
    fprintf(stderr, "gpushare: unknown command \"%s\" (see gpushare --help)\n", name);
    return GS_EXIT_USAGE;
}

/* gpushare help [COMMAND]: the general help, or the command's own (as COMMAND --help). */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    const gs_cli_command_t *cmd = find(argv[2]);
    if (cmd == NULL)
        return unknown(argv[2]);
    char *sub[] = {argv[2], "--help", NULL};
    return cmd->run(2, sub);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return GS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0)
        return help(argc, argv);
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("gpushare %s\n", GS_VERSION);
        return GS_EXIT_OK;
    }
    const gs_cli_command_t *cmd = find(argv[1]);
    if (cmd == NULL)
        return unknown(argv[1]);
    return cmd->run(argc - 1, argv + 1);
}
