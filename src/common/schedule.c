/* SPDX-License-Identifier: MIT */
#include "schedule.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double wire_bits(unsigned int len)
{
	return (double)(len + CB_WIRE_OVERHEAD) * 8.0;
}

int cb_schedule_build(struct cb_schedule *s, const struct cb_size_profile *p, uint64_t seed,
		      const struct cb_rate *rate, double link_bps)
{
	struct cb_size_draw d;
	double bits = 0, bps = 0, len_sum = 0;
	uint32_t n = p->kind == CB_SIZES_CYCLE ? p->n : CB_SCHED_DRAWS;

	memset(s, 0, sizeof(*s));
	s->e = calloc(n, sizeof(*s->e));
	if (!s->e)
		return -ENOMEM;
	s->n = n;
	cb_size_draw_init(&d, p, seed);
	s->min_len = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		unsigned int len = cb_size_next(&d);

		s->e[i].len = len;
		s->e[i].wire_fp16 = (uint64_t)llround(wire_bits(len) / link_bps * 1e9 * 65536.0);
		bits += wire_bits(len);
		len_sum += len;
		if (len > s->max_len)
			s->max_len = len;
		if (len < s->min_len)
			s->min_len = len;
	}
	s->mean_len = len_sum / n;

	switch (rate->kind) {
	case CB_RATE_MAX:
		return 0;
	case CB_RATE_PPS:
		/* The same gap for every frame; allowed while the mean wire time
		 * of a cycle fits the link. */
		if (rate->value * bits / n > link_bps * (1.0 + 1e-9))
			goto too_fast;
		for (uint32_t i = 0; i < n; i++)
			s->e[i].gap_fp16 = cb_gap_fp16(rate->value);
		s->target_pps = rate->value;
		break;
	case CB_RATE_BPS:
	case CB_RATE_PERCENT:
		bps = rate->kind == CB_RATE_BPS ? rate->value : link_bps * rate->value / 100.0;
		if (bps > link_bps * (1.0 + 1e-9))
			goto too_fast;
		/* Each frame takes its own wire time at bps. */
		for (uint32_t i = 0; i < n; i++)
			s->e[i].gap_fp16 = (uint64_t)llround(wire_bits(s->e[i].len) / bps * 1e9 * 65536.0);
		s->target_pps = bps / (bits / n);
		break;
	default:
		cb_schedule_free(s);
		return -EINVAL;
	}
	s->paced = 1;
	return 0;

too_fast:
	cb_schedule_free(s);
	return -ERANGE;
}

void cb_schedule_free(struct cb_schedule *s)
{
	free(s->e);
	s->e = NULL;
	s->n = 0;
}
