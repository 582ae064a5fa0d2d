/*
 * cams-lfu: run a program with an LFU hot set of one file or block device
 * kept in the guest's page cache (libcams-lfu.so, LD_PRELOAD).
 *
 *   cams-lfu -c CACHE_MB [-b BLOCK_MB] [-k CHECK_EVERY] [-H HISTORY]
 *            [-C CONFIDENCE] [-s STATUS] [-L LIBRARY] TARGET COMMAND [ARG...]
 *
 * CACHE_MB of the guest's page cache hold the hot set, BLOCK_MB blocks
 * (CACHE_MB / BLOCK_MB of them); every CHECK_EVERY misses the policy
 * compares the reference counts of the last HISTORY accesses. Defaults are
 * the paper's (128, 10, 100; CONFIDENCE 0). Started through the guest
 * agent (guest-exec) or from a service unit (see doc/source/lfu.rst).
 *
 *   cams-lfu replay -c SLOTS -b BLOCK_CHUNKS [-k ...] [-H ...] [-C ...]
 *
 * reads chunk numbers from standard input, one per line, and prints one
 * character per access ('h' a hit, 'm' a miss) and at the end a line
 * "swaps N misses N hot B,B,...", with the residency of each chunk tracked
 * in memory: the decisions of watcher_cams/lab/sim/lfu.py's LFU guest on
 * the same trace (the tests compare the two).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lfu-policy.h"

#ifndef CAMS_LFU_LIBRARY
#define CAMS_LFU_LIBRARY "/usr/lib/cams/libcams-lfu.so"
#endif

static void usage(void)
{
    fprintf(stderr,
            "usage: cams-lfu -c CACHE_MB [-b BLOCK_MB] [-k CHECK_EVERY] "
            "[-H HISTORY] [-C CONFIDENCE] [-s STATUS] [-L LIBRARY] TARGET "
            "COMMAND [ARG...]\n"
            "       cams-lfu replay -c SLOTS -b BLOCK_CHUNKS [-k CHECK_EVERY] "
            "[-H HISTORY] [-C CONFIDENCE] < CHUNKS\n");
    exit(2);
}

static unsigned long positive(const char *text, const char *what)
{
    char *end;
    unsigned long n = strtoul(text, &end, 10);
    if (*end || n == 0 || text[0] == '-') {
        fprintf(stderr, "cams-lfu: %s must be a positive integer, not %s\n",
                what, text);
        exit(2);
    }
    return n;
}

static int replay(unsigned long slots, unsigned long per_block,
                  unsigned long check, unsigned long history, double conf)
{
    unsigned long chunk, nchunks = 0, cap = 1024, i, b;
    unsigned long *chunks = malloc(cap * sizeof(*chunks));
    unsigned char *resident;
    struct lfu p;
    long evicted;
    int first = 1;

    while (chunks && scanf("%lu", &chunk) == 1) {
        if (nchunks == cap) {
            cap *= 2;
            chunks = realloc(chunks, cap * sizeof(*chunks));
            if (!chunks)
                break;
        }
        chunks[nchunks++] = chunk;
    }
    if (!chunks)
        return 1;
    chunk = 0;
    for (i = 0; i < nchunks; i++)
        if (chunks[i] >= chunk)
            chunk = chunks[i] + 1;
    resident = calloc(chunk ? chunk : 1, 1);
    if (!resident || lfu_init(&p, chunk / per_block + 1, slots, check,
                              history, conf) < 0)
        return 1;
    for (i = 0; i < nchunks; i++) {
        unsigned long c = chunks[i], block = c / per_block;
        int admitted;
        lfu_record(&p, block);
        if (p.hot[block] && resident[c]) {
            putchar('h');
            continue;
        }
        admitted = lfu_miss(&p, block, &evicted);
        if (evicted >= 0)
            memset(resident + evicted * per_block, 0,
                   (evicted + 1) * per_block <= chunk
                   ? per_block : chunk - evicted * per_block);
        if (admitted)
            resident[c] = 1;
        putchar('m');
    }
    printf("\nswaps %llu misses %llu hot ", p.swaps, p.misses);
    for (b = 0; b < p.nblocks; b++)
        if (p.hot[b]) {
            printf("%s%lu", first ? "" : ",", b);
            first = 0;
        }
    putchar('\n');
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long cache = 0, block = 128, check = 10, history = 100;
    double conf = 0.0;
    const char *status = NULL, *library = CAMS_LFU_LIBRARY;
    int is_replay = argc > 1 && !strcmp(argv[1], "replay");
    char number[32];
    struct stat st;
    int opt;

    if (is_replay) {
        argv++;
        argc--;
    }
    /* "+": options stop at TARGET, the command's own options are its. */
    while ((opt = getopt(argc, argv, "+c:b:k:H:C:s:L:")) != -1) {
        switch (opt) {
        case 'c': cache = positive(optarg, "-c"); break;
        case 'b': block = positive(optarg, "-b"); break;
        case 'k': check = positive(optarg, "-k"); break;
        case 'H': history = positive(optarg, "-H"); break;
        case 'C':
            conf = atof(optarg);
            if (!(conf >= 0))
                usage();
            break;
        case 's': status = optarg; break;
        case 'L': library = optarg; break;
        default: usage();
        }
    }
    if (cache == 0)
        usage();
    if (is_replay)
        return replay(cache, block, check, history, conf);
    if (argc - optind < 2)
        usage();
    if (cache < block) {
        fprintf(stderr, "cams-lfu: -c %lu MiB holds no block of %lu MiB\n",
                cache, block);
        return 2;
    }
    if (stat(argv[optind], &st) < 0) {
        perror(argv[optind]);
        return 1;
    }
    if (access(library, R_OK) < 0) {
        perror(library);
        return 1;
    }
    setenv("CAMS_LFU_TARGET", argv[optind], 1);
    snprintf(number, sizeof(number), "%lu", cache);
    setenv("CAMS_LFU_CACHE_MB", number, 1);
    snprintf(number, sizeof(number), "%lu", block);
    setenv("CAMS_LFU_BLOCK_MB", number, 1);
    snprintf(number, sizeof(number), "%lu", check);
    setenv("CAMS_LFU_CHECK", number, 1);
    snprintf(number, sizeof(number), "%lu", history);
    setenv("CAMS_LFU_HISTORY", number, 1);
    snprintf(number, sizeof(number), "%g", conf);
    setenv("CAMS_LFU_CONFIDENCE", number, 1);
    if (status)
        setenv("CAMS_LFU_STATUS", status, 1);
    setenv("LD_PRELOAD", library, 1);
    execvp(argv[optind + 1], argv + optind + 1);
    perror(argv[optind + 1]);
    return 127;
}
