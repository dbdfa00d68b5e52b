/* SPDX-License-Identifier: MIT */
/*
 * capbench-gen's JSON Lines: an interval line per --interval and one summary
 * line at exit, over all lanes, with one entry per stream (docs/programs.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "jsonl.h"

void gen_progress_add(struct gen_progress *sum, const struct gen_progress *p)
{
	if (p->sent && (!sum->sent || p->first_tx_ns < sum->first_tx_ns))
		sum->first_tx_ns = p->first_tx_ns;
	if (p->last_tx_ns > sum->last_tx_ns)
		sum->last_tx_ns = p->last_tx_ns;
	sum->sent += p->sent;
	sum->wire_bytes += p->wire_bytes;
	sum->late += p->late;
	if (p->max_lag_ns > sum->max_lag_ns)
		sum->max_lag_ns = p->max_lag_ns;
	sum->tx_busy += p->tx_busy;
	sum->refused += p->refused;
}

void gen_print_interval(uint64_t at_ns, double t_s, const struct gen_progress *p,
			const struct gen_progress *prev, double dt_s)
{
	struct cb_json j;

	cb_json_begin(&j, "interval");
	cb_json_epoch_ms(&j, "at", at_ns);
	cb_json_double(&j, "t_s", t_s);
	cb_json_u64(&j, "sent", p->sent);
	cb_json_double(&j, "pps", dt_s > 0 ? (double)(p->sent - prev->sent) / dt_s : 0);
	cb_json_double(&j, "wire_bps",
		       dt_s > 0 ? (double)(p->wire_bytes - prev->wire_bytes) * 8.0 / dt_s : 0);
	cb_json_end(&j, stdout);
}

/* The mean departure rate of one lane: (sent - 1) frames over the span from
 * the first departure to the last. */
static double lane_pps(const struct gen_progress *p)
{
	double span_s = (double)(p->last_tx_ns - p->first_tx_ns) / 1e9;

	return p->sent > 1 && span_s > 0 ? (double)(p->sent - 1) / span_s : 0;
}

/* The part of the offered load a lane sent: the schedule's span of the
 * frames sent (which knows every frame's length, burst and group pause) over
 * the span they took; 1 when on time, less when they fell behind. */
static double lane_share(const struct gen_progress *p)
{
	double span = (double)(p->last_tx_ns - p->first_tx_ns);

	if (p->sent < 2 || span <= 0)
		return p->sent ? 1.0 : 0.0;
	return (double)p->last_due_ns / span;
}

/* The lengths of the `sent` frames of each lane: they left in schedule
 * order, so the schedule tells them without any count on the hot path. */
static void put_sent_lengths(struct cb_json *j, const struct gen_plan *plan,
			     const struct gen_progress *lanes)
{
	uint64_t *hist = calloc(CB_FRAME_MAX + 1, sizeof(*hist));
	char key[16];

	if (!hist)
		return;
	for (unsigned int l = 0; l < plan->n; l++) {
		const struct cb_schedule *s = &plan->lanes[l].sched;
		uint64_t cycles = lanes[l].sent / s->n, rest = lanes[l].sent % s->n;

		for (uint32_t i = 0; i < s->n; i++)
			hist[s->e[i].len] += cycles + (i < rest);
	}
	cb_json_obj_begin(j, "sent_lengths");
	for (unsigned int len = 0; len <= CB_FRAME_MAX; len++) {
		if (!hist[len])
			continue;
		snprintf(key, sizeof(key), "%u", len);
		cb_json_u64(j, key, hist[len]);
	}
	cb_json_obj_end(j);
	free(hist);
}

static void put_streams(struct cb_json *j, const struct gen_plan *plan,
			const struct gen_progress *lanes)
{
	char key[16];

	cb_json_obj_begin(j, "streams");
	for (unsigned int l = 0; l < plan->n; l++) {
		snprintf(key, sizeof(key), "%u", plan->lanes[l].spec.stream);
		cb_json_obj_begin(j, key);
		cb_json_i64(j, "cpu", plan->lanes[l].cpu);
		cb_json_u64(j, "sent", lanes[l].sent);
		cb_json_double(j, "achieved_pps", lane_pps(&lanes[l]));
		cb_json_u64(j, "late", lanes[l].late);
		cb_json_u64(j, "max_lag_ns", lanes[l].max_lag_ns);
		cb_json_double(j, "offered_share", lane_share(&lanes[l]));
		cb_json_obj_end(j);
	}
	cb_json_obj_end(j);
}

/* What the options made of the traffic: the fields a summary and a --check
 * line share. */
