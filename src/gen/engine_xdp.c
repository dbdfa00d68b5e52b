/* SPDX-License-Identifier: MIT */
/*
 * Engine "xdp": BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES (Linux >= 5.18).
 * The kernel runs gen.bpf.c in a loop over recycled page-pool frames and
 * transmits every frame the program redirects; pacing, stamping and the
 * sent count all happen in the program (see gen.bpf.c).
 *
 * One call runs for the whole trial. The kernel's test loop returns -EINTR
 * as soon as the calling thread has a signal pending, so stop() sends
 * SIGUSR1 to the sending thread until it has left the call.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "gen.h"
#include "gen.skel.h"
#include "bpf_log.h"
#include "live_probe.h"
#include "util.h"

#define XDP_BATCH 64 /* frames per kernel loop batch (NAPI_POLL_WEIGHT) */

struct xdp_state {
	struct gen_bpf *skel;
	uint8_t frame[CB_FRAME_MAX];
	int frame_len;
	int cpu;
	pthread_t thread;
	int running;
	int stop;       /* atomic */
	int done;       /* atomic */
	int err;
};

/* Ask the kernel once per process, before the first lane loads its program,
 * whether it runs XDP programs on live frames (live_probe.h). */
static int probe_once(const uint8_t *frame, int len)
{
	static int probed;

	if (probed)
		return 0;
	probed = 1;
	return gen_probe_live_frames(frame, (uint32_t)len);
}

/* --check --probe: the live-frames probe on the frame the lanes would send. */
static int xdp_probe(const struct gen_cfg *cfg)
{
	uint8_t frame[CB_FRAME_MAX];
	int len;

	cb_libbpf_quiet();
	len = cb_frame_build(&cfg->spec, frame, sizeof(frame));
	return len < 0 ? len : gen_probe_live_frames(frame, (uint32_t)len);
}

static int xdp_open(const struct gen_cfg *cfg, void **state)
{
	struct xdp_state *st = calloc(1, sizeof(*st));
	unsigned int lanes = cfg->lanes ? cfg->lanes : 1; /* threads sharing the link */
	int err;

	if (!st)
		return -ENOMEM;
	cb_libbpf_quiet();
	st->cpu = cfg->cpu;
	st->frame_len = cb_frame_build(&cfg->spec, st->frame, sizeof(st->frame));
	if (st->frame_len < 0) {
		err = st->frame_len;
		goto err_free;
	}
	err = probe_once(st->frame, st->frame_len);
	if (err)
		goto err_free;
	st->skel = gen_bpf__open();
	if (!st->skel) {
		err = -errno;
		fprintf(stderr, "capbench-gen: cannot open the generator's BPF object: %s\n",
			strerror(-err));
		goto err_free;
	}
	st->skel->rodata->tx_ifindex = (uint32_t)cfg->ifindex;
	st->skel->rodata->pace_cfg = cfg->pace;
	st->skel->rodata->buf_len = (uint32_t)st->frame_len;
	st->skel->rodata->paced = (uint8_t)cfg->sched.paced;
	st->skel->rodata->vary_len = cfg->sched.min_len != cfg->sched.max_len;
	st->skel->rodata->count_limit = cfg->count;
	st->skel->rodata->wire_lanes = lanes;
	st->skel->rodata->catchup_ns = gen_catchup_ns(cfg);
	err = bpf_map__set_max_entries(st->skel->maps.schedule, cfg->sched.n);
	if (!err)
		err = gen_bpf__load(st->skel);
	/* Out of memory (the schedule map) is a failure; otherwise the fix is
	 * the user's: privileges, a kernel with BTF, or the other engine. */
	if (err == -ENOMEM) {
		fprintf(stderr, "capbench-gen: cannot load the generator's BPF program: %s\n",
			strerror(-err));
		goto err_destroy;
	}
	if (err) {
		cb_user_fault(err, "cannot load the generator's BPF program (%s): run as root on a "
			      "kernel with BPF and BTF, or use --engine afpacket", strerror(-err));
		goto err_destroy;
	}
	err = gen_fill_schedule(bpf_map__fd(st->skel->maps.schedule), &cfg->sched);
	if (err) {
		fprintf(stderr, "capbench-gen: cannot fill the schedule map: %s\n", strerror(-err));
		goto err_destroy;
	}
	*state = st;
	return 0;

err_destroy:
	gen_bpf__destroy(st->skel);
err_free:
	free(st);
	return err;
}

