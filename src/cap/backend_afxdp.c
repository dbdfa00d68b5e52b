/* SPDX-License-Identifier: MIT */
/*
 * Backend "afxdp": an AF_XDP socket fed by capbench's own XDP program
 * (src/bpf/xdp_xsk.bpf.c), the Linux form of the seeds' zero-copy rings and
 * of RDR's recycled receive buffers (seed 002).
 *
 * The UMEM is one anonymous mapping cut into frames of FRAME_SIZE bytes.
 * User space gives frames to the kernel through the fill ring; the kernel
 * writes a packet into a frame (a copy in copy mode, the NIC's DMA in
 * zero-copy mode) and puts its descriptor on the RX ring. The read loop
 * peeks up to --batch RX descriptors, hands each packet to cap_packet(),
 * and gives the same frames back to the fill ring in the same batch: no
 * system call and no allocation per packet, and every frame is recycled.
 *
 * The frames are split between the fill ring, the kernel, the RX ring and
 * the batch in hand, so a fill ring with room for every frame would seem
 * enough. It is not quite: the kernel publishes its fill-ring consumer index
 * lazily (in copy mode at the end of each flush, after it has published the
 * RX descriptors), so for a moment the fill ring can look fuller than it is.
 * Its size is therefore twice --frame-count (rounded up to a power of two),
 * and a reserve that still comes up short waits for the kernel instead of
 * failing.
 *
 * An AF_XDP socket receives from one queue of the interface; a NIC with
 * several (RSS, or a veth with one per CPU) spreads its frames over them.
 * --queue names the queues to capture: each gets its own UMEM, socket and
 * worker thread, so nothing is shared between workers. Frames of the other
 * queues go on to the stack and are counted as not redirected.
 *
 * The sockets are bound with libxdp's xsk API, with
 * XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD: libxdp then loads no program (its
 * dispatcher needs bpffs); ours is loaded from the skeleton, its XSKMAP
 * holds each socket at the index of its queue, and it is attached through a
 * bpf_link, which the kernel removes when the process exits, however it
 * exits.
 *
 * Where the kernel drops (XDP_STATISTICS, never reset, 64-bit): a redirected
 * frame that finds the fill ring empty is counted in rx_dropped (and the
 * empty fill ring in rx_fill_ring_empty_descs); one that finds the RX ring
 * full in rx_ring_full. Asking with the full struct xdp_statistics size
 * keeps rx_ring_full apart from rx_dropped.
 */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <linux/if_xdp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "bpf_log.h"
#include "cap.h"
#include "util.h"
#include "xdp_common.h"
#include "xdp_prog.h"
#include "xdp_xsk.skel.h"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

/* The smallest UMEM frame the kernel takes: packets up to 1792 B (after the
 * 256 B XDP headroom), so standard frames fit and the same memory holds twice
 * the frames of 4 KiB ones. 16384 frames (32 MiB, afp-v3's default ring size)
 * last 164 ms at 100 kpps: a counter that loses its CPU for a while loses
 * nothing. */
#define FRAME_SIZE          2048u
#define DEFAULT_RING_SIZE   16384u
#define DEFAULT_BATCH       64u
#define BUSY_POLL_USEC      20     /* SO_BUSY_POLL: how long one busy poll may spin */
#define POLL_MS             100    /* how often a quiet reader looks at the stop flag */

/* One receive queue's socket, with its own UMEM; read by one worker. */
struct xsk_queue {
	unsigned int queue;
	void *area;
	size_t area_len;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq;
	struct xsk_ring_cons rx;
	int fd;
	int zerocopy;
	struct cap_kstats kstats; /* this socket's XDP_STATISTICS; main thread only */
};

struct afxdp {
	struct xdp_xsk_bpf *skel;
	struct cap_xdp_hook hook;
	uint32_t frame_count, fill_size, ring_size, batch;
	int need_wakeup, busy_poll;
	struct cap_kstats kstats; /* touched by the main thread only */
	unsigned int n;           /* sockets, one per --queue: worker i reads q[i] */
	struct xsk_queue q[];
};

static uint32_t ring_size(const struct cap_cfg *cfg)
{
	return cfg->ring_size ? cfg->ring_size : DEFAULT_RING_SIZE;
}

