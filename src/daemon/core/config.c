/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare.conf: the [daemon] section and [gpu:all] / [gpu:N] / [gpu:UUID] sections (libinih). */
#include "config.h"

#include "gpushare/error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* State of one parse: the config being filled and the first error. */
typedef struct parse_ctx {
    gs__config_t *cfg;
    char error[GS__CONFIG_ERRMAX]; /* "" until the first error */
    int result;
    char section[128];      /* the section being read */
    gs__gpu_section_t *gpu; /* its GPU entry, NULL for [daemon] */
    unsigned seen;          /* keys of the current section already given (bits) */
} parse_ctx_t;

static const char *const policy_names[] = {"gpushare", "fgd", "bestfit", "spread"};
static const char *const enforce_names[] = {"report", "kill"};

const char *gs__enforce_name(gs__enforce_t enforce)
{
    return (unsigned)enforce < 2 ? enforce_names[enforce] : "?";
}

const char *gs__policy_name(gs__policy_t policy)
{
    return (unsigned)policy < 4 ? policy_names[policy] : "?";
}

void gs__config_defaults(gs__config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->socket, sizeof(cfg->socket), "%s", "/run/gpushare/gpushared.sock");
    snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", GS__DEFAULT_STATE_DIR);
    snprintf(cfg->metrics_listen, sizeof(cfg->metrics_listen), "%s", GS__DEFAULT_METRICS);
    snprintf(cfg->nvml_library, sizeof(cfg->nvml_library), "%s", "libnvidia-ml.so.1");
    snprintf(cfg->runtime_dir, sizeof(cfg->runtime_dir), "%s", GS__DEFAULT_RUNTIME);
    snprintf(cfg->mps_control, sizeof(cfg->mps_control), "%s", GS__DEFAULT_MPS_CTL);
    cfg->idle_timeout_ms = GS__DEFAULT_IDLE_MS;
    cfg->watch_interval_ms = GS__DEFAULT_WATCH_MS;
    cfg->watch_tolerance = GS__DEFAULT_TOLERANCE;
    cfg->enforce = GS__ENFORCE_KILL;
    cfg->queue_aging_ms = GS__DEFAULT_AGING_MS;
    cfg->kill_grace_ms = GS__DEFAULT_GRACE_MS;
    cfg->max_connections_per_user = GS__DEFAULT_MAX_CONNS;
    cfg->max_queued_per_user = GS__DEFAULT_MAX_QUEUED;
    cfg->max_output_per_connection = GS__DEFAULT_MAX_OUTPUT;
    cfg->max_output_per_user = GS__DEFAULT_MAX_USER_OUTPUT;
    cfg->max_leases_per_user = GS__DEFAULT_MAX_LEASES;
    cfg->compute_members_per_lease = GS__DEFAULT_COMPUTE_MEMBERS_LEASE;
    cfg->compute_members_per_user = GS__DEFAULT_COMPUTE_MEMBERS_USER;
    cfg->compute_leases_per_user = GS__DEFAULT_COMPUTE_LEASES_USER;
    cfg->history_max_rows = GS__DEFAULT_HISTORY_ROWS;
    cfg->history_max_rows_per_user = GS__DEFAULT_HISTORY_USER_ROWS;
    cfg->history_max_days = GS__DEFAULT_HISTORY_DAYS;
    cfg->metrics_users = GS__METRICS_USERS_NONE;
}

static int parse_enum(const char *value, const char *const *names, unsigned n, unsigned *out);

static int bad(parse_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first error; returns 0 so that inih reports the line. */
static int bad(parse_ctx_t *ctx, const char *fmt, ...)
{
    if (ctx->error[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->error, sizeof(ctx->error), fmt, ap);
        va_end(ap);
        ctx->result = GS_EINVAL;
    }
    return 0;
}

int gs__config_parse_listen(const char *text, uint32_t *addr, uint16_t *port)
{
    const char *colon = strrchr(text, ':');
    if (colon == NULL || colon == text || (size_t)(colon - text) >= 64)
        return GS_EINVAL;
    char host[64];
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    struct in_addr in;
    if (inet_pton(AF_INET, host, &in) != 1)
        return GS_EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno != 0 || p > 65535 || colon[1] == '-')
        return GS_EINVAL;
    *addr = ntohl(in.s_addr);
    *port = (uint16_t)p;
    return 0;
}

