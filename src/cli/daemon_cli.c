/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the subcommands: errors (text or JSON), options, daemon calls, formats. */
#include "daemon_cli.h"
#include "cli.h"

#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void gs__cli_init(gs__cli_t *cli, const char *cmd)
{
    memset(cli, 0, sizeof(*cli));
    cli->cmd = cmd;
    cli->json_errors = stdout;
}

void gs__cli_init_args(gs__cli_t *cli, const char *cmd, int argc, char **argv)
{
    gs__cli_init(cli, cmd);
    for (int i = 1; i < argc; i++)
        cli->json |= strcmp(argv[i], "--json") == 0;
}

/* message as a JSON string; bytes of invalid UTF-8 (a message may quote a file) become '?'. */
static json_t *message_string(const char *message)
{
    json_t *text = json_string(message);
    char *copy = text == NULL ? strdup(message) : NULL;
    if (copy == NULL)
        return text;
    for (char *p = copy; *p != '\0'; p++) {
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    }
    text = json_string(copy);
    free(copy);
    return text;
}

void gs__cli_set_error(json_t *result, const char *code, const char *message)
{
    json_object_set_new(result, "ok", json_false());
    json_object_set_new(result, "error",
                        json_pack("{s:s, s:o}", "code", code, "message", message_string(message)));
}

/* Makes message one line: it may quote file contents, which must not add line breaks. */
static void one_line(char *message)
{
    for (char *p = message; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    }
}

/* Prints message as the error of cli: prefix "gpushare CMD: " (or "gpushare: " when prefix is
 * NULL), or JSON. */
static void print_error(const gs__cli_t *cli, const char *code, const char *message,
                        const char *suffix, int daemon)
{
    if (cli->json) {
        json_t *err = json_object();
        if (err != NULL)
            gs__cli_set_error(err, code, message);
        char *text = err != NULL ? json_dumps(err, JSON_COMPACT) : NULL;
        fprintf(cli->json_errors, "%s\n", text != NULL ? text : "{\"ok\":false}");
        fflush(cli->json_errors);
        free(text);
        json_decref(err);
        return;
    }
    if (daemon && !cli->offline)
        fprintf(stderr, "gpushare: %s\n", message);
    else
        fprintf(stderr, "gpushare %s: %s%s\n", cli->cmd, message, suffix);
}

int gs__cli_fail(const gs__cli_t *cli, int status, const char *code, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    one_line(message);
    print_error(cli, code, message, "", status != GS_EXIT_USAGE);
    return status;
}

int gs__cli_usage(const gs__cli_t *cli, const char *fmt, ...)
{
    char message[1024], suffix[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    one_line(message);
    snprintf(suffix, sizeof(suffix), " (see gpushare %s --help)",
             cli->help != NULL ? cli->help : cli->cmd);
    print_error(cli, "usage", message, suffix, 0);
    return GS_EXIT_USAGE;
}

int gs__cli_bad_option(const gs__cli_t *cli, int c, char **argv)
{
    const char *opt = argv[optind - 1];
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)strcspn(opt, "="), opt);
    if (c == ':')
        return gs__cli_usage(cli, "%s: missing value", name);
    return gs__cli_usage(cli, "unknown option \"%s\"", opt);
}

const char *gs__cli_abbreviated(char **argv, const char *optarg_value, const char *name)
{
    /* The option's word: before its value when the value was the next word. */
    const char *word = argv[optind - 1];
    if (optarg_value != NULL && optarg_value == argv[optind - 1] && optind >= 2)
        word = argv[optind - 2];
    size_t n = strlen(name);
    if (strncmp(word, "--", 2) != 0)
        return NULL; /* a short option */
    if (strncmp(word + 2, name, n) == 0 && (word[2 + n] == '\0' || word[2 + n] == '='))
        return NULL;
    return word;
}

int gs__cli_value(const gs__cli_t *cli, const char *option, const char *value)
{
    if (value == NULL || value[0] == '\0' || strncmp(value, "--", 2) == 0)
        return gs__cli_usage(cli, "%s: missing value", option);
    return 0;
}

