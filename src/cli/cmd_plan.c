/* SPDX-License-Identifier: Apache-2.0 */
/* `gpushare plan`: dispatches to trace replay or capacity planning; the helpers they share. */
#include "cli.h"
#include "daemon_cli.h"
#include "plan_cli.h"

#include "gpushare/error.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gs__plan_cli_init(gs__cli_t *cli, int argc, char **argv)
{
    gs__cli_init_args(cli, "plan", argc, argv);
    cli->offline = 1;
}

static int parse_ull(const char *text, unsigned long long *value, const char **end)
{
    char *stop = NULL;
    if (*text < '0' || *text > '9')
        return GS_EINVAL;
    errno = 0;
    *value = strtoull(text, &stop, 10);
    if (errno != 0)
        return GS_EINVAL;
    *end = stop;
    return 0;
}

int gs__plan_parse_seeds(const char *text, unsigned long long *seeds, int max)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        unsigned long long a, b;
        if (parse_ull(p, &a, &p) != 0)
            return GS_EINVAL;
        b = a;
        if (*p == '-' && parse_ull(p + 1, &b, &p) != 0)
            return GS_EINVAL;
        if (b < a || b - a >= (unsigned long long)(max - n))
            return GS_EINVAL;
        for (unsigned long long s = a; s <= b; s++)
            seeds[n++] = s;
        if (*p == '\0')
            return n;
        if (*p++ != ',')
            return GS_EINVAL;
    }
}

int gs__plan_parse_policies(const char *text, gs_place_policy_t *policies, int max,
                            const char **bad)
{
    char copy[256];
    int n = 0;
    if (strcasecmp(text, "all") == 0) {
        for (int i = 0; i < GS_PLACE_POLICY_COUNT && i < max; i++)
            policies[n++] = (gs_place_policy_t)i;
        return n;
    }
    if (strlen(text) >= sizeof(copy))
        return GS_EINVAL;
    strcpy(copy, text);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == max || gs_place_policy_parse(tok, &policies[n]) != 0) {
            if (bad != NULL)
                *bad = text;
            return GS_EINVAL;
        }
        n++;
    }
    return n > 0 ? n : GS_EINVAL;
}

int gs__plan_parse_double(const char *text, double min, double max, double *value)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v < min || v > max)
        return GS_EINVAL;
    *value = v;
    return 0;
}

int gs__plan_parse_ratio(const char *text, double min, double max, double *value)
{
    size_t n = strlen(text);
    if (n < 2 || text[n - 1] != '%')
        return gs__plan_parse_double(text, min, max, value);
    char number[64];
    double v;
    if (n - 1 >= sizeof(number))
        return GS_EINVAL;
    memcpy(number, text, n - 1);
    number[n - 1] = '\0';
    if (gs__plan_parse_double(number, min * 100, max * 100, &v) != 0)
        return GS_EINVAL;
    *value = v / 100;
    return 0;
}

void gs__plan_money(double dollars, char *buf, size_t len)
{
    long long cents = llround(dollars * 100.0);
    const char *sign = cents < 0 ? "-" : "";
    unsigned long long c = (unsigned long long)(cents < 0 ? -cents : cents);
    unsigned long long whole = c / 100;
    char digits[32], grouped[48];
    int n = snprintf(digits, sizeof(digits), "%llu", whole), g = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            grouped[g++] = ',';
        grouped[g++] = digits[i];
    }
    grouped[g] = '\0';
    snprintf(buf, len, "%s$%s.%02llu", sign, grouped, c % 100);
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpushare plan [OPTIONS]          how many nodes a workload needs, and the cost\n"
        "       gpushare plan replay [OPTIONS]   replay a trace with placement policies\n"
        "\n"
        "Run 'gpushare plan --help' or 'gpushare plan replay --help' for the options.\n");
}

int gs_cli_plan(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "replay") == 0)
        return gs__plan_replay_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return GS_EXIT_OK;
    }
    if (argc >= 2 && argv[1][0] != '-') {
        gs__cli_t cli;
        gs__plan_cli_init(&cli, argc, argv);
        return gs__cli_fail(&cli, GS_EXIT_USAGE, "usage",
                            "unknown subcommand \"%s\" (see gpushare plan --help)", argv[1]);
    }
    return gs__plan_capacity_main(argc, argv);
}
