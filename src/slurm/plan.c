/* SPDX-License-Identifier: Apache-2.0 */
/* The Slurm plugin's decisions: its arguments, the lease a step needs, the tasks' environment. */
#include "slurm_plugin.h"

#include "gpushare/error.h"
#include "gpushare/quantity.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole number from min to max, nothing else. */
static int parse_uint(const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
    if (text[0] < '0' || text[0] > '9')
        return GS_EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return GS_EINVAL;
    *out = (uint32_t)v;
    return 0;
}

static int set_path(char *dst, size_t len, const char *key, const char *value, char *err,
                    size_t errlen)
{
    if (value[0] != '/' || strlen(value) >= len)
        return gs_fail(err, errlen, GS_EINVAL,
                       "%s= must be an absolute path shorter than %zu bytes", key, len);
    snprintf(dst, len, "%s", value);
    return 0;
}

static int config_arg(const char *arg, gs__slurm_config_t *cfg, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    size_t key_len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    const char *value = eq != NULL ? eq + 1 : "";
    if (eq != NULL && key_len == 6 && strncmp(arg, "socket", 6) == 0)
        return set_path(cfg->socket, sizeof(cfg->socket), "socket", value, err, errlen);
    if (eq != NULL && key_len == 4 && strncmp(arg, "shim", 4) == 0)
        return set_path(cfg->shim, sizeof(cfg->shim), "shim", value, err, errlen);
    if (eq != NULL && key_len == 7 && strncmp(arg, "timeout", 7) == 0) {
        if (parse_uint(value, 0, GS__SLURM_TIMEOUT_MAX, &cfg->timeout_s) != 0)
            return gs_fail(err, errlen, GS_EINVAL,
                           "timeout=\"%s\" must be whole seconds from 0 to %u", value,
                           GS__SLURM_TIMEOUT_MAX);
        return 0;
    }
    if (eq != NULL && key_len == 6 && strncmp(arg, "shards", 6) == 0) {
        if (parse_uint(value, 1, GS__SLURM_SHARDS_MAX, &cfg->shards) != 0)
            return gs_fail(err, errlen, GS_EINVAL,
                           "shards=\"%s\" must be the shards per GPU, from 1 to %u", value,
                           GS__SLURM_SHARDS_MAX);
        return 0;
    }
    return gs_fail(err, errlen, GS_EINVAL,
                   "unknown argument \"%s\" (socket=PATH, shim=PATH, timeout=SECONDS, shards=S)",
                   arg);
}

int gs__slurm_config_parse(int argc, char **argv, gs__slurm_config_t *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    for (int i = 0; i < argc; i++) {
        int result = config_arg(argv[i], cfg, err, errlen);
        if (result != 0)
            return result;
    }
    return 0;
}

int gs__slurm_parse_memory(const char *text, uint64_t *out)
{
    return gs_qty_parse_bytes(text, GS_QTY_REQUIRE_UNIT, out, NULL, 0);
}

int gs__slurm_parse_compute(const char *text, uint32_t *out)
{
    return gs_qty_parse_percent(text, 0, out, NULL, 0);
}

int gs__slurm_parse_count(const char *text, uint32_t *out)
{
    return parse_uint(text, 1, UINT32_MAX, out);
}

int gs__slurm_check_opts(const gs__slurm_opts_t *opts, char *err, size_t errlen)
{
    if (opts->compute != 0 && opts->memory == 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "gpushare: --gpu-compute goes with --gpu-memory (a shard gres sets the "
                       "compute share by itself)");
    return 0;
}

/* Adds GPU index g to step (once). */
static int add_gpu(gs__slurm_step_t *step, unsigned long g, char *err, size_t errlen)
{
    if (g >= GS_MAX_DEVICES)
        return gs_fail(err, errlen, GS_EINVAL, "GPU index %lu is above %d", g, GS_MAX_DEVICES - 1);
    for (unsigned i = 0; i < step->n_gpus; i++) {
        if (step->gpus[i] == g)
            return gs_fail(err, errlen, GS_EINVAL, "GPU %lu is listed twice", g);
    }
    step->gpus[step->n_gpus++] = (uint8_t)g;
    return 0;
}

