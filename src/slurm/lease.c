/* SPDX-License-Identifier: Apache-2.0 */
/* The Slurm plugin's conversation with gpushared: acquire a step's lease, join the batch step's,
 * release. */
#include "slurm_plugin.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long gpushared may take to answer, beyond the time a request may wait for room. */
#define REPLY_MARGIN_MS 30000

static const char *socket_of(const gs__slurm_config_t *cfg)
{
    return gs_client_socket_path(cfg->socket[0] != '\0' ? cfg->socket : NULL);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads replies to an acquire until the grant or an error. Returns 0 with *granted, or -errno
 * with one line in err. */
static int await_grant(gs_client_t *client, int64_t deadline, json_t **granted, char *err,
                       size_t errlen)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        json_t *reply = NULL;
        int result = gs_client_recv(client, left > 0 ? (int)left : 0, &reply);
        if (result != 0)
            return gs_fail(err, errlen, result, "gpushared did not answer: %s",
                           result == GS_ECONNREFUSED ? "it closed the connection"
                                                     : gs_strerror(result));
        const char *message = NULL;
        if (gs_reply_error(reply, &message) != NULL) {
            result = gs_fail(err, errlen, GS_ENOFIT, "%s", message);
            json_decref(reply);
            return result;
        }
        const char *state = json_string_value(json_object_get(reply, "state"));
        if (state != NULL && strcmp(state, "granted") == 0) {
            *granted = reply;
            return 0;
        }
        json_decref(reply); /* "queued", or an event: keep waiting */
    }
}

/* Takes the lease id and environment out of a grant. */
static int take_grant(const json_t *granted, gs__slurm_lease_t *out, char *err, size_t errlen)
{
    json_t *id = json_object_get(json_object_get(granted, "lease"), "id");
    json_t *env = json_object_get(granted, "env");
    if (!json_is_integer(id) || json_integer_value(id) <= 0 || !json_is_object(env))
        return gs_fail(err, errlen, GS_EPROTO, "gpushared's grant has no lease id or environment");
    out->id = (uint64_t)json_integer_value(id);
    out->env = json_incref(env);
    return 0;
}

int gs__slurm_acquire(const gs__slurm_config_t *cfg, const gs_lease_request_t *req,
                      gs__slurm_lease_t *out, char *err, size_t errlen)
{
    gs_client_t *client = NULL;
    json_t *msg = NULL, *granted = NULL;
    memset(out, 0, sizeof(*out));
    int result = gs_client_connect(socket_of(cfg), &client, err, errlen);
    if (result != 0)
        goto out;
    msg = gs_proto_acquire_json(req);
    result = msg != NULL ? gs_client_send(client, msg) : GS_ENOMEM;
    if (result != 0) {
        result = gs_fail(err, errlen, result, "cannot ask gpushared for a lease: %s",
                         gs_strerror(result));
        goto out;
    }
    int64_t deadline = now_ms() + (int64_t)cfg->timeout_s * 1000 + REPLY_MARGIN_MS;
    result = await_grant(client, deadline, &granted, err, errlen);
    if (result == 0)
        result = take_grant(granted, out, err, errlen);
    if (result == 0) {
        out->client = client;
        out->holder = getpid();
        client = NULL;
    }
out:
    json_decref(msg);
    json_decref(granted);
    gs_client_close(client); /* on failure: a grant that raced the error ends with it */
    return result;
}

/* The request's sizing as gpushared shows it in a lease's "request". */
static json_t *sizing_of(const gs_lease_request_t *req)
{
    json_t *obj = gs_proto_acquire_json(req);
    static const char *const hidden[] = {"op", "wait", "command", "uid", "gid", "user"};
    for (size_t i = 0; obj != NULL && i < sizeof(hidden) / sizeof(hidden[0]); i++)
        json_object_del(obj, hidden[i]);
    json_object_del(obj, "timeout_ms");
    return obj;
}

/* Whether lease (a LEASE object) is uid's and was asked like req (same size, same GPUs). */
static int joinable(const json_t *lease, uint32_t uid, const gs_lease_request_t *req)
{
    json_t *owner = json_object_get(lease, "uid");
    if (!json_is_integer(owner) || json_integer_value(owner) != (json_int_t)uid)
        return 0;
    json_t *asked = json_deep_copy(json_object_get(lease, "request"));
    json_t *ours = sizing_of(req);
    json_object_del(asked, "timeout_ms");
    int same = asked != NULL && ours != NULL && json_equal(asked, ours);
    json_decref(asked);
    json_decref(ours);
    return same;
}

/* Finds lease id in a list reply. */
static const json_t *find_lease(const json_t *reply, uint64_t id)
{
    size_t i;
    json_t *lease;
    json_array_foreach(json_object_get(reply, "leases"), i, lease)
    {
        json_t *lid = json_object_get(lease, "id");
        if (json_is_integer(lid) && (uint64_t)json_integer_value(lid) == id)
            return lease;
    }
    return NULL;
}

int gs__slurm_join(const gs__slurm_config_t *cfg, uint64_t id, uint32_t uid,
                   const gs_lease_request_t *req, gs__slurm_lease_t *out, char *err, size_t errlen)
{
    gs_client_t *client = NULL;
    json_t *msg = json_pack("{s:s}", "op", "list"), *reply = NULL;
    memset(out, 0, sizeof(*out));
    int result = gs_client_connect(socket_of(cfg), &client, err, errlen);
    if (result == 0 && msg == NULL)
        result = GS_ENOMEM;
    if (result == 0)
        result = gs_client_call(client, msg, REPLY_MARGIN_MS, &reply);
    if (result == 0 && gs_reply_error(reply, NULL) != NULL)
        result = GS_EPROTO;
    if (result != 0) {
        if (client != NULL)
            result = gs_fail(err, errlen, result, "cannot list gpushared's leases: %s",
                             gs_strerror(result));
        goto out;
    }
    const json_t *lease = find_lease(reply, id);
    if (lease != NULL && joinable(lease, uid, req)) {
        out->env = gs__slurm_env_of_lease(lease);
        out->id = out->env != NULL ? id : 0;
        result = out->env != NULL ? 1 : 0;
    }
out:
    json_decref(msg);
    json_decref(reply);
    gs_client_close(client);
    return result;
}

void gs__slurm_release(gs__slurm_lease_t *lease)
{
    if (lease->client != NULL && lease->holder == getpid()) {
        json_t *msg = json_pack("{s:s, s:I}", "op", "release", "lease", (json_int_t)lease->id);
        json_t *reply = NULL;
        if (msg != NULL && gs_client_call(lease->client, msg, 5000, &reply) == 0)
            json_decref(reply);
        json_decref(msg);
        gs_client_close(lease->client);
    }
    /* A forked copy of the holder (a task) leaves the connection to the holder. */
    json_decref(lease->env);
    memset(lease, 0, sizeof(*lease));
}