/* --frame-count, by default as many frames as the RX ring has descriptors. */
static uint32_t umem_frames(const struct cap_cfg *cfg)
{
	return cfg->frame_count ? (uint32_t)cfg->frame_count : ring_size(cfg);
}

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* The interface's driver as ethtool names it ("veth", "ixgbe"), or "?". */
static const char *driver_name(const struct cap_cfg *cfg, char *buf, size_t len)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = { .ifr_data = (void *)&info };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(buf, len, "?");
	if (fd < 0)
		return buf;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cfg->iface);
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		snprintf(buf, len, "%.*s", (int)sizeof(info.driver), info.driver);
	close(fd);
	return buf;
}

static int set_busy_poll(const struct afxdp *st, const struct xsk_queue *q)
{
	static const struct { int opt; const char *name; } opts[] = {
		{ SO_PREFER_BUSY_POLL, "SO_PREFER_BUSY_POLL" },
		{ SO_BUSY_POLL, "SO_BUSY_POLL" },
		{ SO_BUSY_POLL_BUDGET, "SO_BUSY_POLL_BUDGET" },
	};
	int vals[] = { 1, BUSY_POLL_USEC, (int)st->batch };

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (setsockopt(q->fd, SOL_SOCKET, opts[i].opt, &vals[i], sizeof(vals[i])) < 0) {
			int err = errno;

			/* --busy-poll is the user's choice, and so is the fix. */
			return cb_user_fault(-err, "the kernel refuses busy polling: %s=%d: %s%s",
					     opts[i].name, vals[i], strerror(err),
					     err == ENOPROTOOPT ? " (a kernel without CONFIG_NET_RX_BUSY_POLL, "
					     "or older than 5.11): leave out --busy-poll" :
					     err == EPERM ? " (needs CAP_NET_ADMIN): run as root" : "");
		}
	}
	return 0;
}

static int create_socket(const struct cap_cfg *cfg, const struct afxdp *st, struct xsk_queue *q,
			 int quiet_busy)
{
	struct xsk_socket_config sc = {
		.rx_size = st->ring_size,
		.tx_size = 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = (uint16_t)((cfg->need_wakeup ? XDP_USE_NEED_WAKEUP : 0) |
			      (cfg->xdp_bind == CAP_XDP_BIND_COPY ? XDP_COPY :
			       cfg->xdp_bind == CAP_XDP_BIND_ZEROCOPY ? XDP_ZEROCOPY : 0)),
	};
	struct xdp_options xo = { 0 };
	socklen_t len = sizeof(xo);
	unsigned int nq = cap_rx_queue_count(cfg->iface);
	char drv[64];
	int err;

	if (nq && q->queue >= nq) {
		if (nq == 1)
			return cb_user_fault(-EINVAL, "%s has one receive queue: give --queue 0", cfg->iface);
		return cb_user_fault(-EINVAL, "%s has %u receive queues: give --queue 0..%u", cfg->iface,
				     nq, nq - 1);
	}
	/* Without XDP_COPY or XDP_ZEROCOPY the kernel tries zero-copy and
	 * falls back to copy mode by itself: that is --xdp-bind auto. */
	err = xsk_socket__create(&q->xsk, cfg->iface, q->queue, q->umem, &q->rx, NULL, &sc);
	if (err) {
		/* The user's to fix: a driver without the zero-copy asked for, a
		 * queue or ring size the kernel does not take (EINVAL), a queue
		 * another socket holds. Failures: the kernel could not allocate
		 * the rings (ENOMEM, ENOBUFS), and anything else. */
		if (cfg->xdp_bind == CAP_XDP_BIND_ZEROCOPY && (err == -EOPNOTSUPP || err == -EINVAL))
			cb_user_fault(err, "%s (driver %s) has no zero-copy AF_XDP (%s): use --xdp-bind "
				      "copy, or auto to take zero-copy where there is one", cfg->iface,
				      driver_name(cfg, drv, sizeof(drv)), strerror(-err));
		else if (err == -EINVAL)
			cb_user_fault(err, "the kernel refuses an AF_XDP socket on %s queue %u with a "
				      "%u-descriptor RX ring (%s): check --queue, and use a smaller "
				      "--ring-size", cfg->iface, q->queue, st->ring_size, strerror(-err));
		else if (err == -ENOMEM || err == -ENOBUFS)
			fprintf(stderr, "capbench-cap: the kernel cannot set up an AF_XDP socket on %s "
				"queue %u with a %u-descriptor RX ring (%s): use a smaller --ring-size\n",
				cfg->iface, q->queue, st->ring_size, strerror(-err));
		else if (err == -EBUSY && !quiet_busy)
			cb_user_fault(err, "cannot bind an AF_XDP socket to %s queue %u: %s: another "
				      "AF_XDP socket holds that queue; stop it, or use another --queue",
				      cfg->iface, q->queue, strerror(-err));
		else if (err != -EBUSY)
			fprintf(stderr, "capbench-cap: cannot bind an AF_XDP socket to %s queue %u: %s\n",
				cfg->iface, q->queue, strerror(-err));
		return err;
	}
	q->fd = xsk_socket__fd(q->xsk);
	if (getsockopt(q->fd, SOL_XDP, XDP_OPTIONS, &xo, &len) == 0)
		q->zerocopy = !!(xo.flags & XDP_OPTIONS_ZEROCOPY);
	return 0;
}

