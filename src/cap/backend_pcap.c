/* SPDX-License-Identifier: MIT */
/*
 * Backend "pcap": libpcap, as the seed's counter uses it (Appendix B):
 * pcap_next() per packet, or pcap_dispatch() per buffer with
 * --pcap-api dispatch. On Linux libpcap itself reads a TPACKET_V3 ring.
 *
 * libpcap's statistics are 32-bit (struct pcap_stat uses u_int) and its
 * ps_drop is the socket's tp_drops only. The read loop takes them every
 * STATS_EVERY_NS and keeps 64-bit running totals from the differences, so
 * they never wrap; pcap_stats() is called only from the reading thread,
 * which owns the pcap handle. libpcap in turn reads PACKET_STATISTICS,
 * whose 32-bit counters the kernel zeroes on each read (cap.c,
 * CAP_STATS_EVERY_NS): a read every 200 ms misses no wrap at any link rate.
 * pcap_next looks at the clock only every check_mask + 1 packets; with
 * --app-load spin:NS that many packets take at most STATS_EVERY_NS of
 * spinning, so a slow reader still takes them in time.
 *
 * On Linux with TPACKET_V3 a read with no packet at all does not return at
 * the read timeout: it blocks until a packet arrives. To stop, the main
 * thread calls pcap_breakloop(), which since libpcap 1.10 also wakes a
 * blocked read through an eventfd; the reader then drains what is left in
 * non-blocking mode.
 */
#include <errno.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "util.h"

#define READ_TIMEOUT_MS   10      /* libpcap's poll timeout and block retire timeout */
#define STATS_EVERY_NS    200000000ull
#define STATS_CHECK_MASK  4095    /* look at the clock every 4096 packets */
#define DEFAULT_BUFFER    (2u << 20) /* libpcap's own default buffer */

struct pcap_be {
	pcap_t *p;
	int dispatch;
	struct pcap_stat last;    /* libpcap's 32-bit totals at the last read */
	struct cap_kstats totals; /* written by the reader, read with __atomic */
	uint64_t next_stats_ns;
	uint64_t check_mask;      /* look at the clock every check_mask + 1 packets */
};

static int pcap_be_open(const struct cap_cfg *cfg, void **state)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	struct pcap_be *st = calloc(1, sizeof(*st));
	struct bpf_program prog;
	int rc, err;

	if (!st)
		return -ENOMEM;
	st->dispatch = cfg->pcap_dispatch;
	st->check_mask = STATS_CHECK_MASK;
	while (cfg->load.kind == APP_LOAD_SPIN && st->check_mask &&
	       (st->check_mask + 1) * cfg->load.spin_ns > STATS_EVERY_NS)
		st->check_mask >>= 1;
	st->p = pcap_create(cfg->iface, errbuf);
	if (!st->p) {
		/* On Linux pcap_create() checks no device (pcap_activate()
		 * does): a failure here is libpcap's, not the user's. */
		fprintf(stderr, "capbench-cap: libpcap cannot open %s: %s\n", cfg->iface, errbuf);
		err = -ENOMEM;
		goto err_free;
	}
	pcap_set_snaplen(st->p, (int)(cfg->snaplen ? cfg->snaplen : CAP_SNAPLEN_MAX));
	pcap_set_promisc(st->p, cfg->promisc);
	pcap_set_timeout(st->p, READ_TIMEOUT_MS);
	if (cfg->immediate)
		pcap_set_immediate_mode(st->p, 1);
	if (cfg->buffer_size)
		pcap_set_buffer_size(st->p, (int)cfg->buffer_size);
	if (pcap_set_tstamp_precision(st->p, PCAP_TSTAMP_PRECISION_NANO)) {
		/* Another backend gives them: the user's choice to change. */
		err = cb_user_fault(-EINVAL, "libpcap gives no nanosecond timestamps here: use another "
				    "--backend (afp-v3 reads the same TPACKET_V3 ring)");
		goto err_close;
	}
	rc = pcap_activate(st->p);
	if (rc < 0) {
		/* No such device, no permission: the user's to fix; anything
		 * else libpcap reports is a failure. */
		switch (rc) {
		case PCAP_ERROR_NO_SUCH_DEVICE:
			err = cb_user_fault(-ENODEV, "libpcap cannot capture on %s: %s", cfg->iface,
					    pcap_geterr(st->p));
			break;
		case PCAP_ERROR_PERM_DENIED:
			err = cb_user_fault(-EPERM, "libpcap cannot capture on %s: %s: run as root",
					    cfg->iface, pcap_geterr(st->p));
			break;
		default:
			err = -EIO;
			fprintf(stderr, "capbench-cap: libpcap cannot capture on %s: %s\n", cfg->iface,
				pcap_geterr(st->p));
		}
		goto err_close;
	}
	if (rc > 0 && rc != PCAP_WARNING_PROMISC_NOTSUP)
		fprintf(stderr, "capbench-cap: libpcap warns: %s\n", pcap_statustostr(rc));
	/* --filter: libpcap attaches it to its packet socket (or, where the
	 * kernel cannot take it, runs it in user space itself). */
	prog.bf_len = cfg->filter_len;
	prog.bf_insns = (struct bpf_insn *)cfg->filter_insns;
	if (cfg->filter && pcap_setfilter(st->p, &prog) < 0) {
		err = -EINVAL;
		fprintf(stderr, "capbench-cap: libpcap cannot apply the filter '%s': %s\n", cfg->filter,
			pcap_geterr(st->p));
		goto err_close;
	}
	*state = st;
	return 0;

