/* SPDX-License-Identifier: Apache-2.0 */
/* The client API of gpushared: lease requests, the JSON-lines protocol, and a connection.
 *
 * Every part that talks to the daemon (the gpushare CLI, the Slurm plugin, tests, benchmarks)
 * uses this header; the daemon uses the same request parser, so a request means the same thing
 * on both sides. The protocol is documented in docs/api.md. Messages are jansson objects. */
#ifndef GPUSHARE_CLIENT_H
#define GPUSHARE_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/gpu_mode.h"
#include "gpushare/quantity.h"
#include "gpushare/wire_error.h"

/* The protocol version spoken by this build (the "version" of hello). */
#define GS_PROTO_VERSION 1

/* The longest request line the daemon accepts, newline included. */
#define GS_PROTO_LINE_MAX (64 * 1024)

/* The default socket when neither GPUSHARE_SOCKET nor an explicit path is given. */
#define GS_DEFAULT_SOCKET "/run/gpushare/gpushared.sock"

/* Room for the command a lease shows in listings (display only, never executed). */
#define GS_LEASE_COMMAND_MAX 256

/* The most logical GPUs one lease may ask for, and the largest over-provisioning factor. */
#define GS_LEASE_GPUS_MAX    64
#define GS_OVERPROVISION_MAX 64
#define GS_PRIORITY_MIN      (-100)
#define GS_PRIORITY_MAX      100
#define GS_LEASE_TIMEOUT_MAX (7u * 24 * 3600 * 1000)            /* ms: a week */
#define GS_LEASE_TIME_MAX    (UINT64_C(366) * 24 * 3600 * 1000) /* ms: a time limit, a year */

/* Room for a lease's name ("name", --name), terminator included. */
#define GS_LEASE_NAME_MAX 64

/* GPU models a request may be limited to ("gpu_type", --gpu-type T4,A100-40GB). */
#define GS_GPU_TYPES_MAX 8
#define GS_GPU_TYPE_MAX  48 /* room for one, terminator included */

/* What a lease is sized by: exactly one of these per request. */
typedef enum gs_lease_kind {
    GS_LEASE_NONE = 0,
    GS_LEASE_GPUS,     /* --gpus N: N whole logical GPUs */
    GS_LEASE_FRACTION, /* --gpu F: F of one GPU's memory and compute */
    GS_LEASE_MEMORY,   /* --gpu-memory SIZE [--compute PCT]: bytes on one GPU */
    GS_LEASE_MIG,      /* --mig-profile NAME: one MIG instance of that profile */
} gs_lease_kind_t;

/* Room for a MIG profile name ("3g.20gb", "1g.10gb+me"), terminator included. */
#define GS_MIG_PROFILE_MAX 32
/* The largest "mig_start" (a memory slot; gpushare/mig.h's GS_MIG_SLOTS_MAX - 1). */
#define GS_MIG_START_MAX 15

/* A keyed lease's key ("podman/<container id>", "k8s/<claim uid>/<request>"): 3 to
 * GS_LEASE_KEY_MAX - 1 bytes of [A-Za-z0-9._:-] in at least two '/'-separated parts, no empty
 * part, no "." or ".." part. */
#define GS_LEASE_KEY_MAX 128
/* A cgroup path ("/kubepods/...", "/libpod_parent/libpod-<id>"): absolute, at most
 * GS_CGROUP_PATH_MAX - 1 bytes of [A-Za-z0-9._:@-] in '/'-separated parts, no "." or "..". */
#define GS_CGROUP_PATH_MAX 256
/* A keyed lease's capability: the name of its socket's directory, 32 hex digits. */
#define GS_LEASE_CAP_MAX 33

/* Room for a user name in a request ("user"), terminator included. */
#define GS_USER_NAME_MAX 64

/* Whom a lease is for when root asks on another user's behalf (the Slurm plugin, which runs as
 * root in slurmstepd, asks for the job's user). Only a root caller (SO_PEERCRED) may set it. */
