/* Helpers shared by the lease subcommands (run, status, top, leases, release). */
#ifndef GS_CLI_DAEMON_CLI_H
#define GS_CLI_DAEMON_CLI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/client.h"

/* How long a request/reply exchange may take before the CLI gives up. */
#define GS_CLI_CALL_TIMEOUT_MS 10000

/* Connects to the daemon (socket: --socket, else $GPUSHARE_SOCKET, else the default). Returns
 * GS_EXIT_OK with *out, or GS_EXIT_FAIL after printing one line. */
int gs__cli_connect(const char *socket, gs_client_t **out);

/* Sends req (stolen) and waits for its reply. Returns GS_EXIT_OK with *reply (the caller
 * json_decref's it), or prints one line ("gpushare: MESSAGE") and returns the exit status for the
 * failure: GS_EXIT_TEMPFAIL for no_fit, timeout and unavailable, GS_EXIT_FAIL otherwise. */
int gs__cli_call(gs_client_t *client, json_t *req, json_t **reply);

/* The exit status for an error code of the protocol. */
int gs__cli_exit_for(const char *code);

/* Prints v as indented JSON and a newline on stdout. */
void gs__cli_print_json(const json_t *v);

/* Parses a duration: seconds ("90", "1.5") or with a unit ("500ms", "30s", "5m", "2h").
 * Returns 0 and *ms (at most a week), or GS_EINVAL with a message in err. */
int gs__cli_parse_duration(const char *text, uint32_t *ms, char *err, size_t errlen);

/* Reads an unsigned integer member of obj (0 when missing). */
uint64_t gs__cli_uint(const json_t *obj, const char *key);

/* Reads a string member of obj ("" when missing). */
const char *gs__cli_str(const json_t *obj, const char *key);

/* Writes bytes for a table: "4.00 GiB", "0 B". */
void gs__cli_bytes(uint64_t bytes, char *buf, size_t len);

/* Prints what a GPU's mode adds to its status rows: a problem, MIG instances, the MPS server
 * (status_modes.c). */
void gs__cli_print_modes(const json_t *gpu);

#endif
