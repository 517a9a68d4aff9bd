/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON-lines protocol: lease request checks and the request parser the daemon trusts. */
#include "gpushare/client.h"
#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gs_lease_request_init(gs_lease_request_t *req)
{
    memset(req, 0, sizeof(*req));
    req->wait = 1;
}

/* A MIG profile name as nvidia-smi prints it: "3g.20gb", "1g.10gb+me". */
static int check_mig_profile(const char *name, char *err, size_t errlen)
{
    size_t len = strnlen(name, GS_MIG_PROFILE_MAX);
    int ok = len > 0 && len < GS_MIG_PROFILE_MAX;
    for (size_t i = 0; ok && i < len; i++) {
        char c = name[i];
        ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             c == '.' || c == '+';
    }
    if (!ok)
        return gs_fail(
            err, errlen, GS_EINVAL,
            "a MIG profile is a name like 1g.10gb or 3g.20gb (at most %d letters, digits, "
            "'.' and '+')",
            GS_MIG_PROFILE_MAX - 1);
    return 0;
}

static int check_kind(const gs_lease_request_t *req, char *err, size_t errlen)
{
    switch (req->kind) {
    case GS_LEASE_GPUS:
        if (req->gpus < 1 || req->gpus > GS_LEASE_GPUS_MAX)
            return gs_fail(err, errlen, GS_EINVAL, "the number of GPUs must be from 1 to %d",
                           GS_LEASE_GPUS_MAX);
        return 0;
    case GS_LEASE_FRACTION:
        if (req->fraction_milli < 1 || req->fraction_milli > 1000)
            return gs_fail(err, errlen, GS_EINVAL, "a GPU fraction must be above 0 and at most 1");
        return 0;
    case GS_LEASE_MEMORY:
        if (req->memory == 0)
            return gs_fail(err, errlen, GS_EINVAL, "GPU memory must be above zero");
        return 0;
    case GS_LEASE_MIG:
        if (req->has_mig_start && (req->mig_start > GS_MIG_START_MAX || req->n_pinned != 1))
            return gs_fail(err, errlen, GS_EINVAL,
                           "\"mig_start\" is a memory slot from 0 to %d, on the one GPU of "
                           "\"gpus_at\"",
                           GS_MIG_START_MAX);
        return check_mig_profile(req->mig_profile, err, errlen);
    case GS_LEASE_NONE:
        break;
    }
    return gs_fail(err, errlen, GS_EINVAL,
                   "a lease needs a size: whole GPUs (--gpus), a fraction (--gpu), memory "
                   "(--gpu-memory) or a MIG profile (--mig-profile)");
}

/* Which GPUs a request may go to, by mode: a MIG profile needs a MIG GPU. */
static int check_mode(const gs_lease_request_t *req, char *err, size_t errlen)
{
    char modes[128];
    if ((unsigned)req->mode >= GS_GPU_MODE_END)
        return gs_fail(err, errlen, GS_EINVAL, "unknown GPU mode %d", (int)req->mode);
    if (req->kind == GS_LEASE_MIG && req->mode != GS_GPU_MODE_ANY &&
        !(gs_gpu_mode_flags(req->mode) & GS_MODE_MIG_INSTANCES))
        return gs_fail(err, errlen, GS_EINVAL,
                       "a MIG profile (--mig-profile) is served by %s GPUs only, not %s ones",
                       gs_gpu_mode_list(GS_MODE_MIG_INSTANCES, 0, 0, NULL, modes, sizeof(modes)),
                       gs_gpu_mode_name(req->mode));
    return 0;
}

/* A user name as it may appear in listings: printable, no blank, no slash. */
static int valid_user_name(const char *name)
{
    size_t len = strnlen(name, GS_USER_NAME_MAX);
    if (len == 0 || len == GS_USER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= 0x20 || c == 0x7f || c == '/')
            return 0;
    }
    return 1;
}

static int check_owner(const gs_lease_owner_t *owner, char *err, size_t errlen)
{
    if (!owner->set)
        return 0;
    if (!owner->has_uid && owner->user[0] == '\0')
        return gs_fail(err, errlen, GS_EINVAL,
                       "a lease on behalf of a user needs \"uid\" or \"user\" (\"gid\" alone "
                       "names nobody)");
    if (owner->has_uid && owner->uid == UINT32_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "\"uid\" must be from 0 to %u", UINT32_MAX - 1);
    if (owner->has_gid && owner->gid == UINT32_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "\"gid\" must be from 0 to %u", UINT32_MAX - 1);
    if (owner->user[0] != '\0' && !valid_user_name(owner->user))
        return gs_fail(err, errlen, GS_EINVAL,
                       "\"user\" must be 1 to %d printable characters without blanks or '/'",
                       GS_USER_NAME_MAX - 1);
    return 0;
}

