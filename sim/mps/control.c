/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-cuda-mps-control: NVIDIA's MPS control interface over the simulated node.
 *   nvidia-cuda-mps-control -d    start the control daemon in the background
 *   nvidia-cuda-mps-control -f    run it in the foreground
 *   nvidia-cuda-mps-control       send the commands on standard input to the running daemon
 *   nvidia-cuda-mps-control --version   gpusim's version (NVIDIA's has no such option)
 * The daemon's directories are CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps) and
 * CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps). */
#include <stdio.h>
#include <string.h>

#include "gpushare/version.h"
#include "mps_internal.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: nvidia-cuda-mps-control [-d | -f | --version]\n"
                 "  -d   start the MPS control daemon in the background\n"
                 "  -f   start the MPS control daemon in the foreground\n"
                 "  (no option) read commands from standard input and send them to the daemon:\n"
                 "       quit, get_server_list, start_server -uid UID, get_client_list PID,\n"
                 "       get_server_status PID,\n"
                 "       set_default_active_thread_percentage N,\n"
                 "       get_default_active_thread_percentage,\n"
                 "       set_default_device_pinned_mem_limit DEV VALUE,\n"
                 "       get_default_device_pinned_mem_limit DEV\n");
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return mpsd_send_commands(stdin, stdout);
    if (argc == 2 && strcmp(argv[1], "-d") == 0)
        return mpsd_run(1);
    if (argc == 2 && strcmp(argv[1], "-f") == 0)
        return mpsd_run(0);
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("nvidia-cuda-mps-control (gpusim) %s\n", GS_VERSION);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "nvidia-cuda-mps-control: unknown option \"%s\"\n", argv[1]);
    usage(stderr);
    return 1;
}