/* One item of the list: "3" or "0-2". *p advances past it. */
static int parse_item(const char **p, gs__slurm_step_t *step, char *err, size_t errlen)
{
    char *end = NULL;
    if (**p < '0' || **p > '9')
        return GS_EINVAL;
    unsigned long first = strtoul(*p, &end, 10), last = first;
    if (*end == '-') {
        const char *next = end + 1;
        if (*next < '0' || *next > '9')
            return GS_EINVAL;
        last = strtoul(next, &end, 10);
        if (last < first)
            return GS_EINVAL;
    }
    *p = end;
    for (unsigned long g = first; g <= last; g++) {
        int result = add_gpu(step, g, err, errlen);
        if (result != 0)
            return result;
    }
    return 0;
}

int gs__slurm_parse_gpus(const char *text, gs__slurm_step_t *step, char *err, size_t errlen)
{
    char why[96] = "";
    step->n_gpus = 0;
    const char *p = text;
    int result = *p == '\0' ? GS_EINVAL : 0;
    while (result == 0 && *p != '\0') {
        result = parse_item(&p, step, why, sizeof(why));
        if (result == 0 && *p == ',' && p[1] != '\0')
            p++;
        else if (result == 0 && *p != '\0')
            result = GS_EINVAL;
    }
    if (result != 0) {
        step->n_gpus = 0;
        return gs_fail(err, errlen, GS_EINVAL, "cannot read Slurm's GPU list \"%.64s\"%s%s", text,
                       why[0] != '\0' ? ": " : "", why);
    }
    return 0;
}

/* The step's share of each of its GPUs from its shards, in thousandths. */
static int shard_fraction(const gs__slurm_step_t *step, const gs__slurm_config_t *cfg,
                          uint32_t *milli, char *err, size_t errlen)
{
    if (cfg->shards == 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "gpushare: the step uses shards but the plugin does not know how many a GPU "
                       "has: add shards=S (as in gres.conf) to its plugstack.conf line");
    uint64_t total = (uint64_t)cfg->shards * step->n_gpus;
    if (step->shards > total)
        return gs_fail(
            err, errlen, GS_EINVAL,
            "gpushare: %u shards on %u GPU%s of %u shards each (shards= in plugstack.conf "
            "does not match gres.conf)",
            step->shards, step->n_gpus, step->n_gpus > 1 ? "s" : "", cfg->shards);
    *milli = (uint32_t)((uint64_t)step->shards * 1000 / total);
    if (*milli == 0)
        *milli = 1;
    return 0;
}

/* The compute share in percent that goes with a shard fraction when only memory was asked:
 * rounded down, so that the shares of shards filling a GPU never add up to more than 100 %;
 * 0 (not limited) without shards or with all of a GPU's. */
static uint32_t shard_compute(uint32_t milli)
{
    if (milli == 0 || milli >= 1000)
        return 0;
    return milli >= 10 ? milli / 10 : 1;
}

int gs__slurm_plan(const gs__slurm_opts_t *opts, const gs__slurm_step_t *step,
                   const gs__slurm_config_t *cfg, gs_lease_request_t *req, char *err, size_t errlen)
{
    gs_lease_request_init(req);
    if (opts->memory == 0 && step->shards == 0) {
        if (opts->compute != 0)
            return gs__slurm_check_opts(opts, err, errlen);
        return 0;
    }
    if (step->n_gpus == 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "gpushare: %s needs GPUs from Slurm: add --gres=gpu:N or --gres=shard:N",
                       opts->memory != 0 ? "--gpu-memory" : "a shard gres");
    uint32_t milli = 0;
    int result = step->shards != 0 ? shard_fraction(step, cfg, &milli, err, errlen) : 0;
    if (result != 0)
        return result;
    if (opts->memory != 0) {
        req->kind = GS_LEASE_MEMORY;
        req->memory = opts->memory;
        req->compute = opts->compute != 0 ? opts->compute : shard_compute(milli);
    } else {
        req->kind = GS_LEASE_FRACTION;
        req->fraction_milli = milli;
    }
    req->n_pinned = step->n_gpus;
    memcpy(req->pinned, step->gpus, step->n_gpus);
    req->wait = cfg->timeout_s > 0;
    req->timeout_ms = cfg->timeout_s * 1000;
    return gs_lease_request_check(req, err, errlen) == 0 ? 1 : GS_EINVAL;
}

