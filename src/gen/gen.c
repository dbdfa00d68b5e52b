/* SPDX-License-Identifier: MIT */
/*
 * capbench-gen: a paced traffic generator that stamps every frame with a
 * sequence number and a TX timestamp. One engine instance per lane (sending
 * thread); this main thread keeps time, prints the interval lines and stops
 * the lanes. See docs/programs.md for the output.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "util.h"

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };

	/* Returns early with EINTR on SIGINT/SIGTERM: that is what we want. */
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static struct gen_plan plan;
static void *states[GEN_MAX_THREADS];
static struct gen_progress lanes[GEN_MAX_THREADS];

static void progress_all(struct gen_progress *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < plan.n; i++) {
		plan.engine->progress(states[i], &lanes[i]);
		gen_progress_add(sum, &lanes[i]);
	}
}

static int all_finished(void)
{
	for (unsigned int i = 0; i < plan.n; i++)
		if (!plan.engine->finished(states[i]))
			return 0;
	return 1;
}

/* Stop and close lanes [0, n); the first error wins. */
static int close_lanes(unsigned int n)
{
	int err = 0;

	for (unsigned int i = 0; i < n; i++) {
		int e = plan.engine->stop(states[i]);

		if (e && !err)
			err = e;
	}
	for (unsigned int i = 0; i < n; i++)
		plan.engine->progress(states[i], &lanes[i]);
	return err;
}

/* A paced stream with a count may run late (a stalled CPU, a rate above
 * what the engine holds): it still sends every frame, but stops at the
 * schedule's end plus this much, so a stream that cannot keep up ends. */
#define LATE_GRACE_NS 1000000000ull

/* When to stop, from the first departure (`first`, or the start while
 * nothing has left): --duration from there, plus LATE_GRACE_NS for a paced
 * stream that stops at its count. UINT64_MAX: no time bound. */
static uint64_t deadline(const struct gen_cfg *cfg, uint64_t first)
{
	uint64_t d;

	if (cfg->duration_s <= 0)
		return UINT64_MAX;
	d = first + (uint64_t)(cfg->duration_s * 1e9);
	return cfg->sched.paced ? d + LATE_GRACE_NS : d;
}

int main(int argc, char **argv)
{
	const struct gen_cfg *cfg = &plan.total;
	struct gen_progress p = { 0 }, prev = { 0 };
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct gen_end fin = { .stopped_by = GEN_STOP_SIGNAL };
	uint64_t start, prev_tick, first = 0;
	struct cb_tick tick;
	unsigned int opened = 0;
	int err = 0;

	cb_set_progname(argv[0]);
	gen_configure(argc, argv, &plan);
	if (plan.check_only) {
		if (plan.probe && plan.engine->probe) {
			cb_require_caps(gen_engine_caps(plan.engine), "asking the kernel");
			if (plan.engine->probe(&plan.total)) {
				gen_plan_free(&plan);
				return cb_fault_status();
			}
		}
		gen_print_check(&plan);
		gen_plan_free(&plan);
		return CB_EXIT_OK;
	}
	cb_require_caps(gen_engine_caps(plan.engine), "sending");
	if (plan.default_duration)
		fprintf(stderr, "capbench-gen: sending for %d s (the default): give --duration S (0: until "
			"stopped) or --count N for another length\n", GEN_DURATION_DEFAULT_S);

	/* This thread only keeps time; it runs beside the first lane. */
	if (plan.lanes[0].cpu >= 0 && (err = cb_pin_cpu(plan.lanes[0].cpu)))
		cb_usage_error("cannot pin to CPU %d: %s", plan.lanes[0].cpu, strerror(-err));

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	for (; opened < plan.n; opened++) {
		err = plan.engine->open(&plan.lanes[opened], &states[opened]);
		if (err)
			break;
	}
	if (err) {
		close_lanes(0);
		for (unsigned int i = 0; i < opened; i++)
			plan.engine->close(states[i]);
		/* open() printed its line and said whether it is the user's
		 * (cb_user_fault): that, not the errno, picks 2 or 1. */
		return cb_fault_status();
	}

	start = cb_now_ns();
	for (unsigned int i = 0; i < plan.n && !err; i++) {
		err = plan.engine->start(states[i]);
		if (err)
			fprintf(stderr, "capbench-gen: cannot start the %s engine: %s\n",
				plan.engine->name, strerror(-err));
	}
	prev_tick = start;
	cb_tick_start(&tick, cfg->interval_s);

	/* The engines stop at their lane's count by themselves (the xdp
	 * program stops redirecting, the afpacket thread leaves its loop);
	 * this loop sees the total reached, or the time bound passed, within
	 * a millisecond and stops them. Until the first frame has left it
	 * polls every millisecond too, to time --duration from there (the
	 * xdp engine's BPF_PROG_RUN takes tens of ms to set up). */
	while (!err && !stop_requested) {
		uint64_t now = cb_now_ns(), end, wake;

		if (all_finished()) {
			/* The afpacket threads end at their counts, or on an error. */
			progress_all(&p);
			fin.stopped_by = cfg->count && p.sent >= cfg->count ? GEN_STOP_COUNT
									     : GEN_STOP_ERROR;
			break;
		}
		if (cfg->count || !first) {
			progress_all(&p);
			if (!first && p.sent)
				first = p.first_tx_ns;
			if (cfg->count && p.sent >= cfg->count) {
				fin.stopped_by = GEN_STOP_COUNT;
				break;
			}
		}
		end = deadline(cfg, first ? first : start);
		if (now >= end) {
			fin.stopped_by = cfg->count ? GEN_STOP_DEADLINE : GEN_STOP_DURATION;
			break;
		}
		if (now >= tick.mono_ns) {
			uint64_t at = cb_tick_take(&tick, now);

			/* The counts as read now, over the time since the last
			 * line's (the first interval is the shorter one). */
			progress_all(&p);
			gen_print_interval(at, (double)(now - start) / 1e9, &p, &prev,
					   (double)(now - prev_tick) / 1e9);
			prev = p;
			prev_tick = now;
			continue;
		}
		wake = tick.mono_ns < end ? tick.mono_ns : end;
		/* Each wake-up takes the generator's CPU from its sending thread
		 * for a context switch: poll every millisecond only until the
		 * first departure and once the count is due (at the target rate
		 * from the first departure), not all along. */
		if (first && cfg->count && cfg->pps > 0) {
			uint64_t due = first + (uint64_t)((double)cfg->count / cfg->pps * 1e9);

			if (now < due && wake > due)
				wake = due;
			else if (now >= due && wake > now + 1000000)
				wake = now + 1000000;
		} else if ((cfg->count || !first) && wake > now + 1000000) {
			wake = now + 1000000;
		}
		sleep_until(wake);
	}
	{
		int stop_err = close_lanes(plan.n);

		if (!err)
			err = stop_err;
	}
	/* The lanes' sent counts are final: now the trailer frames that carry
	 * them (also after SIGINT: the stream ended there). */
	if (!err && cfg->trailer)
		fin.trailer_sent = gen_send_trailers(&plan, lanes);
	if (err)
		fin.stopped_by = GEN_STOP_ERROR;
	fin.err = err;
	fin.wall_s = (double)(cb_now_ns() - start) / 1e9;
	gen_print_summary(&plan, lanes, &fin);
	for (unsigned int i = 0; i < plan.n; i++)
		plan.engine->close(states[i]);
	gen_plan_free(&plan);
	return err || fin.trailer_sent < 0 ? CB_EXIT_RUNTIME : CB_EXIT_OK;
}