static int set_path(parse_ctx_t *ctx, char *dst, size_t len, const char *key, const char *value)
{
    if (value[0] == '\0')
        return bad(ctx, "%s must not be empty", key);
    if (strlen(value) >= len)
        return bad(ctx, "%s is too long (at most %zu bytes)", key, len - 1);
    snprintf(dst, len, "%s", value);
    return 1;
}

/* A number of seconds from min to max (a decimal point allowed), stored in ms. */
static int set_seconds(parse_ctx_t *ctx, const char *key, const char *value, double min, double max,
                       unsigned *ms)
{
    char *end = NULL;
    errno = 0;
    double seconds = strtod(value, &end);
    if (end == value || *end != '\0' || errno != 0 || !(seconds >= min && seconds <= max))
        return bad(ctx, "%s \"%s\" must be seconds from %g to %g", key, value, min, max);
    *ms = (unsigned)(seconds * 1000.0 + 0.5);
    return 1;
}

/* The watchdog's keys of [daemon]: watch_interval, watch_tolerance, enforce. */
static int watch_key(parse_ctx_t *ctx, const char *key, const char *value)
{
    gs__config_t *cfg = ctx->cfg;
    if (strcmp(key, "enforce") == 0) {
        unsigned v = 0;
        if (parse_enum(value, enforce_names, 2, &v) != 0)
            return bad(ctx, "enforce \"%s\" must be report or kill", value);
        cfg->enforce = (gs__enforce_t)v;
        return 1;
    }
    if (strcmp(key, "watch_tolerance") == 0) {
        char why[GS_QTY_ERR_MAX];
        if (gs_qty_parse_bytes(value, GS_QTY_ALLOW_ZERO, &cfg->watch_tolerance, why, sizeof(why)) !=
            0)
            return bad(ctx, "watch_tolerance: %s", why);
        return 1;
    }
    if (strcmp(value, "0") == 0) {
        cfg->watch_interval_ms = 0; /* no watchdog */
        return 1;
    }
    return set_seconds(ctx, key, value, 0.1, 3600, &cfg->watch_interval_ms);
}

/* The per-user counts: a whole number from 1 to 65536. */
static int set_count(parse_ctx_t *ctx, const char *key, const char *value, unsigned *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || n < 1 || n > 65536)
        return bad(ctx, "%s \"%s\" must be a whole number from 1 to 65536", key, value);
    *out = (unsigned)n;
    return 1;
}

/* max_output_per_connection, max_output_per_user: a size from 64K to 1G. */
static int set_output(parse_ctx_t *ctx, const char *key, const char *value, unsigned *out)
{
    char why[GS_QTY_ERR_MAX];
    uint64_t bytes = 0;
    if (gs_qty_parse_bytes(value, 0, &bytes, why, sizeof(why)) != 0)
        return bad(ctx, "%s: %s", key, why);
    if (bytes < 65536 || bytes > (UINT64_C(1) << 30))
        return bad(ctx, "%s \"%s\" must be from 64K to 1G", key, value);
    *out = (unsigned)bytes;
    return 1;
}

/* A whole number from min to max. */
static int set_range(parse_ctx_t *ctx, const char *key, const char *value, unsigned long min,
                     unsigned long max, unsigned *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || n < min || n > max)
        return bad(ctx, "%s \"%s\" must be a whole number from %lu to %lu", key, value, min, max);
    *out = (unsigned)n;
    return 1;
}

/* The keys of issue 28's bounds: what one user may make the daemon hold, and the history's
 * retention. Returns -1 when key is none of them. */
