/* SPDX-License-Identifier: Apache-2.0 */
/* What a job leaves behind: the processes still running below gpushare run (a child subreaper)
 * once the job's main process has ended, stopped the way a Slurm step's are. */
#ifndef GS_CLI_LEFTOVERS_H
#define GS_CLI_LEFTOVERS_H

#include <stdint.h>

/* Counts this process's children that have not exited (zombies are reaped first). */
int gs__cli_leftovers(void);

/* Stops this process's remaining children and, as they die and their own children are adopted,
 * those too: SIGTERM, then SIGKILL to what is left after grace_ms (at once when grace_ms is 0);
 * reaps them all. Only direct children are signalled, whose pids cannot be reused before they
 * are reaped. Returns when none is left. */
void gs__cli_stop_leftovers(int64_t grace_ms);

#endif
