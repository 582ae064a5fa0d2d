/*
 * The LFU Cache FS hot set (papers.md, section 3), as
 * watcher_cams/policy/lfu.py has it: the same decisions for the same
 * accesses, including how ties are broken (tests/unit/lab/test_cams_lfu.py
 * replays one trace through both).
 *
 * The data is cut into blocks. A history of the last `history` accesses
 * counts references per block; every `check_every` misses, if the
 * most-referenced block outside the hot set has more references than the
 * least-referenced block inside (by `confidence` standard deviations,
 * sqrt(a + b), when that is above 0), the two swap. The hot set holds
 * `slots` blocks.
 */
#ifndef CAMS_LFU_POLICY_H
#define CAMS_LFU_POLICY_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct lfu {
    unsigned long nblocks, slots, check_every, history;
    double confidence;
    unsigned long *counts;      /* per block: accesses in the history */
    unsigned char *hot;         /* per block: 1 while in the hot set */
    unsigned long nhot;
    unsigned long *window;      /* ring of the last `history` accesses */
    unsigned long wlen, whead;
    unsigned long long misses, swaps;
};

/* 0 on success, -1 on bad parameters or no memory. */
static int lfu_init(struct lfu *p, unsigned long nblocks, unsigned long slots,
                    unsigned long check_every, unsigned long history,
                    double confidence)
{
    memset(p, 0, sizeof(*p));
    if (nblocks == 0 || check_every == 0 || history == 0
            || !(confidence >= 0))
        return -1;
    p->nblocks = nblocks;
    p->slots = slots;
    p->check_every = check_every;
    p->history = history;
    p->confidence = confidence;
    p->counts = calloc(nblocks, sizeof(*p->counts));
    p->hot = calloc(nblocks, 1);
    p->window = calloc(history, sizeof(*p->window));
    if (!p->counts || !p->hot || !p->window)
        return -1;
    return 0;
}

/* Count one access to `block` in the history. */
static void lfu_record(struct lfu *p, unsigned long block)
{
    if (block >= p->nblocks)
        return;
    if (p->wlen == p->history) {
        /* Full: the oldest access leaves, the new one takes its place. */
        p->counts[p->window[p->whead]]--;
        p->window[p->whead] = block;
        p->whead = (p->whead + 1) % p->history;
    } else {
        p->window[(p->whead + p->wlen) % p->history] = block;
        p->wlen++;
    }
    p->counts[block]++;
}

/*
 * A read of `block` missed the cache. Returns 1 when `block` is now hot;
 * *evicted is the block that left the hot set (-1 if none), whose cached
 * data the caller drops.
 */
static int lfu_miss(struct lfu *p, unsigned long block, long *evicted)
{
    unsigned long b, best = 0, worst = 0, best_n = 0, worst_n = 0;
    int found_best = 0, found_worst = 0;

    *evicted = -1;
    if (block >= p->nblocks)
        return 0;
    p->misses++;
    if (p->hot[block])
        return 1;
    if (p->nhot < p->slots) {
        p->hot[block] = 1;
        p->nhot++;
        return 1;
    }
    if (p->misses % p->check_every)
        return 0;
    for (b = 0; b < p->nblocks; b++) {
        if (p->hot[b]) {
            if (!found_worst || p->counts[b] < worst_n) {
                worst = b;
                worst_n = p->counts[b];
                found_worst = 1;
            }
        } else if (p->counts[b] > 0
                   && (!found_best || p->counts[b] >= best_n)) {
            /* Ties go to the higher block number, as max() of (n, b). */
            best = b;
            best_n = p->counts[b];
            found_best = 1;
        }
    }
    if (!found_best || !found_worst)
        return 0;
    if ((double)best_n <= worst_n + p->confidence * sqrt(
            (double)(best_n + worst_n)))
        return 0;
    p->hot[worst] = 0;
    p->hot[best] = 1;
    p->swaps++;
    *evicted = (long)worst;
    return p->hot[block];
}

#endif