int gs__cli_connect(const gs__cli_t *cli, gs_client_t **out)
{
    char err[GS_CLIENT_ERR_MAX + 128];
    if (gs_client_connect(cli->socket, out, err, sizeof(err)) != 0) {
        print_error(cli, "unreachable", err, "", 1);
        return GS_EXIT_FAIL;
    }
    return GS_EXIT_OK;
}

int gs__cli_exit_for(const char *code)
{
    return gs_wire_error_exit(gs_wire_error_parse(code));
}

int gs__cli_reply_error(const gs__cli_t *cli, const json_t *reply)
{
    const char *message = NULL;
    const char *code = gs_reply_error(reply, &message);
    if (code == NULL)
        return GS_EXIT_OK;
    print_error(cli, code, message != NULL ? message : code, "", 1);
    return gs__cli_exit_for(code);
}

int gs__cli_call(const gs__cli_t *cli, gs_client_t *client, json_t *req, json_t **reply)
{
    if (req == NULL)
        return gs__cli_fail(cli, GS_EXIT_FAIL, "internal", "out of memory");
    int result = gs_client_call(client, req, GS_CLI_CALL_TIMEOUT_MS, reply);
    json_decref(req);
    if (result != 0) {
        char message[256];
        snprintf(message, sizeof(message), "no reply from gpushared: %s",
                 result == GS_ECONNREFUSED ? "it closed the connection" : gs_strerror(result));
        print_error(cli, "unreachable", message, "", 1);
        return GS_EXIT_FAIL;
    }
    int status = gs__cli_reply_error(cli, *reply);
    if (status != GS_EXIT_OK) {
        json_decref(*reply);
        *reply = NULL;
    }
    return status;
}

void gs__cli_print_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    if (text != NULL)
        printf("%s\n", text);
    free(text);
}

/* The scale of a duration's unit in ms, or 0 for an unknown unit ("" is seconds). */
static double unit_ms(const char *unit)
{
    static const struct {
        const char *name;
        double ms;
    } units[] = {{"ms", 1.0}, {"s", 1e3}, {"", 1e3}, {"m", 60e3}, {"h", 3600e3}, {"d", 86400e3}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(unit, units[i].name) == 0)
            return units[i].ms;
    }
    return 0;
}

int gs__cli_parse_duration(const char *text, int need_unit, uint64_t max_ms, uint64_t *ms,
                           char *err, size_t errlen)
{
    char *end = NULL;
    double value = strtod(text, &end);
    char limit[32];
    gs_format_duration(max_ms, limit, sizeof(limit));
    double scale = end != text ? unit_ms(end) : 0;
    if (end == text || !(value >= 0) || text[0] == '-' || text[0] == '+' || scale == 0 ||
        strchr("0123456789.", text[0]) == NULL)
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid duration \"%s\": expected e.g. 30s, 500ms, 5m, 2h or 1d", text);
    if (need_unit && *end == '\0')
        return gs_fail(err, errlen, GS_EINVAL,
                       "invalid duration \"%s\": add a unit: %ss, %sm or %sh", text, text, text,
                       text);
    double total = value * scale;
    if (total > (double)max_ms)
        return gs_fail(err, errlen, GS_EINVAL, "invalid duration \"%s\": at most %s", text, limit);
    if (total < 1.0)
        return gs_fail(err, errlen, GS_EINVAL, "invalid duration \"%s\": must be at least 1ms",
                       text);
    *ms = (uint64_t)(total + 0.5);
    return 0;
}

uint64_t gs__cli_uint(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

const char *gs__cli_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s != NULL ? s : "";
}

void gs__cli_bytes(uint64_t bytes, char *buf, size_t len)
{
    if (gs_qty_format_human(bytes, buf, len) < 0)
        snprintf(buf, len, "?");
}

