/* SPDX-License-Identifier: Apache-2.0 */
/* Unary gRPC services on gRPC core's C API (rpc.h): one server, one completion queue and one
 * thread per socket; each call is read whole, handed to its handler and answered with one
 * message and a status. */
#include "rpc.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PATH_ROOM 320 /* "/<package>.<Service>/<Method>" */

typedef struct slot {
    gs__rpc_method_t m;
    const ProtobufCMethodDescriptor *md;
    void *handle; /* grpc_server_register_method's */
    char path[PATH_ROOM];
} slot_t;

enum { TAG_CALL, TAG_DONE, TAG_SHUTDOWN };

/* A call from its request to its end: the tag of the completion queue's events about it. */
typedef struct call {
    int kind;
    int method; /* index into slots; -1: a method the server does not have */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array metadata;
    grpc_byte_buffer *payload;
    grpc_call_details details; /* only for method -1 */
    grpc_byte_buffer *response;
    grpc_slice status_details;
    int cancelled;
} call_t;

struct gs__rpc_server {
    grpc_server *server;
    grpc_completion_queue *cq;
    pthread_t thread;
    int running;
    int shutdown_tag;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    size_t n;
    slot_t *slots;
};

/* Asks gRPC for the next call of method i (-1: of any method the server lacks). */
static int request_call(gs__rpc_server_t *s, int i)
{
    call_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return GS_ENOMEM;
    c->kind = TAG_CALL;
    c->method = i;
    grpc_metadata_array_init(&c->metadata);
    grpc_call_error e;
    if (i >= 0) {
        e = grpc_server_request_registered_call(s->server, s->slots[i].handle, &c->call,
                                                &c->deadline, &c->metadata, &c->payload, s->cq,
                                                s->cq, c);
    } else {
        grpc_call_details_init(&c->details);
        e = grpc_server_request_call(s->server, &c->call, &c->details, &c->metadata, s->cq, s->cq,
                                     c);
    }
    if (e != GRPC_CALL_OK) {
        gs_warn("gRPC %s: cannot wait for calls (error %d)", s->path, (int)e);
        grpc_metadata_array_destroy(&c->metadata);
        if (i < 0)
            grpc_call_details_destroy(&c->details);
        free(c);
        return GS_EIO;
    }
    return 0;
}

static void call_free(call_t *c)
{
    if (c->call != NULL)
        grpc_call_unref(c->call);
    if (c->payload != NULL)
        grpc_byte_buffer_destroy(c->payload);
    if (c->response != NULL)
        grpc_byte_buffer_destroy(c->response);
    if (c->kind == TAG_DONE)
        grpc_slice_unref(c->status_details);
    if (c->method < 0)
        grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->metadata);
    free(c);
}

/* Runs the handler of call c: the status code, the packed response in c->response. */
static int run_handler(const slot_t *slot, call_t *c, char *msg, size_t msglen)
{
    if (c->payload == NULL) {
        snprintf(msg, msglen, "%s: no request message", slot->path);
        return GS_RPC_INVALID_ARGUMENT;
    }
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, c->payload)) {
        snprintf(msg, msglen, "%s: unreadable request", slot->path);
        return GS_RPC_INTERNAL;
    }
    grpc_slice whole = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    ProtobufCMessage *req = protobuf_c_message_unpack(
        slot->md->input, NULL, GRPC_SLICE_LENGTH(whole), GRPC_SLICE_START_PTR(whole));
    grpc_slice_unref(whole);
    if (req == NULL) {
        snprintf(msg, msglen, "%s: the request is not a valid %s", slot->path,
                 slot->md->input->name);
        return GS_RPC_INVALID_ARGUMENT;
    }
    uint8_t first[1024]; /* the buffer's start; it grows on the heap beyond */
    ProtobufCBufferSimple out = PROTOBUF_C_BUFFER_SIMPLE_INIT(first);
    int code = slot->m.handler(slot->m.ctx, req, &out.base, msg, msglen);
    protobuf_c_message_free_unpacked(req, NULL);
    if (code == GS_RPC_OK) {
        grpc_slice s = grpc_slice_from_copied_buffer((const char *)out.data, out.len);
        c->response = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
    }
    PROTOBUF_C_BUFFER_SIMPLE_CLEAR(&out);
    return code;
}

/* Answers call c: its response (if any) and status; the batch's end frees it. */
static void answer(gs__rpc_server_t *s, call_t *c)
{
    char msg[1024] = "";
    int code = GS_RPC_UNIMPLEMENTED;
    if (c->method >= 0)
        code = run_handler(&s->slots[c->method], c, msg, sizeof(msg));
    else
        snprintf(msg, sizeof(msg), "unknown method %.*s", (int)GRPC_SLICE_LENGTH(c->details.method),
                 (const char *)GRPC_SLICE_START_PTR(c->details.method));
    if (code != GS_RPC_OK)
        gs_debug("gRPC %s: status %d: %s", s->path, code, msg);
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (c->response != NULL) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->response;
    }
    c->kind = TAG_DONE;
    c->status_details = grpc_slice_from_copied_string(msg);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)code;
    ops[n++].data.send_status_from_server.status_details = &c->status_details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK) {
        gs_warn("gRPC %s: cannot answer a call", s->path);
        call_free(c);
    }
}