static int check_pinned(const gs_lease_request_t *req, char *err, size_t errlen)
{
    if (req->n_pinned > GS_MAX_DEVICES)
        return gs_fail(err, errlen, GS_EINVAL, "\"gpus_at\" names at most %d GPUs", GS_MAX_DEVICES);
    uint32_t seen = 0;
    for (unsigned i = 0; i < req->n_pinned; i++) {
        if (req->pinned[i] >= GS_MAX_DEVICES)
            return gs_fail(err, errlen, GS_EINVAL, "\"gpus_at\": GPU indexes are from 0 to %d",
                           GS_MAX_DEVICES - 1);
        if (seen & (UINT32_C(1) << req->pinned[i]))
            return gs_fail(err, errlen, GS_EINVAL, "\"gpus_at\" names GPU %u twice",
                           (unsigned)req->pinned[i]);
        seen |= UINT32_C(1) << req->pinned[i];
    }
    if (req->kind == GS_LEASE_GPUS && req->n_pinned > 0 && req->gpus % req->n_pinned != 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "%u logical GPUs cannot be spread evenly over the %u GPUs of \"gpus_at\"",
                       req->gpus, req->n_pinned);
    return 0;
}

/* The name, GPU types and time limit. */
static int check_labels(const gs_lease_request_t *req, char *err, size_t errlen)
{
    char why[GS_CLIENT_ERR_MAX];
    if (memchr(req->name, '\0', sizeof(req->name)) == NULL ||
        (req->name[0] != '\0' && gs_lease_name_check(req->name, why, sizeof(why)) != 0))
        return gs_fail(err, errlen, GS_EINVAL, "invalid name: %s", why);
    if (req->n_gpu_types > GS_GPU_TYPES_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "at most %d GPU types", GS_GPU_TYPES_MAX);
    for (unsigned i = 0; i < req->n_gpu_types; i++) {
        gs_lease_request_t probe;
        memset(&probe, 0, sizeof(probe));
        if (memchr(req->gpu_types[i], '\0', GS_GPU_TYPE_MAX) == NULL ||
            gs_lease_add_gpu_types(&probe, req->gpu_types[i], why, sizeof(why)) != 0 ||
            probe.n_gpu_types != 1)
            return gs_fail(err, errlen, GS_EINVAL, "invalid GPU type: %s",
                           probe.n_gpu_types > 1 ? "one model per entry" : why);
    }
    if (req->n_gpu_types > 0 && req->n_pinned > 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "a request pinned to GPUs (\"gpus_at\") takes no GPU type");
    if (req->time_limit_ms > GS_LEASE_TIME_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "the time limit must be at most a year");
    return 0;
}

int gs_lease_request_check(const gs_lease_request_t *req, char *err, size_t errlen)
{
    if (req->has_mig_start && req->kind != GS_LEASE_MIG)
        return gs_fail(err, errlen, GS_EINVAL, "\"mig_start\" goes with \"mig_profile\" only");
    int result = check_kind(req, err, errlen);
    if (result == 0)
        result = check_owner(&req->owner, err, errlen);
    if (result == 0)
        result = check_pinned(req, err, errlen);
    if (result == 0)
        result = check_mode(req, err, errlen);
    if (result != 0)
        return result;
    if (req->compute > 100 || req->compute_max > 100)
        return gs_fail(err, errlen, GS_EINVAL,
                       "a compute share must be a percentage from 1 to 100");
    if (req->compute != 0 && req->kind != GS_LEASE_MEMORY)
        return gs_fail(err, errlen, GS_EINVAL,
                       "a compute share (--compute) goes with --gpu-memory only: --gpu F sets "
                       "compute to F, --gpus to whole logical GPUs");
    uint32_t share = req->kind == GS_LEASE_FRACTION ? (req->fraction_milli + 9) / 10 : req->compute;
    if (req->compute_max != 0 && req->compute_max < share)
        return gs_fail(err, errlen, GS_EINVAL,
                       "the compute cap (--compute-max %u%%) is below the lease's share (%u%%)",
                       req->compute_max, share);
    if (req->priority < GS_PRIORITY_MIN || req->priority > GS_PRIORITY_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "priority must be from %d to %d", GS_PRIORITY_MIN,
                       GS_PRIORITY_MAX);
    if (req->timeout_ms > GS_LEASE_TIMEOUT_MAX)
        return gs_fail(err, errlen, GS_EINVAL, "the queue timeout must be at most a week");
    if (memchr(req->command, '\0', sizeof(req->command)) == NULL)
        return gs_fail(err, errlen, GS_EINVAL, "the command is not terminated");
    return check_labels(req, err, errlen);
}

const char *gs_op_name(gs_op_t op)
{
    switch (op) {
    case GS_OP_HELLO:
        return "hello";
    case GS_OP_ACQUIRE:
        return "acquire";
    case GS_OP_RELEASE:
        return "release";
    case GS_OP_LIST:
        return "list";
    case GS_OP_STATUS:
        return "status";
    case GS_OP_HISTORY:
        return "history";
    case GS_OP_JOIN:
        return "join";
    case GS_OP_COMPUTE_JOIN:
        return "compute_join";
    case GS_OP_ATTACH:
        return "attach";
    case GS_OP_SUSPEND:
        return "suspend";
    case GS_OP_RESUME:
        return "resume";
    }
    return "?";
}

