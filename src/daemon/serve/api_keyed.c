/* SPDX-License-Identifier: Apache-2.0 */
/* Keyed leases in the API (issue 21, docs/containers.md): acquire by key (the same key gives the
 * same lease, whatever its state), the reply's socket and key, attach (the lease's processes are
 * a cgroup's), and what a connection on a keyed lease's own socket may ask. */
#include "api.h"
#include "lease_socket.h"
#include "views.h"

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/region.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/* The DRA driver's keys (k8s/<claim uid>/<request>, predictable to whoever reads the claim):
 * only the driver's identity (root or lease_admin_group) makes one, so that nobody can make the
 * lease the driver would then find under its key. */
#define DRIVER_KEYS "k8s/"

static json_t *ok_reply(const char *op)
{
    return json_pack("{s:b, s:s}", "ok", 1, "op", op);
}

int gs__api_admin(const gs__daemon_t *d, const gs__cred_t *cred)
{
    if (cred->uid == 0)
        return 1;
    const char *name = d->cfg.lease_admin_group;
    char buf[4096], gbuf[4096];
    struct passwd pw, *who = NULL;
    struct group gr, *admins = NULL;
    if (name[0] == '\0' || getgrnam_r(name, &gr, gbuf, sizeof(gbuf), &admins) != 0 ||
        admins == NULL || getpwuid_r(cred->uid, &pw, buf, sizeof(buf), &who) != 0 || who == NULL)
        return 0;
    gid_t groups[256];
    int n = (int)(sizeof(groups) / sizeof(groups[0]));
    if (getgrouplist(who->pw_name, who->pw_gid, groups, &n) < 0)
        return 0; /* more groups than room: not taken as a member */
    for (int i = 0; i < n; i++) {
        if (groups[i] == admins->gr_gid)
            return 1;
    }
    return 0;
}

/* Nonzero when path names a cgroup of this node: a directory under cgroup v2's root, or under
 * one of the v1 hierarchies mounted in CGROUP_ROOT. */
static int cgroup_exists(const char *path)
{
    char dir[GS__PATH_MAX];
    struct stat st;
    snprintf(dir, sizeof(dir), CGROUP_ROOT "%s", path);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        stat(CGROUP_ROOT "/cgroup.controllers", &st) == 0)
        return 1; /* cgroup v2 mounted at the root */
    DIR *root = opendir(CGROUP_ROOT);
    struct dirent *e;
    int found = 0;
    while (root != NULL && !found && (e = readdir(root)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(dir, sizeof(dir), CGROUP_ROOT "/%s%s", e->d_name, path);
        found = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (root != NULL)
        closedir(root);
    return found;
}

/* A new lease's capability: 16 random bytes in hex. Returns 0 or -errno. */
static int new_capability(char *out, size_t len)
{
    unsigned char bytes[(GS_LEASE_CAP_MAX - 1) / 2];
    if (len < GS_LEASE_CAP_MAX || getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
        return GS_EIO;
    for (size_t i = 0; i < sizeof(bytes); i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    return 0;
}

void gs__api_keyed_reply(gs__daemon_t *d, gs__conn_t *conn, gs__lease_t *lease, json_t *reply,
                         int existing)
{
    char path[GS__PATH_MAX], region[GS__PATH_MAX + 32], err[GS__PATH_MAX + 128];
    if (gs__lease_socket_open(gs__conn_server(conn), lease, err, sizeof(err)) != 0)
        gs_error("%s", err); /* its processes can still join through the main socket */
    json_object_set_new(reply, "key", json_string(lease->rec.request.key));
    json_object_set_new(reply, "existing", json_boolean(existing));
    if (gs__lease_socket_path(d, lease, 0, path, sizeof(path)) == 0) {
        json_object_set_new(reply, "socket", json_string(path));
        snprintf(region, sizeof(region), "gpushared:%llu:%s", (unsigned long long)lease->rec.id,
                 path);
        json_object_set_new(json_object_get(reply, "env"), "GPUSHARE_REGION", json_string(region));
    }
}

/* The reply to an acquire whose key names a live lease: that lease, as granted. */
static void reply_existing(gs__daemon_t *d, gs__conn_t *conn, gs__lease_t *lease)
{
    json_t *reply = ok_reply("acquire");
    int ending = lease->rec.state != GS__LEASE_ACTIVE || lease->kill_at_ms != 0;
    json_object_set_new(reply, "state", json_string(ending ? "ending" : "granted"));
    json_object_set_new(reply, "lease", gs__view_lease(d, lease));
    json_object_set_new(reply, "env", gs__view_env(d, lease));
    if (d->cfg.shim[0] != '\0')
        json_object_set_new(reply, "preload", json_string(d->cfg.shim));
    gs__api_keyed_reply(d, conn, lease, reply, 1);
    gs__conn_send(conn, reply);
}

/* Refuses an acquire by key that would take what is not the request's: a key under
 * DRIVER_KEYS from anyone but the driver's identity, or a key whose lease is another user's than
 * the one the lease is for — root's request included (it asks on the owner's behalf to use it).
 * The owner is named to those who may see every lease. Returns 1 after the error reply, else 0. */
static int key_refused(gs__daemon_t *d, gs__conn_t *conn, const gs_lease_request_t *req,
                       const gs__lease_t *lease, uid_t owner)
{
    char why[GS_LEASE_KEY_MAX + GS__USER_MAX + 128];
    int driver_key = strncmp(req->key, DRIVER_KEYS, strlen(DRIVER_KEYS)) == 0;
    int foreign = lease != NULL && lease->rec.uid != owner;
    if (!driver_key && !foreign)
        return 0; /* the common case: no group lookup */
    int admin = gs__api_admin(d, gs__conn_cred(conn));
    if (driver_key && !admin)
        snprintf(why, sizeof(why),
                 "keys under " DRIVER_KEYS " are the DRA driver's: only root or "
                 "lease_admin_group may make one");
    else if (foreign && admin)
        snprintf(why, sizeof(why),
                 "key %s belongs to user %s (uid %u); release it as that user or pick another name",
                 req->key, lease->rec.user, (unsigned)lease->rec.uid);
    else if (foreign)
        snprintf(why, sizeof(why), "key %s belongs to another user; pick another name", req->key);
    else
        return 0;
    gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_PERMISSION_DENIED, why));
    return 1;
}

int gs__api_keyed_acquire(gs__daemon_t *d, gs__conn_t *conn, gs_lease_request_t *req, uid_t owner)
{
    char why[GS__PATH_MAX + 128];
    gs__lease_t *lease = gs__lease_find_key(d, req->key);
    if (key_refused(d, conn, req, lease, owner))
        return 1;
    if (lease != NULL) {
        reply_existing(d, conn, lease);
        return 1;
    }
    if (req->cgroup[0] != '\0' && !gs__api_admin(d, gs__conn_cred(conn))) {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_PERMISSION_DENIED,
                                          "only root or lease_admin_group may name a cgroup"));
        return 1;
    }
    if (req->cgroup[0] != '\0' && !cgroup_exists(req->cgroup)) {
        snprintf(why, sizeof(why), "\"cgroup\": %s is not a cgroup of this node", req->cgroup);
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_BAD_REQUEST, why));
        return 1;
    }
    if (new_capability(req->capability, sizeof(req->capability)) != 0) {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_INTERNAL,
                                          "cannot draw a capability (getrandom)"));
        return 1;
    }
    return 0;
}