static void on_sigusr1(int sig) { (void)sig; }

static void *xdp_thread(void *arg)
{
	struct xdp_state *st = arg;
	int prog_fd = bpf_program__fd(st->skel->progs.cb_gen);
	sigset_t set;

	/* BPF_PROG_RUN runs the program on the calling thread's CPU. */
	if (st->cpu >= 0)
		cb_pin_cpu(st->cpu);

	/* SIGINT/SIGTERM belong to the main thread; this one only takes the
	 * SIGUSR1 that ends the kernel loop. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		LIBBPF_OPTS(bpf_test_run_opts, opts,
			.data_in = st->frame,
			.data_size_in = (uint32_t)st->frame_len,
			.repeat = UINT32_MAX, /* counts spins too: ~7 min at most, then we call again */
			.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
			.batch_size = XDP_BATCH);
		int err = bpf_prog_test_run_opts(prog_fd, &opts);
		const char *refusal;

		if (err == -EINTR || !err)
			continue;
		/* xdp_open()'s probe normally finds a kernel without live
		 * frames; this is the same line should it get here anyway. */
		refusal = gen_live_frames_refusal(err);
		if (refusal)
			fprintf(stderr, "capbench-gen: %s\n", refusal);
		else
			fprintf(stderr, "capbench-gen: BPF_PROG_RUN failed: %s\n", strerror(-err));
		st->err = err;
		break;
	}
	__atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int xdp_start(void *state)
{
	struct xdp_state *st = state;
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	int err;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	err = pthread_create(&st->thread, NULL, xdp_thread, st);
	if (err)
		return -err;
	st->running = 1;
	return 0;
}

static void xdp_progress(void *state, struct gen_progress *p)
{
	struct xdp_state *st = state;
	struct gen_bpf__bss *b = st->skel->bss;

	GEN_PROGRESS_FROM_BSS(p, b);
}

static int xdp_finished(void *state)
{
	return __atomic_load_n(&((struct xdp_state *)state)->done, __ATOMIC_ACQUIRE);
}

static int xdp_stop(void *state)
{
	struct xdp_state *st = state;
	struct timespec pause = { 0, 2 * 1000 * 1000 };

	if (!st->running)
		return 0;
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	/* A signal that lands just before the thread enters the kernel loop
	 * would be missed, so repeat it until the thread is out. */
	while (!__atomic_load_n(&st->done, __ATOMIC_ACQUIRE)) {
		pthread_kill(st->thread, SIGUSR1);
		nanosleep(&pause, NULL);
	}
	pthread_join(st->thread, NULL);
	st->running = 0;
	return st->err;
}

static void xdp_close(void *state)
{
	struct xdp_state *st = state;

	xdp_stop(st);
	gen_bpf__destroy(st->skel);
	free(st);
}

static const struct cb_opt xdp_options[] = {
	CB_OPT_END,
};

const struct gen_engine gen_engine_xdp = {
	.name = "xdp",
	.describe = "BPF_PROG_RUN live frames, paced in the BPF program (fastest; Linux >= 5.18)",
	.seed = "line rate on any Linux box: the kernel runs the sender in a loop over recycled frames",
	.options = xdp_options,
	.caps = { .pacing = "kernel", .refusals = "lost", .sends_from = "thread", .needs = { "live_frames" } },
	.probe = xdp_probe,
	.open = xdp_open,
	.start = xdp_start,
	.progress = xdp_progress,
	.finished = xdp_finished,
	.stop = xdp_stop,
	.close = xdp_close,
};