/* ---- field parsers: each takes the JSON value and reports "field: why" ---- */

static int get_int(const json_t *value, const char *key, json_int_t min, json_int_t max,
                   json_int_t *out, char *err, size_t errlen)
{
    if (!json_is_integer(value))
        return gs_fail(err, errlen, GS_EINVAL, "\"%s\" must be an integer", key);
    json_int_t v = json_integer_value(value);
    if (v < min || v > max)
        return gs_fail(err, errlen, GS_EINVAL, "\"%s\" must be from %lld to %lld", key,
                       (long long)min, (long long)max);
    *out = v;
    return 0;
}

/* A quantity is a string as users write it, or a JSON number. */
static int quantity_text(const json_t *value, const char *key, char *buf, size_t len, char *err,
                         size_t errlen)
{
    if (json_is_string(value)) {
        if (json_string_length(value) >= len)
            return gs_fail(err, errlen, GS_EINVAL, "\"%s\" is too long", key);
        snprintf(buf, len, "%s", json_string_value(value));
        return 0;
    }
    if (json_is_integer(value)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(value));
        return 0;
    }
    if (json_is_real(value)) {
        snprintf(buf, len, "%.15g", json_real_value(value));
        return 0;
    }
    return gs_fail(err, errlen, GS_EINVAL, "\"%s\" must be a string or a number", key);
}

static int set_kind(gs_lease_request_t *req, gs_lease_kind_t kind, char *err, size_t errlen)
{
    if (req->kind != GS_LEASE_NONE)
        return gs_fail(err, errlen, GS_EINVAL,
                       "give only one of \"gpus\", \"gpu\", \"gpu_memory\" and \"mig_profile\" "
                       "(--gpus, --gpu, --gpu-memory, --mig-profile)");
    req->kind = kind;
    return 0;
}

static int parse_gpus(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    json_int_t v = 0;
    int result = get_int(value, "gpus", 1, GS_LEASE_GPUS_MAX, &v, err, errlen);
    if (result == 0)
        result = set_kind(req, GS_LEASE_GPUS, err, errlen);
    if (result == 0)
        req->gpus = (uint32_t)v;
    return result;
}

static int parse_fraction(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    char text[64];
    int result = quantity_text(value, "gpu", text, sizeof(text), err, errlen);
    if (result == 0 && gs_qty_parse_fraction(text, &req->fraction_milli, err, errlen) != 0)
        result = GS_EINVAL;
    if (result == 0)
        result = set_kind(req, GS_LEASE_FRACTION, err, errlen);
    return result;
}

static int parse_memory(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    char text[64];
    int result = quantity_text(value, "gpu_memory", text, sizeof(text), err, errlen);
    if (result == 0 && gs_qty_parse_bytes(text, 0, &req->memory, err, errlen) != 0)
        result = GS_EINVAL;
    if (result == 0)
        result = set_kind(req, GS_LEASE_MEMORY, err, errlen);
    return result;
}

static int parse_mig_profile(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    if (!json_is_string(value) || json_string_length(value) >= GS_MIG_PROFILE_MAX)
        return gs_fail(err, errlen, GS_EINVAL,
                       "\"mig_profile\" must be a string of at most %d bytes",
                       GS_MIG_PROFILE_MAX - 1);
    snprintf(req->mig_profile, sizeof(req->mig_profile), "%s", json_string_value(value));
    return set_kind(req, GS_LEASE_MIG, err, errlen);
}

static int parse_mode(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    char modes[128];
    if (!json_is_string(value) || gs_gpu_mode_parse(json_string_value(value), &req->mode) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "\"mode\" must be %s",
                       gs_gpu_mode_list(0, 0, 1, "any", modes, sizeof(modes)));
    return 0;
}

static int parse_percent(const json_t *value, const char *key, uint32_t *out, char *err,
                         size_t errlen)
{
    char text[64];
    int result = quantity_text(value, key, text, sizeof(text), err, errlen);
    if (result == 0 && gs_qty_parse_percent(text, 0, out, err, errlen) != 0)
        result = GS_EINVAL;
    return result;
}

/* Decodes the UTF-8 character at s into *cp; returns its length (1 for a byte that is not
 * valid UTF-8, decoded as itself). */
static int utf8_next(const unsigned char *s, uint32_t *cp)
{
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xE0) == 0xC0 ? 2
            : (s[0] & 0xF0) == 0xE0 ? 3
            : (s[0] & 0xF8) == 0xF0 ? 4
                                    : 0;
    uint32_t v = n == 1 ? s[0] : n == 2 ? s[0] & 0x1F : n == 3 ? s[0] & 0x0F : s[0] & 0x07;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            n = 0;
            break;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (n == 0) {
        *cp = s[0];
        return 1;
    }
    *cp = v;
    return n;
}

/* Characters a terminal acts on instead of showing: C0 controls and DEL, C1 controls (U+009B is
 * CSI), and the formatting characters that reorder or break text (bidirectional marks,
 * embeddings, overrides and isolates; line and paragraph separators). */
