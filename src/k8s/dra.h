/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare's DRA device model (driver gpu.gpushare.io) as resource.k8s.io/v1 JSON: the
 * ResourceSlice a node publishes, the ResourceClaims pods make, and a model of the DRA
 * allocator (first fit in slice order, consumable capacity).
 *
 * Shared by the scheduler extender (it reads slices and claims) and the DRA kubelet plugin (it
 * publishes slices and reads allocated claims). The JSON follows resource.k8s.io/v1 exactly
 * (field names, quantity strings); see docs/kubernetes.md for the model.
 *
 * Objects are plain structs owned by the caller (free with the matching *_free); parsers keep no
 * reference to the json_t they read; emitters return a new reference. Thread-safe: no shared
 * state. */
#ifndef GS_K8S_DRA_H
#define GS_K8S_DRA_H

#include "k8s.h"

#include "gpushare/placement.h"
#include "gpushare/placement_online.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define GS_DRA_DRIVER   "gpu.gpushare.io"
#define GS_DRA_CLASS    "gpu.gpushare.io" /* the DeviceClass claims name */
#define GS_DRA_API      "resource.k8s.io/v1"
#define GS_DRA_COMPUTE  100                 /* capacity "compute": percent of the GPU */
#define GS_DRA_MIB      (UINT64_C(1) << 20) /* memory requests are in steps of 1Mi */
#define GS_DRA_DEVICES  128                 /* devices per slice the parser accepts */
#define GS_DRA_REQUESTS 32                  /* requests per claim (resource.k8s.io's limit) */
#define GS_DRA_SHORT    64                  /* device, request and attribute strings */

typedef enum gs_dra_mode {
    GS_DRA_SHARED = 0, /* shares with consumable capacity (allowMultipleAllocations) */
    GS_DRA_EXCLUSIVE,  /* whole devices */
    GS_DRA_MPS,        /* like shared; the share becomes MPS's thread percentage */
    GS_DRA_MIG,        /* partitionable (the extender does not score these) */
    GS_DRA_MODE_COUNT
} gs_dra_mode_t;

/* "shared", "exclusive", "mps", "mig"; "?" for other values. */
const char *gs_dra_mode_name(gs_dra_mode_t mode);

/* One consumable capacity of a device and its requestPolicy. */
typedef struct gs_dra_capacity {
    uint64_t value;          /* the device's capacity */
    int policy;              /* a requestPolicy is published (only with allowMultipleAllocations) */
    uint64_t dflt;           /* what a request that does not name this capacity consumes */
    uint64_t min, step, max; /* validRange; step and max 0 when absent */
} gs_dra_capacity_t;

/* A GPU as gpushare publishes it. */
typedef struct gs_dra_device {
    char name[GS_DRA_SHORT]; /* "gpu-<index>" */
    char uuid[GS_DRA_SHORT];
    char product[GS_DRA_SHORT]; /* productName: the GPU model */
    gs_dra_mode_t mode;
    int64_t index;
    char driver_version[32];   /* cudaDriverVersion (semver), "" when not published */
    gs_dra_capacity_t memory;  /* bytes */
    gs_dra_capacity_t compute; /* percent, value 100 */
    int multiple;              /* allowMultipleAllocations */
} gs_dra_device_t;

/* Fills dev as gpushare's driver publishes a GPU of `memory` bytes in `mode`: name gpu-<index>,
 * capacity memory (rounded down to whole MiB) and compute 100; shared and mps GPUs allow
 * multiple allocations with requestPolicy default = the whole GPU, validRange min 1Mi step 1Mi
 * (memory) and min 1 step 1 (compute); exclusive and mig GPUs are whole devices. */
void gs_dra_device_init(gs_dra_device_t *dev, int64_t index, const char *uuid, const char *product,
                        gs_dra_mode_t mode, uint64_t memory, const char *driver_version);

/* A ResourceSlice of driver gpu.gpushare.io (pool = node name, one slice per pool). */
typedef struct gs_dra_slice {
    char name[GS_K8S_NAME_MAX];   /* metadata.name */
    char driver[GS_K8S_NAME_MAX]; /* spec.driver */
    char node[GS_K8S_NAME_MAX];   /* spec.nodeName, "" when the slice is not per node */
    char pool[GS_K8S_NAME_MAX];
    int64_t generation;
    int64_t slice_count; /* resourceSliceCount */
    size_t count;
    gs_dra_device_t *devices; /* count devices, in the slice's order */
} gs_dra_slice_t;

/* Parses a ResourceSlice. Devices are read with gpushare's attributes and capacities; a slice of
 * another driver parses with its identity and devices' names only. Returns 0, or GS_EFORMAT /
 * GS_ENOMEM with the reason in err (then *out is empty). */
int gs_dra_slice_parse(const json_t *obj, gs_dra_slice_t *out, char *err, size_t errlen);

/* The ResourceSlice as resource.k8s.io/v1 JSON (apiVersion, kind, metadata.name when set,
 * spec), devices in the slice's order. Returns a new reference, or NULL when memory is short. */
json_t *gs_dra_slice_json(const gs_dra_slice_t *slice);

void gs_dra_slice_free(gs_dra_slice_t *slice);

