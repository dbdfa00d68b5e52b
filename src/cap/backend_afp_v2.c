/* SPDX-License-Identifier: MIT */
/*
 * Backend "afp-v2": an AF_PACKET socket with a TPACKET_V2 ring of fixed-size
 * frames, one packet per frame: PF_RING's ring buffer (seed 000) as Linux
 * offers it without a module.
 *
 * Hand-over is per frame, through its tp_status word: the kernel copies a
 * packet into the frame at its head, then (after a write barrier) sets
 * TP_STATUS_USER; the reader owns the frame until it writes TP_STATUS_KERNEL
 * back. The reader walks the ring in the same order as the kernel, so it
 * reads every frame that says TP_STATUS_USER without a system call; when
 * the next frame is still the kernel's (the ring is empty) it waits for a
 * batch to gather (cap_batch_wait) and then, if the ring is still empty,
 * blocks in poll(). If the frame at the kernel's head is still the reader's, the ring
 * is full: the kernel drops the packet and counts it in tp_drops.
 *
 * Frames do not span blocks: the ring is tp_block_nr blocks of
 * tp_block_size bytes, each holding block_size / frame_size frames, and the
 * kernel requires tp_frame_nr to be exactly that many frames.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cap.h"
#include "packet_stats.h"
#include "pktsock.h"

#define DEFAULT_FRAME_SIZE  2048u  /* holds a 1518 B frame and the 66 B in front of it */
#define DEFAULT_FRAME_COUNT 4096u  /* an 8 MiB ring */
#define PUBLISH_EVERY       256    /* publish the counts at least every so many frames */
#define POLL_MS             100    /* how often a quiet reader looks at the stop flag */

struct afp_v2 {
	int fd;
	uint8_t *ring;
	size_t ring_len;
	struct tpacket_req req;
	unsigned int frames_per_block;
	struct cap_kstats kstats; /* touched by the main thread only */
};

/* The ring cfg asks for: the smallest power-of-two block that holds a frame
 * (the kernel allocates blocks in page orders), and whole blocks of frames.
 * Returns its bytes. */
static uint64_t v2_geometry(const struct cap_cfg *cfg, struct tpacket_req *req)
{
	unsigned int frame_size = (unsigned int)(cfg->frame_size ? cfg->frame_size : DEFAULT_FRAME_SIZE);
	uint64_t frames = cfg->frame_count ? cfg->frame_count : DEFAULT_FRAME_COUNT;
	uint64_t block_size = (uint64_t)sysconf(_SC_PAGESIZE), per_block;

	while (block_size < frame_size)
		block_size *= 2;
	per_block = block_size / frame_size;
	frames = (frames + per_block - 1) / per_block * per_block;
	req->tp_block_size = (unsigned int)block_size;
	req->tp_block_nr = (unsigned int)(frames / per_block);
	req->tp_frame_size = frame_size;
	req->tp_frame_nr = (unsigned int)frames;
	return block_size * req->tp_block_nr;
}

static int afp_v2_open(const struct cap_cfg *cfg, void **state)
{
	struct afp_v2 *st = calloc(1, sizeof(*st));
	char geometry[96];
	void *ring;
	int err;

	if (!st)
		return -ENOMEM;
	st->ring_len = (size_t)v2_geometry(cfg, &st->req);
	st->frames_per_block = st->req.tp_block_size / st->req.tp_frame_size;

	snprintf(geometry, sizeof(geometry), "%u frames of %u B (%u blocks of %u B)",
		 st->req.tp_frame_nr, st->req.tp_frame_size, st->req.tp_block_nr, st->req.tp_block_size);
	err = pktsock_open_ring(cfg, TPACKET_V2, &st->req, sizeof(st->req), st->ring_len, geometry,
				"use fewer or smaller frames (--frame-count, --frame-size)", &st->fd,
				&ring);
	if (err) {
		free(st);
		return err;
	}
	st->ring = ring;
	*state = st;
	return 0;
}

static inline struct tpacket2_hdr *frame(struct afp_v2 *st, unsigned int i)
{
	return (struct tpacket2_hdr *)(st->ring + (size_t)(i / st->frames_per_block) * st->req.tp_block_size +
				       (size_t)(i % st->frames_per_block) * st->req.tp_frame_size);
}