static int is_control(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
           cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void gs_display_escape(char *dst, size_t len, const char *src)
{
    size_t out = 0;
    const unsigned char *p = (const unsigned char *)src;
    while (*p != '\0') {
        uint32_t cp;
        int n = utf8_next(p, &cp);
        char esc[8];
        int w = !is_control(cp) ? 0
                : cp < 0x80     ? snprintf(esc, sizeof(esc), "\\x%02x", (unsigned)cp)
                                : snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
        size_t need = w > 0 ? (size_t)w : (size_t)n;
        if (out + need + 1 > len)
            break; /* cut before a character or an escape that does not fit whole */
        memcpy(dst + out, w > 0 ? esc : (const char *)p, need);
        out += need;
        p += n;
    }
    if (len > 0)
        dst[out] = '\0';
}

/* "uid", "gid" and "user": whom the lease is for (the daemon accepts them from root only). */
static int parse_owner_field(const char *key, const json_t *value, gs_lease_owner_t *owner,
                             char *err, size_t errlen)
{
    json_int_t v = 0;
    int result = 0;
    owner->set = 1;
    if (strcmp(key, "user") == 0) {
        if (!json_is_string(value) || json_string_length(value) >= GS_USER_NAME_MAX)
            return gs_fail(err, errlen, GS_EINVAL, "\"user\" must be a string of at most %d bytes",
                           GS_USER_NAME_MAX - 1);
        snprintf(owner->user, sizeof(owner->user), "%s", json_string_value(value));
        return 0;
    }
    result = get_int(value, key, 0, (json_int_t)UINT32_MAX - 1, &v, err, errlen);
    if (result == 0 && strcmp(key, "uid") == 0) {
        owner->uid = (uint32_t)v;
        owner->has_uid = 1;
    } else if (result == 0) {
        owner->gid = (uint32_t)v;
        owner->has_gid = 1;
    }
    return result;
}

/* "gpus_at": [0, 1]: the NVML indexes of the GPUs the lease must use, in CUDA order. */
static int parse_pinned(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    if (!json_is_array(value) || json_array_size(value) == 0 ||
        json_array_size(value) > GS_MAX_DEVICES)
        return gs_fail(err, errlen, GS_EINVAL, "\"gpus_at\" must be a list of 1 to %d GPU indexes",
                       GS_MAX_DEVICES);
    size_t i;
    json_t *item;
    req->n_pinned = 0;
    json_array_foreach(value, i, item)
    {
        json_int_t v = 0;
        int result = get_int(item, "gpus_at", 0, GS_MAX_DEVICES - 1, &v, err, errlen);
        if (result != 0)
            return result;
        req->pinned[req->n_pinned++] = (uint8_t)v;
    }
    return 0;
}

/* "gpu_type": one model or a list of models. */
static int parse_gpu_types(const json_t *value, gs_lease_request_t *req, char *err, size_t errlen)
{
    char why[GS_CLIENT_ERR_MAX];
    if (json_is_string(value)) {
        if (gs_lease_add_gpu_types(req, json_string_value(value), why, sizeof(why)) != 0)
            return gs_fail(err, errlen, GS_EINVAL, "\"gpu_type\": %s", why);
        return 0;
    }
    if (!json_is_array(value) || json_array_size(value) == 0 ||
        json_array_size(value) > GS_GPU_TYPES_MAX)
        return gs_fail(err, errlen, GS_EINVAL,
                       "\"gpu_type\" must be a GPU model or a list of 1 to %d models",
                       GS_GPU_TYPES_MAX);
    size_t i;
    json_t *item;
    json_array_foreach(value, i, item)
    {
        const char *text = json_string_value(item);
        if (text == NULL || strchr(text, ',') != NULL ||
            gs_lease_add_gpu_types(req, text, why, sizeof(why)) != 0)
            return gs_fail(err, errlen, GS_EINVAL, "\"gpu_type\": %s",
                           text == NULL        ? "models are strings"
                           : strchr(text, ',') ? "one model per entry"
                                               : why);
    }
    return 0;
}

/* "name", "gpu_type" and "time_limit_ms": what people call a job and how they bound it. */
static int parse_label(const char *key, const json_t *value, gs_lease_request_t *req, char *err,
                       size_t errlen)
{
    char why[GS_CLIENT_ERR_MAX];
    if (strcmp(key, "gpu_type") == 0)
        return parse_gpu_types(value, req, err, errlen);
    if (strcmp(key, "time_limit_ms") == 0) {
        json_int_t v = 0;
        int result = get_int(value, key, 1, (json_int_t)GS_LEASE_TIME_MAX, &v, err, errlen);
        req->time_limit_ms = (uint64_t)v;
        return result;
    }
    const char *name = json_string_value(value);
    if (name == NULL || gs_lease_name_check(name, why, sizeof(why)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "\"name\": %s",
                       name == NULL ? "must be a string" : why);
    snprintf(req->name, sizeof(req->name), "%s", name);
    return 0;
}

/* Copies string value into dst (size len) after check: a keyed lease's "key", "cgroup" and
 * "capability" (32 hex digits, gpushared's own: the ledger's copy of the request carries it). */
static int parse_keyed(const char *key, const json_t *value, gs_lease_request_t *req, char *err,
                       size_t errlen)
{
    const char *text = json_string_value(value);
    char why[GS_CLIENT_ERR_MAX] = "";
    int ok = text != NULL;
    if (ok && strcmp(key, "key") == 0)
        ok = gs_lease_key_check(text, why, sizeof(why)) == 0;
    else if (ok && strcmp(key, "cgroup") == 0)
        ok = gs_cgroup_path_check(text, why, sizeof(why)) == 0;
    else if (ok)
        ok = strlen(text) == GS_LEASE_CAP_MAX - 1 &&
             strspn(text, "0123456789abcdef") == GS_LEASE_CAP_MAX - 1;
    if (!ok)
        return gs_fail(err, errlen, GS_EINVAL, "\"%s\": %s", key,
                       why[0] != '\0' ? why : "must be a string of the right form");
    char *dst = strcmp(key, "key") == 0      ? req->key
                : strcmp(key, "cgroup") == 0 ? req->cgroup
                                             : req->capability;
    size_t len = strcmp(key, "key") == 0      ? sizeof(req->key)
                 : strcmp(key, "cgroup") == 0 ? sizeof(req->cgroup)
                                              : sizeof(req->capability);
    snprintf(dst, len, "%s", text);
    return 0;
}

static int parse_acquire_field(const char *key, const json_t *value, gs_lease_request_t *req,
                               char *err, size_t errlen)
{
    json_int_t v = 0;
    int result = 0;
    if (strcmp(key, "gpus") == 0)
        return parse_gpus(value, req, err, errlen);
    if (strcmp(key, "gpu") == 0)
        return parse_fraction(value, req, err, errlen);
    if (strcmp(key, "gpu_memory") == 0)
        return parse_memory(value, req, err, errlen);
    if (strcmp(key, "mig_profile") == 0)
        return parse_mig_profile(value, req, err, errlen);
    if (strcmp(key, "mig_start") == 0) {
        result = get_int(value, key, 0, GS_MIG_START_MAX, &v, err, errlen);
        req->has_mig_start = 1;
        req->mig_start = (uint32_t)v;
        return result;
    }
    if (strcmp(key, "mode") == 0)
        return parse_mode(value, req, err, errlen);
    if (strcmp(key, "compute") == 0)
        return parse_percent(value, "compute", &req->compute, err, errlen);
    if (strcmp(key, "compute_max") == 0)
        return parse_percent(value, "compute_max", &req->compute_max, err, errlen);
    if (strcmp(key, "priority") == 0) {
        result = get_int(value, key, GS_PRIORITY_MIN, GS_PRIORITY_MAX, &v, err, errlen);
        req->priority = (int32_t)v;
        return result;
    }
    if (strcmp(key, "timeout_ms") == 0) {
        result = get_int(value, key, 0, GS_LEASE_TIMEOUT_MAX, &v, err, errlen);
        req->timeout_ms = (uint32_t)v;
        return result;
    }
    if (strcmp(key, "wait") == 0) {
        if (!json_is_boolean(value))
            return gs_fail(err, errlen, GS_EINVAL, "\"wait\" must be true or false");
        req->wait = json_is_true(value);
        return 0;
    }
    if (strcmp(key, "command") == 0) {
        if (!json_is_string(value))
            return gs_fail(err, errlen, GS_EINVAL, "\"command\" must be a string");
        gs_display_escape(req->command, sizeof(req->command), json_string_value(value));
        return 0;
    }
    if (strcmp(key, "uid") == 0 || strcmp(key, "gid") == 0 || strcmp(key, "user") == 0)
        return parse_owner_field(key, value, &req->owner, err, errlen);
    if (strcmp(key, "gpus_at") == 0)
        return parse_pinned(value, req, err, errlen);
    if (strcmp(key, "key") == 0 || strcmp(key, "cgroup") == 0 || strcmp(key, "capability") == 0)
        return parse_keyed(key, value, req, err, errlen);
    if (strcmp(key, "name") == 0 || strcmp(key, "gpu_type") == 0 ||
        strcmp(key, "time_limit_ms") == 0)
        return parse_label(key, value, req, err, errlen);
    return gs_fail(err, errlen, GS_EINVAL, "unknown field \"%s\" in acquire", key);
}

static int parse_acquire(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    gs_lease_request_init(&out->lease);
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        if (strcmp(key, "op") == 0)
            continue;
        int result = parse_acquire_field(key, value, &out->lease, err, errlen);
        if (result != 0)
            return result;
    }
    return gs_lease_request_check(&out->lease, err, errlen);
}

/* A request's "key" (release, attach). */
static int copy_key(const json_t *value, gs_request_t *out, char *err, size_t errlen)
{
    char why[GS_CLIENT_ERR_MAX];
    const char *text = json_string_value(value);
    if (text == NULL || gs_lease_key_check(text, why, sizeof(why)) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "\"key\": %s",
                       text == NULL ? "must be a string" : why);
    snprintf(out->key, sizeof(out->key), "%s", text);
    return 0;
}

/* "exit_status" / "signal" of release: how the lease's job ended, for the history. */
static int parse_job_end(const char *key, const json_t *value, gs_job_end_t *end, char *err,
                         size_t errlen)
{
    json_int_t v = 0;
    int is_signal = strcmp(key, "signal") == 0;
    int result = get_int(value, key, is_signal ? 1 : 0, is_signal ? 127 : 255, &v, err, errlen);
    if (result != 0)
        return result;
    if (end->known)
        return gs_fail(err, errlen, GS_EINVAL, "give \"exit_status\" or \"signal\", not both");
    end->known = 1;
    if (is_signal)
        end->signal = (int)v;
    else
        end->exit_status = (int)v;
    return 0;
}

/* release, join, suspend and resume name a lease; release may add "force" (the daemon accepts it
 * from root) and how its job ended. */
static int parse_release(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    const char *key;
    json_t *value;
    int seen = 0;
    json_object_foreach(obj, key, value)
    {
        int result = 0;
        json_int_t v = 0;
        if (strcmp(key, "op") == 0)
            continue;
        if (out->op == GS_OP_RELEASE && strcmp(key, "force") == 0) {
            if (!json_is_boolean(value))
                return gs_fail(err, errlen, GS_EINVAL, "\"force\" must be true or false");
            out->force = json_is_true(value);
        } else if (out->op == GS_OP_RELEASE &&
                   (strcmp(key, "exit_status") == 0 || strcmp(key, "signal") == 0)) {
            result = parse_job_end(key, value, &out->job_end, err, errlen);
        } else if (strcmp(key, "lease") == 0) {
            result = get_int(value, "lease", 1, INT64_MAX, &v, err, errlen);
            out->lease_id = (uint64_t)v;
            seen++;
        } else if (out->op == GS_OP_RELEASE && strcmp(key, "key") == 0) {
            result = copy_key(value, out, err, errlen);
            seen++;
        } else {
            result = gs_fail(err, errlen, GS_EINVAL, "unknown field \"%s\" in %s", key,
                             gs_op_name(out->op));
        }
        if (result != 0)
            return result;
    }
    if (seen != 1)
        return gs_fail(
            err, errlen, GS_EINVAL, "%s needs \"lease\": the lease id%s", gs_op_name(out->op),
            out->op == GS_OP_RELEASE ? " (or \"key\": a keyed lease's key), not both" : "");
    return 0;
}

/* attach: "key" and either "pid" (the cgroup of that process) or "cgroup". */
static int parse_attach(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        int result = 0;
        json_int_t v = 0;
        char why[GS_CLIENT_ERR_MAX];
        if (strcmp(key, "op") == 0)
            continue;
        if (strcmp(key, "key") == 0) {
            result = copy_key(value, out, err, errlen);
        } else if (strcmp(key, "pid") == 0) {
            result = get_int(value, key, 1, INT32_MAX, &v, err, errlen);
            out->pid = (int32_t)v;
        } else if (strcmp(key, "cgroup") == 0 && json_is_string(value)) {
            if (gs_cgroup_path_check(json_string_value(value), why, sizeof(why)) != 0)
                return gs_fail(err, errlen, GS_EINVAL, "\"cgroup\": %s", why);
            snprintf(out->cgroup, sizeof(out->cgroup), "%s", json_string_value(value));
        } else {
            result =
                gs_fail(err, errlen, GS_EINVAL, "unknown or invalid field \"%s\" in attach", key);
        }
        if (result != 0)
            return result;
    }
    if (out->key[0] == '\0' || (out->pid == 0) == (out->cgroup[0] == '\0'))
        return gs_fail(err, errlen, GS_EINVAL,
                       "attach needs \"key\" and either \"pid\" or \"cgroup\"");
    return 0;
}

