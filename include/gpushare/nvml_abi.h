/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML subset gpushare and gpusim use, declared from NVIDIA's documented ABI.
 *
 * No nvml.h ships with the CUDA toolkit installed here, so this header declares, with the values
 * and layouts of NVIDIA's NVML API reference (NVML API version 12; struct layouts as in
 * nvml.h 12.2-12.9), the types, constants and functions of libnvidia-ml.so.1 that gpushare's
 * daemon and gpusim's libnvidia-ml use. It contains NVIDIA's ABI and nothing else: no gpushare
 * code, so gpusim may include it without knowing gpushare exists.
 *
 * Notes on versions, where NVIDIA's headers changed over time:
 *  - nvmlProcessInfo_t (used by nvmlDeviceGetComputeRunningProcesses_v3) is the 24-byte layout
 *    {pid, usedGpuMemory, gpuInstanceId, computeInstanceId}. Only the 12.2 header briefly added
 *    usedGpuCcProtectedMemory; drivers since R550 write the 24-byte records, and the protected
 *    memory moved to nvmlProcessDetail_v1_t (not declared here).
 *  - NVML_GPU_INSTANCE_PROFILE_COUNT is the 12.2 value (0xA); later headers add profiles
 *    (_GFX, _NO_ME, _ALL_ME) that no simulated model has.
 * Functions are declared with GS_NVML_API, empty by default; a library defining them may set it
 * to its export attribute before including this header. */
#ifndef GS_NVML_ABI_H
#define GS_NVML_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef GS_NVML_API
#define GS_NVML_API
#endif

#define NVML_API_VERSION     12
#define NVML_API_VERSION_STR "12"

/* Unversioned names resolve to the current versions, as in NVIDIA's header. */
#ifndef NVML_NO_UNVERSIONED_FUNC_DEFS
#define nvmlInit                                   nvmlInit_v2
#define nvmlDeviceGetPciInfo                       nvmlDeviceGetPciInfo_v3
#define nvmlDeviceGetCount                         nvmlDeviceGetCount_v2
#define nvmlDeviceGetHandleByIndex                 nvmlDeviceGetHandleByIndex_v2
#define nvmlDeviceGetHandleByPciBusId              nvmlDeviceGetHandleByPciBusId_v2
#define nvmlDeviceGetAttributes                    nvmlDeviceGetAttributes_v2
#define nvmlComputeInstanceGetInfo                 nvmlComputeInstanceGetInfo_v2
#define nvmlDeviceGetComputeRunningProcesses       nvmlDeviceGetComputeRunningProcesses_v3
#define nvmlDeviceGetGraphicsRunningProcesses      nvmlDeviceGetGraphicsRunningProcesses_v3
#define nvmlDeviceGetMPSComputeRunningProcesses    nvmlDeviceGetMPSComputeRunningProcesses_v3
#define nvmlGetBlacklistDeviceCount                nvmlGetExcludedDeviceCount
#define nvmlGetBlacklistDeviceInfoByIndex          nvmlGetExcludedDeviceInfoByIndex
#define nvmlDeviceGetGpuInstancePossiblePlacements nvmlDeviceGetGpuInstancePossiblePlacements_v2
#endif

#define NVML_STRUCT_VERSION(data, ver)                                                             \
    (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U))

/* ---- return codes ---- */

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* ---- constants ---- */

#define NVML_VALUE_NOT_AVAILABLE               (-1)
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_DEVICE_UUID_BUFFER_SIZE           80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_NAME_BUFFER_SIZE           64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80

#define NVML_INIT_FLAG_NO_GPUS   1 /* do not fail nvmlInit when no GPUs are found */
#define NVML_INIT_FLAG_NO_ATTACH 2 /* do not attach GPUs */

/* CUDA driver versions as nvmlSystemGetCudaDriverVersion reports them (1000 * major + 10 * minor).
 */
#define NVML_CUDA_DRIVER_VERSION_MAJOR(v) ((v) / 1000)
#define NVML_CUDA_DRIVER_VERSION_MINOR(v) (((v) % 1000) / 10)

/* ---- handles (opaque) ---- */

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