static void put_plan(struct cb_json *j, const struct gen_plan *plan)
{
	const struct gen_cfg *cfg = &plan->total;

	cb_json_str(j, "engine", plan->engine->name);
	if (cfg->iface)
		cb_json_str(j, "iface", cfg->iface);
	cb_json_str(j, "size", cfg->size_spec);
	if (cfg->sched.min_len == cfg->sched.max_len)
		cb_json_u64(j, "frame_len", cfg->sched.max_len);
	cb_json_double(j, "mean_frame_len", cfg->sched.mean_len);
	cb_json_u64(j, "min_frame_len", cfg->sched.min_len);
	cb_json_u64(j, "max_frame_len", cfg->sched.max_len);
	cb_json_u64(j, "schedule_len", cfg->sched.n);
	cb_json_u64(j, "seed", cfg->seed);
	cb_json_double(j, "link_bps", cfg->link_bps);
	cb_json_double(j, "target_pps", cfg->pps);
	cb_json_double(j, "target_wire_bps", cfg->target_wire_bps);
	cb_json_u64(j, "threads", plan->n);
	cb_json_u64(j, "burst", cfg->pace.burst);
	cb_json_u64(j, "group_size", cfg->pace.group_size);
	cb_json_double(j, "group_gap_s", (double)cfg->pace.group_gap_fp16 / 65536.0 / 1e9);
	/* --count, or round(target_pps x --duration); 0: time-bound or until stopped. */
	cb_json_u64(j, "target_frames", cfg->count);
	cb_json_u64(j, "trailer", cfg->trailer);
	cb_json_u64(j, "catch_up", cfg->catchup);
}

void gen_print_check(const struct gen_plan *plan)
{
	static struct cb_json j;

	cb_json_begin(&j, "check");
	put_plan(&j, plan);
	if (cb_json_end(&j, stdout))
		fprintf(stderr, "capbench-gen: cannot write the check line: %s\n", strerror(errno));
}

static const char *const stop_names[] = {
	[GEN_STOP_COUNT] = "count",
	[GEN_STOP_DURATION] = "duration",
	[GEN_STOP_DEADLINE] = "deadline",
	[GEN_STOP_SIGNAL] = "signal",
	[GEN_STOP_ERROR] = "error",
};

void gen_print_summary(const struct gen_plan *plan, const struct gen_progress *lanes,
		       const struct gen_end *end)
{
	static struct cb_json j;
	const struct gen_cfg *cfg = &plan->total;
	struct gen_progress p = { 0 };
	double achieved = 0, achieved_bps, offered_share = cfg->sched.paced ? 1.0 : 0.0;

	for (unsigned int l = 0; l < plan->n; l++) {
		gen_progress_add(&p, &lanes[l]);
		achieved += lane_pps(&lanes[l]);
		/* The offered load is short if any stream fell behind. */
		if (cfg->sched.paced && lane_share(&lanes[l]) < offered_share)
			offered_share = lane_share(&lanes[l]);
	}
	/* Each frame's own wire time: the mean wire bytes of what was sent. */
	achieved_bps = p.sent ? achieved * (double)p.wire_bytes * 8.0 / (double)p.sent : 0;

	cb_json_begin(&j, "summary");
	put_plan(&j, plan);
	cb_json_u64(&j, "sent", p.sent);
	cb_json_str(&j, "stopped_by", stop_names[end->stopped_by]);
	/* The sending time: from the first departure to the last, all
	 * streams together (0 for fewer than two frames). */
	cb_json_double(&j, "duration_s",
		       p.sent > 1 ? (double)(p.last_tx_ns - p.first_tx_ns) / 1e9 : 0.0);
	cb_json_double(&j, "wall_s", end->wall_s);
	cb_json_double(&j, "achieved_pps", achieved);
	cb_json_u64(&j, "wire_bytes", p.wire_bytes);
	cb_json_double(&j, "achieved_wire_bps", achieved_bps);
	/* 0 when unpaced: nothing was offered but "as fast as possible". */
	cb_json_double(&j, "offered_share", offered_share);
	cb_json_u64(&j, "late", p.late);
	cb_json_u64(&j, "max_lag_ns", p.max_lag_ns);
	cb_json_u64(&j, "tx_busy", p.tx_busy);
	/* Due, and lost before the wire: the engine could not hand them over. */
	cb_json_u64(&j, "refused", p.refused);
	cb_json_i64(&j, "cpu", plan->lanes[0].cpu);
	cb_json_u64(&j, "first_tx_ns", p.first_tx_ns);
	cb_json_u64(&j, "last_tx_ns", p.last_tx_ns);
	put_streams(&j, plan, lanes);
	put_sent_lengths(&j, plan, lanes);
	/* Trailer frames are not in "sent" (nor in wire_bytes). */
	cb_json_u64(&j, "trailer_sent", end->trailer_sent > 0 ? (uint64_t)end->trailer_sent : 0);
	if (end->trailer_sent < 0)
		cb_json_str(&j, "trailer_error", strerror((int)-end->trailer_sent));
	if (end->err)
		cb_json_str(&j, "error", strerror(-end->err));
	if (cb_json_end(&j, stdout))
		fprintf(stderr, "capbench-gen: cannot write the summary line: %s\n", strerror(errno));
}