/* A GPU's UUID as NVML and the driver print it: "GPU-" or "MIG-" and hex digits and dashes. */
static int valid_uuid(const char *text)
{
    if (strncmp(text, "GPU-", 4) != 0 && strncmp(text, "MIG-", 4) != 0)
        return 0;
    size_t n = strlen(text);
    return n > 4 && n < GS_GPU_UUID_MAX && strspn(text + 4, "0123456789abcdefABCDEF-/") == n - 4;
}

/* compute_join: "lease", "gpu" (its UUID) and optionally "cap" (percent, 0-100). */
static int parse_compute_join(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        int result = 0;
        json_int_t v = 0;
        if (strcmp(key, "op") == 0)
            continue;
        if (strcmp(key, "lease") == 0) {
            result = get_int(value, key, 1, INT64_MAX, &v, err, errlen);
            out->lease_id = (uint64_t)v;
        } else if (strcmp(key, "cap") == 0) {
            result = get_int(value, key, 0, 100, &v, err, errlen);
            out->cap_pct = (uint32_t)v;
        } else if (strcmp(key, "gpu") == 0 && json_is_string(value) &&
                   valid_uuid(json_string_value(value))) {
            snprintf(out->gpu_uuid, sizeof(out->gpu_uuid), "%s", json_string_value(value));
        } else {
            result = gs_fail(err, errlen, GS_EINVAL,
                             "unknown or invalid field \"%s\" in compute_join", key);
        }
        if (result != 0)
            return result;
    }
    if (out->lease_id == 0 || out->gpu_uuid[0] == '\0')
        return gs_fail(err, errlen, GS_EINVAL, "compute_join needs \"lease\" and \"gpu\"");
    return 0;
}