/* ---- device structs ---- */

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:18:00.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId; /* 16-bit device id << 16 | 16-bit vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:18:00.0" */
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* % of the sample period during which a kernel was executing */
    unsigned int memory; /* % of the sample period during which device memory was read/written */
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version; /* must be nvmlMemory_v2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used; /* includes reserved */
} nvmlMemory_v2_t;

#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;     /* 0xFFFFFFFF when MIG is disabled */
    unsigned int computeInstanceId; /* 0xFFFFFFFF when MIG is disabled */
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

/* A GPU excluded from use by the administrator (none on the simulated node). */
typedef struct nvmlExcludedDeviceInfo_st {
    nvmlPciInfo_t pciInfo;
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
} nvmlExcludedDeviceInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU timestamp in microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlDeviceAttributes_st {
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlComputeMode_enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1, /* support removed */
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
    NVML_COMPUTEMODE_COUNT
} nvmlComputeMode_t;

/* ---- Multi-Instance GPU ---- */

#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE  0x1

/* GPU instance profiles (the profile argument of nvmlDeviceGetGpuInstanceProfileInfo). */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE      0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE      0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE      0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE      0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE      0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE      0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE      0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7 /* 1g with media extensions (+me) */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8 /* 2g with media extensions (+me) */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9 /* 1g with twice the memory */
#define NVML_GPU_INSTANCE_PROFILE_COUNT        0xA

