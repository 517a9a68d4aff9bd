/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: a documented test hook that makes chosen NVML calls fail.
 *
 * GPUSIM_NVML_FAULTS names a file of lines "FUNCTION CODE" (CODE an nvmlReturn_t number, e.g.
 * 999 for NVML_ERROR_UNKNOWN); '#' starts a comment. FUNCTION is any entry point's name, or a
 * prefix ending in '*' ("nvmlDeviceGet*", "*" for every one). While a line names a function,
 * every call of it returns CODE and does nothing else; the first line that matches wins (so
 * "nvmlInit_v2 0" before "* 999" exempts nvmlInit_v2). Every entry point of the library, modelled
 * or not, has the hook. The file is looked at (stat) at each call and read again when it
 * changed, so a test can inject and clear a fault in a running process by writing or removing
 * it. Unset, the hook costs one getenv per call. GPUSIM_NVML_FAULTS_FIRED, when set, names a
 * file to which the first call that each version of the rules fails appends a line "FUNCTION CODE"
 * (the function called): so that a test can see that a fault it injected took effect. NVIDIA's NVML
 * has no such hook: it exists so that the error paths of NVML's users can be tested (tests/faults).
 * Thread-safe. */
#include "nvml_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RULES_MAX 64

typedef struct rule {
    char name[128]; /* a name, or a prefix when prefix */
    int prefix;
    nvmlReturn_t code; /* NVML_SUCCESS: the calls it names are exempt */
} rule_t;

static struct {
    pthread_mutex_t lock;
    char path[4096];
    struct stat seen; /* of the file the rules were read from; st_ino 0: none */
    rule_t rules[RULES_MAX];
    unsigned n;
    int reported; /* this version's first failure went to GPUSIM_NVML_FAULTS_FIRED */
} faults = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void read_rules(const char *path)
{
    faults.n = 0;
    faults.reported = 0;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return;
    char line[256], name[128];
    while (faults.n < RULES_MAX && fgets(line, sizeof(line), f) != NULL) {
        unsigned code = 0;
        line[strcspn(line, "#")] = '\0';
        if (sscanf(line, "%127s %u", name, &code) != 2)
            continue;
        rule_t *r = &faults.rules[faults.n++];
        size_t len = strlen(name);
        r->prefix = len > 0 && name[len - 1] == '*';
        if (r->prefix)
            name[len - 1] = '\0';
        snprintf(r->name, sizeof(r->name), "%s", name);
        r->code = (nvmlReturn_t)code;
    }
    fclose(f);
}

/* Reads the rules again when the file changed (or another file is named). Lock held. */
static void refresh(const char *path)
{
    struct stat st;
    int there = stat(path, &st) == 0;
    if (!there) {
        faults.n = 0;
        memset(&faults.seen, 0, sizeof(faults.seen));
        return;
    }
    if (strcmp(path, faults.path) == 0 && st.st_ino == faults.seen.st_ino &&
        st.st_dev == faults.seen.st_dev && st.st_size == faults.seen.st_size &&
        st.st_mtim.tv_sec == faults.seen.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == faults.seen.st_mtim.tv_nsec)
        return;
    snprintf(faults.path, sizeof(faults.path), "%s", path);
    faults.seen = st;
    read_rules(path);
}

/* Appends "FUNCTION CODE" to the file GPUSIM_NVML_FAULTS_FIRED names, if any. */
static void report_fired(const char *function, nvmlReturn_t code)
{
    const char *path = getenv("GPUSIM_NVML_FAULTS_FIRED");
    if (path == NULL || path[0] == '\0')
        return;
    FILE *f = fopen(path, "ae");
    if (f == NULL)
        return;
    fprintf(f, "%s %u\n", function, (unsigned)code);
    fclose(f);
}

nvmlReturn_t gsim_nvml_fault(const char *function)
{
    const char *path = getenv("GPUSIM_NVML_FAULTS");
    if (path == NULL || path[0] == '\0')
        return NVML_SUCCESS;
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&faults.lock);
    refresh(path);
    for (unsigned i = 0; i < faults.n; i++) {
        const rule_t *r = &faults.rules[i];
        int match = r->prefix ? strncmp(function, r->name, strlen(r->name)) == 0
                              : strcmp(function, r->name) == 0;
        if (match) {
            result = r->code;
            break;
        }
    }
    int report = result != NVML_SUCCESS && !faults.reported;
    if (report)
        faults.reported = 1;
    pthread_mutex_unlock(&faults.lock);
    if (report)
        report_fired(function, result);
    return result;
}
