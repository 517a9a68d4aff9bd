/* SPDX-License-Identifier: Apache-2.0 */
/* The gpushare command-line tool: one function per subcommand. */
#ifndef GS_CLI_H
#define GS_CLI_H

/* A subcommand: argv[0] is the subcommand's name. Returns the process exit status (0 success,
 * 1 runtime failure, 2 usage error, 75 temporary failure); prints its own errors, one line each
 * (a JSON object with --json). */
typedef int (*gs_cli_command_fn)(int argc, char **argv);

typedef struct gs_cli_command {
    const char *name;
    const char *summary;
    gs_cli_command_fn run;
} gs_cli_command_t;

/* Exit codes shared by all subcommands (sysexits.h values where one fits). */
enum { GS_EXIT_OK = 0, GS_EXIT_FAIL = 1, GS_EXIT_USAGE = 2, GS_EXIT_TEMPFAIL = 75 };

int gs_cli_plan(int argc, char **argv);

/* MIG layouts from the built-in tables (src/cli/mig.c). */
int gs_cli_mig(int argc, char **argv);

/* Leases on this node, through gpushared (src/cli/run.c, status.c, leases.c). */
int gs_cli_run(int argc, char **argv);
int gs_cli_status(int argc, char **argv);
int gs_cli_top(int argc, char **argv);
int gs_cli_leases(int argc, char **argv);
int gs_cli_release(int argc, char **argv);
int gs_cli_suspend(int argc, char **argv); /* suspend.c */
int gs_cli_resume(int argc, char **argv);
int gs_cli_history(int argc, char **argv);

/* A keyed lease as a CDI device for containers, and the hooks its spec names (src/cli/cdi.c). */
int gs_cli_cdi(int argc, char **argv);

/* Checks that the node is ready for leases (src/cli/doctor.c). */
int gs_cli_doctor(int argc, char **argv);

#endif
