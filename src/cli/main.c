/* gpushare: the command-line entry point; dispatches to one subcommand. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const gs_cli_command_t commands[] = {
    {"plan", "replay a workload trace or plan capacity and cost", gs_cli_plan},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: gpushare COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
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
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "gpushare: unknown command \"%s\" (see gpushare --help)\n", argv[1]);
    return GS_EXIT_USAGE;
}