typedef struct gs_lease_owner {
    int set;                     /* nonzero: the lease is for the user below, not the caller */
    int has_uid, has_gid;        /* which of uid / gid the request gave */
    uint32_t uid;                /* "uid" */
    uint32_t gid;                /* "gid"; without it, the user's primary group */
    char user[GS_USER_NAME_MAX]; /* "user", "" when not given (looked up from uid) */
} gs_lease_owner_t;

/* A lease request as a user states it. */
typedef struct gs_lease_request {
    gs_lease_kind_t kind;
    uint32_t gpus;           /* GS_LEASE_GPUS: 1..GS_LEASE_GPUS_MAX */
    uint32_t fraction_milli; /* GS_LEASE_FRACTION: 1..1000 (thousandths of a GPU) */
    uint64_t memory;         /* GS_LEASE_MEMORY: bytes, > 0 */
    uint32_t compute;        /* GS_LEASE_MEMORY only: guaranteed percent, 0 = not limited */
    uint32_t compute_max;    /* burst cap in percent, 0 = none; >= the lease's share */
    int32_t priority;        /* GS_PRIORITY_MIN..GS_PRIORITY_MAX, higher is served first */
    int wait;                /* nonzero: queue when nothing fits now */
    uint32_t timeout_ms;     /* how long to stay queued, 0 = no limit */
    char command[GS_LEASE_COMMAND_MAX]; /* for listings */
    gs_lease_owner_t owner;             /* on behalf of another user (root only) */
    unsigned n_pinned;                  /* "gpus_at": GPUs the lease must use, 0 = any */
    uint8_t pinned[GS_MAX_DEVICES];     /* their NVML indexes, in CUDA ordinal order */
    char name[GS_LEASE_NAME_MAX];       /* "name": the job's name for listings, "" = none */
    unsigned n_gpu_types;               /* "gpu_type": models the lease may use, 0 = any */
    char gpu_types[GS_GPU_TYPES_MAX][GS_GPU_TYPE_MAX];
    uint64_t time_limit_ms; /* "time_limit_ms": the lease ends this long after its grant */
    gs_gpu_mode_t mode;     /* "mode": GPUs of this mode only */
    char mig_profile[GS_MIG_PROFILE_MAX]; /* GS_LEASE_MIG: the profile's name */
    char key[GS_LEASE_KEY_MAX];        /* "key": a keyed lease (not held by the connection), "" */
    char cgroup[GS_CGROUP_PATH_MAX];   /* "cgroup": its processes are this cgroup's, "" = none */
    char capability[GS_LEASE_CAP_MAX]; /* "capability": gpushared's, for its ledger only */
    int has_mig_start;  /* "mig_start" given: GS_LEASE_MIG only, with one GPU in gpus_at */
    uint32_t mig_start; /* the instance's first memory slot, a placement chosen by the caller
                         * (the Kubernetes scheduler's, for gpushare-k8s); 0..GS_MIG_START_MAX */
} gs_lease_request_t;

/* The requests of the protocol. */
typedef enum gs_op {
    GS_OP_HELLO = 1,
    GS_OP_ACQUIRE,
    GS_OP_RELEASE,
    GS_OP_LIST,
    GS_OP_STATUS,
    GS_OP_HISTORY,
    GS_OP_JOIN,         /* a process of a lease asks for its region (the shim, gs_region_join) */
    GS_OP_COMPUTE_JOIN, /* a process of a lease takes part in a GPU's compute scheduler */
    GS_OP_ATTACH,       /* a keyed lease's processes are a cgroup's (given, or a process's) */
    GS_OP_SUSPEND,      /* the lease's CUDA processes are checkpointed, its capacity given back */
    GS_OP_RESUME,       /* ... restored when its capacity fits again */
} gs_op_t;

#define GS_GPU_UUID_MAX 96

/* How a lease's job ended, as its holder reports it in release ("exit_status" / "signal"). */
typedef struct gs_job_end {
    int known;       /* nonzero when one of the two below was given */
    int exit_status; /* 0..255 when it exited */
    int signal;      /* 1..127 when a signal killed it (then exit_status is 0) */
} gs_job_end_t;

