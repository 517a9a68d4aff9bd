/* SPDX-License-Identifier: Apache-2.0 */
/* What gpushare doctor reads of the node's configuration, whether or not gpushared runs: it asks
 * gpushared itself (gpushared --check-config --json), so that the file is read by the one parser
 * that a start would use. */
#ifndef GS_CLI_DOCTOR_CONFIG_H
#define GS_CLI_DOCTOR_CONFIG_H

#include <jansson.h>
#include <stddef.h>

/* Runs `gpushared --check-config --json [--config config]` (config NULL or "": its default),
 * with GPUSIM_STATE=sim_state when that is not NULL or "" (the running daemon's simulated node),
 * for at most 20 s. Returns 0 and *out (a new reference: what gpushared --check-config --json
 * prints), or GS_EINVAL with gpushared's error line in err (a bad configuration), or another code
 * with one line in err (gpushared missing, killed, silent). */
int gs__doctor_read_config(const char *gpushared, const char *config, const char *sim_state,
                           json_t **out, char *err, size_t errlen);

/* Asks the MPS control daemon of pipe_dir for its servers (program: nvidia-cuda-mps-control, a
 * path or a name in PATH), as gpushared does, for at most 5 s. Returns 0 when it answered, or a
 * code with one line in err. */
int gs__doctor_mps_answers(const char *program, const char *pipe_dir, char *err, size_t errlen);

#endif
