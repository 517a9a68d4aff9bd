/* SPDX-License-Identifier: Apache-2.0 */
/* A kubeconfig read into the API client's settings (kapi.h): YAML by libyaml (MIT; kubeconfigs
 * are YAML, and JSON is YAML), turned into a JSON tree and read from there. Only what reaching
 * the API server takes is read: the current context's cluster and user. */
#include "kapi.h"

#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define DEPTH_MAX 32
#define NODES_MAX 20000 /* nodes visited: aliases cannot make a small file a huge tree */

typedef struct conv {
    yaml_document_t *doc;
    size_t visited;
} conv_t;

static json_t *node_json(conv_t *c, const yaml_node_t *n, int depth)
{
    if (n == NULL || depth > DEPTH_MAX || ++c->visited > NODES_MAX)
        return NULL;
    if (n->type == YAML_SCALAR_NODE)
        return json_stringn((const char *)n->data.scalar.value, n->data.scalar.length);
    json_t *out = n->type == YAML_SEQUENCE_NODE ? json_array() : json_object();
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *i = n->data.sequence.items.start;
             out != NULL && i < n->data.sequence.items.top; i++) {
            json_t *v = node_json(c, yaml_document_get_node(c->doc, *i), depth + 1);
            if (v == NULL || json_array_append_new(out, v) != 0) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         out != NULL && p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        json_t *v = node_json(c, yaml_document_get_node(c->doc, p->value), depth + 1);
        if (k == NULL || k->type != YAML_SCALAR_NODE || v == NULL ||
            json_object_setn_new(out, (const char *)k->data.scalar.value, k->data.scalar.length,
                                 v) != 0) {
            json_decref(v);
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* The YAML text as a JSON tree, or NULL. */
static json_t *yaml_tree(const char *text, size_t len)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    json_t *out = NULL;
    if (!yaml_parser_initialize(&parser))
        return NULL;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (yaml_parser_load(&parser, &doc)) {
        conv_t c = {.doc = &doc};
        out = node_json(&c, yaml_document_get_root_node(&doc), 0);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    return out;
}

/* The entry of list (clusters, users, contexts) called name: its member `what`. */
static const json_t *named(const json_t *root, const char *list, const char *name, const char *what)
{
    const json_t *e;
    size_t i;
    json_array_foreach(json_object_get(root, list), i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n != NULL && name != NULL && strcmp(n, name) == 0)
            return json_object_get(e, what);
    }
    return NULL;
}

/* Copies path into dst, relative to base when not absolute. */
static int path_at(char *dst, size_t size, const char *base, const char *path)
{
    int n = path[0] == '/' || base == NULL ? snprintf(dst, size, "%s", path)
                                           : snprintf(dst, size, "%s/%s", base, path);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Decodes base64 data into dir/name (0600, whole or not at all); its path into dst. */
static int data_file(const char *b64, const char *dir, const char *name, char *dst, size_t size,
                     char *err, size_t errlen)
{
    size_t len = strlen(b64), pad = 0;
    if (dir == NULL)
        return gs_fail(err, errlen, GS_ENOTSUP, "kubeconfig: %s data has nowhere to go", name);
    unsigned char *raw = malloc(len / 4 * 3 + 4);
    int n = raw != NULL && len % 4 == 0 && len > 0
                ? EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)len)
                : -1;
    for (size_t i = len; i > 0 && b64[i - 1] == '=' && pad < 2; i--)
        pad++;
    char tmp[PATH_MAX];
    int fd = -1, result = 0;
    if (n < 0 || path_at(dst, size, dir, name) != 0 ||
        snprintf(tmp, sizeof(tmp), "%s.tmp", dst) >= (int)sizeof(tmp))
        result = gs_fail(err, errlen, GS_EFORMAT, "kubeconfig: %s is not base64 data", name);
    else if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
             write(fd, raw, (size_t)n - pad) != (ssize_t)((size_t)n - pad) || fsync(fd) != 0 ||
             rename(tmp, dst) != 0)
        result =
            gs_fail(err, errlen, GS_EIO, "kubeconfig: cannot write %s: %s", dst, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(raw);
    return result;
}

/* A file field (path, or base64 in its -data twin) into dst; absent: "". */
static int file_field(const json_t *obj, const char *key, const char *base, const char *dir,
                      const char *file, char *dst, size_t size, char *err, size_t errlen)
{
    char data_key[64];
    snprintf(data_key, sizeof(data_key), "%s-data", key);
    const char *path = json_string_value(json_object_get(obj, key));
    const char *data = json_string_value(json_object_get(obj, data_key));
    dst[0] = '\0';
    if (data != NULL)
        return data_file(data, dir, file, dst, size, err, errlen);
    if (path != NULL && path_at(dst, size, base, path) != 0)
        return gs_fail(err, errlen, GS_EFORMAT, "kubeconfig: %s is too long", key);
    return 0;
}

