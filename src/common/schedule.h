/* SPDX-License-Identifier: MIT */
/*
 * The generator's departure schedule: a cycle of (frame length, gap to the
 * next frame) entries built from a size profile, a rate and a link. Both
 * engines walk it frame by frame, so a frame's departure time is the sum of
 * the gaps before it: pacing by bit rate gives every frame its own wire time
 * (a 1 GbE IMIX stream is exactly 1 Gbit/s on the wire), pacing by packet
 * rate gives every frame the same gap.
 *
 * Cycled profiles make a table of their own length; drawn profiles make a
 * table of CB_SCHED_DRAWS draws that then repeats, the same for the same
 * seed. Gaps are in 1/65536 ns and accumulate without rounding drift.
 */
#ifndef CAPBENCH_SCHEDULE_H
#define CAPBENCH_SCHEDULE_H

#include <stdint.h>

#include "rate.h"
#include "sizes.h"
#include "stamp.h"

#define CB_SCHED_DRAWS 65536u

struct cb_schedule {
	uint32_t n;
	struct cb_sched_entry *e;
	int paced;             /* 0: unpaced (--rate max), every gap is 0 */
	double target_pps;     /* mean frames per second over a cycle; 0 unpaced */
	double mean_len;       /* mean frame length over a cycle */
	unsigned int max_len, min_len;
};

/* Returns 0, -ERANGE when the rate is above the link's wire rate for these
 * frames (on average over a cycle), -EINVAL for a bad rate, -ENOMEM. */
int cb_schedule_build(struct cb_schedule *s, const struct cb_size_profile *p, uint64_t seed,
		      const struct cb_rate *rate, double link_bps);
void cb_schedule_free(struct cb_schedule *s);

#endif
