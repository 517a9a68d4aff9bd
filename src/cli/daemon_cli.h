/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the subcommands: errors (text or JSON), options, daemon calls, formats. */
#ifndef GS_CLI_DAEMON_CLI_H
#define GS_CLI_DAEMON_CLI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpushare/client.h"

/* How long a request/reply exchange may take before the CLI gives up. */
#define GS_CLI_CALL_TIMEOUT_MS 10000

/* One run of a subcommand: its name, where the daemon is, and how it prints. */
typedef struct gs__cli {
    const char *cmd;    /* "run", "status", ...: for messages */
    const char *socket; /* --socket, NULL for the default */
    int json;           /* --json: everything the command prints is JSON, errors included */
    FILE *json_errors;  /* where JSON errors go: stdout, or stderr for run (stdout is the job's) */
    int offline;        /* no daemon (plan, mig): every text error is "gpushare CMD: MESSAGE" */
    const char *help;   /* the command of "(see gpushare HELP --help)"; NULL: cmd */
} gs__cli_t;

/* Starts cli for command cmd (JSON errors on stdout). */
void gs__cli_init(gs__cli_t *cli, const char *cmd);

/* gs__cli_init, with cli->json set when an argument is "--json": errors met before getopt
 * reaches it are JSON too. */
void gs__cli_init_args(gs__cli_t *cli, const char *cmd, int argc, char **argv);

/* Prints an error and returns status: "gpushare: MESSAGE" on stderr ("gpushare CMD: MESSAGE"
 * for GS_EXIT_USAGE or an offline cli), or with --json {"ok": false, "error": {"code": CODE,
 * "message": MESSAGE}} on cli->json_errors. Line breaks in MESSAGE become blanks. */
