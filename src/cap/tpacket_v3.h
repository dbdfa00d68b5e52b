/* SPDX-License-Identifier: MIT */
/*
 * One AF_PACKET socket with its own TPACKET_V3 block ring: set-up, the
 * batched read loop and statistics. Used by the afp-v3 backend (one ring)
 * and the fanout backend (one ring per worker).
 */
#ifndef CAPBENCH_TPACKET_V3_H
#define CAPBENCH_TPACKET_V3_H

#include <linux/if_packet.h>
#include <stddef.h>
#include <stdint.h>

#include "cap.h"

struct v3_ring {
	int fd;
	uint8_t *ring;
	size_t ring_len;
	struct tpacket_req3 req;
	struct cap_kstats kstats; /* running totals; touched by the main thread only */
};

/* The ring cfg asks for (the defaults if 0): blocks and block size, and
 * its bytes. */
uint64_t v3_ring_geometry(const struct cap_cfg *cfg, uint32_t *block_size, uint32_t *block_count);
/* Open the socket, map a ring of cfg->block_size x cfg->block_count (the
 * defaults if 0) and bind it to cfg->iface. Prints one error line; returns
 * 0 or -errno. */
int v3_ring_open(const struct cap_cfg *cfg, struct v3_ring *r);
/* The read loop (worker thread): every block the kernel hands over, until
 * *w->stop, then the blocks still queued. Returns 0 or -errno. */
int v3_ring_run(struct v3_ring *r, struct cap_worker *w);
/* Add what PACKET_STATISTICS counted since the last call to r->kstats. */
void v3_ring_stats(struct v3_ring *r);
void v3_ring_close(struct v3_ring *r);

#endif