/* "before": [ended_at_ms, id], where a page of the history goes on (the previous reply's
 * "next"). */
static int parse_cursor(const json_t *value, gs_history_query_t *q, char *err, size_t errlen)
{
    json_int_t ms = 0, id = 0;
    if (!json_is_array(value) || json_array_size(value) != 2 ||
        get_int(json_array_get(value, 0), "before", 1, INT64_MAX, &ms, err, errlen) != 0 ||
        get_int(json_array_get(value, 1), "before", 0, INT64_MAX, &id, err, errlen) != 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "\"before\" must be [ended_at_ms, id] (a reply's \"next\")");
    q->before_ms = (int64_t)ms;
    q->before_id = (int64_t)id;
    return 0;
}

/* history: "since_ms", "user", "limit", "before". */
static int parse_history(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    const char *key;
    json_t *value;
    gs_history_query_t *q = &out->history;
    q->limit = GS_HISTORY_DEFAULT;
    json_object_foreach(obj, key, value)
    {
        int result = 0;
        json_int_t v = 0;
        if (strcmp(key, "op") == 0)
            continue;
        if (strcmp(key, "since_ms") == 0) {
            result = get_int(value, key, 0, INT64_MAX, &v, err, errlen);
            q->since_ms = (int64_t)v;
        } else if (strcmp(key, "limit") == 0) {
            result = get_int(value, key, 1, GS_HISTORY_MAX, &v, err, errlen);
            q->limit = (uint32_t)v;
        } else if (strcmp(key, "before") == 0) {
            result = parse_cursor(value, q, err, errlen);
        } else if (strcmp(key, "user") == 0) {
            if (!json_is_string(value) || !valid_user_name(json_string_value(value)))
                result = gs_fail(err, errlen, GS_EINVAL,
                                 "\"user\" must be 1 to %d printable characters without blanks or "
                                 "'/'",
                                 GS_USER_NAME_MAX - 1);
            else
                snprintf(q->user, sizeof(q->user), "%s", json_string_value(value));
        } else {
            result = gs_fail(err, errlen, GS_EINVAL, "unknown field \"%s\" in history", key);
        }
        if (result != 0)
            return result;
    }
    return 0;
}