err_close:
	pcap_close(st->p);
err_free:
	free(st);
	return err;
}

/* Fold libpcap's 32-bit counters into 64-bit totals (unsigned differences
 * are right across one wrap). Reader thread only. */
static void take_stats(struct pcap_be *st)
{
	struct pcap_stat now;

	if (pcap_stats(st->p, &now) < 0)
		return;
	__atomic_fetch_add(&st->totals.packets, (uint32_t)(now.ps_recv - st->last.ps_recv), __ATOMIC_RELAXED);
	__atomic_fetch_add(&st->totals.drops, (uint32_t)(now.ps_drop - st->last.ps_drop), __ATOMIC_RELAXED);
	__atomic_fetch_add(&st->totals.ifdrop, (uint32_t)(now.ps_ifdrop - st->last.ps_ifdrop), __ATOMIC_RELAXED);
	st->last = now;
	st->next_stats_ns = cb_now_ns() + STATS_EVERY_NS;
}

static void maybe_take_stats(struct pcap_be *st, uint64_t packets)
{
	if (!(packets & st->check_mask) && cb_now_ns() >= st->next_stats_ns)
		take_stats(st);
}

/* The kernel's receive time (CLOCK_REALTIME), which libpcap hands over in
 * nanoseconds since we asked for PCAP_TSTAMP_PRECISION_NANO. */
static uint64_t rx_ns(const struct cap_worker *w, const struct pcap_pkthdr *h)
{
	return cap_rx_mono_ns(w->cfg->rx_clock_offset_ns, (uint64_t)h->ts.tv_sec, (uint64_t)h->ts.tv_usec);
}

struct dispatch_ctx {
	struct cap_worker *w;
	pcap_t *p;
	int reached; /* --count reached, or the drain ended */
};

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
	struct dispatch_ctx *c = (struct dispatch_ctx *)user;

	/* libpcap looks at break_loop before each packet of a block, so
	 * pcap_breakloop() from here ends the dispatch at the next one. */
	if (!cap_drain_may_read(c->w)) {
		c->reached = 1;
		pcap_breakloop(c->p);
		return;
	}
	c->reached |= cap_packet(c->w, bytes, h->caplen, h->len, rx_ns(c->w, h));
}

/* After a stop: read what is still queued without blocking, within the
 * drain's budget (cap.h); what is left stays counted in ps_recv. */
