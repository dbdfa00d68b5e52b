/* SPDX-License-Identifier: MIT */
#include "rate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stamp.h"

double cb_wire_pps(double link_bps, unsigned int frame_len)
{
	return link_bps / ((double)(frame_len + CB_WIRE_OVERHEAD) * 8.0);
}

double cb_wire_bps(double pps, unsigned int frame_len)
{
	return pps * (double)(frame_len + CB_WIRE_OVERHEAD) * 8.0;
}

/* Parse "<number><suffix>" where suffix is matched case-insensitively
 * against the table; returns the multiplier index or -1. */
static int number_suffix(const char *s, double *num, const char *const *suffixes,
			 int nsuffixes)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*num = strtod(s, &end);
	if (end == s || errno || !isfinite(*num) || *num < 0)
		return -1;
	for (int i = 0; i < nsuffixes; i++)
		if (!strcasecmp(end, suffixes[i]))
			return i;
	return -1;
}

static int parse_bits(const char *s, double *bps)
{
	static const char *const sfx[] = { "", "k", "m", "g", "t",
					   "bps", "kbps", "mbps", "gbps", "tbps",
					   "gbe", "gbit", "mbit" };
	static const double mult[] = { 1, 1e3, 1e6, 1e9, 1e12,
				       1, 1e3, 1e6, 1e9, 1e12,
				       1e9, 1e9, 1e6 };
	double v;
	int i = number_suffix(s, &v, sfx, (int)(sizeof(sfx) / sizeof(sfx[0])));

	if (i < 0)
		return -EINVAL;
	*bps = v * mult[i];
	return 0;
}

int cb_parse_link(const char *s, double *link_bps)
{
	/* The Ethernet speeds capbench emulates; the Python front end knows
	 * the same list (rates.LINKS_BPS). Any other rate goes in --rate. */
	static const double speeds[] = { 1e9, 10e9, 25e9, 40e9, 100e9 };
	double bps;

	if (parse_bits(s, &bps))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++) {
		if (bps == speeds[i]) {
			*link_bps = bps;
			return 0;
		}
	}
	return -EINVAL;
}

int cb_parse_rate(const char *s, struct cb_rate *r)
{
	static const char *const pps_sfx[] = { "pps", "kpps", "mpps", "gpps" };
	static const double pps_mult[] = { 1, 1e3, 1e6, 1e9 };
	static const char *const pct_sfx[] = { "%" };
	double v;
	int i;

	if (!s || !*s)
		return -EINVAL;
	if (!strcasecmp(s, "max") || !strcasecmp(s, "unpaced")) {
		r->kind = CB_RATE_MAX;
		r->value = 0;
		return 0;
	}
	i = number_suffix(s, &v, pps_sfx, 4);
	if (i >= 0) {
		r->kind = CB_RATE_PPS;
		r->value = v * pps_mult[i];
	} else if (number_suffix(s, &v, pct_sfx, 1) == 0) {
		r->kind = CB_RATE_PERCENT;
		r->value = v;
	} else if (!parse_bits(s, &v)) {
		r->kind = CB_RATE_BPS;
		r->value = v;
	} else {
		return -EINVAL;
	}
	return r->value > 0 ? 0 : -ERANGE;
}

int cb_rate_pps(const struct cb_rate *r, double link_bps, unsigned int frame_len,
		double *pps)
{
	double wire = cb_wire_pps(link_bps, frame_len), want;

	switch (r->kind) {
	case CB_RATE_MAX:
		*pps = 0;
		return 0;
	case CB_RATE_PPS:
		want = r->value;
		break;
	case CB_RATE_BPS:
		want = r->value / ((double)(frame_len + CB_WIRE_OVERHEAD) * 8.0);
		break;
	case CB_RATE_PERCENT:
		want = wire * r->value / 100.0;
		break;
	default:
		return -EINVAL;
	}
	/* Allow for the rounding of a rate written with a few digits. */
	if (want > wire * (1.0 + 1e-9))
		return -ERANGE;
	*pps = want;
	return 0;
}

uint64_t cb_gap_fp16(double pps)
{
	if (pps <= 0)
		return 0;
	return (uint64_t)llround(1e9 * 65536.0 / pps);
}

uint64_t cb_frames_in(double pps, double duration_s)
{
	double n = pps * duration_s;

	if (!(pps > 0) || !(duration_s > 0))
		return 0;
	/* 2^64 is exact in a double; anything from there on saturates. */
	if (n + 0.5 >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)floor(n + 0.5);
}
