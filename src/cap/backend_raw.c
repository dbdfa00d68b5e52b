/* SPDX-License-Identifier: MIT */
/*
 * Backend "raw": an AF_PACKET SOCK_RAW socket without a ring, the plain
 * stack with one copy per packet. The kernel queues each packet's skb on the
 * socket's receive queue; recvmmsg() copies up to --batch of them into our
 * buffers in one system call. The buffers are allocated once, at open.
 *
 * The queue is bounded by the socket's receive buffer (SO_RCVBUF, set with
 * --buffer-size), which the kernel charges with each skb's truesize, not
 * the frame length: a 60 B frame of the xdp generator costs roughly 4 to
 * 7 KiB of it on veth here. A packet that finds the buffer full is dropped and counted in
 * PACKET_STATISTICS' tp_drops.
 *
 * Receive times: with SO_TIMESTAMPNS set, the kernel stamps every skb as it
 * enters the stack (net_enable_timestamp() turns the stamping on for all
 * sockets while one asks) and recvmmsg() returns that time in a control
 * message (SCM_TIMESTAMPNS, CLOCK_REALTIME) per packet: each packet keeps
 * its own time, where a batch's read time would give all of them the same
 * one (an inter-arrival p50 of 0). A packet without the message (none is
 * expected) falls back to the read time and is counted ("read_timed").
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cap.h"
#include "packet_stats.h"
#include "pktsock.h"
#include "util.h"

#define DEFAULT_BATCH   64
#define DEFAULT_RCVBUF  (64u << 20)
#define MIN_BUF_LEN     2048u
#define VLAN_HLEN       4
#define POLL_MS         100  /* how often a quiet reader looks at the stop flag */
#define CTRL_LEN        CMSG_SPACE(sizeof(struct timespec)) /* one SCM_TIMESTAMPNS */

struct raw {
	int fd;
	unsigned int batch;
	size_t buf_len;           /* bytes per packet buffer */
	uint8_t *bufs;            /* batch x buf_len */
	struct iovec *iov;
	struct mmsghdr *msgs;
	uint8_t *ctrl;            /* batch x CTRL_LEN: each message's control buffer */
	uint64_t read_timed;      /* packets without a kernel time (the worker's; read after join) */
	struct cap_kstats kstats; /* touched by the main thread only */
};

static void raw_free(struct raw *st)
{
	free(st->msgs);
	free(st->ctrl);
	free(st->iov);
	free(st->bufs);
	free(st);
}

static int raw_open(const struct cap_cfg *cfg, void **state)
{
	struct raw *st = calloc(1, sizeof(*st));
	int mtu = cb_if_mtu(cfg->iface), rcvbuf, err;

	if (!st)
		return -ENOMEM;
	st->batch = cfg->batch ? cfg->batch : DEFAULT_BATCH;
	/* One frame of the interface's MTU with its Ethernet and a VLAN
	 * header; anything longer (a GRO super-packet) is cut, and its length
	 * on the wire still comes back through MSG_TRUNC. */
	st->buf_len = mtu > 0 ? (size_t)mtu + CB_ETH_HLEN + VLAN_HLEN : 0;
	if (st->buf_len < MIN_BUF_LEN)
		st->buf_len = MIN_BUF_LEN;
	st->buf_len = (st->buf_len + 63) & ~(size_t)63;
	st->bufs = malloc(st->buf_len * st->batch);
	st->iov = calloc(st->batch, sizeof(*st->iov));
	st->msgs = calloc(st->batch, sizeof(*st->msgs));
	st->ctrl = calloc(st->batch, CTRL_LEN);
	if (!st->bufs || !st->iov || !st->msgs || !st->ctrl) {
		raw_free(st);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < st->batch; i++) {
		st->iov[i].iov_base = st->bufs + i * st->buf_len;
		st->iov[i].iov_len = st->buf_len;
		st->msgs[i].msg_hdr.msg_iov = &st->iov[i];
		st->msgs[i].msg_hdr.msg_iovlen = 1;
		st->msgs[i].msg_hdr.msg_control = st->ctrl + i * CTRL_LEN;
	}

	st->fd = pktsock_open(cfg, -1);
	if (st->fd < 0) {
		err = st->fd;
		goto err_free;
	}
	/* The kernel doubles the value for its bookkeeping overhead; halve it
	 * so that SO_RCVBUF reads back as the size asked for. FORCE (root)
	 * goes past net.core.rmem_max. */
	rcvbuf = (int)((cfg->buffer_size ? cfg->buffer_size : DEFAULT_RCVBUF) / 2);
	if (setsockopt(st->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0) {
		err = -errno;
		/* SO_RCVBUFFORCE needs CAP_NET_ADMIN: EPERM is the user's to fix. */
		if (err == -EPERM)
			cb_user_fault(err, "cannot set the socket buffer to %d B (%s): SO_RCVBUFFORCE needs CAP_NET_ADMIN",
				      rcvbuf * 2, strerror(-err));
		else
			fprintf(stderr, "capbench-cap: cannot set the socket buffer to %d B: %s\n",
				rcvbuf * 2, strerror(-err));
		goto err_close;
	}
	if (setsockopt(st->fd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){ 1 }, sizeof(int)) < 0) {
		err = -errno;
		fprintf(stderr, "capbench-cap: cannot ask for receive timestamps (SO_TIMESTAMPNS): %s\n",
			strerror(-err));
		goto err_close;
	}
	err = pktsock_bind(st->fd, cfg);
	if (err)
		goto err_close;
	*state = st;
	return 0;

err_close:
	close(st->fd);
err_free:
	raw_free(st);
	return err;
}