static int drain(struct pcap_be *st, struct cap_worker *w)
{
	struct dispatch_ctx c = { .w = w, .p = st->p };
	char errbuf[PCAP_ERRBUF_SIZE];
	int n;

	if (pcap_setnonblock(st->p, 1, errbuf) < 0) {
		fprintf(stderr, "capbench-cap: cannot drain: %s\n", errbuf);
		return -EIO;
	}
	/* PCAP_ERROR_BREAK: the main thread's pcap_breakloop() can still be
	 * pending here (the read loop saw the stop after a read timeout);
	 * that call consumed it, so read on. Ours sets c.reached. */
	do {
		n = pcap_dispatch(st->p, -1, on_packet, (u_char *)&c);
	} while ((n > 0 || n == PCAP_ERROR_BREAK) && !c.reached);
	cap_publish(w);
	return 0;
}

static int run_next(struct pcap_be *st, struct cap_worker *w)
{
	struct pcap_pkthdr hdr;
	const u_char *data;

	for (;;) {
		/* pcap_next returns NULL on a read timeout and after
		 * pcap_breakloop(): look at the stop flag then. */
		data = pcap_next(st->p, &hdr);
		if (!data) {
			cap_publish(w);
			take_stats(st);
			if (cap_should_stop(w))
				return drain(st, w);
			continue;
		}
		if (cap_packet(w, data, hdr.caplen, hdr.len, rx_ns(w, &hdr))) {
			cap_publish(w);
			return 0;
		}
		if (!(w->packets & 255))
			cap_publish(w);
		maybe_take_stats(st, w->packets);
	}
}

static int run_dispatch(struct pcap_be *st, struct cap_worker *w)
{
	struct dispatch_ctx c = { .w = w, .p = st->p };

	for (;;) {
		/* -1: everything in one buffer (one TPACKET_V3 block); with a
		 * slow --app-load spin, few enough that the statistics are taken
		 * in time (see the top). */
		int n = pcap_dispatch(st->p, st->check_mask == STATS_CHECK_MASK ? -1
						: (int)st->check_mask + 1, on_packet, (u_char *)&c);

		if (n < 0 && n != PCAP_ERROR_BREAK) {
			fprintf(stderr, "capbench-cap: pcap_dispatch: %s\n", pcap_geterr(st->p));
			return -EIO;
		}
		cap_publish(w);
		if (c.reached)
			return 0;
		if (n <= 0) {
			take_stats(st);
			if (cap_should_stop(w))
				return drain(st, w);
		} else if (cb_now_ns() >= st->next_stats_ns) {
			take_stats(st);
		}
	}
}

static int pcap_be_run(void *state, struct cap_worker *w)
{
	struct pcap_be *st = state;
	int err;

	st->next_stats_ns = cb_now_ns() + STATS_EVERY_NS;
	err = st->dispatch ? run_dispatch(st, w) : run_next(st, w);
	take_stats(st);
	return err;
}

/* Its loss account (account.h), filled in pcap_be_stats(). libpcap (1.10,
 * pcap-linux.c) reads ps_ifdrop, in promiscuous mode only, from the
 * device's rx_missed_errors + rx_fifo_errors (sysfs): the NIC's own drops
 * before the host, 0 on a veth. */
enum { PCAP_ROW_DROP, PCAP_ROW_IFDROP };
static const struct cap_account_row pcap_account[] = {
	[PCAP_ROW_DROP] = { "socket", "pcap_stats ps_drop",
			    "libpcap's ring (a TPACKET_V3 ring of --buffer-size bytes, capbench --ring) was "
			    "full: the kernel dropped the packet (PACKET_STATISTICS tp_drops); the reader's "
			    "speed governs it" },
	[PCAP_ROW_IFDROP] = { "NIC", "pcap_stats ps_ifdrop",
			      "the NIC had no room for the frame before the host saw it (rx_missed_errors + "
			      "rx_fifo_errors, read by libpcap in promiscuous mode only, for all the "
			      "interface's traffic)" },
	{ .layer = NULL }, /* the end */
};

