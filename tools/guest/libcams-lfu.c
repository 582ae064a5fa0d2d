/*
 * libcams-lfu.so: keeps an LFU hot set of one file or block device in the
 * guest's page cache, for an unmodified application and kernel
 * (LD_PRELOAD; cams-lfu sets it up).
 *
 * LFU Cache FS (papers.md, section 3) put a filesystem between the
 * application and the disk so that it saw every access, hits included.
 * This library sits in the same place inside the application: it wraps
 * open() and pread()/read() of the target, counts each access in the
 * policy of lfu-policy.h, and leaves the caching to the guest kernel:
 *
 *   - a read of a hot block whose pages are all resident (mincore) is a
 *     hit and passes through;
 *   - any other read is a miss: the policy may admit its block, or swap a
 *     colder hot block out (its pages are dropped, POSIX_FADV_DONTNEED);
 *   - after a miss outside the hot set the pages just read are dropped, so
 *     the guest caches only the hot set and every other read reaches the
 *     host, whose cache then sees a stable, frequency-chosen stream.
 *
 * Readahead is switched off on the target (POSIX_FADV_RANDOM): it would
 * cache data outside the hot set.
 *
 * Environment (cams-lfu sets it): CAMS_LFU_TARGET (path), CAMS_LFU_CACHE_MB,
 * CAMS_LFU_BLOCK_MB, CAMS_LFU_CHECK, CAMS_LFU_HISTORY, CAMS_LFU_CONFIDENCE,
 * CAMS_LFU_STATUS (a file rewritten every second and at exit:
 * "accesses hits misses swaps slots hot_blocks" then the hot blocks, comma
 * separated). Without CAMS_LFU_TARGET the library does nothing.
 *
 * Limits: one target per process; accesses through mmap() are not seen; a
 * forked child has its own history.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lfu-policy.h"

#define MAX_FDS 4096
#define MB (1024UL * 1024UL)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled;                 /* configured and the target exists */
static struct stat target;          /* what an open must match */
static unsigned long block_bytes;
static unsigned long cache_mb, check_every = 10, history = 100;
static double confidence;
static const char *status_path;
static struct lfu policy;
static int policy_ready;
static unsigned char *mapped;       /* the target, for mincore() */
static size_t mapped_size;
static unsigned char tracked[MAX_FDS];
static unsigned long long accesses, hits;
static double last_status;
static long page_size;

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_close)(int);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long env_ulong(const char *name, unsigned long fallback)
{
    const char *v = getenv(name);
    char *end;
    unsigned long n;
    if (!v || !*v)
        return fallback;
    n = strtoul(v, &end, 10);
    return *end ? fallback : n;
}

/* The libc functions wrapped here; also before the constructor ran. */
static void find_real(void)
{
    if (real_pread)
        return;
    real_pread = (ssize_t (*)(int, void *, size_t, off_t))
        dlsym(RTLD_NEXT, "pread");
    real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
}

__attribute__((constructor)) static void setup(void)
{
    const char *path = getenv("CAMS_LFU_TARGET");
    const char *conf = getenv("CAMS_LFU_CONFIDENCE");
    find_real();
    page_size = sysconf(_SC_PAGESIZE);
    if (!path || stat(path, &target) < 0)
        return;
    block_bytes = env_ulong("CAMS_LFU_BLOCK_MB", 128) * MB;
    cache_mb = env_ulong("CAMS_LFU_CACHE_MB", 0);
    check_every = env_ulong("CAMS_LFU_CHECK", 10);
    history = env_ulong("CAMS_LFU_HISTORY", 100);
    confidence = conf ? atof(conf) : 0.0;
    status_path = getenv("CAMS_LFU_STATUS");
    if (block_bytes == 0 || check_every == 0 || history == 0)
        return;
    enabled = 1;
}

static int is_target(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return 0;
    if (S_ISBLK(target.st_mode))
        return S_ISBLK(st.st_mode) && st.st_rdev == target.st_rdev;
    return st.st_dev == target.st_dev && st.st_ino == target.st_ino;
}

/* Called with the lock held, on the first open of the target. */
static void start_policy(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    lseek(fd, 0, SEEK_SET);
    if (size <= 0)
        return;
    if (lfu_init(&policy, (size + block_bytes - 1) / block_bytes,
                 cache_mb * MB / block_bytes, check_every, history,
                 confidence) < 0)
        return;
    mapped = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED) {
        mapped = NULL;
        return;
    }
    mapped_size = size;
    policy_ready = 1;
}

