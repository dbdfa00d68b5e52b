/* SPDX-License-Identifier: MIT */
/* Wire-rate arithmetic and the --rate / --link syntax.
 *
 * A frame of L bytes (including FCS) occupies L + 20 bytes of wire time:
 * 7 B preamble, 1 B start-of-frame delimiter and the 12 B minimum
 * inter-frame gap. So pps = link_bps / ((L + 20) * 8); 1 GbE at 64 B is
 * 1,488,095 pps and at 1518 B 81,274 pps (RFC 2544, seed 000 Table 1). */
#ifndef CAPBENCH_RATE_H
#define CAPBENCH_RATE_H

#include <stdint.h>

enum cb_rate_kind {
	CB_RATE_PPS,      /* packets per second */
	CB_RATE_BPS,      /* bits per second on the wire */
	CB_RATE_PERCENT,  /* percent of the link's wire rate */
	CB_RATE_MAX,      /* unpaced: as fast as the engine can */
};

struct cb_rate {
	enum cb_rate_kind kind;
	double value;
};

double cb_wire_pps(double link_bps, unsigned int frame_len);
/* Bits per second on the wire for pps frames of frame_len bytes. */
double cb_wire_bps(double pps, unsigned int frame_len);

/* "1g", "10g", "25g", "40g", "100g" (also "1G", "10gbe", "10gbps"); bits/s.
 * Any other speed is -EINVAL. */
int cb_parse_link(const char *s, double *link_bps);
/* "1.2Mpps", "800kpps", "5000pps", "1g", "950m", "100%", "max". */
int cb_parse_rate(const char *s, struct cb_rate *r);
/* Packets per second for this rate, link and frame length; 0 = unpaced.
 * Returns -ERANGE when the rate exceeds the link's wire rate. */
int cb_rate_pps(const struct cb_rate *r, double link_bps, unsigned int frame_len,
		double *pps);
/* Gap between departures in 1/65536 ns (16 fractional bits), the unit the
 * BPF pacer adds per frame; 0 for pps <= 0 (unpaced). */
uint64_t cb_gap_fp16(double pps);

/* The frames a paced stream of `pps` sends in `duration_s` seconds, timed
 * from its first departure: round(pps * duration_s), saturating at
 * UINT64_MAX; 0 when pps or duration_s is not positive. */
uint64_t cb_frames_in(double pps, double duration_s);

/* Lane i's share of `total` frames split over n lanes: the first total % n
 * lanes send one more, so the shares add up to total exactly. */
static inline uint64_t cb_lane_count(uint64_t total, unsigned int n, unsigned int i)
{
	return total / n + (i < total % n);
}

#endif
