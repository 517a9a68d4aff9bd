/* SPDX-License-Identifier: Apache-2.0 */
/* CDI specs of keyed leases and of gpusim's node (see gpushare/cdi.h). */
#include "gpushare/cdi.h"

#include "gpushare/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_MAX_CDI 4096

int gs_cdi_name_check(const char *name, char *err, size_t errlen)
{
    size_t n = strnlen(name, GS_CDI_NAME_MAX);
    if (n == 0 || n >= GS_CDI_NAME_MAX ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n ||
        name[0] == '.' || name[0] == '-')
        return gs_fail(err, errlen, GS_EINVAL,
                       "a CDI device name is 1 to %d letters, digits and _.- (not starting with . "
                       "or -)",
                       GS_CDI_NAME_MAX - 1);
    return 0;
}

/* "KEY=VALUE" strings of env, GPUSHARE_REGION turned to the lease's socket in the container and
 * the shim preloaded. GPUSIM_STATE, the host's path of gpusim's node, is left out: in a container
 * the node is gpusim's own device's (GS_CDI_GPUSIM_STATE), and a runtime applies the devices'
 * edits in the order given, so the host's path would win whenever the lease's device came after
 * gpusim's (the order docs/containers.md gives). NULL when env has no gpushared region. */
static json_t *container_env(const json_t *env)
{
    const char *key;
    json_t *value, *out = json_array();
    const char *region = json_string_value(json_object_get(env, "GPUSHARE_REGION"));
    unsigned long long id = 0;
    if (out == NULL || region == NULL || sscanf(region, "gpushared:%llu:", &id) != 1) {
        json_decref(out);
        return NULL;
    }
    char line[PATH_MAX_CDI];
    json_object_foreach((json_t *)env, key, value)
    {
        if (strcmp(key, "GPUSHARE_REGION") == 0 || strcmp(key, "LD_PRELOAD") == 0 ||
            strcmp(key, "GPUSIM_STATE") == 0 || !json_is_string(value))
            continue;
        snprintf(line, sizeof(line), "%s=%s", key, json_string_value(value));
        json_array_append_new(out, json_string(line));
    }
    snprintf(line, sizeof(line), "GPUSHARE_REGION=gpushared:%llu:" GS_CDI_SOCKET_DIR "/lease.sock",
             id);
    json_array_append_new(out, json_string(line));
    json_array_append_new(out, json_string("LD_PRELOAD=" GS_CDI_SHIM));
    return out;
}

static json_t *mount(const char *host, const char *container, int writable)
{
    return json_pack("{s:s, s:s, s:[s, s]}", "hostPath", host, "containerPath", container,
                     "options", writable ? "rw" : "ro", "rbind");
}

static void add_arg(json_t *args, const char *option, const char *value)
{
    if (args != NULL && value != NULL) {
        json_array_append_new(args, json_string(option));
        json_array_append_new(args, json_string(value));
    }
}

/* One OCI hook running "gpushare cdi hook WHAT --key KEY [--socket S] [--dir D --name N]". */
static json_t *hook(const gs_cdi_lease_t *l, const char *when, const char *what)
{
    json_t *args =
        json_pack("[s, s, s, s, s, s]", "gpushare", "cdi", "hook", what, "--key", l->key);
    add_arg(args, "--socket", l->main_socket);
    if (strcmp(what, "release") == 0 && l->spec_dir != NULL) {
        add_arg(args, "--dir", l->spec_dir);
        add_arg(args, "--name", l->name);
    }
    return json_pack("{s:s, s:s, s:o}", "hookName", when, "path", l->gpushare, "args", args);
}

/* The spec of one device of kind with edits (stolen). */
static json_t *spec_of(const char *kind, const char *name, json_t *edits)
{
    return json_pack("{s:s, s:s, s:[{s:s, s:o}]}", "cdiVersion", GS_CDI_VERSION, "kind", kind,
                     "devices", "name", name, "containerEdits", edits);
}

/* The spec's mounts: the lease's socket directory, the shim, and on an mps GPU the MPS pipe
 * directory where the lease's environment names it (the container's CUDA reaches the GPU's MPS
 * server through it). */
