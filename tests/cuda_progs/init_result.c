/* SPDX-License-Identifier: Apache-2.0 */
/* Prints the name of cuInit(0)'s result and the device count (when it succeeded); with the
 * argument "fork", also the result of CUDA calls in a child forked after initialisation. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const char *name_of(CUresult r)
{
    const char *name = "?";
    cuGetErrorName(r, &name);
    return name;
}

int main(int argc, char **argv)
{
    CUresult r = cuInit(0);
    int count = -1;
    if (r == CUDA_SUCCESS)
        CHECK(cuDeviceGetCount(&count));
    printf("%s %d\n", name_of(r), count);
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int n;
            printf("child %s %s\n", name_of(cuInit(0)), name_of(cuDeviceGetCount(&n)));
            fflush(stdout);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
    }
    return 0;
}