/* The cgroup of process pid: cgroup v2's, else the first v1 hierarchy's that is not the root.
 * Returns 0, or GS_ENOENT (no such process, or in no cgroup but the root). */
static int cgroup_of(pid_t pid, char *out, size_t len)
{
    char buf[4096];
    if (gs_proc_read(pid, "cgroup", buf, sizeof(buf)) == 0)
        return GS_ENOENT;
    out[0] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *path = strchr(line, ':');
        path = path != NULL ? strchr(path + 1, ':') : NULL;
        if (path == NULL || strcmp(path + 1, "/") == 0)
            continue;
        if (strncmp(line, "0::", 3) == 0 || out[0] == '\0')
            snprintf(out, len, "%s", path + 1);
    }
    return out[0] != '\0' ? 0 : GS_ENOENT;
}

void gs__api_attach_cgroup(gs__daemon_t *d, gs__conn_t *conn, const gs_request_t *req)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    char why[GS__PATH_MAX + 128], cgroup[GS_CGROUP_PATH_MAX];
    gs__lease_t *lease = gs__lease_find_key(d, req->key);
    snprintf(cgroup, sizeof(cgroup), "%s", req->cgroup);
    if (!gs__api_admin(d, cred)) {
        gs__conn_send(conn, gs__api_error("attach", GS_WIRE_PERMISSION_DENIED,
                                          "only root or lease_admin_group may attach a cgroup"));
        return;
    }
    if (lease == NULL) {
        snprintf(why, sizeof(why), "no lease has the key %s", req->key);
        gs__conn_send(conn, gs__api_error("attach", GS_WIRE_NOT_FOUND, why));
        return;
    }
    if (req->pid != 0 && cgroup_of(req->pid, cgroup, sizeof(cgroup)) != 0)
        snprintf(why, sizeof(why), "process %d is in no cgroup of its own", (int)req->pid);
    else if (gs_cgroup_path_check(cgroup, why, sizeof(why)) != 0 || !cgroup_exists(cgroup))
        snprintf(why, sizeof(why), "\"cgroup\": %s is not a cgroup of this node", cgroup);
    else if (gs__lease_set_cgroup(d, lease, cgroup, why, sizeof(why)) == 0)
        why[0] = '\0';
    if (why[0] != '\0') {
        gs__conn_send(conn, gs__api_error("attach", GS_WIRE_BAD_REQUEST, why));
        return;
    }
    gs_info("lease %llu (key %s): its processes are cgroup %s's", (unsigned long long)lease->rec.id,
            lease->rec.request.key, cgroup);
    json_t *reply = ok_reply("attach");
    json_object_set_new(reply, "lease", json_integer((json_int_t)lease->rec.id));
    json_object_set_new(reply, "cgroup", json_string(cgroup));
    gs__conn_send(conn, reply);
}

int gs__api_lease_only(gs__conn_t *conn, gs_request_t *req)
{
    uint64_t id = gs__conn_lease_only(conn);
    if (id == 0)
        return 0;
    switch (req->op) {
    case GS_OP_HELLO:
    case GS_OP_LIST:
        return 0;
    case GS_OP_JOIN:
    case GS_OP_COMPUTE_JOIN:
        if (req->lease_id == id)
            return 0;
        break;
    default:
        break;
    }
    char why[160];
    snprintf(why, sizeof(why),
             "this socket serves lease %llu only (hello, list, join, compute_join)",
             (unsigned long long)id);
    gs__conn_send(conn, gs__api_error(gs_op_name(req->op), GS_WIRE_PERMISSION_DENIED, why));
    return -1;
}