/* hello may say which protocol version and client it is; status may ask for the processes;
 * list takes nothing. */
static int parse_simple(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        if (strcmp(key, "op") == 0)
            continue;
        if (out->op == GS_OP_HELLO && strcmp(key, "version") == 0 && json_is_integer(value))
            continue;
        if (out->op == GS_OP_HELLO && strcmp(key, "client") == 0 && json_is_string(value))
            continue;
        if (out->op == GS_OP_STATUS && strcmp(key, "processes") == 0 && json_is_boolean(value)) {
            out->processes = json_is_true(value);
            continue;
        }
        return gs_fail(err, errlen, GS_EINVAL, "unknown or invalid field \"%s\" in %s", key,
                       gs_op_name(out->op));
    }
    return 0;
}

static int parse_op(json_t *obj, gs_request_t *out, char *err, size_t errlen)
{
    json_t *op = json_object_get(obj, "op");
    if (!json_is_string(op))
        return gs_fail(err, errlen, GS_EINVAL, "a request needs \"op\": a string");
    const char *name = json_string_value(op);
    for (gs_op_t o = GS_OP_HELLO; o <= GS_OP_RESUME; o++) {
        if (strcmp(name, gs_op_name(o)) == 0) {
            out->op = o;
            return 0;
        }
    }
    char shown[40];
    gs_display_escape(shown, sizeof(shown), name);
    return gs_fail(err, errlen, GS_EINVAL,
                   "unknown op \"%s\" (hello, acquire, release, list, status, history, join, "
                   "compute_join, attach, suspend or resume)",
                   shown);
}

