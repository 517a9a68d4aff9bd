/* SPDX-License-Identifier: Apache-2.0 */
/* Runs a libFuzzer entry point over every file of a corpus directory: the fuzz target as a test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads path into a fresh buffer; returns NULL on failure. The caller frees it. */
static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    *size = len;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    if (dir == NULL) {
        fprintf(stderr, "%s: cannot open corpus %s\n", argv[0], argv[1]);
        return 2;
    }
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", argv[1], entry->d_name);
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        if (data == NULL) {
            fprintf(stderr, "%s: cannot read %s\n", argv[0], path);
            closedir(dir);
            return 1;
        }
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        count++;
    }
    closedir(dir);
    printf("replayed %d inputs\n", count);
    return count > 0 ? 0 : 1;
}