static int read_user(const json_t *user, const char *base, const char *dir, gs__kapi_cfg_t *cfg,
                     char *err, size_t errlen)
{
    const char *token = json_string_value(json_object_get(user, "token"));
    const char *token_file = json_string_value(json_object_get(user, "tokenFile"));
    if (json_object_get(user, "exec") != NULL || json_object_get(user, "auth-provider") != NULL)
        return gs_fail(err, errlen, GS_ENOTSUP,
                       "kubeconfig: the user authenticates with exec or an auth-provider, which "
                       "gpushare-k8s does not run: use a token or a client certificate");
    if (token != NULL && strlen(token) >= sizeof(cfg->token))
        return gs_fail(err, errlen, GS_EFORMAT, "kubeconfig: the token is too long");
    if (token != NULL)
        snprintf(cfg->token, sizeof(cfg->token), "%s", token);
    if (token_file != NULL && path_at(cfg->token_file, sizeof(cfg->token_file), base, token_file))
        return gs_fail(err, errlen, GS_EFORMAT, "kubeconfig: tokenFile is too long");
    int result = file_field(user, "client-certificate", base, dir, "kubeconfig-client.crt",
                            cfg->cert_file, sizeof(cfg->cert_file), err, errlen);
    return result != 0 ? result
                       : file_field(user, "client-key", base, dir, "kubeconfig-client.key",
                                    cfg->key_file, sizeof(cfg->key_file), err, errlen);
}

int gs__kapi_kubeconfig_parse(const char *text, size_t len, const char *base, const char *dir,
                              gs__kapi_cfg_t *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    json_t *root = yaml_tree(text, len);
    const char *context = json_string_value(json_object_get(root, "current-context"));
    const json_t *ctx = named(root, "contexts", context, "context");
    const char *cname = json_string_value(json_object_get(ctx, "cluster"));
    const char *uname = json_string_value(json_object_get(ctx, "user"));
    const json_t *cluster = named(root, "clusters", cname, "cluster");
    const char *server = json_string_value(json_object_get(cluster, "server"));
    const char *insecure = json_string_value(json_object_get(cluster, "insecure-skip-tls-verify"));
    int result = 0;
    if (root == NULL)
        result = gs_fail(err, errlen, GS_EFORMAT, "kubeconfig: not YAML or JSON");
    else if (ctx == NULL || cluster == NULL || server == NULL)
        result = gs_fail(err, errlen, GS_EFORMAT,
                         "kubeconfig: no current-context with a cluster and its server");
    else if (strlen(server) >= sizeof(cfg->server) || server[0] == '\0')
        result = gs_fail(err, errlen, GS_EFORMAT, "kubeconfig: a bad server URL");
    if (result == 0) {
        snprintf(cfg->server, sizeof(cfg->server), "%.*s", (int)strcspn(server, "\n"), server);
        size_t n = strlen(cfg->server);
        if (n > 0 && cfg->server[n - 1] == '/')
            cfg->server[n - 1] = '\0';
        cfg->insecure = insecure != NULL && strcmp(insecure, "true") == 0;
        result = file_field(cluster, "certificate-authority", base, dir, "kubeconfig-ca.crt",
                            cfg->ca_file, sizeof(cfg->ca_file), err, errlen);
    }
    if (result == 0)
        result = read_user(named(root, "users", uname, "user"), base, dir, cfg, err, errlen);
    json_decref(root);
    return result;
}

int gs__kapi_kubeconfig(const char *path, const char *dir, gs__kapi_cfg_t *cfg, char *err,
                        size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return gs_fail(err, errlen, GS_ENOENT, "kubeconfig %s: %s", path, strerror(errno));
    char *text = malloc(1 << 20);
    size_t len = text != NULL ? fread(text, 1, (1 << 20) - 1, f) : 0;
    int too_big = text != NULL && !feof(f);
    fclose(f);
    if (text == NULL)
        return GS_ENOMEM;
    char base[PATH_MAX];
    snprintf(base, sizeof(base), "%s", path);
    char *slash = strrchr(base, '/');
    if (slash != NULL)
        *slash = '\0';
    int result = too_big ? gs_fail(err, errlen, GS_EFORMAT, "kubeconfig %s: over 1 MiB", path)
                         : gs__kapi_kubeconfig_parse(text, len, slash != NULL ? base : ".", dir,
                                                     cfg, err, errlen);
    free(text);
    return result;
}