/* What history asks for: ended leases, most recent first. */
typedef struct gs_history_query {
    int64_t since_ms;            /* "since_ms": ended at or after (ms since the epoch), 0 = all */
    char user[GS_USER_NAME_MAX]; /* "user": only this user's, "" = the caller's (root: all) */
    uint32_t limit;              /* "limit": at most this many, 1..GS_HISTORY_MAX */
    int64_t before_ms;           /* "before": [ended_at_ms, id], the cursor of a page: rows that */
    int64_t before_id;           /* ended before it (0, 0: from the most recent) */
} gs_history_query_t;

#define GS_HISTORY_MAX     10000
#define GS_HISTORY_DEFAULT 100
/* One reply holds at most this many rows and about this many bytes; "next" asks for the rest. */
#define GS_HISTORY_PAGE       500
#define GS_HISTORY_PAGE_BYTES (512 * 1024)

/* One parsed request line. */
typedef struct gs_request {
    gs_op_t op;
    gs_lease_request_t lease;   /* GS_OP_ACQUIRE */
    uint64_t lease_id;          /* GS_OP_RELEASE, GS_OP_JOIN, GS_OP_COMPUTE_JOIN, suspend, resume */
    char key[GS_LEASE_KEY_MAX]; /* GS_OP_RELEASE, GS_OP_ATTACH: the lease by its key */
    char cgroup[GS_CGROUP_PATH_MAX]; /* GS_OP_ATTACH: "cgroup", or */
    int32_t pid;                     /* GS_OP_ATTACH: "pid", whose cgroup it is */
    char gpu_uuid[GS_GPU_UUID_MAX];  /* GS_OP_COMPUTE_JOIN: "gpu", the GPU's (or MIG) UUID */
    uint32_t cap_pct;                /* GS_OP_COMPUTE_JOIN: "cap", a cap the process asks for */
    gs_job_end_t job_end;            /* GS_OP_RELEASE */
    int force;                       /* GS_OP_RELEASE: end it whatever its processes do (root) */
    int processes;                   /* GS_OP_STATUS: "processes": list each GPU's processes */
    gs_history_query_t history;      /* GS_OP_HISTORY */
} gs_request_t;

/* Room for the message of any function below. */
#define GS_CLIENT_ERR_MAX 256

/* Sets *req to an empty request: kind NONE, wait on, priority 0. */
void gs_lease_request_init(gs_lease_request_t *req);

/* Checks a request's invariants (one kind, values in range, options that fit the kind).
 * Returns 0, or GS_EINVAL with a one-line message in err (may be NULL). Thread-safe. */
int gs_lease_request_check(const gs_lease_request_t *req, char *err, size_t errlen);

/* Copies src (UTF-8 text from a user) into dst (len bytes) for display: every control character
 * (C0, DEL, C1) becomes \xHH or \uXXXX, and so do the formatting characters that reorder or
 * break lines (bidirectional marks, embeddings, overrides, isolates; U+2028/U+2029), so no
 * listing can carry terminal escapes or disguised text to another user's screen. Cut before a
 * character or escape that would not fit whole. Thread-safe. */
void gs_display_escape(char *dst, size_t len, const char *src);

/* Returns the protocol name of op ("acquire"), or "?" for an unknown value. Never NULL. */
const char *gs_op_name(gs_op_t op);

/* Parses one request line (without or with its trailing newline; it need not be
 * NUL-terminated). Returns 0 with *out filled, GS_EFORMAT when the line is not one JSON object,
 * GS_EINVAL when a field is missing, unknown, of the wrong type or out of range (acquire
 * requests are also checked with gs_lease_request_check), or GS_EMSGSIZE when len exceeds
 * GS_PROTO_LINE_MAX. The message in err names the problem. Thread-safe. */
int gs_proto_parse_request(const char *line, size_t len, gs_request_t *out, char *err,
                           size_t errlen);

/* Builds the JSON object of an acquire request. Returns a new reference (the caller
 * json_decref's it), or NULL when out of memory. */
json_t *gs_proto_acquire_json(const gs_lease_request_t *req);

/* Checks a keyed lease's key (GS_LEASE_KEY_MAX) and a cgroup path (GS_CGROUP_PATH_MAX).
 * Return 0, or GS_EINVAL with one line in err. Thread-safe. */