static json_t *mounts_of(const gs_cdi_lease_t *l, const char *socket_dir)
{
    const char *pipe = json_string_value(json_object_get(l->env, "CUDA_MPS_PIPE_DIRECTORY"));
    json_t *mounts = json_pack("[o, o]", mount(socket_dir, GS_CDI_SOCKET_DIR, 0),
                               mount(l->shim, GS_CDI_SHIM, 0));
    if (mounts != NULL && pipe != NULL && pipe[0] == '/' &&
        json_array_append_new(mounts, mount(pipe, pipe, 1)) != 0) {
        json_decref(mounts);
        return NULL;
    }
    return mounts;
}

/* The OCI hooks: attach at createRuntime, and release at poststop unless l->keep_lease. */
static json_t *hooks_of(const gs_cdi_lease_t *l)
{
    json_t *hooks = json_pack("[o]", hook(l, "createRuntime", "attach"));
    if (hooks != NULL && !l->keep_lease &&
        json_array_append_new(hooks, hook(l, "poststop", "release")) != 0) {
        json_decref(hooks);
        return NULL;
    }
    return hooks;
}

json_t *gs_cdi_lease_spec(const gs_cdi_lease_t *l, char *err, size_t errlen)
{
    if (gs_cdi_name_check(l->name, err, errlen) != 0)
        return NULL;
    const char *slash = l->socket != NULL ? strrchr(l->socket, '/') : NULL;
    json_t *env = container_env(l->env);
    if (slash == NULL || slash == l->socket || env == NULL) {
        json_decref(env);
        gs_fail(err, errlen, GS_EINVAL, "not a keyed lease of gpushared (no socket or region)");
        return NULL;
    }
    char dir[PATH_MAX_CDI];
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - l->socket), l->socket);
    json_t *edits =
        json_pack("{s:o, s:o, s:o}", "env", env, "mounts", mounts_of(l, dir), "hooks", hooks_of(l));
    json_t *spec = edits != NULL ? spec_of(GS_CDI_KIND, l->name, edits) : NULL;
    if (spec == NULL)
        gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    return spec;
}

json_t *gs_cdi_gpusim_spec(const char *name, const char *sim_dir, const char *state_dir,
                           const char *devices, char *err, size_t errlen)
{
    if (gs_cdi_name_check(name, err, errlen) != 0)
        return NULL;
    json_t *edits =
        json_pack("{s:[s, s], s:[o, o]}", "env", "LD_LIBRARY_PATH=" GS_CDI_GPUSIM_DIR,
                  "GPUSIM_STATE=" GS_CDI_GPUSIM_STATE, "mounts",
                  mount(sim_dir, GS_CDI_GPUSIM_DIR, 0), mount(state_dir, GS_CDI_GPUSIM_STATE, 1));
    if (edits != NULL && devices != NULL && devices[0] != '\0') {
        char line[PATH_MAX_CDI];
        snprintf(line, sizeof(line), "GPUSIM_DEVICES=%s", devices);
        if (json_array_append_new(json_object_get(edits, "env"), json_string(line)) != 0) {
            json_decref(edits);
            edits = NULL;
        }
    }
    json_t *spec = edits != NULL ? spec_of(GS_CDI_GPUSIM_KIND, name, edits) : NULL;
    if (spec == NULL)
        gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    return spec;
}

/* The spec's file name in dir: KIND-NAME.json, '/' of the kind as '_'. */
static int file_of(const char *dir, const char *kind, const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s-%s.json", dir, kind, name);
    if (n < 0 || (size_t)n >= len)
        return GS_ERANGE;
    for (char *p = buf + strlen(dir) + 1; *p != '\0'; p++)
        *p = *p == '/' ? '_' : *p;
    return 0;
}

/* Nonzero when a spec file of dir already defines device kind=name. */
static int defined_in(const char *dir, const char *kind, const char *name)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d != NULL && !found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char path[PATH_MAX_CDI];
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0 ||
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        json_t *spec = json_load_file(path, 0, NULL), *dev;
        size_t i;
        const char *k = json_string_value(json_object_get(spec, "kind"));
        json_array_foreach(json_object_get(spec, "devices"), i, dev)
        {
            const char *dn = json_string_value(json_object_get(dev, "name"));
            found |= k != NULL && dn != NULL && strcmp(k, kind) == 0 && strcmp(dn, name) == 0;
        }
        json_decref(spec);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

