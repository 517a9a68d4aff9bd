/* gpushare: the command-line entry point; dispatches to one subcommand. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* A subcommand built by another part of the project may be absent from this build. */
#pragma weak gs_cli_plan

static const gs_cli_command_t commands[] = {
    {"run", "run a command with a GPU lease: gpushare run --gpu-memory 4G -- CMD", gs_cli_run},
    {"status", "show the node's GPUs and their leases", gs_cli_status},
    {"top", "show the status, refreshed every second", gs_cli_top},
    {"leases", "list your leases (root: all)", gs_cli_leases},
    {"release", "release a lease by id", gs_cli_release},
    {"doctor", "check that this node is ready for leases, with a fix for each problem",
     gs_cli_doctor},
    {"plan", "replay a workload trace or plan capacity and cost", gs_cli_plan},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: gpushare COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (commands[i].run != NULL)
            fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out, "\nRun 'gpushare COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return GS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0 && commands[i].run != NULL)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "gpushare: unknown command \"%s\" (see gpushare --help)\n", argv[1]);
    return GS_EXIT_USAGE;
}