static int afp_v2_run(void *state, struct cap_worker *w)
{
	struct afp_v2 *st = state;
	struct pollfd pfd = { .fd = st->fd, .events = POLLIN | POLLERR };
	unsigned int cur = 0, unpublished = 0;
	int waited = 0;

	for (;;) {
		struct tpacket2_hdr *h = frame(st, cur);
		int reached;

		/* Acquire: the frame's contents are visible once we see its status. */
		if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
			/* The ring is empty: a batch ends here. */
			if (unpublished) {
				cap_publish(w);
				unpublished = 0;
			}
			/* Frames are handed over as soon as they are written, so
			 * after a stop an empty ring is a drained ring. */
			if (cap_should_stop(w))
				return 0;
			if (!waited) {
				cap_batch_wait();
				waited = 1;
			} else if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR) {
				return -errno;
			}
			continue;
		}
		waited = 0;
		/* Stopped and the drain's budget spent (cap.h): the frames
		 * still in the ring are counted in tp_packets, not read. */
		if (!cap_drain_may_read(w)) {
			cap_publish(w);
			return 0;
		}
		/* tp_sec/tp_nsec: the kernel's receive time, CLOCK_REALTIME. */
		reached = cap_packet(w, (uint8_t *)h + h->tp_mac, h->tp_snaplen, h->tp_len,
				     cap_rx_mono_ns(w->cfg->rx_clock_offset_ns, h->tp_sec, h->tp_nsec));
		/* Release: we are done reading before the kernel may refill it. */
		__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		cur = cur + 1 == st->req.tp_frame_nr ? 0 : cur + 1;
		if (reached) {
			cap_publish(w);
			return 0;
		}
		if (++unpublished == PUBLISH_EVERY) {
			cap_publish(w);
			unpublished = 0;
		}
	}
}

static void afp_v2_stats(void *state, struct cap_kstats *out)
{
	struct afp_v2 *st = state;

	/* TPACKET_V2 answers with struct tpacket_stats (no freeze count); the
	 * kernel zeroes it on every read, so we keep the 64-bit sums. */
	packet_stats_accumulate(st->fd, 0, &st->kstats);
	st->kstats.account[0] = st->kstats.drops;
	*out = st->kstats;
}

static void afp_v2_close(void *state)
{
	struct afp_v2 *st = state;

	munmap(st->ring, st->ring_len);
	close(st->fd);
	free(st);
}

static uint64_t afp_v2_ring_bytes(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len)
{
	struct tpacket_req req;
	uint64_t bytes = v2_geometry(cfg, &req);

	*sockets = 1;
	snprintf(what, len, "a ring of %u frames of %u B", req.tp_frame_nr, req.tp_frame_size);
	return bytes;
}

static int frame_size_invalid(uint64_t v)
{
	return v % 16 != 0; /* TPACKET_ALIGNMENT */
}

static const struct cb_opt afp_v2_options[] = {
	{ .name = "frame-size", .type = CB_OPT_BYTES, .arg = "BYTES", .min = 128, .max = 65536,
	  .has_default = 1, .def = DEFAULT_FRAME_SIZE,
	  .help = "ring frame size, a multiple of 16 from 128 (the stamp must fit) to 64k",
	  .valid = frame_size_invalid,
	  .fix = "give a multiple of 16 from 128 B (a frame must hold the kernel's header and the "
		 "stamp) up to 64k", CB_OPT_AT(struct cap_cfg, frame_size) },
	{ .name = "frame-count", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = 1u << 22,
	  .has_default = 1, .def = DEFAULT_FRAME_COUNT,
	  .help = "frames in the ring, rounded up to whole blocks", .what = "frames",
	  .fix = "give 1..4194304", .tunable = 1, .tune_min = 1024, .tune_max = 65536,
	  CB_OPT_AT(struct cap_cfg, frame_count) },
	CB_OPT_END,
};

static const struct cap_ring_map afp_v2_ring = {
	.count_option = "--frame-count", .unit_bytes = DEFAULT_FRAME_SIZE,
};

/* Its loss account (account.h); row 0 is filled in afp_v2_stats(). */
static const struct cap_account_row afp_v2_account[] = {
	{ "socket", "PACKET_STATISTICS tp_drops",
	  "the frame at the ring's head was still the reader's (the ring was full): the kernel dropped the "
	  "packet; --frame-count frames (capbench --ring) and the reader's speed govern it" },
	{ .layer = NULL }, /* the end */
};

const struct cap_backend cap_backend_afp_v2 = {
	.name = "afp-v2",
	.describe = "AF_PACKET with its own TPACKET_V2 frame ring",
	.seed = "PF_RING's ring buffer (seed 000): one packet per fixed-size frame, no system call per packet",
	.options = afp_v2_options,
	.caps = { .queue_count = 1, .kernel_stats = "packet_statistics", .clock = CAP_CLOCK_KERNEL,
		  .filter = CAP_FILTER_SOCKET,
		  .needs = { "packet_socket", "tpacket_v2" } },
	.ring = &afp_v2_ring,
	.account = afp_v2_account,
	.open = afp_v2_open,
	.run = afp_v2_run,
	.stats = afp_v2_stats,
	.close = afp_v2_close,
	.ring_bytes = afp_v2_ring_bytes,
	.ring_options = "use fewer or smaller frames (--frame-count, --frame-size)",
};
