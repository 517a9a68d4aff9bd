/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the daemon's request parser on arbitrary bytes; a parsed acquire request
 * must pass its own checks and survive an encode/parse round trip unchanged. */
#include "gpushare/client.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const gs_lease_request_t *lease)
{
    char err[GS_CLIENT_ERR_MAX];
    if (gs_lease_request_check(lease, err, sizeof(err)) != 0)
        abort();
    json_t *obj = gs_proto_acquire_json(lease);
    if (obj == NULL)
        abort();
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (text == NULL)
        abort();
    gs_request_t again;
    if (gs_proto_parse_request(text, strlen(text), &again, err, sizeof(err)) != 0 ||
        again.op != GS_OP_ACQUIRE || memcmp(&again.lease, lease, sizeof(*lease)) != 0)
        abort();
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gs_request_t req;
    char err[GS_CLIENT_ERR_MAX];
    int result = gs_proto_parse_request((const char *)data, size, &req, err, sizeof(err));
    if (result != 0) {
        if (err[0] == '\0' || memchr(err, '\0', sizeof(err)) == NULL)
            abort(); /* every refusal explains itself */
        return 0;
    }
    if (req.op == GS_OP_ACQUIRE)
        round_trip(&req.lease);
    return 0;
}
