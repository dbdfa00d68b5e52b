/* SPDX-License-Identifier: MIT */
/*
 * The TPACKET_V3 block ring, the Linux form of szedata2's block aggregation
 * (seed 000): the kernel fills fixed-size blocks with many packets and hands
 * over a whole block at a time, so the reader makes no system call per
 * packet.
 *
 * A block belongs to user space while its block_status has TP_STATUS_USER;
 * giving it back means writing TP_STATUS_KERNEL. The kernel retires
 * (hands over) a block when it is full or when the retire timeout expires
 * with packets in it, so --block-timeout bounds the delay of a quiet link.
 * When no block is free, the kernel drops the packet and counts it in
 * tp_drops (and freezes the queue: tp_freeze_q_cnt).
 */
#include "tpacket_v3.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "packet_stats.h"
#include "pktsock.h"

#define FRAME_SIZE          2048u  /* tp_frame_size: only a bound for V3 */
#define POLL_MS             100    /* how often a quiet reader looks at the stop flag */

int v3_block_size_invalid(uint64_t v)
{
	/* packet_set_ring() reads tp_block_size as an int and refuses one <= 0,
	 * so 2G (1 << 31) is out: the largest power of two it takes is 1G (the
	 * row's maximum). */
	return v < (uint64_t)sysconf(_SC_PAGESIZE) || cb_opt_not_power_of_two(v);
}

void v3_block_size_fix(char *buf, size_t len)
{
	snprintf(buf, len, "give a power of two from %ld B (the page size) up to 1G, e.g. 64k or 1M",
		 sysconf(_SC_PAGESIZE));
}

uint64_t v3_ring_geometry(const struct cap_cfg *cfg, uint32_t *block_size, uint32_t *block_count)
{
	*block_size = (uint32_t)(cfg->block_size ? cfg->block_size : V3_DEFAULT_BLOCK_SIZE);
	*block_count = (uint32_t)(cfg->block_count ? cfg->block_count : V3_DEFAULT_BLOCK_COUNT);
	return (uint64_t)*block_size * *block_count;
}

int v3_ring_open(const struct cap_cfg *cfg, struct v3_ring *r)
{
	char geometry[64];
	void *ring;
	int err;

	memset(r, 0, sizeof(*r));
	v3_ring_geometry(cfg, &r->req.tp_block_size, &r->req.tp_block_nr);
	r->req.tp_frame_size = FRAME_SIZE;
	r->req.tp_frame_nr = r->req.tp_block_size / FRAME_SIZE * r->req.tp_block_nr;
	r->req.tp_retire_blk_tov = cfg->block_timeout_ms ? cfg->block_timeout_ms : V3_DEFAULT_TIMEOUT_MS;
	r->req.tp_feature_req_word = 0;
	r->ring_len = (size_t)r->req.tp_block_size * r->req.tp_block_nr;

	snprintf(geometry, sizeof(geometry), "%u blocks of %u B", r->req.tp_block_nr,
		 r->req.tp_block_size);
	err = pktsock_open_ring(cfg, TPACKET_V3, &r->req, sizeof(r->req), r->ring_len, geometry,
				"use a --block-size that is a power of two multiple of the page size, "
				"and fewer or smaller blocks", &r->fd, &ring);
	if (err)
		return err;
	r->ring = ring;
	return 0;
}

static inline struct tpacket_block_desc *block(struct v3_ring *r, unsigned int i)
{
	return (struct tpacket_block_desc *)(r->ring + (size_t)i * r->req.tp_block_size);
}

/* Count the packets of a block we own. Returns 1 if --count was reached,
 * -1 if the stop's drain budget ended the block part-way (cap.h), else 0. */
static int read_block(struct cap_worker *w, struct tpacket_block_desc *bd)
{
	struct tpacket3_hdr *ph = (struct tpacket3_hdr *)((uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt);
	uint32_t n = bd->hdr.bh1.num_pkts;
	int reached = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!cap_drain_may_read(w))
			return -1;
		/* tp_sec/tp_nsec: the kernel's receive time, CLOCK_REALTIME. */
		reached |= cap_packet(w, (uint8_t *)ph + ph->tp_mac, ph->tp_snaplen, ph->tp_len,
				      cap_rx_mono_ns(w->cfg->rx_clock_offset_ns, ph->tp_sec, ph->tp_nsec));
		ph = (struct tpacket3_hdr *)((uint8_t *)ph + ph->tp_next_offset);
	}
	return reached;
}

int v3_ring_run(struct v3_ring *r, struct cap_worker *w)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN | POLLERR };
	unsigned int cur = 0;
	int last_look = 0, end;

	for (;;) {
		struct tpacket_block_desc *bd = block(r, cur);

		/* Acquire: the block's contents are visible once we see its status. */
		if (!(__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
			int wait_ms = POLL_MS;

			/* Nothing ready. Once asked to stop, wait one retire timeout
			 * more, so a partly filled block is handed over and read;
			 * after that the ring is drained. */
			if (cap_should_stop(w)) {
				if (last_look)
					return 0;
				last_look = 1;
				wait_ms = (int)r->req.tp_retire_blk_tov + 5;
			}
			if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		end = read_block(w, bd);
		/* Release: we are done reading before the kernel may refill it.
		 * A block the drain budget cut is given back too: its unread
		 * frames stay counted in tp_packets (queued, not read). */
		__atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		cap_publish(w);
		if (end)
			return 0;
		cur = (cur + 1) % r->req.tp_block_nr;
	}
}

void v3_ring_stats(struct v3_ring *r)
{
	packet_stats_accumulate(r->fd, 1, &r->kstats);
}

void v3_ring_close(struct v3_ring *r)
{
	munmap(r->ring, r->ring_len);
	close(r->fd);
}
