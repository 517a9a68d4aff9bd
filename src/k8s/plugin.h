/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare-k8s, gpushare's DRA kubelet plugin (driver gpu.gpushare.io): its parts and how they
 * meet.
 *
 *   node.c        the node as gpushared shows it (its status) and the ResourceSlices that
 *                 publish it
 *   opaque.c      the opaque configuration of claims (GpuConfig)
 *   plan.c        what a claim's allocation asks of this node: the keyed lease to acquire
 *   checkpoint.c  the claims this node prepared, on disk (the plugin's memory across restarts)
 *   gsd.c         gpushared's side: keyed leases and the status, over its socket
 *   kapi.c        the API server's side (kapi.h)
 *   publish.c     keeps the node's ResourceSlices as gpushared's view and the device order say
 *   prepare.c     NodePrepareResources / NodeUnprepareResources for one claim
 *   service.c     the gRPC services (registration, DRAPlugin) on those
 *   plugin_main.c the program
 *
 * The pure parts (node, opaque, plan, checkpoint's JSON) take untrusted input (gpushared's
 * replies, the API server's objects) and are fuzzed; they keep no reference to the JSON they
 * read and are thread-safe. The stateful parts say their threads below. */
#ifndef GS_K8S_PLUGIN_H
#define GS_K8S_PLUGIN_H

#include "dra.h"
#include "kapi.h"

#include "gpushare/client.h"
#include "gpushare/mig.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GS_PLUGIN_NAME    "gpushare-k8s"
#define GS_PLUGIN_ERR_MAX 512 /* one claim's error line */
#define GS_PLUGIN_DEVICES 64  /* devices of one slice when any consumes counters (the API's) */

/* ---- the node (node.c) ---- */

/* One GPU as gpushared's status shows it. */
typedef struct gs__node_gpu {
    unsigned index;
    char uuid[GS_DRA_SHORT];
    char product[GS_DRA_SHORT]; /* NVML's name: "NVIDIA H100 80GB HBM3" */
    gs_dra_mode_t mode;
    uint64_t leasable;       /* memory_leasable */
    uint64_t free;           /* memory_free */
    uint32_t compute_leased; /* percent of the GPU's time guaranteed to leases */
    unsigned leases;
    char problem[256]; /* why it serves nothing ("" when it serves) */
    int mig_enabled;   /* mode mig with MIG on and its profiles read */
    gs_mig_catalog_t mig;
} gs__node_gpu_t;

typedef struct gs__node {
    char cuda[16]; /* "13.0": the CUDA driver version, "" unknown */
    unsigned n;
    gs__node_gpu_t gpus[GS_MAX_DEVICES];
} gs__node_t;

/* Reads gpushared's status reply (or its "status" object) into *out. Returns 0, or GS_EFORMAT
 * with one line in err. */
int gs__node_parse(const json_t *status, gs__node_t *out, char *err, size_t errlen);

/* The node's GPU with NVML index, or NULL. */
const gs__node_gpu_t *gs__node_gpu(const gs__node_t *node, unsigned index);

/* The ResourceSlices publishing node (pool and node `name`, generation gen): a devices slice
 * "<name>-gpu.gpushare.io" (pages "-2", "-3" ... when more than GS_PLUGIN_DEVICES devices consume
 * counters) and, with MIG GPUs, a counters slice "<name>-gpu.gpushare.io-counters". A GPU with a
 * problem is left out (it serves nothing); a MIG GPU is one device per profile and placement.
 * Devices are in the order `how` gives for what gpushared has leased of each GPU. Fills
 * out[0..*n) (at most max); the caller frees each with gs_dra_slice_free. Returns 0, GS_ENOSPC
 * (more than max slices) or GS_ENOMEM. */
int gs__node_slices(const gs__node_t *node, const char *name, int64_t gen, gs_place_order_t how,
                    gs_dra_slice_t *out, size_t max, size_t *n);

/* The device called name as the node publishes it, and its GPU. Returns 0, or GS_ENOENT when
 * the node publishes no such device (a GPU it lacks, or one with a problem). */
int gs__node_device(const gs__node_t *node, const char *name, gs_dra_device_t *dev,
                    const gs__node_gpu_t **gpu);

/* ---- the opaque configuration (opaque.c) ---- */

#define GS_GPUCONFIG_API  "gpu.gpushare.io/v1"
#define GS_GPUCONFIG_KIND "GpuConfig"

/* What a claim's opaque configuration of driver gpu.gpushare.io may set (GpuConfig). */
typedef struct gs__gpuconfig {
    uint32_t compute_max;   /* computeMax: the lease's burst cap in percent, 0 none */
    uint64_t time_limit_ms; /* timeLimit: the lease ends this long after its grant, 0 none */
    int compute_enforce;    /* enforce "all" (1, the default): the consumed compute is the lease's
                             * guaranteed share; "memory" (0): memory only, compute best effort */
} gs__gpuconfig_t;

/* The defaults: no cap, no time limit, enforce all. */
void gs__gpuconfig_init(gs__gpuconfig_t *cfg);

/* Applies one GpuConfig object ({"apiVersion": "gpu.gpushare.io/v1", "kind": "GpuConfig",
 * "computeMax": 50, "timeLimit": "2h", "enforce": "all"}) onto cfg: strict (an unknown field, a
 * wrong type or a value out of range is an error). Returns 0, or GS_EINVAL with one line in err
 * (cfg then unchanged). */
int gs__gpuconfig_apply(gs__gpuconfig_t *cfg, const json_t *params, char *err, size_t errlen);

/* The configuration of request `request` of a claim: the opaque entries of driver
 * gpu.gpushare.io in its status.allocation.devices.config, class ones first, then the claim's
 * (a later entry wins), each applying to the requests it names (none named: all). Returns 0,
 * or GS_EINVAL with one line in err. */
int gs__gpuconfig_for(const json_t *claim, const char *request, gs__gpuconfig_t *out, char *err,
                      size_t errlen);

/* ---- what a claim asks of this node (plan.c) ---- */

/* The lease a claim's allocation becomes: gpushare gives a container one lease, so a claim's
 * devices of driver gpu.gpushare.io on this node are one share of a GPU (shared or mps), one MIG
 * placement, or whole GPUs, all of one request. */
typedef struct gs__plan {
    char ns[GS_K8S_LABEL_MAX];
    char name[GS_K8S_NAME_MAX];
    char uid[GS_K8S_UID_MAX];
    char request[GS_DRA_SHORT];
    gs_lease_request_t lease; /* keyed: lease.key is k8s/<claim uid>/<request>; a MIG placement
                               * has lease.mig_start */
    size_t ndevices;
    struct gs__plan_device {
        char device[GS_DRA_SHORT];
        char share_id[GS_K8S_UID_MAX];
        unsigned gpu; /* NVML index */
    } devices[GS_MAX_DEVICES];
} gs__plan_t;

/* Whether text is a DNS name of 1 to max characters of [a-z0-9-] (and '.' with dots): what
 * Kubernetes names namespaces, claims, requests, devices and pools with, and all that may go into
 * a URL's path, a lease's key or a line. Thread-safe. */
int gs__k8s_name_ok(const char *text, size_t max, int dots);

/* Plans the claim (a ResourceClaim object as the API server returns it) for node `pool` as
 * gpushared shows it: the claim must be allocated, its results of driver gpu.gpushare.io must
 * name (with Kubernetes names) devices this node publishes, within their capacity, and form one
 * lease as above; its GpuConfig must parse. Whatever of the claim err shows is escaped (one
 * line). uid, when not NULL, must be the claim's. Returns 0 with *out, or
 * GS_EINVAL / GS_ENOENT (a device this node lacks) / GS_ERANGE (beyond a device's capacity) /
 * GS_ENOTSUP with one line in err that names the claim ("claim ns/name: ..."). A claim with no
 * result of this driver on this node plans nothing: 0 with out->ndevices 0. */
int gs__plan_claim(const json_t *claim, const char *uid, const char *pool, const gs__node_t *node,
                   gs__plan_t *out, char *err, size_t errlen);

/* ---- the claims this node prepared (checkpoint.c): one small JSON file per claim,
 * <dir>/<uid>.json, written whole (a temporary file renamed, then synced) before gpushared is
 * asked for the lease and again once the claim is prepared, removed once it is unprepared. The
 * lease itself lives in gpushared (keyed, in its ledger) and the CDI spec in its directory: the
 * record is what lets an unprepare after a restart find them. Single-threaded (the DRA
 * service's thread). ---- */

typedef struct gs__record {
    char uid[GS_K8S_UID_MAX];
    char ns[GS_K8S_LABEL_MAX];
    char name[GS_K8S_NAME_MAX];
    char key[GS_LEASE_KEY_MAX]; /* the lease's key */
    char cdi[GS_DRA_SHORT];     /* the CDI device's name (kind gpushare.io/gpu) */
    int prepared;               /* 0: being prepared (a lease may or may not exist yet) */
    uint64_t lease;             /* the lease's id once prepared */
} gs__record_t;

/* Nonzero when uid may name a record file: 1 to 63 of [a-z0-9-] (Kubernetes UIDs are UUIDs). */
int gs__record_uid_ok(const char *uid);

/* Writes r as <dir>/<uid>.json. Returns 0 or -errno with one line in err. */
int gs__record_write(const char *dir, const gs__record_t *r, char *err, size_t errlen);

/* Reads the record of uid. Returns 0, GS_ENOENT (none), or GS_EFORMAT / -errno with one line in
 * err. */
int gs__record_read(const char *dir, const char *uid, gs__record_t *r, char *err, size_t errlen);

/* Parses a record file's text (len bytes). Returns 0 or GS_EFORMAT with one line in err. */
int gs__record_parse(const char *text, size_t len, gs__record_t *r, char *err, size_t errlen);

/* Removes the record of uid (none is fine). Returns 0 or -errno with one line in err. */
int gs__record_remove(const char *dir, const char *uid, char *err, size_t errlen);

/* ---- gpushared (gsd.c): one connection per call, so that a restarted gpushared is simply
 * found again; keyed leases are not held by the connection that made them ---- */

/* What gpushared answered an acquire. */
typedef struct gs__gsd_lease {
    uint64_t id;
    int existing;           /* the key's lease existed already (a retried prepare) */
    char socket[PATH_MAX];  /* the lease's capability socket */
    char preload[PATH_MAX]; /* the shim */
    json_t *env;            /* the lease's environment (a reference the caller drops) */
} gs__gsd_lease_t;

/* The node as gpushared's status shows it (socket: gpushared's, NULL the default). Returns 0,
 * or -errno / GS_EFORMAT with one line in err. */
int gs__gsd_node(const char *socket, gs__node_t *node, char *err, size_t errlen);

/* Acquires the plan's keyed lease, without waiting: the same key gives the same lease. Returns
 * 0 with *out, GS_ENOFIT (gpushared's reason in err), or another code with one line in err. */
int gs__gsd_acquire(const char *socket, const gs__plan_t *plan, gs__gsd_lease_t *out, char *err,
                    size_t errlen);

/* Releases the lease of key (no lease with that key is fine). *state: "ended", "ending" or
 * "none". Returns 0, or a code with one line in err. */
int gs__gsd_release(const char *socket, const char *key, char *state, size_t len, char *err,
                    size_t errlen);

/* ---- the running plugin ---- */

typedef struct gs__plugin_cfg {
    char node[GS_K8S_NAME_MAX];    /* the node's name: the pool and the slices' nodeName */
    char registry_dir[PATH_MAX];   /* the kubelet's plugin registry: <driver>-reg.sock goes there */
    char plugin_dir[PATH_MAX];     /* the plugin's own: dra.sock and the claims' records */
    char endpoint[PATH_MAX];       /* dra.sock as the kubelet sees it ("": the same path) */
    char cdi_dir[PATH_MAX];        /* where CDI specs go (/var/run/cdi) */
    char gpushared[PATH_MAX];      /* gpushared's socket ("": the default) */
    char shim[PATH_MAX];           /* libgpushare.so on the host ("": what gpushared says) */
    char gpushare[PATH_MAX];       /* the gpushare program on the host, for the CDI hooks */
    char driver_cdi[128];          /* the GPU driver's CDI kind (nvidia.com/gpu), "" none */
    char gpusim_cdi[GS_DRA_SHORT]; /* gpusim's node device to add (tests), "" none */
    char lease_user[GS_USER_NAME_MAX]; /* the leases' user (root asks on its behalf), "" root */
    gs__kapi_cfg_t api;
    gs_place_order_t order; /* the device order published (index or tightest) */
    long resync_ms;         /* gpushared is looked at this often for the slices */
    int publish;            /* publish ResourceSlices (0: --no-publish) */
} gs__plugin_cfg_t;

/* The plugin's state shared by its threads. */
typedef struct gs__plugin {
    gs__plugin_cfg_t cfg;
    char records[PATH_MAX]; /* <plugin_dir>/claims */
    gs__kapi_t *api;        /* the DRA service's client (its thread only) */
    atomic_int stop;        /* the program is stopping */
    atomic_int poke;        /* republish now (a claim was prepared or unprepared) */
    atomic_int relist;      /* list the API server's slices again before the next pass (the
                             * kubelet registered the plugin: a starting kubelet deletes its
                             * node's slices) */
    pthread_mutex_t lock;   /* the publisher's wait */
    pthread_cond_t wake;
} gs__plugin_t;

/* One device of a prepared claim, as NodePrepareResources returns it. */
typedef struct gs__prepared {
    size_t n;
    struct gs__prepared_device {
        char request[GS_DRA_SHORT];
        char device[GS_DRA_SHORT];
        char share_id[GS_K8S_UID_MAX];
        size_t ncdi;
        char cdi[2 + GS_MAX_DEVICES][192];
    } devices[GS_MAX_DEVICES];
} gs__prepared_t;

/* Prepares claim ns/name (UID uid) on this node (prepare.c): reads it from the API server,
 * plans it against gpushared's view, acquires its keyed lease, writes its CDI spec. Idempotent
 * (the kubelet calls again after an error or a restart). Returns 0 with *out, or a code with one
 * line in err naming the claim; nothing is left half-made. DRA service thread only. */
int gs__prepare(gs__plugin_t *p, const char *ns, const char *uid, const char *name,
                gs__prepared_t *out, char *err, size_t errlen);

/* Undoes gs__prepare: releases the lease, removes the CDI spec and the record. Idempotent (a
 * claim this node never prepared is fine). Returns 0, or a code with one line in err. */
int gs__unprepare(gs__plugin_t *p, const char *ns, const char *uid, const char *name, char *err,
                  size_t errlen);

/* Starts the publisher thread (publish.c): it keeps this node's ResourceSlices as gpushared's
 * view and the device order say, looking every cfg.resync_ms and when poked. Returns 0 or an
 * error of pthread_create. */
int gs__publish_start(gs__plugin_t *p, pthread_t *thread);

/* Wakes the publisher (after a prepare or unprepare, or to stop). Thread-safe. */
void gs__publish_poke(gs__plugin_t *p);

/* Wakes the publisher to list the API server's slices before it compares (the kubelet registered
 * the plugin: a kubelet deletes its node's slices when it starts, and those of a driver gone for
 * 30 s). Thread-safe. */
void gs__publish_relist(gs__plugin_t *p);

#endif
