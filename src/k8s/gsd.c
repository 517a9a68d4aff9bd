/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's side of the DRA plugin (plugin.h): its status, keyed leases acquired and released
 * over its socket with the client library. */
#include "plugin.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL_MS 10000 /* gpushared answers at once; this is for a daemon that hangs */

/* One request and its reply over a connection of its own. */
static int call(const char *socket, json_t *msg, json_t **reply, char *err, size_t errlen)
{
    gs_client_t *client = NULL;
    char why[GS_CLIENT_ERR_MAX];
    int result;
    *reply = NULL;
    if (msg == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    socket = socket != NULL && socket[0] != '\0' ? socket : NULL;
    if ((result = gs_client_connect(socket, &client, why, sizeof(why))) != 0)
        gs_fail(err, errlen, result, "gpushared: %s", why);
    else if ((result = gs_client_call(client, msg, CALL_MS, reply)) != 0)
        gs_fail(err, errlen, result, "gpushared (%s): %s", gs_client_socket_path(socket),
                gs_strerror(result));
    gs_client_close(client);
    json_decref(msg);
    return result;
}

/* A reply's failure as a code and one line. */
static int reply_failure(const json_t *reply, const char *what, char *err, size_t errlen)
{
    const char *message = NULL;
    const char *code = gs_reply_error(reply, &message);
    if (code == NULL)
        return 0;
    return gs_fail(err, errlen, strcmp(code, "no_fit") == 0 ? GS_ENOFIT : GS_EIO,
                   "gpushared refused the %s: %s", what, message != NULL ? message : code);
}

int gs__gsd_node(const char *socket, gs__node_t *node, char *err, size_t errlen)
{
    json_t *reply = NULL;
    int result = call(socket, json_pack("{s:s}", "op", "status"), &reply, err, errlen);
    if (result == 0)
        result = reply_failure(reply, "status", err, errlen);
    if (result == 0)
        result = gs__node_parse(reply, node, err, errlen);
    json_decref(reply);
    return result;
}

/* The lease's id from an acquire reply: "lease" is its id or its view ({"id": ...}). */
static uint64_t lease_id(const json_t *reply)
{
    const json_t *lease = json_object_get(reply, "lease");
    if (json_is_object(lease))
        lease = json_object_get(lease, "id");
    return json_is_integer(lease) && json_integer_value(lease) > 0
               ? (uint64_t)json_integer_value(lease)
               : 0;
}

static int granted(const json_t *reply, gs__gsd_lease_t *out, char *err, size_t errlen)
{
    const char *state = json_string_value(json_object_get(reply, "state"));
    const char *socket = json_string_value(json_object_get(reply, "socket"));
    const char *preload = json_string_value(json_object_get(reply, "preload"));
    const json_t *env = json_object_get(reply, "env");
    memset(out, 0, sizeof(*out));
    out->id = lease_id(reply);
    if (state == NULL || strcmp(state, "granted") != 0 || out->id == 0 || !json_is_object(env))
        return gs_fail(err, errlen, GS_EPROTO,
                       "gpushared's reply to acquire has no granted lease with its environment");
    out->existing = json_is_true(json_object_get(reply, "existing"));
    snprintf(out->socket, sizeof(out->socket), "%s", socket != NULL ? socket : "");
    snprintf(out->preload, sizeof(out->preload), "%s", preload != NULL ? preload : "");
    out->env = json_incref((json_t *)env);
    return 0;
}

int gs__gsd_acquire(const char *socket, const gs__plan_t *plan, gs__gsd_lease_t *out, char *err,
                    size_t errlen)
{
    json_t *msg = gs_proto_acquire_json(&plan->lease), *reply = NULL;
    int result = call(socket, msg, &reply, err, errlen);
    if (result == 0)
        result = reply_failure(reply, "lease", err, errlen);
    if (result == 0)
        result = granted(reply, out, err, errlen);
    json_decref(reply);
    return result;
}

int gs__gsd_release(const char *socket, const char *key, char *state, size_t len, char *err,
                    size_t errlen)
{
    json_t *reply = NULL;
    int result =
        call(socket, json_pack("{s:s,s:s}", "op", "release", "key", key), &reply, err, errlen);
    if (result == 0)
        result = reply_failure(reply, "release", err, errlen);
    const char *s = json_string_value(json_object_get(reply, "state"));
    snprintf(state, len, "%s", s != NULL ? s : "?");
    json_decref(reply);
    return result;
}
