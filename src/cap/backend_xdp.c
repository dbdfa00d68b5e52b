/* SPDX-License-Identifier: MIT */
/*
 * Backend "xdp": the ceiling. Not a capture: an XDP program
 * (src/bpf/xdp_ceiling.bpf.c) counts every frame in the driver and drops
 * it, before any sk_buff exists. What it counts is what reaches the host;
 * no capture method can receive more (the seeds' "physical limit").
 *
 * The counting happens in the kernel, per CPU. The "read loop" only reads
 * the program's counters every READ_MS and publishes them, so --count,
 * --duration and the interval lines work as for the other backends.
 *
 * Sequence numbers: the program keeps, per stream, the number of capbench
 * frames and the highest sequence number seen, so the summary's "lost"
 * (numbers below the highest never seen) is exact as long as no frame
 * arrives twice. Duplicates and reordering it cannot tell: the summary
 * leaves those fields out rather than print zeros it did not measure.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_log.h"
#include "cap.h"
#include "util.h"
#include "xdp_common.h"
#include "xdp_ceiling.skel.h"
#include "xdp_prog.h"

#define READ_MS 20

struct xdp_be {
	struct xdp_ceiling_bpf *skel;
	struct cap_xdp_hook hook;
	struct cap_kstats kstats; /* touched by the main thread only */
};

static int xdp_open(const struct cap_cfg *cfg, void **state)
{
	struct xdp_be *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	err = cap_xdp_hook_init(cfg, &st->hook);
	if (err)
		goto err_free;
	cb_libbpf_quiet();
	st->skel = xdp_ceiling_bpf__open_and_load();
	if (!st->skel) {
		err = cap_bpf_load_failed(-errno, "the XDP ceiling program");
		goto err_promisc;
	}
	err = cap_xdp_hook_attach(cfg, &st->hook, bpf_program__fd(st->skel->progs.cb_ceiling));
	if (err)
		goto err_skel;
	*state = st;
	return 0;

err_skel:
	xdp_ceiling_bpf__destroy(st->skel);
err_promisc:
	cap_xdp_hook_release(&st->hook);
err_free:
	free(st);
	return err;
}

static int xdp_run(void *state, struct cap_worker *w)
{
	struct xdp_be *st = state;
	int fd = bpf_map__fd(st->skel->maps.counts);

	for (;;) {
		struct cb_xdp_counts c;
		int stop = cap_should_stop(w), err;

		/* Read after seeing the stop flag, so the last read is final. */
		if ((err = cb_xdp_read_counts(fd, &c)))
			return err;
		w->packets = c.packets;
		w->bytes = c.bytes;
		w->received = c.capbench;
		w->foreign = c.packets - c.capbench - c.trailer;
		w->trailers = c.trailer;
		cap_publish(w);
		if (stop || (w->cfg->count && w->packets >= w->cfg->count))
			return 0;
		poll(NULL, 0, READ_MS);
	}
}

static void xdp_stats(void *state, struct cap_kstats *out)
{
	struct xdp_be *st = state;
	struct cap_kstats *k = &st->kstats;

	cap_xdp_kstats(bpf_map__fd(st->skel->maps.counts), k);
	k->packets = k->xdp_packets; /* every frame is dropped on purpose: no drops */
	*out = *k;
}

static void xdp_summary(void *state, struct cb_json *j)
{
	struct xdp_be *st = state;
	int fd = bpf_map__fd(st->skel->maps.streams);
	uint64_t lost = 0, max_seq = 0, streams = 0;

	for (uint32_t key = 0; key < CB_XDP_STREAMS; key++) {
		uint64_t v[2]; /* struct cb_xdp_stream: frames (summed), next (highest) */

		if (cb_xdp_percpu_fold(fd, key, v, sizeof(v), 1ull << 1) || !v[0])
			continue;
		streams++;
		lost += v[1] > v[0] ? v[1] - v[0] : 0;
		if (v[1] - 1 > max_seq)
			max_seq = v[1] - 1;
	}
	cb_json_str(j, "xdp_mode", st->hook.mode);
	cb_json_str(j, "seq_tracking", "kernel: frames and highest number per stream; "
		    "duplicates and reordering not tracked");
	cb_json_u64(j, "lost", lost);
	cb_json_u64(j, "max_seq", max_seq);
	cb_json_u64(j, "streams", streams);
}

static void xdp_close(void *state)
{
	struct xdp_be *st = state;

	cap_xdp_hook_release(&st->hook); /* detaches the program */
	xdp_ceiling_bpf__destroy(st->skel);
	free(st);
}

/* Its loss account (account.h): none. The program drops every frame on
 * purpose after counting it; what it never saw is the test bed's layers. */
static const struct cap_account_row xdp_account[] = {
	{ NULL, NULL, NULL },
};

const struct cap_backend cap_backend_xdp = {
	.name = "xdp",
	.describe = "count and drop in XDP: the ceiling, not a capture",
	.seed = "the seeds' physical limit: what reaches the host, counted before any sk_buff exists",
	.caps = { .own_xdp = 1, .kernel_counter = 1, .kernel_stats = "xdp_program",
		  .clock = CAP_CLOCK_KERNEL, .needs = { "xdp_link" } },
	.account = xdp_account,
	.open = xdp_open,
	.run = xdp_run,
	.stats = xdp_stats,
	.summary = xdp_summary,
	.close = xdp_close,
};