/* A device request of a claim: spec.devices.requests[] with "exactly". */
typedef struct gs_dra_request {
    char name[GS_DRA_SHORT];
    char device_class[GS_K8S_NAME_MAX];
    int unsupported; /* firstAvailable, allocationMode All, adminAccess, a capacity or
                      * selector the model does not know: why names it */
    char why[GS_DRA_SHORT * 2];
    int64_t count; /* ExactCount devices (default 1) */
    int has_memory, has_compute;
    uint64_t memory;                /* capacity.requests.memory, bytes */
    uint64_t compute;               /* capacity.requests.compute, percent (rounded up) */
    char models[GS_PLACE_SPEC_MAX]; /* productName constraint of the selectors, "A|B"; "" none */
} gs_dra_request_t;

/* One allocated device: status.allocation.devices.results[]. */
typedef struct gs_dra_result {
    char request[GS_DRA_SHORT];
    char driver[GS_K8S_NAME_MAX];
    char pool[GS_K8S_NAME_MAX];
    char device[GS_DRA_SHORT];
    char share_id[GS_K8S_UID_MAX]; /* "" for a device taken whole */
    int consumed;                  /* consumedCapacity given (devices shared by capacity) */
    uint64_t memory, compute;
} gs_dra_result_t;

typedef struct gs_dra_claim {
    char ns[GS_K8S_LABEL_MAX];
    char name[GS_K8S_NAME_MAX];
    char uid[GS_K8S_UID_MAX];
    size_t nrequests;
    gs_dra_request_t *requests;
    int allocated;              /* status.allocation present */
    char node[GS_K8S_NAME_MAX]; /* the node its allocation selects ("" when not one node) */
    size_t nresults;
    gs_dra_result_t *results;
} gs_dra_claim_t;

/* Parses a ResourceClaim (spec.devices.requests; status.allocation). Returns 0, or
 * GS_EFORMAT / GS_ENOMEM with the reason in err (then *out is empty). */
int gs_dra_claim_parse(const json_t *obj, gs_dra_claim_t *out, char *err, size_t errlen);

/* The ResourceClaim as resource.k8s.io/v1 JSON: metadata (name, namespace, uid when set),
 * spec.devices.requests (selectors as CEL on productName), and status.allocation when
 * allocated (results, nodeSelector on metadata.name). New reference, or NULL. */
json_t *gs_dra_claim_json(const gs_dra_claim_t *claim);

void gs_dra_claim_free(gs_dra_claim_t *claim);

/* ---- a model of the DRA allocator ---- */

/* What is taken of one device. */
typedef struct gs_dra_usage {
    uint64_t memory, compute;
    uint32_t allocations;
} gs_dra_usage_t;

/* What a request consumes of capacity cap on a device that allows multiple allocations: the
 * requested amount rounded up to the requestPolicy's range (the default when not requested).
 * Returns 0 with *out, or GS_ENOFIT when the request is outside the policy. */
int gs_dra_consume(const gs_dra_capacity_t *cap, int requested, uint64_t amount, uint64_t *out);

/* Allocates claim on the slice's devices as the DRA allocator does for a claim whose requests
 * all name class: each request takes the first `count` devices in slice order that match its
 * selectors and have room (a shared device: the consumed capacity is left, within its
 * requestPolicy; a whole device: nothing allocated on it); a request never takes one device
 * twice. On success fills claim's results (driver, pool, device, consumedCapacity, shareID
 * "gs-<share_seq>-..." for shared devices), sets claim->allocated and node, adds to usage[]
 * (one per slice device) and returns 0. Returns GS_ENOFIT (nothing changed), GS_EINVAL (a
 * request the model does not handle, or of another class) or GS_ENOMEM. */
int gs_dra_allocate(const gs_dra_slice_t *slice, gs_dra_usage_t *usage, const char *class,
                    gs_dra_claim_t *claim, uint64_t *share_seq);

/* Whether gs_dra_allocate would succeed, without changing anything or allocating memory.
 * Returns 1 or 0 (also for requests the model does not handle). */
int gs_dra_fits(const gs_dra_slice_t *slice, const gs_dra_usage_t *usage, const char *class,
                const gs_dra_claim_t *claim);

/* ---- the device order a driver publishes ---- */

/* What is left of a device for the placement model, in milli-GPU of compute (0 for a device
 * taken whole or a MIG device). */
uint32_t gs_dra_milli_left(const gs_dra_device_t *dev, const gs_dra_usage_t *use);

/* Puts the slice's devices (and usage[], one per device, with them) in the order `how` gives
 * for what is taken of them (include/gpushare/placement_online.h): GS_PLACE_ORDER_INDEX by
 * their index attribute, GS_PLACE_ORDER_TIGHTEST least compute left first (devices full or
 * taken whole last, equal ones by index), so that the allocator's first fit is a best fit. MIG
 * devices go last. For GS_PLACE_ORDER_POLICY the driver needs the policy's engine and calls
 * gs_place_device_order on a model of its node. Returns 1 when the order changed (republish
 * the slice), 0 when not, or GS_EINVAL (POLICY, or more than GS_DRA_DEVICES devices). */
int gs_dra_order_devices(gs_dra_slice_t *slice, gs_dra_usage_t *usage, gs_place_order_t how);

#endif