static int limits_key(parse_ctx_t *ctx, const char *key, const char *value)
{
    gs__config_t *cfg = ctx->cfg;
    if (strcmp(key, "max_output_per_user") == 0)
        return set_output(ctx, key, value, &cfg->max_output_per_user);
    if (strcmp(key, "max_leases_per_user") == 0)
        return set_range(ctx, key, value, 1, 65536, &cfg->max_leases_per_user);
    if (strcmp(key, "compute_members_per_lease") == 0)
        return set_range(ctx, key, value, 1, 256, &cfg->compute_members_per_lease);
    if (strcmp(key, "compute_members_per_user") == 0)
        return set_range(ctx, key, value, 1, 256, &cfg->compute_members_per_user);
    if (strcmp(key, "compute_leases_per_user") == 0)
        return set_range(ctx, key, value, 1, 64, &cfg->compute_leases_per_user);
    if (strcmp(key, "history_max_rows") == 0)
        return set_range(ctx, key, value, 100, 100000000, &cfg->history_max_rows);
    if (strcmp(key, "history_max_rows_per_user") == 0)
        return set_range(ctx, key, value, 10, 100000000, &cfg->history_max_rows_per_user);
    if (strcmp(key, "history_max_days") == 0)
        return set_range(ctx, key, value, 1, 36500, &cfg->history_max_days);
    return -1;
}

static int daemon_key(parse_ctx_t *ctx, const char *key, const char *value)
{
    gs__config_t *cfg = ctx->cfg;
    if (strcmp(key, "socket") == 0)
        return set_path(ctx, cfg->socket, sizeof(cfg->socket), key, value);
    if (strcmp(key, "state_dir") == 0)
        return set_path(ctx, cfg->state_dir, sizeof(cfg->state_dir), key, value);
    if (strcmp(key, "region_dir") == 0)
        return set_path(ctx, cfg->region_dir, sizeof(cfg->region_dir), key, value);
    if (strcmp(key, "nvml_library") == 0)
        return set_path(ctx, cfg->nvml_library, sizeof(cfg->nvml_library), key, value);
    if (strcmp(key, "shim") == 0)
        return set_path(ctx, cfg->shim, sizeof(cfg->shim), key, value);
    if (strcmp(key, "runtime_dir") == 0)
        return set_path(ctx, cfg->runtime_dir, sizeof(cfg->runtime_dir), key, value);
    if (strcmp(key, "mps_control") == 0)
        return set_path(ctx, cfg->mps_control, sizeof(cfg->mps_control), key, value);
    if (strcmp(key, "lease_admin_group") == 0)
        return set_path(ctx, cfg->lease_admin_group, sizeof(cfg->lease_admin_group), key, value);
    if (strcmp(key, "metrics_listen") == 0) {
        uint32_t addr;
        uint16_t port;
        if (gs__config_parse_listen(value, &addr, &port) != 0)
            return bad(ctx,
                       "metrics_listen \"%s\" is not ADDRESS:PORT (e.g. 127.0.0.1:9447; "
                       "port 0 turns metrics off)",
                       value);
        return set_path(ctx, cfg->metrics_listen, sizeof(cfg->metrics_listen), key, value);
    }
    if (strcmp(key, "watch_interval") == 0 || strcmp(key, "enforce") == 0 ||
        strcmp(key, "watch_tolerance") == 0)
        return watch_key(ctx, key, value);
    if (strcmp(key, "idle_timeout") == 0)
        return set_seconds(ctx, key, value, 0.1, 3600, &cfg->idle_timeout_ms);
    if (strcmp(key, "queue_aging") == 0)
        return set_seconds(ctx, key, value, 0, 86400, &cfg->queue_aging_ms);
    if (strcmp(key, "kill_grace") == 0)
        return set_seconds(ctx, key, value, 0.1, 3600, &cfg->kill_grace_ms);
    if (strcmp(key, "max_connections_per_user") == 0)
        return set_count(ctx, key, value, &cfg->max_connections_per_user);
    if (strcmp(key, "max_queued_per_user") == 0)
        return set_count(ctx, key, value, &cfg->max_queued_per_user);
    if (strcmp(key, "max_output_per_connection") == 0)
        return set_output(ctx, key, value, &cfg->max_output_per_connection);
    int limit = limits_key(ctx, key, value);
    if (limit >= 0)
        return limit;
    if (strcmp(key, "metrics_users") == 0) {
        if (strcmp(value, "all") != 0 && strcmp(value, "none") != 0)
            return bad(ctx, "metrics_users \"%s\" must be all or none", value);
        cfg->metrics_users = value[0] == 'a' ? GS__METRICS_USERS_ALL : GS__METRICS_USERS_NONE;
        return 1;
    }
    return bad(ctx,
               "unknown key \"%s\" in [daemon] (socket, state_dir, runtime_dir, metrics_listen, "
               "nvml_library, shim, mps_control, idle_timeout, queue_aging, kill_grace, "
               "watch_interval, watch_tolerance, enforce, max_connections_per_user, "
               "max_queued_per_user, max_output_per_connection, max_output_per_user, "
               "max_leases_per_user, compute_members_per_lease, compute_members_per_user, "
               "compute_leases_per_user, history_max_rows, history_max_rows_per_user, "
               "history_max_days, metrics_users, lease_admin_group)",
               key);
}