#define NVML_GPU_INSTANCE_PROFILE_CAPS_P2P 0x1

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start; /* first occupied memory slice */
    unsigned int size;  /* memory slices occupied */
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
    unsigned int id; /* profile id, as nvidia-smi mig -lgip prints it */
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceProfileInfo_v2_st {
    unsigned int version; /* nvmlGpuInstanceProfileInfo_v2 */
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;

#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)

/* Version 3 drops isP2pSupported and adds capabilities (NVML_GPU_INSTANCE_PROFILE_CAPS_*). */
typedef struct nvmlGpuInstanceProfileInfo_v3_st {
    unsigned int version; /* nvmlGpuInstanceProfileInfo_v3 */
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;
} nvmlGpuInstanceProfileInfo_v3_t;

#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 3)

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

/* Compute instance profiles (the profile argument of
 * nvmlGpuInstanceGetComputeInstanceProfileInfo; the profile id equals the constant). */
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE      0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE      0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE      0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE      0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE      0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE      0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE      0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT        0x8

#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT  0x1

typedef struct nvmlComputeInstancePlacement_st {
    unsigned int start; /* first occupied compute slice of the GPU instance */
    unsigned int size;  /* compute slices occupied */
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_v2_st {
    unsigned int version; /* nvmlComputeInstanceProfileInfo_v2 */
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;

#define nvmlComputeInstanceProfileInfo_v2 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 2)

typedef struct nvmlComputeInstanceProfileInfo_v3_st {
    unsigned int version; /* nvmlComputeInstanceProfileInfo_v3 */
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;
} nvmlComputeInstanceProfileInfo_v3_t;

#define nvmlComputeInstanceProfileInfo_v3 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 3)

typedef struct nvmlComputeInstanceInfo_st {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* ---- functions ----
 * Common contract, as NVIDIA documents it: every function returns NVML_SUCCESS or an error code;
 * NVML_ERROR_UNINITIALIZED before nvmlInit (and after the last nvmlShutdown), except
 * nvmlErrorString; NVML_ERROR_INVALID_ARGUMENT for a NULL output pointer or a handle that is not
 * one the library gave out (or whose instance is gone). Outputs go into caller-owned memory and
 * are written on success (counts also when a buffer is too small); nothing needs freeing. All
 * functions are thread-safe.
 * Strings: NVML_ERROR_INSUFFICIENT_SIZE when length cannot hold the text and its NUL.
 * Arrays with a count in/out: NVML_ERROR_INSUFFICIENT_SIZE and the needed count when too small. */

/* ---- functions: initialisation and system ---- */

/* Initialises NVML (reference counted: each init needs a shutdown). */
GS_NVML_API nvmlReturn_t nvmlInit_v2(void);
/* nvmlInit_v2 with NVML_INIT_FLAG_* flags. */
GS_NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
/* Drops one reference; NVML_ERROR_UNINITIALIZED when there is none. */
GS_NVML_API nvmlReturn_t nvmlShutdown(void);
/* Returns a static description of result (never NULL); needs no initialisation. */
GS_NVML_API const char *nvmlErrorString(nvmlReturn_t result);
/* The driver version string, e.g. "580.65.06". */
GS_NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
/* The NVML version string. */
GS_NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
/* The CUDA driver version (1000 * major + 10 * minor). */
GS_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion);
/* Same as nvmlSystemGetCudaDriverVersion. */
GS_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);
/* The name of a process (truncated to length); NVML_ERROR_NOT_FOUND for an unknown pid. */
GS_NVML_API nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name,
                                                  unsigned int length);

/* ---- functions: devices ---- */

/* The number of GPUs (every GPU: CUDA_VISIBLE_DEVICES does not apply). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
/* The handle of GPU index; NVML_ERROR_INVALID_ARGUMENT when index >= the count. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
/* The GPU ("GPU-...") or MIG device ("MIG-...") of a UUID; NVML_ERROR_NOT_FOUND. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
/* The GPU at a PCI bus id ("00000000:18:00.0" or "0000:18:00.0"); NVML_ERROR_NOT_FOUND. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                                          nvmlDevice_t *device);
/* The product name (a MIG device's ends in "MIG <profile>"). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
/* The UUID: "GPU-..." or, for a MIG device, "MIG-...". */
GS_NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
/* The GPU's index, or a MIG device's index under its GPU. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
/* The GPU's minor number (/dev/nvidiaN); NVML_ERROR_NOT_SUPPORTED for a MIG device. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
/* PCI location and ids (a MIG device reports its GPU's). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
/* SMs, slices and memory of a GPU or MIG device. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                    nvmlDeviceAttributes_t *attributes);
/* The CUDA compute capability (9.0 for an H100; a MIG device reports its GPU's). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                            int *minor);
/* Total, free and used device memory in bytes. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
/* As nvmlDeviceGetMemoryInfo with reserved; memory->version must be nvmlMemory_v2
 * (else NVML_ERROR_ARGUMENT_VERSION_MISMATCH). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
/* GPU and memory utilization over the last sample period; NVML_ERROR_NOT_SUPPORTED with MIG. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t *utilization);
/* The processes with a compute context on the device (count in/out). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos);
/* The MPS clients among them (count in/out). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int *infoCount,
                                                                    nvmlProcessInfo_t *infos);
/* The processes with a graphics context (count in/out). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                  unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos);
/* The number of S-class units (0 on other systems). */
GS_NVML_API nvmlReturn_t nvmlUnitGetCount(unsigned int *unitCount);
/* The number of GPUs excluded from use, and one of them by index. */
GS_NVML_API nvmlReturn_t nvmlGetExcludedDeviceCount(unsigned int *deviceCount);
GS_NVML_API nvmlReturn_t nvmlGetExcludedDeviceInfoByIndex(unsigned int index,
                                                          nvmlExcludedDeviceInfo_t *info);
/* Per-process samples newer than lastSeenTimeStamp (count in/out; utilization may be NULL to
 * size); NVML_ERROR_NOT_FOUND when there is none. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
    unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp);
/* The compute mode. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode);
/* Sets the compute mode; NVML_ERROR_NOT_SUPPORTED for EXCLUSIVE_THREAD. */
GS_NVML_API nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode);

/* ---- functions: Multi-Instance GPU ---- */

/* Current and pending MIG mode; NVML_ERROR_NOT_SUPPORTED on GPUs without MIG. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode);
/* Enables or disables MIG; NVML_ERROR_IN_USE (also in *activationStatus) when busy. */
GS_NVML_API nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                              nvmlReturn_t *activationStatus);
/* A GPU instance profile (profile = NVML_GPU_INSTANCE_PROFILE_*); NVML_ERROR_NOT_SUPPORTED
 * when MIG is off or the GPU has no such profile. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                             unsigned int profile,
                                                             nvmlGpuInstanceProfileInfo_t *info);
/* As above into a versioned struct (info->version: nvmlGpuInstanceProfileInfo_v2 or _v3). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info);
/* Every placement of a profile id (placements may be NULL to count). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,
    unsigned int *count);
/* How many more instances of a profile id can be created now. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                   unsigned int profileId,
                                                                   unsigned int *count);
/* Creates a GPU instance of a profile id; NVML_ERROR_INSUFFICIENT_RESOURCES when it does not fit.
 */
