/* SPDX-License-Identifier: Apache-2.0 */
/* The claims this node prepared, one record file each (plugin.h). */
#include "plugin.h"

#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORD_MAX 4096

int gs__record_uid_ok(const char *uid)
{
    size_t n = strlen(uid);
    if (n == 0 || n >= GS_K8S_UID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((uid[i] >= 'a' && uid[i] <= 'z') || (uid[i] >= '0' && uid[i] <= '9') ||
              uid[i] == '-'))
            return 0;
    return 1;
}

static int record_path(const char *dir, const char *uid, const char *suffix, char *buf, size_t len)
{
    if (!gs__record_uid_ok(uid))
        return GS_EINVAL;
    return snprintf(buf, len, "%s/%s.json%s", dir, uid, suffix) < (int)len ? 0 : GS_EINVAL;
}

/* Syncs the directory, so that a rename or an unlink survives a crash of the node. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int gs__record_write(const char *dir, const gs__record_t *r, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (record_path(dir, r->uid, "", path, sizeof(path)) != 0 ||
        record_path(dir, r->uid, ".tmp", tmp, sizeof(tmp)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "no record file for UID \"%.64s\"", r->uid);
    json_t *obj = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:b,s:I}", "version", 1, "uid", r->uid,
                            "namespace", r->ns, "name", r->name, "key", r->key, "cdi", r->cdi,
                            "prepared", r->prepared, "lease", (json_int_t)r->lease);
    char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (text == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), result = 0;
    size_t len = strlen(text);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) != 0 || rename(tmp, path) != 0)
        result = gs_fail(err, errlen, -errno, "cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (result != 0)
        unlink(tmp);
    else
        sync_dir(dir);
    free(text);
    return result;
}

static int field(const json_t *obj, const char *key, char *dst, size_t size)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v == NULL || gs__k8s_copy(dst, size, v, 0) != 0 ? -1 : 0;
}

int gs__record_parse(const char *text, size_t len, gs__record_t *r, char *err, size_t errlen)
{
    json_t *obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    const json_t *lease = json_object_get(obj, "lease");
    memset(r, 0, sizeof(*r));
    int bad = !json_is_object(obj) || json_integer_value(json_object_get(obj, "version")) != 1 ||
              field(obj, "uid", r->uid, sizeof(r->uid)) || !gs__record_uid_ok(r->uid) ||
              field(obj, "namespace", r->ns, sizeof(r->ns)) ||
              field(obj, "name", r->name, sizeof(r->name)) ||
              field(obj, "key", r->key, sizeof(r->key)) ||
              field(obj, "cdi", r->cdi, sizeof(r->cdi)) ||
              !json_is_boolean(json_object_get(obj, "prepared")) || !json_is_integer(lease) ||
              json_integer_value(lease) < 0;
    if (!bad) {
        r->prepared = json_is_true(json_object_get(obj, "prepared"));
        r->lease = (uint64_t)json_integer_value(lease);
    }
    json_decref(obj);
    if (bad) {
        memset(r, 0, sizeof(*r));
        return gs_fail(err, errlen, GS_EFORMAT, "a malformed record");
    }
    return 0;
}

int gs__record_read(const char *dir, const char *uid, gs__record_t *r, char *err, size_t errlen)
{
    char path[PATH_MAX], text[RECORD_MAX];
    if (record_path(dir, uid, "", path, sizeof(path)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "no record file for UID \"%.64s\"", uid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return GS_ENOENT;
    if (fd < 0)
        return gs_fail(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
    ssize_t n = read(fd, text, sizeof(text));
    close(fd);
    char why[GS_PLUGIN_ERR_MAX];
    if (n < 0 || n == (ssize_t)sizeof(text) ||
        gs__record_parse(text, (size_t)n, r, why, sizeof(why)) != 0 || strcmp(r->uid, uid) != 0)
        return gs_fail(err, errlen, GS_EFORMAT, "%s: a malformed record", path);
    return 0;
}

int gs__record_remove(const char *dir, const char *uid, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (record_path(dir, uid, "", path, sizeof(path)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "no record file for UID \"%.64s\"", uid);
    if (unlink(path) != 0 && errno != ENOENT)
        return gs_fail(err, errlen, -errno, "cannot remove %s: %s", path, strerror(errno));
    sync_dir(dir);
    return 0;
}
