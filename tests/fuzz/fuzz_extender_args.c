/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: kube-scheduler's ExtenderArgs (the extender's outside input) on arbitrary
 * bytes. The parser either refuses with a reason or gives names; filter and prioritize always
 * answer valid JSON: a filter result naming only candidates, scores 0..10 for each candidate. */
#include "extender.h"
#include "k8s_fixture.h"

#include "gpushare/log.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_answers(gs_k8s_model_t *m, const char *body, size_t size,
                          const gs_k8s_args_t *args)
{
    char *f = gs_ext_filter(m, body, size), *p = gs_ext_prioritize(m, body, size);
    json_t *fj = f != NULL ? json_loads(f, 0, NULL) : NULL,
           *pj = p != NULL ? json_loads(p, 0, NULL) : NULL;
    if (!json_is_object(fj) || !json_is_array(pj))
        abort();
    size_t count = args != NULL ? args->count : 0;
    if (json_array_size(pj) != count)
        abort();
    for (size_t i = 0; i < count; i++) {
        const json_t *hp = json_array_get(pj, i);
        json_int_t s = json_integer_value(json_object_get(hp, "score"));
        const char *host = gs_k8s_str(hp, "host", NULL);
        if (host == NULL || strcmp(host, args->names[i]) != 0 || s < 0 || s > GS_K8S_MAX_PRIORITY)
            abort();
    }
    const json_t *kept = json_object_get(fj, "nodenames");
    if (args != NULL && args->nodes == NULL && json_array_size(kept) > count)
        abort();
    if (args == NULL && json_object_get(fj, "error") == NULL)
        abort();
    json_decref(fj);
    json_decref(pj);
    free(f);
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gs_k8s_model_t *model;
    if (model == NULL) {
        gs_log_init("fuzz_extender_args", GS_LOG_ERROR);
        model = fixture_model(GS_K8S_KINDS);
    }
    const char *body = (const char *)data;
    gs_k8s_args_t args;
    char err[GS_K8S_ERR_MAX] = "";
    int result = gs_k8s_args_parse(body, size, &args, err, sizeof(err));
    if (result != 0 && (err[0] == '\0' || args.count != 0))
        abort(); /* every refusal explains itself, and leaves nothing */
    for (size_t i = 0; result == 0 && i < args.count; i++) {
        if (args.names[i][0] == '\0' || strlen(args.names[i]) >= GS_K8S_NAME_MAX)
            abort();
    }
    if (result == 0 && !args.pod_ok && args.pod_err[0] == '\0')
        abort();
    check_answers(model, body, size, result == 0 ? &args : NULL);
    if (result == 0)
        gs_k8s_args_free(&args);
    return 0;
}