static void track(int fd)
{
    if (!enabled || fd < 0 || fd >= MAX_FDS || !is_target(fd))
        return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    pthread_mutex_lock(&lock);
    if (!policy_ready)
        start_policy(fd);
    tracked[fd] = policy_ready;
    pthread_mutex_unlock(&lock);
}

/* Every page of [off, off + len) is in the page cache. */
static int resident(off_t off, size_t len)
{
    size_t first = off / page_size * page_size, pages, i;
    unsigned char vec[256];
    if (len == 0 || (size_t)off >= mapped_size)
        return 1;
    if (off + len > mapped_size)
        len = mapped_size - off;
    pages = (off + len - first + page_size - 1) / page_size;
    while (pages) {
        size_t n = pages < sizeof(vec) ? pages : sizeof(vec);
        if (mincore(mapped + first, n * page_size, vec) < 0)
            return 0;
        for (i = 0; i < n; i++)
            if (!(vec[i] & 1))
                return 0;
        first += n * page_size;
        pages -= n;
    }
    return 1;
}

static void write_status(int done)
{
    char tmp[4096];
    unsigned long b;
    FILE *f;
    int first = 1;
    if (!status_path)
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp", status_path);
    f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%llu %llu %llu %llu %lu %lu %d\n", accesses, hits,
            policy.misses, policy.swaps, policy.slots, policy.nhot, done);
    for (b = 0; b < policy.nblocks; b++)
        if (policy.hot[b]) {
            fprintf(f, "%s%lu", first ? "" : ",", b);
            first = 0;
        }
    fputc('\n', f);
    fclose(f);
    rename(tmp, status_path);
}

/* One read of the target at `off`: the policy, the read, the drop. */
static ssize_t lfu_pread(int fd, void *buf, size_t len, off_t off)
{
    unsigned long block = off / block_bytes;
    long evicted;
    int hot;
    ssize_t got;
    double t;

    pthread_mutex_lock(&lock);
    accesses++;
    lfu_record(&policy, block);
    if (block < policy.nblocks && policy.hot[block] && resident(off, len)) {
        hits++;
        hot = 1;
        evicted = -1;
    } else {
        hot = lfu_miss(&policy, block, &evicted);
    }
    t = now();
    if (t - last_status >= 1.0) {
        write_status(0);
        last_status = t;
    }
    pthread_mutex_unlock(&lock);
    if (evicted >= 0)
        posix_fadvise(fd, (off_t)evicted * block_bytes, block_bytes,
                      POSIX_FADV_DONTNEED);
    got = real_pread(fd, buf, len, off);
    if (got > 0 && !hot)
        posix_fadvise(fd, off, got, POSIX_FADV_DONTNEED);
    return got;
}

__attribute__((destructor)) static void finish(void)
{
    if (policy_ready) {
        pthread_mutex_lock(&lock);
        write_status(1);
        pthread_mutex_unlock(&lock);
    }
}

static int wrapped_open(const char *sym, int dirfd, const char *path,
                        int flags, mode_t mode)
{
    int fd;
    if (dirfd == -1) {
        int (*real)(const char *, int, ...) =
            (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
        fd = real(path, flags, mode);
    } else {
        int (*real)(int, const char *, int, ...) =
            (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, sym);
        fd = real(dirfd, path, flags, mode);
    }
    if (fd >= 0 && (flags & O_ACCMODE) != O_WRONLY)
        track(fd);
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;
    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return wrapped_open("open", -1, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;
    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return wrapped_open("open64", -1, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;
    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return wrapped_open("openat", dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;
    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return wrapped_open("openat64", dirfd, path, flags, mode);
}

int close(int fd)
{
    find_real();
    if (fd >= 0 && fd < MAX_FDS)
        tracked[fd] = 0;
    return real_close(fd);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
    find_real();
    if (fd >= 0 && fd < MAX_FDS && tracked[fd])
        return lfu_pread(fd, buf, len, off);
    return real_pread(fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
    return pread(fd, buf, len, off);
}

ssize_t read(int fd, void *buf, size_t len)
{
    off_t off;
    ssize_t got;
    find_real();
    if (fd < 0 || fd >= MAX_FDS || !tracked[fd])
        return real_read(fd, buf, len);
    off = lseek(fd, 0, SEEK_CUR);
    if (off < 0)
        return real_read(fd, buf, len);
    got = lfu_pread(fd, buf, len, off);
    if (got > 0)
        lseek(fd, off + got, SEEK_SET);
    return got;
}
