/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare run's parts: options and the lease (run.c), the job it runs in the lease (run_job.c). */
#ifndef GS_CLI_RUN_H
#define GS_CLI_RUN_H

#include <jansson.h>

#include "daemon_cli.h"
#include "gpushare/client.h"

typedef struct run_opts {
    gs__cli_t cli;
    gs_lease_request_t req;
    int verbose;
    char **cmd;
} gs__run_opts_t;

/* run's options (a gs__cli_options table): the lease options, --no-wait ('W') and --verbose
 * ('v'); cdi add takes the same lease options. */
extern const gs__cli_opt_t gs__run_options[];

/* Parses one lease option's value (code c of gs__run_options, not 'W' or 'v') into req.
 * Returns 0 or GS_EXIT_USAGE (printed). */
int gs__run_lease_option(const gs__cli_t *cli, int c, const char *arg, gs_lease_request_t *req);

/* Sends opts->req as an acquire and waits for the grant, saying why it waits. Returns GS_EXIT_OK
 * with *granted (the reply; the caller json_decref's it), or the exit status (printed). */
int gs__run_acquire(gs_client_t *client, const gs__run_opts_t *opts, json_t **granted);

/* Prints one of run's own messages on stderr: text ("gpushare: " and fmt), or with --json the
 * event object (stolen; NULL prints nothing) as one line. */
void gs__run_say(const gs__run_opts_t *opts, json_t *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs the command in the granted lease (reply of acquire) and releases the lease afterwards,
 * saying how the command ended. Returns the command's exit status (128+N for signal N), or
 * GS_EXIT_FAIL when it could not start (printed). *client may be replaced by a new connection
 * when the daemon restarted meanwhile. */
int gs__run_job(gs_client_t **client, const gs__run_opts_t *opts, const json_t *granted);

#endif
