/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare-scheduler-extender's commands (main.c: serve; main_replay.c: replay). */
#ifndef GS_K8S_MAIN_H
#define GS_K8S_MAIN_H

/* Prints "gpushare-scheduler-extender: <msg>" and a pointer to --help on stderr; returns 2. */
int gs__ext_usage(const char *msg);

/* `gpushare-scheduler-extender replay ...` (argv[0] is "replay"). Returns the exit status. */
int gs__ext_replay_main(int argc, char **argv);

#endif