void gs__cli_bytes_short(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTPE";
    if (bytes < 1024) {
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (v >= 100.0 || v == (double)(uint64_t)v)
        snprintf(buf, len, "%.0f%c", v, units[u]);
    else
        snprintf(buf, len, "%.1f%c", v, units[u]);
}

const char *gs__cli_fit(const char *text, size_t width, char *buf, size_t len)
{
    size_t n = strlen(text);
    if (n <= width || width < 2) {
        snprintf(buf, len, "%.*s", (int)(width < n ? width : n), text);
        return buf;
    }
    size_t keep = width - 1;
    while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80)
        keep--; /* cut at a character boundary */
    snprintf(buf, len, "%.*s~", (int)keep, text);
    return buf;
}

const char *gs__cli_fit_command(const char *command, size_t width, char *buf, size_t len)
{
    char short_form[512];
    size_t off = 0;
    const char *p = command;
    while (*p != '\0' && off + 1 < sizeof(short_form)) {
        size_t n = strcspn(p, " ");
        const char *word = p;
        /* A path's directories say little in a narrow column: its last part stays. */
        for (const char *q = p; q < p + n; q++) {
            if (*q == '/' && q + 1 < p + n)
                word = q + 1;
        }
        off += (size_t)snprintf(short_form + off, sizeof(short_form) - off, "%s%.*s",
                                off > 0 ? " " : "", (int)(p + n - word), word);
        p += n;
        while (*p == ' ')
            p++;
    }
    short_form[off < sizeof(short_form) ? off : sizeof(short_form) - 1] = '\0';
    return gs__cli_fit(short_form, width, buf, len);
}

/* Appends text to buf at *off. */
static void append(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
    if (*off >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *off, len - *off, fmt, ap);
    va_end(ap);
    *off += n > 0 ? (size_t)n : 0;
}

/* Appends a number or a string member as it was given. */
static void append_value(char *buf, size_t len, size_t *off, const char *option, const json_t *v)
{
    if (json_is_string(v))
        append(buf, len, off, "%s%s %s", *off > 0 ? " " : "", option, json_string_value(v));
    else if (json_is_integer(v))
        append(buf, len, off, "%s%s %lld", *off > 0 ? " " : "", option,
               (long long)json_integer_value(v));
}

void gs__cli_request_text(const json_t *request, char *buf, size_t len)
{
    static const char *const fields[][2] = {
        {"gpus", "--gpus"},
        {"gpu", "--gpu"},
        {"gpu_memory", "--gpu-memory"},
        {"compute", "--compute"},
        {"compute_max", "--compute-max"},
        {"priority", "--priority"},
    };
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        append_value(buf, len, &off, fields[i][1], json_object_get(request, fields[i][0]));
    const json_t *types = json_object_get(request, "gpu_type");
    size_t k;
    const json_t *t;
    json_array_foreach(types, k, t)
        append(buf, len, &off, "%s%s", k == 0 ? " --gpu-type " : ",",
               json_string_value(t) != NULL ? json_string_value(t) : "");
    const json_t *at = json_object_get(request, "gpus_at");
    json_array_foreach(at, k, t) append(buf, len, &off, "%s%lld", k == 0 ? " on GPU " : ",",
                                        (long long)json_integer_value(t));
    uint64_t limit = gs__cli_uint(request, "time_limit_ms");
    if (limit != 0) {
        char d[32];
        gs_format_duration(limit, d, sizeof(d));
        append(buf, len, &off, " --time %s", d);
    }
}

void gs__cli_time_left(const json_t *lease, int64_t now_ms, char *buf, size_t len)
{
    const json_t *expiry = json_object_get(lease, "expires_at_ms");
    if (!json_is_integer(expiry)) {
        snprintf(buf, len, "-");
        return;
    }
    int64_t left = json_integer_value(expiry) - now_ms;
    if (left < 1000)
        snprintf(buf, len, "0s");
    else
        gs_format_duration((uint64_t)left / 1000 * 1000, buf, len);
}

int64_t gs__cli_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
