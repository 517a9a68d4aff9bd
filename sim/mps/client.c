/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-cuda-mps-control front end: one connection per command line. */
#include "mps_internal.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mps_state.h"

/* Connects to the daemon's socket in the pipe directory. Returns the fd or -1. */
static int connect_daemon(void)
{
    char dir[4096];
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    gsim_mps_pipe_dir(dir, sizeof(dir));
    if (gsim_mps_socket_path(dir, addr.sun_path, sizeof(addr.sun_path)) != 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Sends one command and copies the reply to out. Returns 0 or -1 (no daemon). */
static int send_command(const char *line, FILE *out)
{
    int fd = connect_daemon();
    if (fd < 0)
        return -1;
    char buf[4096];
    int result = write_all(fd, line, strlen(line)) == 0 && write_all(fd, "\n", 1) == 0 ? 0 : -1;
    shutdown(fd, SHUT_WR);
    ssize_t n;
    while (result == 0 && (n = read(fd, buf, sizeof(buf))) > 0)
        fwrite(buf, 1, (size_t)n, out);
    fflush(out);
    close(fd);
    return result;
}

int mpsd_send_commands(FILE *in, FILE *out)
{
    char line[1024];
    while (fgets(line, sizeof(line), in) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *cmd = line + strspn(line, " \t");
        if (*cmd == '\0')
            continue;
        if (send_command(cmd, out) != 0) {
            fprintf(stderr, "Cannot find MPS control daemon process\n");
            return 1;
        }
    }
    return 0;
}