static void pcap_be_stats(void *state, struct cap_kstats *out)
{
	struct pcap_be *st = state;

	memset(out, 0, sizeof(*out));
	out->packets = __atomic_load_n(&st->totals.packets, __ATOMIC_RELAXED);
	out->drops = __atomic_load_n(&st->totals.drops, __ATOMIC_RELAXED);
	out->ifdrop = __atomic_load_n(&st->totals.ifdrop, __ATOMIC_RELAXED);
	out->has_ifdrop = 1;
	out->account[PCAP_ROW_DROP] = out->drops;
	out->account[PCAP_ROW_IFDROP] = out->ifdrop;
}

static void pcap_be_wake(void *state)
{
	pcap_breakloop(((struct pcap_be *)state)->p);
}

static void pcap_be_close(void *state)
{
	struct pcap_be *st = state;

	pcap_close(st->p);
	free(st);
}

static void pcap_be_summary(void *state, struct cb_json *j)
{
	cb_json_str(j, "pcap_api", ((struct pcap_be *)state)->dispatch ? "dispatch" : "next");
}

/* libpcap maps a TPACKET_V3 ring of --buffer-size bytes (pcap_set_buffer_size). */
static uint64_t pcap_ring_bytes(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len)
{
	uint64_t bytes = cfg->buffer_size ? cfg->buffer_size : DEFAULT_BUFFER;

	*sockets = 1;
	snprintf(what, len, "a libpcap buffer of %" PRIu64 " B", bytes);
	return bytes;
}

static const struct cb_opt_choice pcap_apis[] = { { "next", 0 }, { "dispatch", 1 }, { NULL, 0 } };

static const struct cb_opt pcap_options[] = {
	{ .name = "pcap-api", .type = CB_OPT_CHOICE, .arg = "API", .choices = pcap_apis,
	  .has_default = 1, .def = 0,
	  .help = "next: pcap_next per packet, the seed's counter; dispatch: pcap_dispatch per buffer",
	  CB_OPT_AT(struct cap_cfg, pcap_dispatch) },
	{ .name = "immediate", .type = CB_OPT_FLAG, .flag_value = 1,
	  .help = "immediate mode: deliver each packet at once", CB_OPT_AT(struct cap_cfg, immediate) },
	{ .name = "buffer-size", .type = CB_OPT_BYTES, .arg = "BYTES", .min = 1, .max = (1ull << 31) - 1,
	  .has_default = 1, .def = DEFAULT_BUFFER, .help = "kernel buffer, e.g. 4M or 64M (libpcap's default)",
	  .fix = "give bytes up to 2147483647 (2G - 1), e.g. 4M", .tunable = 1, .tune_min = 256u << 10,
	  .tune_max = 256u << 20, CB_OPT_AT(struct cap_cfg, buffer_size) },
	CB_OPT_END,
};

static const struct cap_ring_map pcap_ring = { .count_option = "--buffer-size", .unit_bytes = 1 };

const struct cap_backend cap_backend_pcap = {
	.name = "pcap",
	.describe = "libpcap: pcap_next per packet, or pcap_dispatch per buffer",
	.seed = "the seeds' counter (seed 000, Appendix B): libpcap's pcap_next, one call per packet",
	.options = pcap_options,
	.caps = { .kernel_stats = "pcap_stats", .filter = CAP_FILTER_LIBPCAP, .clock = CAP_CLOCK_KERNEL,
		  .needs = { "libpcap", "packet_socket" } },
	.ring = &pcap_ring,
	.account = pcap_account,
	.account_cross_checks = 1u << PCAP_ROW_IFDROP,
	.summary = pcap_be_summary,
	.open = pcap_be_open,
	.run = pcap_be_run,
	.stats = pcap_be_stats,
	.wake = pcap_be_wake,
	.close = pcap_be_close,
	.ring_bytes = pcap_ring_bytes,
	.ring_options = "use a smaller --buffer-size",
};