/* Give every frame to the kernel through the fill ring. */
static void fill_all(const struct afxdp *st, struct xsk_queue *q)
{
	uint32_t idx;
	uint32_t n = xsk_ring_prod__reserve(&q->fq, st->frame_count, &idx);

	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&q->fq, idx + i) = (uint64_t)i * FRAME_SIZE;
	xsk_ring_prod__submit(&q->fq, n);
}

static int load_program(struct afxdp *st)
{
	uint32_t slots = 0;
	int err;

	for (unsigned int i = 0; i < st->n; i++)
		if (st->q[i].queue + 1 > slots)
			slots = st->q[i].queue + 1;
	cb_libbpf_quiet();
	st->skel = xdp_xsk_bpf__open();
	if (!st->skel) {
		err = -errno;
		goto fail;
	}
	err = bpf_map__set_max_entries(st->skel->maps.xsks_map, slots);
	if (!err)
		err = xdp_xsk_bpf__load(st->skel);
	if (err)
		goto fail;
	for (unsigned int i = 0; i < st->n; i++) {
		uint32_t key = st->q[i].queue;

		if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.xsks_map), &key, &st->q[i].fd, 0)) {
			err = -errno;
			goto fail;
		}
	}
	return 0;
fail:
	return cap_bpf_load_failed(err, "the AF_XDP redirect program");
}

/* The UMEM, socket and filled fill ring of one queue. Returns 0 or -errno
 * after printing one line; close_queue() undoes what was done either way. */
#define BIND_BUSY_TRIES 40       /* x 50 ms: a queue still being released gets 2 s */
#define BIND_BUSY_WAIT_US 50000

