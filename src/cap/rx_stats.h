/* SPDX-License-Identifier: MIT */
/*
 * What the counter measures of the capbench frames it reads, beyond counts:
 * their lengths, their inter-arrival times, their one-way latency from the TX
 * stamp, and how many of each group (sequence / --group-size) arrived.
 *
 * Times are CLOCK_MONOTONIC ns, the clock of the generator's stamp
 * (bpf_ktime_get_ns). A backend passes the kernel's receive timestamp where
 * the socket has one (packet sockets: CLOCK_REALTIME, shifted to monotonic
 * by cap_rx_clock) and else the time its read loop took the batch: the
 * summary says which ("rx_clock"). Latency is valid when both ends share a
 * clock, as on the veth test bed.
 *
 * Histograms are log-linear: values below 64 ns exactly, above that 32
 * buckets per power of two (each under 3.2 % wide; a quantile is reported as
 * its bucket's middle, so within 1.6 %), cheap enough for the hot path: a
 * count-leading-zeros and an increment.
 */
#ifndef CAPBENCH_RX_STATS_H
#define CAPBENCH_RX_STATS_H

#include <stdint.h>
#include <time.h>

#include "jsonl.h"

#define CAP_HIST_SUB_BITS 5
#define CAP_HIST_BUCKETS ((64 - CAP_HIST_SUB_BITS + 1) << CAP_HIST_SUB_BITS)

struct cap_hist {
	uint64_t n;
	uint64_t min, max;
	uint64_t bucket[CAP_HIST_BUCKETS];
};

static inline unsigned int cap_hist_index(uint64_t v)
{
	unsigned int e;

	if (v < (1u << CAP_HIST_SUB_BITS))
		return (unsigned int)v;
	e = 63u - (unsigned int)__builtin_clzll(v); /* >= CAP_HIST_SUB_BITS */
	return ((e - CAP_HIST_SUB_BITS + 1) << CAP_HIST_SUB_BITS) |
	       (unsigned int)((v >> (e - CAP_HIST_SUB_BITS)) & ((1u << CAP_HIST_SUB_BITS) - 1));
}

static inline void cap_hist_add(struct cap_hist *h, uint64_t v)
{
	if (!h->n || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	h->bucket[cap_hist_index(v)]++;
}

/* The lowest value of bucket i (its values lie within 3.2 % above it). */
uint64_t cap_hist_bucket_low(unsigned int i);
/* The middle value of bucket i: its values lie within 1.6 % of it. */
uint64_t cap_hist_bucket_mid(unsigned int i);
/* The value below which `q` (0..1) of the samples lie: the middle of the
 * bucket that holds it (within the exact min and max), so the error is
 * at most half a bucket either way, not a whole bucket below; the exact
 * min and max for q = 0 and 1. */
uint64_t cap_hist_quantile(const struct cap_hist *h, double q);
void cap_hist_merge(struct cap_hist *into, const struct cap_hist *h);

struct cap_rx_stats {
	uint64_t *lengths;        /* capbench frames per length incl. FCS, [0, CB_FRAME_MAX] */
	struct cap_hist iat;      /* inter-arrival time of consecutive capbench frames */
	struct cap_hist latency;  /* receive time - TX stamp */
	uint64_t early;           /* frames stamped after they were received: clocks differ */
	uint64_t last_rx_ns;
	uint64_t *groups;         /* frames received per group, grown as groups arrive */
	uint64_t ngroups;         /* entries of groups[] in use: the highest group + 1 */
	uint64_t groups_cap;
	uint64_t group_overflow;  /* frames of groups beyond what could be allocated */
};

int cap_rx_stats_init(struct cap_rx_stats *s);
void cap_rx_stats_free(struct cap_rx_stats *s);
/* Several workers' stats into one (fanout): sums; iat is per worker. */
void cap_rx_stats_merge(struct cap_rx_stats *into, const struct cap_rx_stats *s);
/* A frame of group g arrived (the first time its sequence number was seen). */
void cap_rx_stats_group(struct cap_rx_stats *s, uint64_t g);

/* The summary's fields: "lengths", "iat_ns", "latency_ns" and, with a group
 * size, "groups" ([received per group], `expected` frames each). */
void cap_rx_stats_json(const struct cap_rx_stats *s, struct cb_json *j, uint64_t group_size,
		       uint64_t groups_expected);

/* Kernel receive timestamps are CLOCK_REALTIME: their offset from
 * CLOCK_MONOTONIC, measured once when the capture opens (a step of the wall
 * clock during a trial would show as a latency step). */
int64_t cap_rx_clock_offset_ns(void);

static inline uint64_t cap_rx_mono_ns(int64_t offset_ns, uint64_t sec, uint64_t nsec)
{
	return sec * 1000000000ull + nsec - (uint64_t)offset_ns;
}

static inline uint64_t cap_now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