int gs_proto_parse_request(const char *line, size_t len, gs_request_t *out, char *err,
                           size_t errlen)
{
    if (len > GS_PROTO_LINE_MAX)
        return gs_fail(err, errlen, GS_EMSGSIZE, "request longer than %d bytes", GS_PROTO_LINE_MAX);
    memset(out, 0, sizeof(*out));
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    json_error_t jerr;
    json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (obj == NULL)
        return gs_fail(err, errlen, GS_EFORMAT, "malformed JSON at column %d: %s", jerr.column,
                       jerr.text);
    int result = 0;
    if (!json_is_object(obj)) {
        result = gs_fail(err, errlen, GS_EFORMAT, "a request must be a JSON object");
        goto out;
    }
    result = parse_op(obj, out, err, errlen);
    if (result != 0)
        goto out;
    if (out->op == GS_OP_ACQUIRE)
        result = parse_acquire(obj, out, err, errlen);
    else if (out->op == GS_OP_RELEASE || out->op == GS_OP_JOIN || out->op == GS_OP_SUSPEND ||
             out->op == GS_OP_RESUME)
        result = parse_release(obj, out, err, errlen);
    else if (out->op == GS_OP_COMPUTE_JOIN)
        result = parse_compute_join(obj, out, err, errlen);
    else if (out->op == GS_OP_ATTACH)
        result = parse_attach(obj, out, err, errlen);
    else if (out->op == GS_OP_HISTORY)
        result = parse_history(obj, out, err, errlen);
    else
        result = parse_simple(obj, out, err, errlen);
out:
    json_decref(obj);
    return result;
}

static int add_owner(json_t *obj, const gs_lease_owner_t *owner)
{
    int bad = 0;
    if (owner->set && owner->has_uid)
        bad |= json_object_set_new(obj, "uid", json_integer(owner->uid));
    if (owner->set && owner->has_gid)
        bad |= json_object_set_new(obj, "gid", json_integer(owner->gid));
    if (owner->set && owner->user[0] != '\0')
        bad |= json_object_set_new(obj, "user", json_string(owner->user));
    return bad;
}

static int add_labels(json_t *obj, const gs_lease_request_t *req)
{
    int bad = 0;
    if (req->name[0] != '\0')
        bad |= json_object_set_new(obj, "name", json_string(req->name));
    if (req->n_gpu_types > 0) {
        json_t *types = json_array();
        for (unsigned i = 0; types != NULL && i < req->n_gpu_types; i++)
            bad |= json_array_append_new(types, json_string(req->gpu_types[i]));
        bad |= json_object_set_new(obj, "gpu_type", types);
    }
    if (req->time_limit_ms != 0)
        bad |=
            json_object_set_new(obj, "time_limit_ms", json_integer((json_int_t)req->time_limit_ms));
    return bad;
}

json_t *gs_proto_acquire_json(const gs_lease_request_t *req)
{
    json_t *obj = json_object();
    if (obj == NULL)
        return NULL;
    int bad = json_object_set_new(obj, "op", json_string("acquire"));
    char text[32];
    switch (req->kind) {
    case GS_LEASE_GPUS:
        bad |= json_object_set_new(obj, "gpus", json_integer(req->gpus));
        break;
    case GS_LEASE_FRACTION:
        snprintf(text, sizeof(text), "%u.%03u", req->fraction_milli / 1000,
                 req->fraction_milli % 1000);
        bad |= json_object_set_new(obj, "gpu", json_string(text));
        break;
    case GS_LEASE_MEMORY:
        if (gs_qty_format_bytes(req->memory, text, sizeof(text)) < 0)
            bad = 1;
        else
            bad |= json_object_set_new(obj, "gpu_memory", json_string(text));
        break;
    case GS_LEASE_MIG:
        bad |= json_object_set_new(obj, "mig_profile", json_string(req->mig_profile));
        if (req->has_mig_start)
            bad |= json_object_set_new(obj, "mig_start", json_integer(req->mig_start));
        break;
    case GS_LEASE_NONE:
        break;
    }
    if (req->mode != GS_GPU_MODE_ANY)
        bad |= json_object_set_new(obj, "mode", json_string(gs_gpu_mode_name(req->mode)));
    if (req->compute != 0)
        bad |= json_object_set_new(obj, "compute", json_integer(req->compute));
    if (req->compute_max != 0)
        bad |= json_object_set_new(obj, "compute_max", json_integer(req->compute_max));
    if (req->priority != 0)
        bad |= json_object_set_new(obj, "priority", json_integer(req->priority));
    bad |= json_object_set_new(obj, "wait", json_boolean(req->wait));
    if (req->timeout_ms != 0)
        bad |= json_object_set_new(obj, "timeout_ms", json_integer(req->timeout_ms));
    if (req->command[0] != '\0')
        bad |= json_object_set_new(obj, "command", json_string(req->command));
    bad |= add_owner(obj, &req->owner);
    bad |= add_labels(obj, req);
    if (req->key[0] != '\0')
        bad |= json_object_set_new(obj, "key", json_string(req->key));
    if (req->cgroup[0] != '\0')
        bad |= json_object_set_new(obj, "cgroup", json_string(req->cgroup));
    if (req->capability[0] != '\0')
        bad |= json_object_set_new(obj, "capability", json_string(req->capability));
    if (req->n_pinned > 0) {
        json_t *at = json_array();
        for (unsigned i = 0; at != NULL && i < req->n_pinned; i++)
            bad |= json_array_append_new(at, json_integer(req->pinned[i]));
        bad |= json_object_set_new(obj, "gpus_at", at);
    }
    if (bad) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}
