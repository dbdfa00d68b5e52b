/* SPDX-License-Identifier: MIT */
/*
 * Departure times, shared by the BPF pacer (gen.bpf.c) and the afpacket
 * engine: plain C without libc, so clang -target bpf accepts it.
 *
 * Frame n leaves at start + due_fp16 / 65536 ns, where due_fp16 is the sum
 * of the gaps of the frames before it. The gaps come from the schedule
 * (schedule.h), changed by two shapes in time:
 *
 *   burst    B frames leave back to back, each after the previous one's wire
 *            time at the link rate; the last one of a burst then waits what
 *            the burst saved, so B frames take the time of B scheduled gaps
 *            and the mean rate holds (RFC 2544's back-to-back input).
 *   groups   after every group_size frames, a pause of group_gap_fp16
 *            (seed 004's groups of 10^7 frames, counted per group).
 */
#ifndef CAPBENCH_PACING_H
#define CAPBENCH_PACING_H

#include "stamp.h"

struct cb_pace_cfg {
	unsigned long long group_size;     /* 0: no groups */
	unsigned long long group_gap_fp16;
	unsigned int burst;                /* frames per burst; 0 or 1: no bursts */
	unsigned int sched_len;
};

struct cb_pace_state {
	unsigned long long due_fp16;       /* the next departure after the start */
	long long burst_debt_fp16;         /* scheduled gaps not yet waited in this burst */
	unsigned int idx;                  /* the next schedule entry */
	unsigned int burst_pos;
};

/* Frame `seq`, of schedule entry e, has left: set the next departure. */
static inline void cb_pace_advance(const struct cb_pace_cfg *c, struct cb_pace_state *s,
				   const struct cb_sched_entry *e, unsigned long long seq)
{
	if (c->burst > 1) {
		s->burst_debt_fp16 += (long long)(e->gap_fp16 - e->wire_fp16);
		s->due_fp16 += e->wire_fp16;
		if (++s->burst_pos == c->burst) {
			s->due_fp16 += (unsigned long long)s->burst_debt_fp16;
			s->burst_debt_fp16 = 0;
			s->burst_pos = 0;
		}
	} else {
		s->due_fp16 += e->gap_fp16;
	}
	if (c->group_size && (seq + 1) % c->group_size == 0)
		s->due_fp16 += c->group_gap_fp16;
	s->idx = s->idx + 1 == c->sched_len ? 0 : s->idx + 1;
}

#endif