int gs__cli_fail(const gs__cli_t *cli, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A usage error (exit status 2, code "usage"); the text form adds "(see gpushare CMD --help)". */
int gs__cli_usage(const gs__cli_t *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For getopt_long's ':' and '?' returns: the usage error for the option at argv[optind - 1]
 * ("--gpu-memory: missing value" or "unknown option \"--x\""). */
int gs__cli_bad_option(const gs__cli_t *cli, int c, char **argv);

/* After getopt_long returned the long option `name`: the word the user wrote for it when that is
 * an abbreviation of the name (getopt_long takes "--gpu-mem" for --gpu-memory), NULL when it was
 * written in full (or short). optarg_value is getopt's optarg. Options are taken only as
 * written in full: an abbreviation could mean another option in a later version. */
const char *gs__cli_abbreviated(char **argv, const char *optarg_value, const char *name);

/* ---- a subcommand's options (options.c) ---- */

/* One option of a subcommand's table, ended by a NULL name. --help (-h), --json and, with
 * GS__CLI_SOCKET, --socket PATH are every subcommand's and not in its table. */
typedef struct gs__cli_opt {
    const char *name; /* the long name, without "--" */
    int value;        /* it takes a value: --name VALUE or --name=VALUE */
    int code;         /* what the handler is given for it (a letter, positive) */
    char letter;      /* its short option ('v' for -v), 0 for none */
} gs__cli_opt_t;

enum {
    GS__CLI_COMMAND = 1, /* options end at the first argument that is not one (run's CMD) */
    GS__CLI_CHECK = 2,   /* a value that is empty or another option is "--x: missing value" */
    GS__CLI_SOCKET = 4,  /* --socket PATH sets cli->socket */
};

#define GS__CLI_HELP (-1) /* gs__cli_options met --help: the caller prints its usage */

typedef struct gs__cli_args {
    const gs__cli_opt_t *opts;
    unsigned flags; /* GS__CLI_* */
    /* Takes one option of the table: its code and value (NULL for an option without). Returns
     * 0, or an exit status after printing the error. NULL for an empty table. */
    int (*handle)(void *ctx, int code, const char *value);
    void *ctx;
} gs__cli_args_t;

/* Parses the options of argv (argv[0] names the subcommand) by args: the one getopt loop of every
 * subcommand. --json anywhere before "--" sets cli->json before anything is printed. Returns 0
 * with *next the index of the first argument that is not an option, GS__CLI_HELP at --help, or
 * the exit status of a usage error (printed: "unknown option", "missing value", the handler's). */
int gs__cli_options(gs__cli_t *cli, int argc, char **argv, const gs__cli_args_t *args, int *next);

/* Checks an option's value: NULL, empty or another option ("--...", as getopt takes
 * "--gpu-memory --") is "OPTION: missing value" (a usage error, returned); 0 when present. */
int gs__cli_value(const gs__cli_t *cli, const char *option, const char *value);

/* Connects to the daemon (socket: --socket, else $GPUSHARE_SOCKET, else the default). Returns
 * GS_EXIT_OK with *out, or GS_EXIT_FAIL after printing the error (code "unreachable"). */
int gs__cli_connect(const gs__cli_t *cli, gs_client_t **out);

/* Sends req (stolen) and waits for its reply. Returns GS_EXIT_OK with *reply (the caller
 * json_decref's it), or prints the error ("gpushare: MESSAGE", or JSON) and returns the exit
 * status for it (gs__cli_exit_for). */
int gs__cli_call(const gs__cli_t *cli, gs_client_t *client, json_t *req, json_t **reply);

/* Prints the error of a reply with "ok": false (as gs__cli_call does) and returns its exit
 * status. */
int gs__cli_reply_error(const gs__cli_t *cli, const json_t *reply);

/* The exit status for an error code of the protocol: its table's (gpushare/wire_errors.def:
 * GS_EXIT_TEMPFAIL for no_fit, timeout and unavailable), GS_EXIT_FAIL for codes it does not
 * have. */
int gs__cli_exit_for(const char *code);

/* Marks result, the object a command prints with --json, as failed: sets "ok": false and
 * "error": {"code": CODE, "message": MESSAGE}, as in a JSON error, keeping what it holds. For
 * a command whose one object says what went wrong with the rest (a plan that is not possible). */
void gs__cli_set_error(json_t *result, const char *code, const char *message);

/* Prints v as indented JSON and a newline on stdout; reals with 15 significant digits (DBL_DIG:
 * 541.44, not 541.44000000000005). */
void gs__cli_print_json(const json_t *v);

/* Parses a duration: seconds ("90", "1.5") or with a unit ("500ms", "30s", "5m", "2h", "1d").
 * With need_unit a bare number is refused ("add a unit: 90s, 90m or 90h"). Returns 0 and *ms
 * (1 ms to max_ms), or GS_EINVAL with a message in err. */
int gs__cli_parse_duration(const char *text, int need_unit, uint64_t max_ms, uint64_t *ms,
                           char *err, size_t errlen);

/* Reads an unsigned integer member of obj (0 when missing). */
uint64_t gs__cli_uint(const json_t *obj, const char *key);

/* Reads a string member of obj ("" when missing). */
const char *gs__cli_str(const json_t *obj, const char *key);

/* Writes bytes for a table: "4 GiB", "1.50 GiB", "0 B". */
void gs__cli_bytes(uint64_t bytes, char *buf, size_t len);

/* Writes bytes in at most 8 columns for narrow tables: "80G", "1.5G", "512M", "0". */
void gs__cli_bytes_short(uint64_t bytes, char *buf, size_t len);

/* Copies text into buf for a table column of width columns: cut with "~" when longer. Returns
 * buf. */
const char *gs__cli_fit(const char *text, size_t width, char *buf, size_t len);

/* A command for a narrow column: each word that is a path shortened to its last part
 * ("/tmp/me/train.py --lr 1" is "train.py --lr 1"), then cut at the right end to width with "~"
 * (gs__cli_fit). Returns buf. */
const char *gs__cli_fit_command(const char *command, size_t width, char *buf, size_t len);

/* Writes a request's sizing ("request" object of the protocol) as the options that ask for it:
 * "--gpu-memory 40G", "--gpus 1 --gpu-type A100-40GB", "--gpu 0.250 --compute-max 50". */
void gs__cli_request_text(const json_t *request, char *buf, size_t len);

/* Writes the time a lease has left ("1h54m") at now_ms (ms since the epoch), "-" when it has no
 * time limit, "0s" when it passed. */
void gs__cli_time_left(const json_t *lease, int64_t now_ms, char *buf, size_t len);

/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t gs__cli_wall_ms(void);

/* Prints what a GPU's mode adds to its status rows: a problem, MIG instances, the MPS server
 * (status_modes.c). */
void gs__cli_print_modes(const json_t *gpu);

#endif
