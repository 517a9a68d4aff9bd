/* Helpers shared by the lease subcommands: connect, call, print, parse durations. */
#include "daemon_cli.h"
#include "cli.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs__cli_connect(const char *socket, gs_client_t **out)
{
    char err[GS_CLIENT_ERR_MAX + 128];
    if (gs_client_connect(socket, out, err, sizeof(err)) != 0) {
        fprintf(stderr, "gpushare: %s\n", err);
        return GS_EXIT_FAIL;
    }
    return GS_EXIT_OK;
}

int gs__cli_exit_for(const char *code)
{
    if (strcmp(code, "no_fit") == 0 || strcmp(code, "timeout") == 0 ||
        strcmp(code, "unavailable") == 0)
        return GS_EXIT_TEMPFAIL;
    return GS_EXIT_FAIL;
}

int gs__cli_call(gs_client_t *client, json_t *req, json_t **reply)
{
    if (req == NULL) {
        fprintf(stderr, "gpushare: out of memory\n");
        return GS_EXIT_FAIL;
    }
    int result = gs_client_call(client, req, GS_CLI_CALL_TIMEOUT_MS, reply);
    json_decref(req);
    if (result != 0) {
        fprintf(stderr, "gpushare: no reply from gpushared: %s\n",
                result == GS_ECONNREFUSED ? "it closed the connection" : gs_strerror(result));
        return GS_EXIT_FAIL;
    }
    const char *message = NULL;
    const char *code = gs_reply_error(*reply, &message);
    if (code == NULL)
        return GS_EXIT_OK;
    fprintf(stderr, "gpushare: %s\n", message);
    int status = gs__cli_exit_for(code);
    json_decref(*reply);
    *reply = NULL;
    return status;
}

void gs__cli_print_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text != NULL)
        printf("%s\n", text);
    free(text);
}

int gs__cli_parse_duration(const char *text, uint32_t *ms, char *err, size_t errlen)
{
    char *end = NULL;
    double value = strtod(text, &end);
    double scale = 1000.0;
    if (end == text || !(value >= 0) || text[0] == '-' || text[0] == '+')
        goto bad;
    if (strcmp(end, "ms") == 0)
        scale = 1.0;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        scale = 1000.0;
    else if (strcmp(end, "m") == 0)
        scale = 60e3;
    else if (strcmp(end, "h") == 0)
        scale = 3600e3;
    else
        goto bad;
    double total = value * scale;
    if (total > (double)GS_LEASE_TIMEOUT_MAX) {
        snprintf(err, errlen, "invalid duration \"%s\": at most a week", text);
        return GS_EINVAL;
    }
    if (total < 1.0) {
        snprintf(err, errlen, "invalid duration \"%s\": must be at least 1ms", text);
        return GS_EINVAL;
    }
    *ms = (uint32_t)(total + 0.5);
    return 0;
bad:
    snprintf(err, errlen, "invalid duration \"%s\": expected e.g. 30, 30s, 500ms, 5m or 2h", text);
    return GS_EINVAL;
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
