/* SPDX-License-Identifier: Apache-2.0 */
/* Container Device Interface specs for keyed leases (issue 21, docs/containers.md).
 *
 * A keyed lease becomes a CDI device, gpushare.io/gpu=NAME: a spec file in a CDI directory
 * (/etc/cdi or /var/run/cdi, as podman, containerd and CRI-O read them) whose container edits
 * give a container its lease: the lease's environment (with GPUSHARE_REGION pointing at the
 * lease's own socket inside the container), the shim mounted read-only and preloaded, the lease's
 * socket directory mounted at /run/gpushare, and two OCI hooks run by the runtime on the host:
 * createRuntime tells gpushared the container's cgroup (gpushare cdi hook attach), poststop
 * releases the lease (gpushare cdi hook release) unless the lease outlives its containers (a
 * Kubernetes claim's lives until the kubelet unprepares it). A lease on an mps GPU also gets
 * MPS's pipe directory, where its environment names it. On a real node NVIDIA's own spec
 * (nvidia.com/gpu=0) injects the driver beside it; on gpusim, gs_cdi_gpusim_spec's spec plays
 * that part. Specs are written as CDI version 0.5.0: they use nothing newer, and Debian 12's
 * podman 4.3 refuses 0.6.0.
 *
 * Thread-safe; the caller owns what is returned. */
#ifndef GPUSHARE_CDI_H
#define GPUSHARE_CDI_H

#include <jansson.h>
#include <stddef.h>

#define GS_CDI_KIND         "gpushare.io/gpu"
#define GS_CDI_GPUSIM_KIND  "gpusim.gpushare.io/node"
#define GS_CDI_VERSION      "0.5.0"
#define GS_CDI_NAME_MAX     64
#define GS_CDI_SOCKET_DIR   "/run/gpushare"                    /* in the container */
#define GS_CDI_SHIM         "/usr/lib/gpushare/libgpushare.so" /* in the container */
#define GS_CDI_GPUSIM_DIR   "/usr/lib/gpusim"                  /* in the container */
#define GS_CDI_GPUSIM_STATE "/var/lib/gpusim"                  /* in the container */

/* What a keyed lease's spec is made of. */
typedef struct gs_cdi_lease {
    const char *name;        /* the device's name: 1 to 63 of [A-Za-z0-9_.-] */
    const char *key;         /* the lease's key (the hooks name it) */
    const json_t *env;       /* the acquire reply's "env" */
    const char *socket;      /* the acquire reply's "socket": the lease's socket on the host */
    const char *shim;        /* libgpushare.so on the host */
    const char *gpushare;    /* the gpushare program on the host, for the hooks */
    const char *main_socket; /* gpushared's socket, for the hooks (NULL: the default) */
    const char *spec_dir;    /* where the spec is written: the release hook removes it there
                                (NULL: it stays, its writer removes it) */
    int keep_lease;          /* nonzero: no poststop hook; the lease outlives its containers and its
                                writer releases it (gpushare-k8s, on NodeUnprepareResources) */
} gs_cdi_lease_t;

/* Checks a device name. Returns 0 or GS_EINVAL with one line in err. */
int gs_cdi_name_check(const char *name, char *err, size_t errlen);

/* The spec of lease (a JSON object), or NULL with one line in err (a bad name, an env without
 * GPUSHARE_REGION, a socket path without its directory). */
json_t *gs_cdi_lease_spec(const gs_cdi_lease_t *lease, char *err, size_t errlen);

/* The spec of gpusim's node for containers: device name, gpusim's libraries (host directory
 * sim_dir) at GS_CDI_GPUSIM_DIR, its state (host state_dir) at GS_CDI_GPUSIM_STATE, devices as
 * GPUSIM_DEVICES (NULL or empty: none, the node is taken as it is). NULL with one line in err. */
json_t *gs_cdi_gpusim_spec(const char *name, const char *sim_dir, const char *state_dir,
                           const char *devices, char *err, size_t errlen);

/* Checks that dir is a writable directory without a device kind=name yet. Returns 0, or
 * GS_EACCES or GS_EEXIST with one line in err. gs_cdi_write checks the same. */
int gs_cdi_check(const char *dir, const char *kind, const char *name, char *err, size_t errlen);

/* The key of the lease whose spec in dir defines device GS_CDI_KIND=name (its hooks' --key).
 * Returns 0, GS_ENOENT (no such spec) or GS_EINVAL (not one of gs_cdi_lease_spec's), with one
 * line in err. */
int gs_cdi_spec_key(const char *dir, const char *name, char *key, size_t len, char *err,
                    size_t errlen);

/* Writes spec into directory dir as KIND-NAME.json (kind with '/' as '_'), atomically (a whole
 * file or none), mode 0600: a lease's spec names its socket, which no other user may read (the
 * container runtime reads specs as root, or as their writer when rootless). Refuses, with one line
 * in err, a directory that is not one or not writable and a device kind=name that a spec of dir
 * already has. Returns 0, GS_EEXIST, GS_EACCES, or -errno. */
int gs_cdi_write(const char *dir, const json_t *spec, char *err, size_t errlen);

/* Removes the spec file of device kind=name from dir (0 also when there is none). */
int gs_cdi_remove(const char *dir, const char *kind, const char *name, char *err, size_t errlen);

#endif