static void *serve_loop(void *arg)
{
    gs__rpc_server_t *s = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (ev.tag == &s->shutdown_tag) {
            grpc_completion_queue_shutdown(s->cq);
            continue;
        }
        call_t *c = ev.tag;
        if (c->kind == TAG_DONE || !ev.success) {
            call_free(c); /* answered, or a request cancelled by the shutdown */
            continue;
        }
        request_call(s, c->method); /* the next call of this method */
        answer(s, c);
    }
    return NULL;
}

/* Fills the slots from the methods: descriptors and paths. */
static int slots_init(gs__rpc_server_t *s, const gs__rpc_method_t *methods, size_t n, char *err,
                      size_t errlen)
{
    if ((s->slots = calloc(n, sizeof(*s->slots))) == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        slot_t *slot = &s->slots[i];
        slot->m = methods[i];
        slot->md =
            protobuf_c_service_descriptor_get_method_by_name(methods[i].service, methods[i].name);
        if (slot->md == NULL)
            return gs_fail(err, errlen, GS_EINVAL, "service %s has no method %s",
                           methods[i].service->name, methods[i].name);
        snprintf(slot->path, sizeof(slot->path), "/%s/%s", methods[i].service->name,
                 methods[i].name);
        slot->handle = grpc_server_register_method(s->server, slot->path, NULL,
                                                   GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
        if (slot->handle == NULL)
            return gs_fail(err, errlen, GS_EINVAL, "cannot register %s", slot->path);
    }
    return 0;
}

/* Removes a socket left at path by an earlier run; any other file stays and is an error. */
static int clear_path(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode))
        return gs_fail(err, errlen, GS_EEXIST, "%s exists and is not a socket", path);
    if (unlink(path) != 0)
        return gs_fail(err, errlen, -errno, "cannot remove the old socket %s: %s", path,
                       strerror(errno));
    return 0;
}

/* Listens and starts the thread; s->server and s->cq exist, the methods are registered. */
static int listen_and_start(gs__rpc_server_t *s, char *err, size_t errlen)
{
    char addr[sizeof(s->path) + 8];
    snprintf(addr, sizeof(addr), "unix:%s", s->path);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port == 0)
        return gs_fail(err, errlen, GS_EIO, "gRPC cannot listen on %s", s->path);
    grpc_server_start(s->server);
    s->running = 1;
    for (int i = -1; i < (int)s->n; i++)
        if (request_call(s, i) != 0)
            return gs_fail(err, errlen, GS_EIO, "gRPC cannot take calls on %s", s->path);
    int e = pthread_create(&s->thread, NULL, serve_loop, s);
    if (e != 0) {
        s->running = 0;
        return gs_fail(err, errlen, -e, "cannot start a thread: %s", strerror(e));
    }
    s->running = 2;
    return 0;
}

int gs__rpc_serve(const char *path, const gs__rpc_method_t *methods, size_t n,
                  gs__rpc_server_t **out, char *err, size_t errlen)
{
    *out = NULL;
    gs__rpc_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    if (strlen(path) >= sizeof(s->path)) {
        free(s);
        return gs_fail(err, errlen, GS_EINVAL, "socket path too long: %s", path);
    }
    snprintf(s->path, sizeof(s->path), "%s", path);
    grpc_init();
    s->server = grpc_server_create(NULL, NULL);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    int result = slots_init(s, methods, n, err, errlen);
    if (result == 0)
        result = clear_path(path, err, errlen);
    if (result == 0)
        result = listen_and_start(s, err, errlen);
    if (result != 0) {
        gs__rpc_stop(s);
        return result;
    }
    *out = s;
    return 0;
}

void gs__rpc_stop(gs__rpc_server_t *s)
{
    if (s == NULL)
        return;
    if (s->running) {
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        grpc_server_cancel_all_calls(s->server);
    }
    if (s->running == 2) {
        pthread_join(s->thread, NULL);
    } else {
        /* No thread: drain the queue here (the shutdown tag, requests cancelled). */
        if (!s->running)
            grpc_completion_queue_shutdown(s->cq);
        serve_loop(s);
    }
    grpc_server_destroy(s->server);
    grpc_completion_queue_destroy(s->cq);
    grpc_shutdown();
    if (s->running)
        unlink(s->path);
    free(s->slots);
    free(s);
}
