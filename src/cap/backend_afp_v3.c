/* SPDX-License-Identifier: MIT */
/*
 * Backend "afp-v3": an AF_PACKET socket with its own TPACKET_V3 block ring,
 * the Linux form of szedata2's block aggregation (seed 000): the kernel
 * fills fixed-size blocks with many packets and hands over a whole block at
 * a time, so the reader makes no system call per packet.
 *
 * A block belongs to user space while its block_status has TP_STATUS_USER;
 * giving it back means writing TP_STATUS_KERNEL. The kernel retires
 * (hands over) a block when it is full or when the retire timeout expires
 * with packets in it, so --block-timeout bounds the delay of a quiet link.
 * When no block is free, the kernel drops the packet and counts it in
 * tp_drops (and freezes the queue: tp_freeze_q_cnt).
 */
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cap.h"
#include "packet_stats.h"

#define DEFAULT_BLOCK_SIZE  (1u << 20)
#define DEFAULT_BLOCK_COUNT 32u
#define DEFAULT_TIMEOUT_MS  10u
#define FRAME_SIZE          2048u  /* tp_frame_size: only a bound for V3 */
#define POLL_MS             100    /* how often a quiet reader looks at the stop flag */

struct afp_v3 {
	int fd;
	uint8_t *ring;
	size_t ring_len;
	struct tpacket_req3 req;
	struct cap_kstats kstats; /* touched by the main thread only */
};

static int afp_v3_open(const struct cap_cfg *cfg, void **state)
{
	struct afp_v3 *st = calloc(1, sizeof(*st));
	int version = TPACKET_V3, err;
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = cfg->ifindex,
	};

	if (!st)
		return -ENOMEM;
	st->req.tp_block_size = (unsigned int)(cfg->block_size ? cfg->block_size : DEFAULT_BLOCK_SIZE);
	st->req.tp_block_nr = (unsigned int)(cfg->block_count ? cfg->block_count : DEFAULT_BLOCK_COUNT);
	st->req.tp_frame_size = FRAME_SIZE;
	st->req.tp_frame_nr = st->req.tp_block_size / FRAME_SIZE * st->req.tp_block_nr;
	st->req.tp_retire_blk_tov = cfg->block_timeout_ms ? cfg->block_timeout_ms : DEFAULT_TIMEOUT_MS;
	st->req.tp_feature_req_word = 0;

	/* Protocol 0 until the ring is ready: such a socket receives nothing,
	 * so no packet of another interface slips in before bind(). */
	st->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (st->fd < 0) {
		err = -errno;
		fprintf(stderr, "capbench-cap: cannot open an AF_PACKET socket (%s): run as root\n",
			strerror(errno));
		goto err_free;
	}
	if (setsockopt(st->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0) {
		err = -errno;
		fprintf(stderr, "capbench-cap: this kernel has no TPACKET_V3 (%s): use --backend pcap\n",
			strerror(errno));
		goto err_close;
	}
	if (setsockopt(st->fd, SOL_PACKET, PACKET_RX_RING, &st->req, sizeof(st->req)) < 0) {
		err = -EINVAL;
		fprintf(stderr, "capbench-cap: the kernel refuses a ring of %u blocks of %u B (%s): "
			"use a --block-size that is a power of two multiple of the page size, "
			"and fewer or smaller blocks\n", st->req.tp_block_nr, st->req.tp_block_size,
			strerror(errno));
		goto err_close;
	}
	st->ring_len = (size_t)st->req.tp_block_size * st->req.tp_block_nr;
	st->ring = mmap(NULL, st->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			st->fd, 0);
	if (st->ring == MAP_FAILED) {
		err = -errno;
		fprintf(stderr, "capbench-cap: cannot map the ring: %s\n", strerror(errno));
		goto err_close;
	}
	if (bind(st->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		err = -errno;
		fprintf(stderr, "capbench-cap: cannot bind to %s: %s\n", cfg->iface, strerror(errno));
		goto err_unmap;
	}
	if (cfg->promisc) {
		struct packet_mreq mr = { .mr_ifindex = cfg->ifindex, .mr_type = PACKET_MR_PROMISC };

		if (setsockopt(st->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
			err = -errno;
			fprintf(stderr, "capbench-cap: cannot make %s promiscuous: %s\n", cfg->iface,
				strerror(errno));
			goto err_unmap;
		}
	}
	*state = st;
	return 0;

err_unmap:
	munmap(st->ring, st->ring_len);
err_close:
	close(st->fd);
err_free:
	free(st);
	return err;
}

static inline struct tpacket_block_desc *block(struct afp_v3 *st, unsigned int i)
{
	return (struct tpacket_block_desc *)(st->ring + (size_t)i * st->req.tp_block_size);
}

/* Count every packet of a block we own; returns nonzero if --count was reached. */
static int read_block(struct cap_worker *w, struct tpacket_block_desc *bd)
{
	struct tpacket3_hdr *ph = (struct tpacket3_hdr *)((uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt);
	uint32_t n = bd->hdr.bh1.num_pkts;
	int reached = 0;

	for (uint32_t i = 0; i < n; i++) {
		reached |= cap_packet(w, (uint8_t *)ph + ph->tp_mac, ph->tp_snaplen, ph->tp_len);
		ph = (struct tpacket3_hdr *)((uint8_t *)ph + ph->tp_next_offset);
	}
	return reached;
}

static int afp_v3_run(void *state, struct cap_worker *w)
{
	struct afp_v3 *st = state;
	struct pollfd pfd = { .fd = st->fd, .events = POLLIN | POLLERR };
	unsigned int cur = 0;
	int last_look = 0;

	for (;;) {
		struct tpacket_block_desc *bd = block(st, cur);

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
				wait_ms = (int)st->req.tp_retire_blk_tov + 5;
			}
			if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (read_block(w, bd)) {
			__atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
			cap_publish(w);
			return 0;
		}
		/* Release: we are done reading before the kernel may refill it. */
		__atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		cap_publish(w);
		cur = (cur + 1) % st->req.tp_block_nr;
	}
}

static void afp_v3_stats(void *state, struct cap_kstats *out)
{
	struct afp_v3 *st = state;

	packet_stats_accumulate(st->fd, 1, &st->kstats);
	*out = st->kstats;
}

static void afp_v3_close(void *state)
{
	struct afp_v3 *st = state;

	munmap(st->ring, st->ring_len);
	close(st->fd);
	free(st);
}

const struct cap_backend cap_backend_afp_v3 = {
	.name = "afp-v3",
	.describe = "AF_PACKET with a TPACKET_V3 block ring (szedata2's block aggregation)",
	.open = afp_v3_open,
	.run = afp_v3_run,
	.stats = afp_v3_stats,
	.close = afp_v3_close,
};