static int open_queue(const struct cap_cfg *cfg, const struct afxdp *st, struct xsk_queue *q)
{
	struct xsk_umem_config uc = {
		.fill_size = st->fill_size,
		.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
		.flags = 0,
	};
	int err;

	q->area_len = (size_t)st->frame_count * FRAME_SIZE;
	q->area = mmap(NULL, q->area_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (q->area == MAP_FAILED) {
		err = -errno;
		q->area = NULL;
		fprintf(stderr, "capbench-cap: cannot map a UMEM of %u frames of %u B: %s: use a "
			"smaller --frame-count\n", st->frame_count, FRAME_SIZE, strerror(-err));
		return err;
	}
	/* A queue stays bound for a moment after the socket that held it is closed:
	 * the kernel releases the buffer pool (and with it the queue) in deferred work
	 * (xp_release_deferred), so a counter started right after another on the same
	 * queue can see EBUSY. Wait for it, a while, with a fresh UMEM each try. */
	for (int tries = 0;; tries++) {
		err = xsk_umem__create(&q->umem, q->area, q->area_len, &q->fq, &q->cq, &uc);
		if (err) {
			q->umem = NULL;
			/* No AF_XDP here: another backend is the user's fix.
			 * EINVAL: a UMEM geometry the kernel does not take,
			 * the user's. ENOBUFS: more than RLIMIT_MEMLOCK
			 * without CAP_IPC_LOCK (xdp_umem_account_pages());
			 * ENOMEM: the pages could not be pinned. Failures,
			 * with the same hint. */
			if (err == -EAFNOSUPPORT)
				return cb_user_fault(err, "this kernel has no AF_XDP sockets (%s): use a "
						     "kernel with CONFIG_XDP_SOCKETS, or another backend",
						     strerror(-err));
			if (err == -EINVAL)
				return cb_user_fault(err, "the kernel refuses the UMEM (%s): use a smaller "
						     "--frame-count", strerror(-err));
			fprintf(stderr, "capbench-cap: the kernel cannot register a UMEM of %u frames of "
				"%u B (%s): use a smaller --frame-count%s\n", st->frame_count, FRAME_SIZE,
				strerror(-err), err == -ENOBUFS ? ", or raise the locked-memory limit "
				"(ulimit -l) or grant CAP_IPC_LOCK" : "");
			return err;
		}
		err = create_socket(cfg, st, q, tries < BIND_BUSY_TRIES);
		if (err != -EBUSY || tries >= BIND_BUSY_TRIES)
			break;
		xsk_umem__delete(q->umem);
		q->umem = NULL;
		usleep(BIND_BUSY_WAIT_US);
	}
	if (err) {
		q->xsk = NULL;
		return err;
	}
	if (st->busy_poll && (err = set_busy_poll(st, q)))
		return err;
	fill_all(st, q);
	return 0;
}

static void close_queue(struct xsk_queue *q)
{
	if (q->xsk)
		xsk_socket__delete(q->xsk);
	if (q->umem)
		xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, q->area_len);
}

static int afxdp_open(const struct cap_cfg *cfg, void **state)
{
	struct afxdp *st = calloc(1, sizeof(*st) + cfg->n_queues * sizeof(st->q[0]));
	unsigned int opened = 0;
	int err;

	if (!st)
		return -ENOMEM;
	st->n = cfg->n_queues;
	st->ring_size = ring_size(cfg);
	st->frame_count = umem_frames(cfg);
	st->fill_size = 2 * pow2_ceil(st->frame_count);
	st->batch = cfg->batch ? cfg->batch : DEFAULT_BATCH;
	st->need_wakeup = cfg->need_wakeup;
	st->busy_poll = cfg->busy_poll;

	err = cap_xdp_hook_init(cfg, &st->hook);
	if (err)
		goto err_free;
	for (; opened < st->n; opened++) {
		st->q[opened].queue = cfg->queues[opened];
		err = open_queue(cfg, st, &st->q[opened]);
		if (err) {
			opened++; /* close what it did */
			goto err_queues;
		}
	}
	err = load_program(st);
	if (err)
		goto err_skel;
	err = cap_xdp_hook_attach(cfg, &st->hook, bpf_program__fd(st->skel->progs.cb_xsk));
	if (err)
		goto err_skel;
	*state = st;
	return 0;

err_skel:
	xdp_xsk_bpf__destroy(st->skel);
err_queues:
	while (opened)
		close_queue(&st->q[--opened]);
	cap_xdp_hook_release(&st->hook);
err_free:
	free(st);
	return err;
}

/* Kick the kernel: a zero-copy driver that ran out of fill-ring frames
 * stops until it is woken (in copy mode the flag is never set), and with
 * busy polling recvfrom() runs the queue's NAPI poll in this thread. */
static int wake_fill(const struct afxdp *st, struct xsk_queue *q)
{
	if (st->busy_poll || (st->need_wakeup && xsk_ring_prod__needs_wakeup(&q->fq))) {
		if (recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL) < 0 && errno != EAGAIN &&
		    errno != EBUSY && errno != ENOBUFS && errno != ENETDOWN && errno != EINTR)
			return -errno;
	} else {
		sched_yield();
	}
	return 0;
}

