/* SPDX-License-Identifier: MIT */
/*
 * Backend "afp-v3": one AF_PACKET socket with its own TPACKET_V3 block ring
 * (tpacket_v3.c), the Linux form of szedata2's block aggregation (seed 000).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cap.h"
#include "tpacket_v3.h"

static int afp_v3_open(const struct cap_cfg *cfg, void **state)
{
	struct v3_ring *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	err = v3_ring_open(cfg, r);
	if (err) {
		free(r);
		return err;
	}
	*state = r;
	return 0;
}

static int afp_v3_run(void *state, struct cap_worker *w)
{
	return v3_ring_run(state, w);
}

static void afp_v3_stats(void *state, struct cap_kstats *out)
{
	struct v3_ring *r = state;

	v3_ring_stats(r);
	r->kstats.account[0] = r->kstats.drops;
	*out = r->kstats;
}

static void afp_v3_close(void *state)
{
	v3_ring_close(state);
	free(state);
}

static uint64_t afp_v3_ring_bytes(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len)
{
	uint32_t size, count;
	uint64_t bytes = v3_ring_geometry(cfg, &size, &count);

	*sockets = 1;
	snprintf(what, len, "a ring of %" PRIu32 " blocks of %" PRIu32 " B", count, size);
	return bytes;
}

static const struct cb_opt afp_v3_options[] = {
	V3_RING_OPTIONS,
	CB_OPT_END,
};

static const struct cap_ring_map afp_v3_ring = {
	.count_option = "--block-count", .unit_bytes = V3_DEFAULT_BLOCK_SIZE,
	.unit_option = "--block-size",
};

/* Its loss account (account.h); row 0 is filled in afp_v3_stats(). */
static const struct cap_account_row afp_v3_account[] = {
	{ "socket", "PACKET_STATISTICS tp_drops",
	  "every block of the ring was still the reader's (the ring froze, tp_freeze_q_cnt counts how often): "
	  "the kernel dropped the packet; --block-count x --block-size (capbench --ring) and the reader's "
	  "speed govern it" },
	{ .layer = NULL }, /* the end */
};

const struct cap_backend cap_backend_afp_v3 = {
	.name = "afp-v3",
	.describe = "AF_PACKET with its own TPACKET_V3 block ring",
	.seed = "szedata2's block aggregation (seed 000): the kernel hands over whole blocks of packets",
	.options = afp_v3_options,
	.caps = { .queue_count = 1, .kernel_stats = "packet_statistics", .clock = CAP_CLOCK_KERNEL,
		  .filter = CAP_FILTER_SOCKET,
		  .needs = { "packet_socket", "tpacket_v3" } },
	.ring = &afp_v3_ring,
	.account = afp_v3_account,
	.open = afp_v3_open,
	.run = afp_v3_run,
	.stats = afp_v3_stats,
	.close = afp_v3_close,
	.ring_bytes = afp_v3_ring_bytes,
	.ring_options = "use fewer or smaller blocks (--block-count, --block-size)",
};
