/* SPDX-License-Identifier: Apache-2.0 */
/* Unary gRPC services over a unix socket, for gpushare-k8s: the kubelet's plugin registration
 * and DRA services, their messages protobuf-c's, their transport gRPC core's C library.
 *
 * Why gRPC core (Debian's libgrpc, the C API that grpcio, grpc-ruby and grpc-php wrap) and
 * protobuf-c rather than an HTTP/2 library with framing of our own: the kubelet speaks grpc-go,
 * and what a gRPC server must get right besides the five-byte framing (HTTP/2 flow control and
 * GOAWAY, trailers, deadlines, keepalive pings, compression negotiation, status codes for unknown
 * methods) is what gRPC's own interoperability suite tests between core and grpc-go. protobuf-c
 * generates the messages from gpushare's .proto files (src/k8s/proto) at build time, and its
 * service descriptors give each method's path and message types, so a server here is a table of
 * handlers.
 *
 * A server serves its methods one call at a time on a thread of its own: a handler may block
 * (the DRA plugin's calls talk to the API server and gpushared), and the kubelet waits for each
 * call with a deadline of its own. Calls to methods the server does not have are answered
 * UNIMPLEMENTED. Thread-safety: start and stop a server from one thread; handlers run on the
 * server's thread. */
#ifndef GS_K8S_RPC_H
#define GS_K8S_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* gRPC status codes used here (grpc/status.h has them all). */
#define GS_RPC_OK               0
#define GS_RPC_UNKNOWN          2
#define GS_RPC_INVALID_ARGUMENT 3
#define GS_RPC_UNIMPLEMENTED    12
#define GS_RPC_INTERNAL         13
#define GS_RPC_UNAVAILABLE      14

/* Serves one call: request is the unpacked request (the server frees it). On success the handler
 * packs its response into out and returns GS_RPC_OK; otherwise it returns a gRPC status code and
 * writes one line into msg (sent as the status message). */
typedef int (*gs__rpc_handler_t)(void *ctx, const ProtobufCMessage *request, ProtobufCBuffer *out,
                                 char *msg, size_t msglen);

/* One method of a service: the service's protobuf-c descriptor names the path
 * ("/<package>.<Service>/<Method>") and the message types. */
typedef struct gs__rpc_method {
    const ProtobufCServiceDescriptor *service;
    const char *name; /* the method's name in the service */
    gs__rpc_handler_t handler;
    void *ctx;
} gs__rpc_method_t;

typedef struct gs__rpc_server gs__rpc_server_t;

/* Listens on the unix socket path (a socket left there is removed first; any other file is an
 * error) and serves the n methods (copied). Returns 0 and *out, or GS_EINVAL (a method the
 * service lacks, a path too long), GS_EEXIST (a file that is not a socket at path), GS_EIO (gRPC
 * could not listen) or GS_ENOMEM, with one line in err. */
int gs__rpc_serve(const char *path, const gs__rpc_method_t *methods, size_t n,
                  gs__rpc_server_t **out, char *err, size_t errlen);

/* Stops listening, cancels calls in flight, waits for the server's thread, removes the socket
 * and frees the server (NULL is fine). */
void gs__rpc_stop(gs__rpc_server_t *server);

#endif
