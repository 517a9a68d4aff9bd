/* SPDX-License-Identifier: Apache-2.0 */
/* The pod sandbox's process of the k8s-real cluster (scripts/k8s/cluster.sh): what the pause
 * image of Kubernetes does, written here because no image registry is reachable. It holds the
 * pod's namespaces as PID 1: reaps the children it inherits, exits 0 on SIGINT or SIGTERM.
 * Built static (cc -static) and packed into an image by scripts/k8s/oci-image.py. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void)
{
    struct sigaction stop = {.sa_handler = on_stop};
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGCHLD, &child, NULL);
    for (;;) {
        pause();
    }
    return EXIT_FAILURE;
}