/* Appends the entry [s, s + n) to out unless it is shim. */
static int append_entry(const char *shim, const char *s, size_t n, char *out, size_t len,
                        size_t *off)
{
    if (n == 0 || (strlen(shim) == n && strncmp(s, shim, n) == 0))
        return 0;
    int w = snprintf(out + *off, len - *off, ":%.*s", (int)n, s);
    if (w < 0 || (size_t)w >= len - *off)
        return GS_ENOSPC;
    *off += (size_t)w;
    return 0;
}

int gs__slurm_preload(const char *shim, const char *old, char *out, size_t len)
{
    int w = snprintf(out, len, "%s", shim);
    if (w < 0 || (size_t)w >= len)
        return GS_ENOSPC;
    size_t off = (size_t)w;
    for (const char *p = old; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, ": \t");
        int result = append_entry(shim, p, n, out, len, &off);
        if (result != 0)
            return result;
        p += n;
        p += strspn(p, ": \t");
    }
    return 0;
}

/* "4G" for one GPU, "0=4G,1=4G" for several: what gpushared itself gives (views.c). */
static int memory_limits(const json_t *gpus, char *out, size_t len)
{
    size_t off = 0, n = json_array_size(gpus);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        json_t *limit = json_object_get(json_array_get(gpus, i), "memory_limit");
        char size[32];
        if (!json_is_integer(limit) || json_integer_value(limit) <= 0 ||
            gs_qty_format_bytes((uint64_t)json_integer_value(limit), size, sizeof(size)) < 0)
            return GS_EINVAL;
        int w = n == 1 ? snprintf(out, len, "%s", size)
                       : snprintf(out + off, len - off, "%s%zu=%s", i > 0 ? "," : "", i, size);
        if (w < 0 || (size_t)w >= len - off)
            return GS_ENOSPC;
        off += (size_t)w;
    }
    return n > 0 ? 0 : GS_EINVAL;
}

static int uuid_list(const json_t *gpus, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        const char *uuid = json_string_value(json_object_get(json_array_get(gpus, i), "uuid"));
        if (uuid == NULL)
            return GS_EINVAL;
        int w = snprintf(out + off, len - off, "%s%s", i > 0 ? "," : "", uuid);
        if (w < 0 || (size_t)w >= len - off)
            return GS_ENOSPC;
        off += (size_t)w;
    }
    return 0;
}

/* Sets key to the decimal value of the lease's integer field when it is above zero. */
static void set_number(json_t *env, const char *key, const json_t *lease, const char *field)
{
    json_t *value = json_object_get(lease, field);
    if (json_is_integer(value) && json_integer_value(value) > 0) {
        char text[32];
        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(value));
        json_object_set_new(env, key, json_string(text));
    }
}

json_t *gs__slurm_env_of_lease(const json_t *lease)
{
    const json_t *gpus = json_object_get(lease, "gpus");
    const char *region = json_string_value(json_object_get(lease, "region"));
    char uuids[GS_MAX_DEVICES * 100], limits[GS_MAX_DEVICES * 32];
    if (!json_is_array(gpus) || region == NULL || !json_is_integer(json_object_get(lease, "id")) ||
        uuid_list(gpus, uuids, sizeof(uuids)) != 0 ||
        memory_limits(gpus, limits, sizeof(limits)) != 0)
        return NULL;
    json_t *env = json_object();
    if (env == NULL)
        return NULL;
    json_object_set_new(env, "CUDA_VISIBLE_DEVICES", json_string(uuids));
    json_object_set_new(env, "GPUSHARE_REGION", json_string(region));
    json_object_set_new(env, "GPUSHARE_MEMORY_LIMIT", json_string(limits));
    set_number(env, "GPUSHARE_COMPUTE_SHARE", lease, "compute_share");
    set_number(env, "GPUSHARE_COMPUTE_MAX", lease, "compute_max");
    set_number(env, "GPUSHARE_LEASE_ID", lease, "id");
    return env;
}