static int parse_enum(const char *value, const char *const *names, unsigned n, unsigned *out)
{
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return GS_EINVAL;
}

static int gpu_key(parse_ctx_t *ctx, const char *key, const char *value)
{
    gs__gpu_settings_t *s = &ctx->gpu->settings;
    unsigned v = 0;
    if (strcmp(key, "mode") == 0) {
        char modes[128];
        /* The modes that share a GPU first: the usual choices. */
        if (gs_gpu_mode_parse(value, &s->mode) != 0 || s->mode == GS_GPU_MODE_ANY)
            return bad(ctx, "mode \"%s\" must be %s", value,
                       gs_gpu_mode_list(0, GS_MODE_SHARES_GPU, 0, NULL, modes, sizeof(modes)));
        s->set |= GS__SET_MODE;
        return 1;
    }
    if (strcmp(key, "placement") == 0) {
        if (parse_enum(value, policy_names, 4, &v) != 0)
            return bad(ctx, "placement \"%s\" must be gpushare, fgd, bestfit or spread", value);
        s->placement = (gs__policy_t)v;
        s->set |= GS__SET_PLACEMENT;
        return 1;
    }
    if (strcmp(key, "overprovision") == 0) {
        char *end = NULL;
        errno = 0;
        unsigned long n = strtoul(value, &end, 10);
        if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || n < 1 || n > 64)
            return bad(ctx, "overprovision \"%s\" must be a whole number from 1 to 64", value);
        s->overprovision = (unsigned)n;
        s->set |= GS__SET_OVERPROVISION;
        return 1;
    }
    if (strcmp(key, "reserve") == 0) {
        char why[GS_QTY_ERR_MAX];
        if (gs_qty_parse_bytes(value, GS_QTY_ALLOW_ZERO | GS_QTY_REQUIRE_UNIT, &s->reserve, why,
                               sizeof(why)) != 0)
            return bad(ctx, "reserve: %s", why);
        s->set |= GS__SET_RESERVE;
        return 1;
    }
    return bad(ctx, "unknown key \"%s\" in [%s] (mode, overprovision, placement, reserve)", key,
               ctx->section);
}

/* Parses the GPU part of "gpu:all", "gpu:3" or "gpu:GPU-..." into sec. Returns 0 or
 * GS_EINVAL. */
static int parse_gpu_section(const char *which, gs__gpu_section_t *sec)
{
    memset(sec, 0, sizeof(*sec));
    if (strcmp(which, "all") == 0) {
        sec->match = GS__GPU_ALL;
        return 0;
    }
    if (which[0] >= '0' && which[0] <= '9') {
        char *end = NULL;
        unsigned long n = strtoul(which, &end, 10);
        if (*end != '\0' || n >= GS_MAX_DEVICES)
            return GS_EINVAL;
        sec->match = GS__GPU_INDEX;
        sec->index = (unsigned)n;
        return 0;
    }
    if (strncmp(which, "GPU-", 4) == 0 && strlen(which) < sizeof(sec->uuid) && which[4] != '\0') {
        sec->match = GS__GPU_UUID;
        snprintf(sec->uuid, sizeof(sec->uuid), "%s", which);
        return 0;
    }
    return GS_EINVAL;
}