/* Wait for the RX ring to fill, without a busy loop unless asked for one. */
static int wait_rx(const struct afxdp *st, struct xsk_queue *q)
{
	struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
	int err;

	if (st->busy_poll || (st->need_wakeup && xsk_ring_prod__needs_wakeup(&q->fq))) {
		if ((err = wake_fill(st, q)))
			return err;
		/* Busy polling: spin on recvfrom() instead of sleeping. */
		if (st->busy_poll)
			return 0;
	}
	if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static int afxdp_run(void *state, struct cap_worker *w)
{
	struct afxdp *st = state;
	struct xsk_queue *q = &st->q[w->index];
	const uint64_t frame_mask = ~(uint64_t)(FRAME_SIZE - 1);

	for (;;) {
		uint32_t idx_rx, idx_fq, m;
		uint64_t now;
		uint32_t n = xsk_ring_cons__peek(&q->rx, st->batch, &idx_rx);
		int end = 0, err; /* --count reached, or the drain ended */

		if (!n) {
			/* Empty after the stop: the ring is drained. */
			if (cap_should_stop(w))
				return 0;
			if ((err = wait_rx(st, q)))
				return err;
			continue;
		}
		/* AF_XDP descriptors carry no time: the batch's read time
		 * stands for each packet. */
		now = cap_now_mono_ns();
		for (m = 0; m < n; m++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx_rx + m);

			/* Stopped and the drain's budget spent (cap.h): the
			 * descriptors from here on stay in the RX ring unread. */
			if (!cap_drain_may_read(w)) {
				end = 1;
				break;
			}
			end |= cap_packet(w, xsk_umem__get_data(q->area, d->addr), d->len, d->len, now);
		}
		/* Practically never short (see the top of the file). */
		while (xsk_ring_prod__reserve(&q->fq, m, &idx_fq) != m) {
			if ((err = wake_fill(st, q)))
				return err;
		}
		/* The m packets are read: release their descriptors and hand
		 * their frames back to the kernel in one go. */
		for (uint32_t i = 0; i < m; i++)
			*xsk_ring_prod__fill_addr(&q->fq, idx_fq + i) =
				xsk_ring_cons__rx_desc(&q->rx, idx_rx + i)->addr & frame_mask;
		xsk_ring_cons__cancel(&q->rx, n - m); /* peeked, not read */
		xsk_ring_cons__release(&q->rx, m);
		xsk_ring_prod__submit(&q->fq, m);
		cap_publish(w);
		if (end)
			return 0;
	}
}

/* Its loss account (account.h). A frame that finds the fill ring empty
 * counts in rx_dropped and in rx_fill_ring_empty_descs (xsk.c, the same
 * event): those are one row, the rest of rx_dropped (a frame too large for
 * a UMEM frame) another, so that no frame is in two rows. */
enum { XSK_ROW_FILL, XSK_ROW_DROPPED, XSK_ROW_FULL, XSK_ROW_OTHER_QUEUES };
static const struct cap_account_row afxdp_account[] = {
	[XSK_ROW_FILL] = { "AF_XDP fill ring", "XDP_STATISTICS rx_dropped (rx_fill_ring_empty_descs)",
			   "the socket's fill ring had no free UMEM frame to copy the frame into: the reader "
			   "had not yet given back the frames it read (--frame-count, the reader's speed)" },
	[XSK_ROW_DROPPED] = { "AF_XDP rx_dropped", "XDP_STATISTICS rx_dropped",
			      "rx_dropped that is not an empty fill ring: the frame did not fit a UMEM frame" },
	[XSK_ROW_FULL] = { "AF_XDP RX ring", "XDP_STATISTICS rx_ring_full",
			   "the socket's RX ring was full: the reader had not yet taken the descriptors "
			   "(--ring-size, capbench --ring, and the reader's speed govern it)" },
	[XSK_ROW_OTHER_QUEUES] = { "AF_XDP queues", "XDP program not_redirected",
				   "the frame arrived on a receive queue no socket is bound to and went on to "
				   "the stack: --queue all binds every queue" },
	{ NULL, NULL, NULL },
};

/* The rows of one socket's (or all sockets') XDP_STATISTICS. */
static void xsk_account(struct cap_kstats *k)
{
	uint64_t fill = k->rx_fill_ring_empty_descs < k->rx_dropped ? k->rx_fill_ring_empty_descs
								      : k->rx_dropped;

	k->account[XSK_ROW_FILL] = fill;
	k->account[XSK_ROW_DROPPED] = k->rx_dropped - fill;
	k->account[XSK_ROW_FULL] = k->rx_ring_full;
}

