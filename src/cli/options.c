/* SPDX-License-Identifier: Apache-2.0 */
/* A subcommand's options, parsed from its table (daemon_cli.h, gs__cli_options): one getopt loop
 * for every subcommand, with --help, --json and --socket the same everywhere. */
#include "cli.h"
#include "daemon_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define OPTS_MAX    32
#define CODE_JSON   (-2)
#define CODE_SOCKET (-3)

static const gs__cli_opt_t *find(const gs__cli_opt_t *opts, int code)
{
    for (const gs__cli_opt_t *o = opts; o != NULL && o->name != NULL; o++) {
        if (o->code == code)
            return o;
    }
    return NULL;
}

/* getopt_long's tables from the subcommand's: its options, then --json, --socket and --help. */
static void build(const gs__cli_args_t *args, struct option *longopts, char *shorts, size_t len)
{
    size_t n = 0, k = 0;
    for (const gs__cli_opt_t *o = args->opts; o != NULL && o->name != NULL && n < OPTS_MAX; o++) {
        longopts[n++] =
            (struct option){o->name, o->value ? required_argument : no_argument, NULL, o->code};
        if (o->letter != 0 && k + 3 < len) {
            shorts[k++] = o->letter;
            if (o->value)
                shorts[k++] = ':';
        }
    }
    longopts[n++] = (struct option){"json", no_argument, NULL, CODE_JSON};
    if (args->flags & GS__CLI_SOCKET)
        longopts[n++] = (struct option){"socket", required_argument, NULL, CODE_SOCKET};
    longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    shorts[k] = '\0';
}

/* One option with its value: checked, then --socket here and the others by the handler. */
static int take(gs__cli_t *cli, const gs__cli_args_t *args, int code, char *value)
{
    if (code == CODE_JSON) {
        cli->json = 1;
        return 0;
    }
    const gs__cli_opt_t *o = find(args->opts, code);
    if (value != NULL && (args->flags & GS__CLI_CHECK)) {
        char name[64];
        snprintf(name, sizeof(name), "--%s", code == CODE_SOCKET ? "socket" : o->name);
        if (gs__cli_value(cli, name, value) != 0)
            return GS_EXIT_USAGE;
    }
    if (code == CODE_SOCKET) {
        cli->socket = value;
        return 0;
    }
    return args->handle != NULL ? args->handle(args->ctx, code, value) : 0;
}

int gs__cli_options(gs__cli_t *cli, int argc, char **argv, const gs__cli_args_t *args, int *next)
{
    struct option longopts[OPTS_MAX + 4];
    char letters[2 * OPTS_MAX + 1], shorts[2 * OPTS_MAX + 8];
    build(args, longopts, letters, sizeof(letters));
    snprintf(shorts, sizeof(shorts), "%s:h%s", (args->flags & GS__CLI_COMMAND) ? "+" : "", letters);
    /* --json changes how errors read: find it before any error can be printed. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        cli->json |= strcmp(argv[i], "--json") == 0;
    optind = 0; /* glibc: start over, whatever ran getopt before */
    opterr = 0;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, shorts, longopts, &li)) != -1) {
        const char *abbreviated = li >= 0 && c != '?' && c != ':'
                                      ? gs__cli_abbreviated(argv, optarg, longopts[li].name)
                                      : NULL;
        if (abbreviated != NULL)
            return gs__cli_usage(cli, "unknown option \"%.*s\" (did you mean --%s?)",
                                 (int)strcspn(abbreviated, "="), abbreviated, longopts[li].name);
        li = -1;
        if (c == 'h')
            return GS__CLI_HELP;
        if (c == '?' || c == ':')
            return gs__cli_bad_option(cli, c, argv);
        int status = take(cli, args, c, optarg);
        if (status != 0)
            return status;
    }
    *next = optind;
    return 0;
}