int gs_cdi_check(const char *dir, const char *kind, const char *name, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0)
        return gs_fail(err, errlen, GS_EACCES,
                       "the CDI spec directory %s is not a writable "
                       "directory",
                       dir);
    if (defined_in(dir, kind, name))
        return gs_fail(err, errlen, GS_EEXIST, "CDI device %s=%s exists already in %s", kind, name,
                       dir);
    return 0;
}

int gs_cdi_write(const char *dir, const json_t *spec, char *err, size_t errlen)
{
    const char *kind = json_string_value(json_object_get(spec, "kind"));
    json_t *dev = json_array_get(json_object_get(spec, "devices"), 0);
    const char *name = json_string_value(json_object_get(dev, "name"));
    char path[PATH_MAX_CDI], tmp[PATH_MAX_CDI + 16];
    if (kind == NULL || name == NULL || file_of(dir, kind, name, path, sizeof(path)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "not a CDI spec of one device");
    int checked = gs_cdi_check(dir, kind, name, err, errlen);
    if (checked != 0)
        return checked;
    snprintf(tmp, sizeof(tmp), "%s/.gpushare-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return gs_fail(err, errlen, -errno, "cannot write in %s: %s", dir, strerror(errno));
    int result = fchmod(fd, 0600) == 0 && json_dumpfd(spec, fd, JSON_INDENT(2)) == 0 &&
                         write(fd, "\n", 1) == 1 && fsync(fd) == 0
                     ? 0
                     : -errno;
    close(fd);
    /* link, not rename: a spec of the same name made meanwhile is never replaced. */
    if (result == 0 && link(tmp, path) != 0)
        result = errno == EEXIST ? GS_EEXIST : -errno;
    unlink(tmp);
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot write %s: %s", path,
                       result == GS_EEXIST ? "it exists already" : strerror(-result));
    return 0;
}

int gs_cdi_remove(const char *dir, const char *kind, const char *name, char *err, size_t errlen)
{
    char path[PATH_MAX_CDI];
    if (file_of(dir, kind, name, path, sizeof(path)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "CDI spec path too long");
    if (unlink(path) != 0 && errno != ENOENT)
        return gs_fail(err, errlen, -errno, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

/* The value after "--key" in the args of one of hooks. */
static const char *hook_key(const json_t *hooks)
{
    size_t i, j;
    json_t *h, *arg;
    json_array_foreach(hooks, i, h)
    {
        const json_t *args = json_object_get(h, "args");
        json_array_foreach(args, j, arg)
        {
            const char *next = json_string_value(json_array_get(args, j + 1));
            if (json_is_string(arg) && strcmp(json_string_value(arg), "--key") == 0 && next)
                return next;
        }
    }
    return NULL;
}

int gs_cdi_spec_key(const char *dir, const char *name, char *key, size_t len, char *err,
                    size_t errlen)
{
    char path[PATH_MAX_CDI];
    if (gs_cdi_name_check(name, err, errlen) != 0)
        return GS_EINVAL;
    if (file_of(dir, GS_CDI_KIND, name, path, sizeof(path)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "CDI spec path too long");
    json_t *spec = json_load_file(path, 0, NULL);
    if (spec == NULL)
        return gs_fail(err, errlen, GS_ENOENT, "no CDI device %s=%s in %s", GS_CDI_KIND, name, dir);
    json_t *dev = json_array_get(json_object_get(spec, "devices"), 0);
    const char *found = hook_key(json_object_get(json_object_get(dev, "containerEdits"), "hooks"));
    int result = found != NULL && strlen(found) < len ? 0 : GS_EINVAL;
    if (result == 0)
        snprintf(key, len, "%s", found);
    else
        gs_fail(err, errlen, GS_EINVAL, "%s is not a spec of gpushare cdi add (no --key)", path);
    json_decref(spec);
    return result;
}
