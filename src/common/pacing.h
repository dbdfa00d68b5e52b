/* SPDX-License-Identifier: MIT */
/*
 * Departure times, shared by the BPF pacers (gen.bpf.c, gen_loop.bpf.c) and
 * the afpacket engine: plain C without libc, so clang -target bpf accepts it.
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

/* Departure n is due at start + the sum of the gaps before it: kept from the
 * origin, not from the previous departure, so the mean rate stays exact
 * however late single frames leave.
 *
 * A generator that fell behind catches up at most --catch-up frames faster
 * than the emulated link carries them (its share of the link with several
 * threads; wire_tat_ns is the link's theoretical departure time, GCRA), then
 * at the link's wire rate: a longer burst would meet the receiver with more
 * than it can buffer, a load no link of that speed makes. At 100 % of the
 * wire rate the rest of a lag stays: the sending time grows and the achieved
 * rate says so.
 *
 * Returns 0 while the frame of entry e may not leave at `now`; else 1, after
 * counting it late (more than one gap behind) and its lag. */
static inline int cb_gen_due(unsigned long long now, unsigned long long start_ns,
			     const struct cb_pace_state *pace, const struct cb_sched_entry *e,
			     unsigned long long catchup_ns, unsigned long long wire_tat_ns,
			     unsigned long long *late, unsigned long long *max_lag_ns)
{
	unsigned long long due = start_ns + (pace->due_fp16 >> 16), lag;

	if (now < due || now + catchup_ns < wire_tat_ns)
		return 0;
	lag = now - due;
	if ((lag << 16) > e->gap_fp16)
		(*late)++;
	if (lag > *max_lag_ns)
		*max_lag_ns = lag;
	return 1;
}

/* The link's theoretical departure time after a frame of entry e left at
 * `now` (its wire time, times the lanes that share the link). */
static inline unsigned long long cb_gen_wire_tat(unsigned long long wire_tat_ns,
						 unsigned long long now,
						 const struct cb_sched_entry *e, unsigned int lanes)
{
	return (wire_tat_ns > now ? wire_tat_ns : now) + ((e->wire_fp16 * lanes) >> 16);
}

#endif