static void afxdp_stats(void *state, struct cap_kstats *out)
{
	struct afxdp *st = state;
	struct cap_kstats *k = &st->kstats;

	k->rx_dropped = k->rx_invalid_descs = k->rx_ring_full = k->rx_fill_ring_empty_descs = 0;
	for (unsigned int i = 0; i < st->n; i++) {
		struct xsk_queue *q = &st->q[i];
		struct cap_kstats *qk = &q->kstats;
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);

		/* A failed read keeps the socket's last counts in the sum. */
		if (getsockopt(q->fd, SOL_XDP, XDP_STATISTICS, &xs, &len) == 0 && len == sizeof(xs)) {
			qk->rx_dropped = xs.rx_dropped;
			qk->rx_invalid_descs = xs.rx_invalid_descs;
			qk->rx_ring_full = xs.rx_ring_full;
			qk->rx_fill_ring_empty_descs = xs.rx_fill_ring_empty_descs;
			qk->drops = qk->rx_dropped + qk->rx_ring_full;
			xsk_account(qk);
			qk->has_xsk = 1;
			k->has_xsk = 1;
		}
		k->rx_dropped += qk->rx_dropped;
		k->rx_invalid_descs += qk->rx_invalid_descs;
		k->rx_ring_full += qk->rx_ring_full;
		k->rx_fill_ring_empty_descs += qk->rx_fill_ring_empty_descs;
	}
	cap_xdp_kstats(bpf_map__fd(st->skel->maps.counts), k);
	/* Every frame the program redirected reached a socket's rings or was
	 * dropped there; frames of other queues went to the stack. */
	k->packets = k->xdp_packets - k->xdp_not_redirected;
	k->drops = k->rx_dropped + k->rx_ring_full + k->xdp_not_redirected;
	xsk_account(k);
	k->account[XSK_ROW_OTHER_QUEUES] = k->xdp_not_redirected;
	*out = *k;
}

/* A worker's socket: what the kernel dropped at its rings (XDP_STATISTICS),
 * as of the last afxdp_stats(). */
static void afxdp_worker_stats(void *state, unsigned int worker, struct cap_kstats *out)
{
	*out = ((struct afxdp *)state)->q[worker].kstats;
}

static void afxdp_summary(void *state, struct cb_json *j)
{
	struct afxdp *st = state;
	int zerocopy = 1;

	for (unsigned int i = 0; i < st->n; i++)
		zerocopy &= st->q[i].zerocopy;
	cb_json_str(j, "xdp_bind", zerocopy ? "zerocopy" : "copy");
	cb_json_str(j, "xdp_mode", st->hook.mode);
	cb_json_u64(j, "queue", st->q[0].queue); /* the first; all of them in "queues" */
	cb_json_arr_begin(j, "queues");
	for (unsigned int i = 0; i < st->n; i++)
		cb_json_arr_u64(j, st->q[i].queue);
	cb_json_arr_end(j);
	cb_json_u64(j, "frame_count", st->frame_count);
	cb_json_u64(j, "ring_size", st->ring_size);
	cb_json_u64(j, "batch", st->batch);
	cb_json_bool(j, "need_wakeup", st->need_wakeup);
	cb_json_bool(j, "busy_poll", st->busy_poll);
}

static void afxdp_close(void *state)
{
	struct afxdp *st = state;

	cap_xdp_hook_release(&st->hook); /* detached first: no more redirects */
	xdp_xsk_bpf__destroy(st->skel);
	for (unsigned int i = 0; i < st->n; i++)
		close_queue(&st->q[i]);
	free(st);
}

/* A UMEM per queue, each mapped with MAP_POPULATE and pinned by the kernel
 * when it is registered. */
static uint64_t afxdp_ring_bytes(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len)
{
	*sockets = cfg->n_queues;
	if (cfg->n_queues == 1)
		snprintf(what, len, "a UMEM of %u frames of %u B", umem_frames(cfg), FRAME_SIZE);
	else
		snprintf(what, len, "%u UMEMs (one per queue) of %u frames of %u B", cfg->n_queues,
			 umem_frames(cfg), FRAME_SIZE);
	return (uint64_t)umem_frames(cfg) * FRAME_SIZE;
}