int gs_lease_key_check(const char *key, char *err, size_t errlen);
int gs_cgroup_path_check(const char *path, char *err, size_t errlen);

/* Checks a lease name: 1 to GS_LEASE_NAME_MAX - 1 bytes of valid UTF-8 holding only printable
 * characters of the general categories L, M, N, P and S and the space, none of them
 * default-ignorable (no controls, no format characters such as U+200B or U+FEFF): a name shows
 * as itself in listings. Returns 0 or GS_EINVAL with a message in err. Thread-safe. */
int gs_lease_name_check(const char *name, char *err, size_t errlen);

/* Adds the GPU models of a comma-separated list ("T4,A100-40GB") to req->gpu_types (each 1 to
 * GS_GPU_TYPE_MAX - 1 letters, digits, '-', '_', '.' or blanks; at most GS_GPU_TYPES_MAX in
 * all). Returns 0 or GS_EINVAL with a message in err (req unchanged). Thread-safe. */
int gs_lease_add_gpu_types(gs_lease_request_t *req, const char *list, char *err, size_t errlen);

/* Nonzero when a GPU named name (as NVML names it: "NVIDIA A100-SXM4-40GB", "Tesla T4") is of
 * model type: every part of type (split at '-', '_' and blanks) is a part of name, ignoring
 * case ("A100", "A100-40GB" and "a100" match the first, "T4" the second). */
int gs_gpu_type_matches(const char *type, const char *name);

/* Writes a duration in ms for people: "2h", "1h30m", "45s", "1.5s", "250ms". Returns the length
 * written (the text is cut to fit len). */
int gs_format_duration(uint64_t ms, char *buf, size_t len);

/* Returns the socket path to use: explicit when not NULL, else $GPUSHARE_SOCKET when set and
 * non-empty, else GS_DEFAULT_SOCKET. The result is explicit, getenv's storage or a literal. */
const char *gs_client_socket_path(const char *explicit_path);

/* A connection to gpushared. Not thread-safe: one thread per connection. */
typedef struct gs_client gs_client_t;

/* Connects to the daemon's socket (path as gs_client_socket_path). Returns 0 and *out, or
 * -errno (GS_ENOENT / GS_ECONNREFUSED when no daemon listens) with a message in err. The
 * caller owns *out (gs_client_close). */
int gs_client_connect(const char *path, gs_client_t **out, char *err, size_t errlen);

/* Closes the connection (NULL is fine). Leases held by the connection end with it. */
void gs_client_close(gs_client_t *client);

/* The socket, for poll(2): readable when a message may be waiting (call gs_client_recv). */
int gs_client_fd(const gs_client_t *client);

/* Sends one message (compact JSON and a newline). Returns 0 or -errno (GS_EPROTO when msg
 * cannot be encoded). Blocks until written. */
int gs_client_send(gs_client_t *client, const json_t *msg);

/* Receives the next message. timeout_ms < 0 waits forever, 0 only takes what is buffered.
 * Returns 0 and *msg (a new reference), GS_ETIMEDOUT, GS_ECONNREFUSED when the daemon closed
 * the connection (EOF), GS_EPROTO for a reply that is not a JSON object or longer than
 * GS_PROTO_LINE_MAX * 64, or -errno. */
int gs_client_recv(gs_client_t *client, int timeout_ms, json_t **msg);

/* Sends msg and returns the first reply (a message with an "ok" member); asynchronous events
 * (messages with "event" and no "ok") received meanwhile are dropped. Same returns as
 * gs_client_send / gs_client_recv; a reply with "ok": false still returns 0 (look at it with
 * gs_reply_error). */
int gs_client_call(gs_client_t *client, const json_t *msg, int timeout_ms, json_t **reply);

/* For a reply with "ok": false, returns its error code string ("no_fit") and sets *message to
 * its message (both owned by reply); returns NULL for a successful reply. */
const char *gs_reply_error(const json_t *reply, const char **message);

/* The error code of a reply as the table knows it: GS_WIRE_OK for a successful reply,
 * GS_WIRE_UNKNOWN for a code the table does not have. */
gs_wire_error_t gs_reply_wire_error(const json_t *reply);

#endif
