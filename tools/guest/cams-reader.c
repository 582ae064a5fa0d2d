/*
 * cams-reader: the lab's reader, run inside a guest through the guest agent.
 *
 *   cams-reader hotcold|uniform FILE|DEVICE [-b KIB] [-n READS] [-r PER_S]
 *               [-H HOT_SHARE] [-P HOT_PROB] [-s SEED] [-o STATUS]
 *
 * Reads blocks of -b KiB at random offsets of FILE or a block DEVICE:
 * "uniform" over the whole of it, "hotcold" with probability -P inside its
 * first -H share (80/20 by default). -n reads in all (0: until killed),
 * paced at -r reads per second (0: as fast as the disk allows), so that two
 * runs do the same work over the same time. Readahead is switched off
 * (POSIX_FADV_RANDOM): every miss costs one block of disk reads. Every
 * second, and at the end, the STATUS file gets one line "reads bytes seconds
 * done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state;

/* xorshift64*: small, seeded, the same sequence on every run. */
static uint64_t next_random(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static double uniform01(void)
{
    return (next_random() >> 11) * (1.0 / 9007199254740992.0);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void write_status(const char *path, unsigned long long reads,
                         unsigned long long bytes, double seconds, int done)
{
    char tmp[4096];
    FILE *f;
    if (!path)
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%llu %llu %.3f %d\n", reads, bytes, seconds, done);
    fclose(f);
    rename(tmp, path);
}

static void usage(void)
{
    fprintf(stderr, "usage: cams-reader hotcold|uniform FILE|DEVICE [-b KIB] "
            "[-n READS] [-r PER_S] [-H HOT_SHARE] [-P HOT_PROB] [-s SEED] "
            "[-o STATUS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long block_kib = 64;
    unsigned long long total = 0, reads = 0, bytes = 0;
    double rate = 0, hot_share = 0.2, hot_prob = 0.8;
    unsigned long long seed = 1;
    const char *status = NULL;
    int hotcold, fd, opt;
    struct stat st;
    off_t size;
    uint64_t nblocks, hot_blocks;
    char *buf;
    double start, last_status;

    if (argc < 3)
        usage();
    if (!strcmp(argv[1], "hotcold"))
        hotcold = 1;
    else if (!strcmp(argv[1], "uniform"))
        hotcold = 0;
    else
        usage();
    optind = 3;
    while ((opt = getopt(argc, argv, "b:n:r:H:P:s:o:")) != -1) {
        switch (opt) {
        case 'b': block_kib = atol(optarg); break;
        case 'n': total = strtoull(optarg, NULL, 10); break;
        case 'r': rate = atof(optarg); break;
        case 'H': hot_share = atof(optarg); break;
        case 'P': hot_prob = atof(optarg); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'o': status = optarg; break;
        default: usage();
        }
    }
    if (block_kib <= 0 || rate < 0 || hot_share <= 0 || hot_share > 1
            || hot_prob < 0 || hot_prob > 1)
        usage();
    fd = open(argv[2], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "cams-reader: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    /* A block device (a Nova instance's ephemeral disk) has no st_size. */
    size = S_ISBLK(st.st_mode) ? lseek(fd, 0, SEEK_END) : st.st_size;
    nblocks = size > 0 ? (uint64_t)size / (block_kib * 1024) : 0;
    if (nblocks == 0) {
        fprintf(stderr, "cams-reader: %s is smaller than one block\n",
                argv[2]);
        return 1;
    }
    hot_blocks = (uint64_t)(nblocks * hot_share);
    if (hot_blocks == 0)
        hot_blocks = 1;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    buf = malloc(block_kib * 1024);
    if (!buf)
        return 1;
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    start = last_status = now();
    write_status(status, 0, 0, 0, 0);
    while (total == 0 || reads < total) {
        uint64_t block;
        ssize_t got;
        double t;
        if (!hotcold)
            block = next_random() % nblocks;
        else if (uniform01() < hot_prob)
            block = next_random() % hot_blocks;
        else
            block = hot_blocks + next_random() % (nblocks - hot_blocks
                                                  ? nblocks - hot_blocks : 1);
        got = pread(fd, buf, block_kib * 1024, (off_t)block * block_kib * 1024);
        if (got < 0) {
            fprintf(stderr, "cams-reader: read: %s\n", strerror(errno));
            return 1;
        }
        reads++;
        bytes += got;
        t = now();
        if (rate > 0) {
            double due = start + reads / rate;
            if (due > t) {
                struct timespec ts;
                ts.tv_sec = (time_t)(due - t);
                ts.tv_nsec = (long)((due - t - ts.tv_sec) * 1e9);
                nanosleep(&ts, NULL);
                t = now();
            }
        }
        if (t - last_status >= 1.0) {
            write_status(status, reads, bytes, t - start, 0);
            last_status = t;
        }
    }
    write_status(status, reads, bytes, now() - start, 1);
    return 0;
}