/* Starts a section: remembers it and, for a GPU section, finds or adds its entry. */
static int begin_section(parse_ctx_t *ctx, const char *section)
{
    snprintf(ctx->section, sizeof(ctx->section), "%s", section);
    ctx->seen = 0;
    ctx->gpu = NULL;
    if (strcmp(section, "daemon") == 0)
        return 1;
    gs__gpu_section_t sec;
    if (strncmp(section, "gpu:", 4) != 0 || parse_gpu_section(section + 4, &sec) != 0)
        return bad(ctx,
                   "unknown section [%s] (use [daemon], [gpu:all], [gpu:INDEX] or "
                   "[gpu:GPU-UUID])",
                   section);
    gs__config_t *cfg = ctx->cfg;
    if (cfg->n_sections == GS__MAX_GPU_SECTIONS)
        return bad(ctx, "too many GPU sections (at most %d)", GS__MAX_GPU_SECTIONS);
    ctx->gpu = &cfg->sections[cfg->n_sections++];
    *ctx->gpu = sec;
    return 1;
}

/* Bit of a key, to refuse a key given twice in one section. */
static unsigned key_bit(const char *key)
{
    static const char *const keys[] = {"socket",
                                       "state_dir",
                                       "metrics_listen",
                                       "nvml_library",
                                       "shim",
                                       "region_dir",
                                       "idle_timeout",
                                       "mode",
                                       "placement",
                                       "overprovision",
                                       "reserve",
                                       "queue_aging",
                                       "kill_grace",
                                       "watch_interval",
                                       "watch_tolerance",
                                       "enforce",
                                       "runtime_dir",
                                       "mps_control",
                                       "max_connections_per_user",
                                       "max_queued_per_user",
                                       "max_output_per_connection",
                                       "metrics_users",
                                       "lease_admin_group",
                                       "max_output_per_user",
                                       "max_leases_per_user",
                                       "history_max_rows",
                                       "history_max_rows_per_user",
                                       "history_max_days",
                                       "compute_members_per_lease",
                                       "compute_members_per_user",
                                       "compute_leases_per_user"};
    for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strcmp(key, keys[i]) == 0)
            return 1u << i;
    }
    return 0;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_ctx_t *ctx = user;
    if (ctx->error[0] != '\0')
        return 1; /* report only the first error */
    if (section[0] == '\0')
        return bad(ctx, "\"%s\" is outside any section (start with [daemon] or [gpu:all])", name);
    if (strcmp(section, ctx->section) != 0 && !begin_section(ctx, section))
        return 0;
    unsigned bit = key_bit(name);
    if (bit != 0 && (ctx->seen & bit))
        return bad(ctx, "\"%s\" is given twice in [%s]", name, section);
    ctx->seen |= bit;
    if (ctx->gpu == NULL)
        return daemon_key(ctx, name, value);
    return gpu_key(ctx, name, value);
}

/* inih reads lines of at most INI_MAX_LINE - 3 characters (200 - 3 in Debian's build). */
#define LINE_MAX_CHARS 197

/* inih calls the handler only for keys, so a section without keys would go unchecked, and it
 * cuts long lines silently: every line is checked here first. Returns 0, or the line of the
 * first bad header or over-long line, with the reason in ctx. */
static int check_lines(parse_ctx_t *ctx, const char *text)
{
    char seen[GS__MAX_GPU_SECTIONS + 1][sizeof(ctx->section)];
    unsigned n_seen = 0;
    int line = 1;
    for (const char *p = text; *p != '\0'; line++) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len > LINE_MAX_CHARS) {
            bad(ctx, "line longer than %d characters", LINE_MAX_CHARS);
            return line;
        }
        while (len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        const char *close = len > 0 && *p == '[' ? memchr(p, ']', len) : NULL;
        if (close != NULL && (size_t)(close - p) < sizeof(ctx->section)) {
            char name[sizeof(ctx->section)];
            memcpy(name, p + 1, (size_t)(close - p - 1));
            name[close - p - 1] = '\0';
            gs__gpu_section_t sec;
            if (strcmp(name, "daemon") != 0 &&
                (strncmp(name, "gpu:", 4) != 0 || parse_gpu_section(name + 4, &sec) != 0)) {
                bad(ctx,
                    "unknown section [%s] (use [daemon], [gpu:all], [gpu:INDEX] or "
                    "[gpu:GPU-UUID])",
                    name);
                return line;
            }
            for (unsigned i = 0; i < n_seen; i++) {
                if (strcmp(seen[i], name) == 0) {
                    bad(ctx, "section [%s] appears twice", name);
                    return line;
                }
            }
            if (n_seen == GS__MAX_GPU_SECTIONS + 1) {
                bad(ctx, "too many sections (at most %d)", GS__MAX_GPU_SECTIONS + 1);
                return line;
            }
            snprintf(seen[n_seen++], sizeof(seen[0]), "%s", name);
        }
        p = end != NULL ? end + 1 : p + len;
    }
    return 0;
}