GS_NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                     nvmlGpuInstance_t *gpuInstance);
/* Creates a GPU instance at a placement (NVML_ERROR_INVALID_ARGUMENT when not the profile's). */
GS_NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
    nvmlGpuInstance_t *gpuInstance);
/* Destroys a GPU instance; NVML_ERROR_IN_USE while it has compute instances or processes. */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
/* The GPU instances of a profile id (the array must hold the profile's instance count). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                   nvmlGpuInstance_t *gpuInstances,
                                                   unsigned int *count);
/* The GPU instance of an id; NVML_ERROR_NOT_FOUND. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                      nvmlGpuInstance_t *gpuInstance);
/* Parent device, id, profile id and placement of a GPU instance. */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                nvmlGpuInstanceInfo_t *info);
/* A compute instance profile of a GPU instance (profile = NVML_COMPUTE_INSTANCE_PROFILE_*). */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info);
/* As above into a versioned struct (nvmlComputeInstanceProfileInfo_v2 or _v3). */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t *info);
/* How many more compute instances of a profile the GPU instance can hold. */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count);
/* Creates a compute instance; NVML_ERROR_INSUFFICIENT_RESOURCES when it does not fit. */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstance);
/* Destroys a compute instance; NVML_ERROR_IN_USE while processes use it. */
GS_NVML_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
/* The compute instances of a profile (the array must hold its instance count). */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                            unsigned int profileId,
                                                            nvmlComputeInstance_t *computeInstances,
                                                            unsigned int *count);
/* The compute instance of an id; NVML_ERROR_NOT_FOUND. */
GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance);
/* Parent device and GPU instance, id, profile id and placement of a compute instance. */
GS_NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                       nvmlComputeInstanceInfo_t *info);
/* Whether a handle is a MIG device's. */
GS_NVML_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                     unsigned int *isMigDevice);
/* A MIG device's GPU instance id; NVML_ERROR_NOT_SUPPORTED for a GPU handle. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id);
/* A MIG device's compute instance id; NVML_ERROR_NOT_SUPPORTED for a GPU handle. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id);
/* The most MIG devices the GPU can have (0 when MIG is off). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
/* The MIG device at index; NVML_ERROR_NOT_FOUND when none is there. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t *migDevice);
/* The GPU a MIG device belongs to. */
GS_NVML_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                      nvmlDevice_t *device);

/* Legacy entry points, declared (as in NVIDIA's header) only when the unversioned names are not
 * mapped to the current versions. */
#ifdef NVML_NO_UNVERSIONED_FUNC_DEFS
/* Legacy versions of nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 * nvmlDeviceGetHandleByPciBusId_v2 and nvmlDeviceGetAttributes_v2 (the same arguments). */
GS_NVML_API nvmlReturn_t nvmlInit(void);
GS_NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount);
GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device);
GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device);
GS_NVML_API nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device,
                                                 nvmlDeviceAttributes_t *attributes);
/* The process lists of older headers: v1 writes 16-byte nvmlProcessInfo_v1_t records, v2 the
 * 24-byte nvmlProcessInfo_v2_t (the record of v3). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos);
GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v2_t *infos);
GS_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                               unsigned int *infoCount,
                                                               nvmlProcessInfo_v1_t *infos);
GS_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                  unsigned int *infoCount,
                                                                  nvmlProcessInfo_v2_t *infos);
GS_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v1_t *infos);
GS_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                    unsigned int *infoCount,
                                                                    nvmlProcessInfo_v2_t *infos);
/* The pre-R460 names of the excluded-device queries, which NVIDIA's library still exports (its
 * header #undefs the mapping under __NVML_API_VERSION_INTERNAL). */
GS_NVML_API nvmlReturn_t nvmlGetBlacklistDeviceCount(unsigned int *deviceCount);
GS_NVML_API nvmlReturn_t nvmlGetBlacklistDeviceInfoByIndex(unsigned int index,
                                                           nvmlExcludedDeviceInfo_t *info);
#endif

#ifdef __cplusplus
}
#endif

#endif