static const struct cb_opt_choice xdp_binds[] = {
	{ "copy", CAP_XDP_BIND_COPY },
	{ "zerocopy", CAP_XDP_BIND_ZEROCOPY },
	{ "auto", CAP_XDP_BIND_AUTO },
	{ NULL, 0 },
};

static const struct cb_opt afxdp_options[] = {
	{ .name = "batch", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = 4096, .has_default = 1,
	  .def = DEFAULT_BATCH, .help = "RX descriptors taken per peek",
	  .fix = "give 1..4096 descriptors", CB_OPT_AT(struct cap_cfg, batch) },
	{ .name = "frame-count", .type = CB_OPT_COUNT, .arg = "N", .min = 64, .max = 1u << 20,
	  .has_default = 1, .def_text = "--ring-size", .help = "UMEM frames of 2 KiB",
	  .fix = "give 64..1048576 frames (of 2 KiB each)", .tunable = 1, .tune_min = 1024,
	  .tune_max = 65536, CB_OPT_AT(struct cap_cfg, frame_count) },
	{ .name = "xdp-bind", .type = CB_OPT_CHOICE, .arg = "MODE", .choices = xdp_binds,
	  .has_default = 1, .def = CAP_XDP_BIND_AUTO,
	  .help = "copy, zerocopy (fails where the driver has none, e.g. veth) or auto (zero-copy "
		  "if the driver has it, else copy)", CB_OPT_AT(struct cap_cfg, xdp_bind) },
	{ .name = "queue", .type = CB_OPT_QUEUES, .arg = "N|LIST|all", .has_default = 1,
	  .def_text = "0", .help = "receive queue(s) to bind to, one socket and one worker each; "
	  "frames of other queues go on to the stack, counted as not redirected" },
	{ .name = "ring-size", .type = CB_OPT_COUNT, .arg = "N", .min = 64, .max = 1u << 20,
	  .has_default = 1, .def = DEFAULT_RING_SIZE, .help = "RX ring descriptors, a power of two",
	  .valid = cb_opt_not_power_of_two, .fix = "give a power of two from 64 to 1048576",
	  .tunable = 1, .tune_min = 1024, .tune_max = 16384, CB_OPT_AT(struct cap_cfg, ring_size) },
	{ .name = "no-need-wakeup", .type = CB_OPT_FLAG, .flag_value = 0,
	  .help = "bind without XDP_USE_NEED_WAKEUP", CB_OPT_AT(struct cap_cfg, need_wakeup) },
	{ .name = "busy-poll", .type = CB_OPT_FLAG, .flag_value = 1,
	  .help = "busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL 20 us, SO_BUSY_POLL_BUDGET = "
		  "--batch): spins a CPU", .tunable = 1, CB_OPT_AT(struct cap_cfg, busy_poll) },
	{ .name = "worker-cpus", .type = CB_OPT_CPUS, .arg = "LIST", .has_default = 1,
	  .def_text = "consecutive CPUs from --cpu, wrapping around (without --cpu: not pinned)",
	  .help = "pin worker i to the i-th CPU of LIST (0,1 or 0-3)" },
	CB_OPT_END,
};

static const struct cap_ring_map afxdp_ring = {
	.count_option = "--ring-size", .unit_bytes = FRAME_SIZE, .power_of_two = 1,
	.same_as_count = { "--frame-count" },
};

const struct cap_backend cap_backend_afxdp = {
	.name = "afxdp",
	.describe = "AF_XDP socket fed by capbench's own XDP program",
	.seed = "the seeds' zero-copy rings and RDR's recycled receive buffers (seed 002)",
	.options = afxdp_options,
	.caps = { .own_xdp = 1, .xsk_stats = 1, .kernel_stats = "xdp_statistics",
		  .clock = CAP_CLOCK_READ, .workers = 1, .queues = 1,
		  .needs = { "libxdp", "af_xdp", "xdp_link" } },
	.ring = &afxdp_ring,
	.account = afxdp_account,
	.open = afxdp_open,
	.run = afxdp_run,
	.stats = afxdp_stats,
	.worker_stats = afxdp_worker_stats,
	.summary = afxdp_summary,
	.close = afxdp_close,
	.ring_bytes = afxdp_ring_bytes,
	.ring_options = "use a smaller --frame-count (by default --ring-size) or fewer --queue",
};