/* Turns inih's result (0, -1 open failure, -2 out of memory, or the first bad line) and the
 * recorded error into ours. */
static int finish(const parse_ctx_t *ctx, int line, const char *source, char *err, size_t errlen)
{
    if (line == 0 && ctx->result == 0)
        return 0;
    if (line == -2)
        return gs_fail(err, errlen, GS_ENOMEM, "%s: out of memory", source);
    if (ctx->error[0] != '\0')
        return gs_fail(err, errlen, GS_EINVAL, "%s:%d: %s", source, line, ctx->error);
    return gs_fail(err, errlen, GS_EINVAL,
                   "%s:%d: syntax error (expected [section] or key = value)", source, line);
}

int gs__config_parse(gs__config_t *cfg, const char *text, const char *source, char *err,
                     size_t errlen)
{
    parse_ctx_t ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.cfg = cfg;
    int line = check_lines(&ctx, text);
    if (line == 0)
        line = ini_parse_string(text, handler, &ctx);
    return finish(&ctx, line, source, err, errlen);
}

/* Configuration files are small; anything larger is a mistake. */
#define CONFIG_FILE_MAX (1024 * 1024)

int gs__config_load(gs__config_t *cfg, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    FILE *f = fopen(path, "re");
    int result = f != NULL ? 0 : -errno;
    if (result == 0 && (text = malloc(CONFIG_FILE_MAX + 1)) == NULL)
        result = GS_ENOMEM;
    size_t len = 0;
    if (result == 0) {
        len = fread(text, 1, CONFIG_FILE_MAX + 1, f);
        if (ferror(f))
            result = GS_EIO;
        else if (len > CONFIG_FILE_MAX)
            result = GS_EMSGSIZE;
    }
    if (result != 0) {
        result = gs_fail(err, errlen, result, "%s: %s", path,
                         result == GS_EMSGSIZE ? "larger than 1 MiB" : gs_strerror(result));
        goto out;
    }
    text[len] = '\0';
    if (memchr(text, '\0', len) != NULL) {
        result = gs_fail(err, errlen, GS_EINVAL, "%s: contains a NUL byte (not a text file)", path);
        goto out;
    }
    result = gs__config_parse(cfg, text, path, err, errlen);
    if (result == 0)
        snprintf(cfg->path, sizeof(cfg->path), "%s", path);
out:
    if (f != NULL)
        fclose(f);
    free(text);
    return result;
}

static void apply(gs__gpu_settings_t *to, const gs__gpu_settings_t *from)
{
    if (from->set & GS__SET_MODE)
        to->mode = from->mode;
    if (from->set & GS__SET_OVERPROVISION)
        to->overprovision = from->overprovision;
    if (from->set & GS__SET_PLACEMENT)
        to->placement = from->placement;
    if (from->set & GS__SET_RESERVE)
        to->reserve = from->reserve;
    to->set |= from->set;
}

gs__gpu_settings_t gs__config_gpu(const gs__config_t *cfg, unsigned index, const char *uuid)
{
    gs__gpu_settings_t s = {.mode = GS_GPU_MODE_DEFAULT, .overprovision = 1};
    for (int pass = GS__GPU_ALL; pass <= GS__GPU_UUID; pass++) {
        for (unsigned i = 0; i < cfg->n_sections; i++) {
            const gs__gpu_section_t *sec = &cfg->sections[i];
            if ((int)sec->match != pass)
                continue;
            if (pass == GS__GPU_ALL || (pass == GS__GPU_INDEX && sec->index == index) ||
                (pass == GS__GPU_UUID && uuid != NULL && strcasecmp(sec->uuid, uuid) == 0))
                apply(&s, &sec->settings);
        }
    }
    return s;
}
