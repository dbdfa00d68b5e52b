/* SPDX-License-Identifier: MIT */
#include "rx_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stamp.h"

/* Groups are allocated as frames of higher groups arrive; this bounds the
 * memory a damaged sequence number can ask for (8 MiB of counters). */
#define MAX_GROUPS (1u << 20)

uint64_t cap_hist_bucket_low(unsigned int i)
{
	unsigned int e, sub;

	if (i < (1u << CAP_HIST_SUB_BITS))
		return i;
	e = (i >> CAP_HIST_SUB_BITS) + CAP_HIST_SUB_BITS - 1;
	sub = i & ((1u << CAP_HIST_SUB_BITS) - 1);
	return (1ull << e) | ((uint64_t)sub << (e - CAP_HIST_SUB_BITS));
}

uint64_t cap_hist_bucket_mid(unsigned int i)
{
	uint64_t low = cap_hist_bucket_low(i), width;

	if (i < (1u << CAP_HIST_SUB_BITS))
		return low; /* exact buckets: one value each */
	/* A bucket of exponent e holds 2^(e - SUB_BITS) values. */
	width = 1ull << ((i >> CAP_HIST_SUB_BITS) - 1);
	return low + (width - 1) / 2;
}

uint64_t cap_hist_quantile(const struct cap_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->n)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->n);
	for (unsigned int i = 0; i < CAP_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen > rank) {
			uint64_t v = cap_hist_bucket_mid(i);

			return v < h->min ? h->min : v > h->max ? h->max : v;
		}
	}
	return h->max;
}

void cap_hist_merge(struct cap_hist *into, const struct cap_hist *h)
{
	if (!h->n)
		return;
	if (!into->n || h->min < into->min)
		into->min = h->min;
	if (h->max > into->max)
		into->max = h->max;
	into->n += h->n;
	for (unsigned int i = 0; i < CAP_HIST_BUCKETS; i++)
		into->bucket[i] += h->bucket[i];
}

int cap_rx_stats_init(struct cap_rx_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->lengths = calloc(CB_FRAME_MAX + 1, sizeof(*s->lengths));
	return s->lengths ? 0 : -ENOMEM;
}

void cap_rx_stats_free(struct cap_rx_stats *s)
{
	free(s->lengths);
	free(s->groups);
	memset(s, 0, sizeof(*s));
}

/* `count` frames of group g. */
static void group_add(struct cap_rx_stats *s, uint64_t g, uint64_t count)
{
	if (g >= s->groups_cap) {
		uint64_t cap = s->groups_cap ? s->groups_cap : 16;
		uint64_t *n;

		while (cap <= g && cap < MAX_GROUPS)
			cap *= 2;
		if (g >= cap) {
			s->group_overflow += count;
			return;
		}
		n = realloc(s->groups, cap * sizeof(*n));
		if (!n) {
			s->group_overflow += count;
			return;
		}
		memset(n + s->groups_cap, 0, (cap - s->groups_cap) * sizeof(*n));
		s->groups = n;
		s->groups_cap = cap;
	}
	s->groups[g] += count;
	if (g + 1 > s->ngroups)
		s->ngroups = g + 1;
}

void cap_rx_stats_group(struct cap_rx_stats *s, uint64_t g)
{
	group_add(s, g, 1);
}

void cap_rx_stats_merge(struct cap_rx_stats *into, const struct cap_rx_stats *s)
{
	for (unsigned int len = 0; len <= CB_FRAME_MAX; len++)
		into->lengths[len] += s->lengths[len];
	cap_hist_merge(&into->iat, &s->iat);
	cap_hist_merge(&into->latency, &s->latency);
	into->early += s->early;
	into->group_overflow += s->group_overflow;
	for (uint64_t g = 0; g < s->ngroups; g++)
		if (s->groups[g])
			group_add(into, g, s->groups[g]);
}

static void put_hist(struct cb_json *j, const char *key, const struct cap_hist *h)
{
	static const struct { const char *name; double q; } qs[] = {
		{ "min", 0 }, { "p50", 0.5 }, { "p90", 0.9 }, { "p99", 0.99 }, { "p99_9", 0.999 },
		{ "max", 1 },
	};

	cb_json_obj_begin(j, key);
	cb_json_u64(j, "n", h->n);
	if (h->n)
		for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
			cb_json_u64(j, qs[i].name, cap_hist_quantile(h, qs[i].q));
	cb_json_obj_end(j);
}

void cap_rx_stats_json(const struct cap_rx_stats *s, struct cb_json *j, uint64_t group_size,
		       uint64_t groups_expected)
{
	char key[16];

	cb_json_obj_begin(j, "lengths");
	for (unsigned int len = 0; len <= CB_FRAME_MAX; len++) {
		if (!s->lengths[len])
			continue;
		snprintf(key, sizeof(key), "%u", len);
		cb_json_u64(j, key, s->lengths[len]);
	}
	cb_json_obj_end(j);
	put_hist(j, "iat_ns", &s->iat);
	put_hist(j, "latency_ns", &s->latency);
	if (s->early)
		cb_json_u64(j, "stamped_after_receipt", s->early);
	if (!group_size)
		return;
	cb_json_obj_begin(j, "groups");
	cb_json_u64(j, "size", group_size);
	cb_json_arr_begin(j, "received");
	{
		uint64_t n = groups_expected > s->ngroups ? groups_expected : s->ngroups;

		for (uint64_t g = 0; g < n; g++)
			cb_json_arr_u64(j, g < s->ngroups ? s->groups[g] : 0);
	}
	cb_json_arr_end(j);
	if (s->group_overflow)
		cb_json_u64(j, "untracked", s->group_overflow);
	cb_json_obj_end(j);
}

int64_t cap_rx_clock_offset_ns(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
}