/* The kernel's receive time of message m (CLOCK_MONOTONIC ns), or 0. */
static uint64_t kernel_time(const struct msghdr *m, int64_t offset_ns)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		struct timespec ts;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		memcpy(&ts, CMSG_DATA(c), sizeof(ts));
		return cap_rx_mono_ns(offset_ns, (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec);
	}
	return 0;
}

static int raw_run(void *state, struct cap_worker *w)
{
	struct raw *st = state;
	struct pollfd pfd = { .fd = st->fd, .events = POLLIN };
	int waited = 0;

	for (;;) {
		/* MSG_DONTWAIT: take what is queued, up to a batch, and return;
		 * an empty queue gets a short wait for a batch to gather, then
		 * poll(), so a busy socket costs one system call per batch, not
		 * a wake-up per packet. MSG_TRUNC makes
		 * msg_len the frame's full length even when it was cut. */
		int n, end = 0; /* --count reached, or the drain ended */

		/* The kernel shrinks msg_controllen to what it wrote. */
		for (unsigned int i = 0; i < st->batch; i++)
			st->msgs[i].msg_hdr.msg_controllen = CTRL_LEN;
		n = recvmmsg(st->fd, st->msgs, st->batch, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n > 0) {
			uint64_t now = 0;

			waited = 0;
			for (int i = 0; i < n; i++) {
				uint32_t len = st->msgs[i].msg_len;
				uint64_t t = kernel_time(&st->msgs[i].msg_hdr, w->cfg->rx_clock_offset_ns);

				/* Stopped and the drain's budget spent (cap.h):
				 * the rest of the batch and of the queue was
				 * counted in tp_packets and is not read. */
				if (!cap_drain_may_read(w)) {
					end = 1;
					break;
				}
				if (!t) {
					t = now ? now : (now = cap_now_mono_ns());
					st->read_timed++;
				}
				end |= cap_packet(w, st->iov[i].iov_base,
						      len < st->buf_len ? len : (uint32_t)st->buf_len, len, t);
			}
			cap_publish(w);
			if (end)
				return 0;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		/* The queue is empty: what was sent before the stop is read. */
		if (cap_should_stop(w))
			return 0;
		if (!waited) {
			cap_batch_wait(); /* let a batch gather before blocking */
			waited = 1;
		} else if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR) {
			return -errno;
		}
	}
}

static void raw_stats(void *state, struct cap_kstats *out)
{
	struct raw *st = state;

	/* A socket without a ring answers with struct tpacket_stats; the
	 * kernel zeroes it on every read, so we keep the 64-bit sums. */
	packet_stats_accumulate(st->fd, 0, &st->kstats);
	st->kstats.account[0] = st->kstats.drops;
	*out = st->kstats;
}

static void raw_summary(void *state, struct cb_json *j)
{
	cb_json_u64(j, "read_timed", ((struct raw *)state)->read_timed);
}

/* One socket whose receive buffer is charged as frames wait in it (forced
 * past rmem_max, so it is the size asked for). */
static uint64_t raw_ring_bytes(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len)
{
	uint64_t bytes = cfg->buffer_size ? cfg->buffer_size : DEFAULT_RCVBUF;

	*sockets = 1;
	snprintf(what, len, "a socket receive buffer of %" PRIu64 " B", bytes);
	return bytes;
}

static void raw_close(void *state)
{
	struct raw *st = state;

	close(st->fd);
	raw_free(st);
}

static const struct cb_opt raw_options[] = {
	{ .name = "buffer-size", .type = CB_OPT_BYTES, .arg = "BYTES", .min = 1, .max = (1ull << 31) - 1,
	  .has_default = 1, .def = DEFAULT_RCVBUF, .help = "socket receive buffer, SO_RCVBUF",
	  .fix = "give bytes up to 2147483647 (2G - 1), e.g. 4M", .tunable = 1, .tune_min = 256u << 10,
	  .tune_max = 256u << 20, CB_OPT_AT(struct cap_cfg, buffer_size) },
	{ .name = "batch", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = 1024, .has_default = 1,
	  .def = DEFAULT_BATCH, .help = "packets per recvmmsg call",
	  .fix = "give 1..1024 packets per recvmmsg call", CB_OPT_AT(struct cap_cfg, batch) },
	CB_OPT_END,
};

static const struct cap_ring_map raw_ring = { .count_option = "--buffer-size", .unit_bytes = 1 };

/* Its loss account (account.h); row 0 is filled in raw_stats(). */
static const struct cap_account_row raw_account[] = {
	{ "socket", "PACKET_STATISTICS tp_drops",
	  "the socket's receive queue had used up its SO_RCVBUF (charged with each skb's truesize, not the "
	  "frame's length): the kernel dropped the packet; --buffer-size (capbench --ring) and the reader's "
	  "speed govern it" },
	{ .layer = NULL }, /* the end */
};

const struct cap_backend cap_backend_raw = {
	.name = "raw",
	.describe = "AF_PACKET socket without a ring, recvmmsg batches",
	.seed = "the plain stack: one copy per packet through the socket's receive queue",
	.options = raw_options,
	.caps = { .queue_count = 1, .kernel_stats = "packet_statistics", .clock = CAP_CLOCK_KERNEL,
		  .filter = CAP_FILTER_SOCKET,
		  .needs = { "packet_socket" } },
	.ring = &raw_ring,
	.account = raw_account,
	.open = raw_open,
	.run = raw_run,
	.stats = raw_stats,
	.summary = raw_summary,
	.close = raw_close,
	.ring_bytes = raw_ring_bytes,
	.ring_options = "use a smaller --buffer-size",
};
