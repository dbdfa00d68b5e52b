/* SPDX-License-Identifier: MIT */
/*
 * capbench-cap: the configuration, the per-worker counts and the backend ops
 * table. cap.c (options, main) keeps time, prints the JSON Lines and stops
 * the capture; a backend opens the capture and runs the read loop on a
 * worker thread, handing every packet to cap_packet().
 */
#ifndef CAPBENCH_CAP_H
#define CAPBENCH_CAP_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>

#include "account.h"
#include "app_load.h"
#include "capture_writer.h"
#include "jsonl.h"
#include "opt_table.h"
#include "packet.h"
#include "rx_stats.h"
#include "seqmerge.h"
#include "seqtrack.h"
#include "xdp_counts.h"

#define CAP_MAX_WORKERS 256 /* a fanout group holds at most 256 sockets by default */
#define CAP_MAX_QUEUE (CB_XSK_SLOTS - 1) /* the highest receive queue number --queue takes */
#define CAP_SNAPLEN_MAX 262144 /* --snaplen's default and largest, tcpdump's */

struct cap_cfg {
	const char *iface;
	int ifindex;
	/* pcap */
	int pcap_dispatch;       /* 0: pcap_next (the seed's counter), 1: pcap_dispatch */
	int immediate;           /* pcap_set_immediate_mode */
	uint64_t snaplen;        /* --snaplen; 0 = CAP_SNAPLEN_MAX */
	uint64_t buffer_size;    /* pcap_set_buffer_size, raw: SO_RCVBUF; 0 = the default */
	/* raw (buffer_size: SO_RCVBUF) */
	unsigned int batch;      /* raw: packets per recvmmsg, afxdp: descriptors per peek; 0 = default */
	/* TPACKET_V2 */
	uint64_t frame_size;     /* 0 = the default */
	uint64_t frame_count;    /* afp-v2: ring frames, afxdp: UMEM frames; 0 = the default */
	/* TPACKET_V3 */
	uint64_t block_size;
	uint64_t block_count;
	unsigned int block_timeout_ms;
	/* fanout */
	int fanout_mode;         /* PACKET_FANOUT_HASH, _LB, ... */
	/* AF_XDP (frame_count: UMEM frames, batch: descriptors per peek) */
	enum { CAP_XDP_BIND_AUTO, CAP_XDP_BIND_COPY, CAP_XDP_BIND_ZEROCOPY } xdp_bind;
	/* Receive queues to bind (--queue): one socket and one worker each. */
	unsigned int queues[CAP_MAX_WORKERS];
	unsigned int n_queues;
	uint32_t ring_size;      /* RX ring descriptors; 0 = the backend's default */
	int need_wakeup;         /* XDP_USE_NEED_WAKEUP (default on) */
	int busy_poll;           /* SO_PREFER_BUSY_POLL + SO_BUSY_POLL + SO_BUSY_POLL_BUDGET */
	int promisc;
	/* A capture filter in libpcap's syntax (--filter EXPR, or the operands
	 * after the options as tcpdump takes them); NULL: none. cap_configure
	 * compiles it (classic BPF for DLT_EN10MB: filter_len instructions of
	 * libpcap's struct bpf_insn, which is the kernel's struct sock_filter;
	 * not named here, as linux/bpf.h has a struct bpf_insn of its own),
	 * which the backend attaches where its kernel path takes it
	 * (caps.filter). */
	const char *filter;
	const void *filter_insns;
	unsigned int filter_len;
	/* dpdk (backend_dpdk.c): the virtual device on --iface (enum
	 * cap_dpdk_driver), or the user's devargs; more EAL options. */
	int dpdk_driver;
	const char *dpdk_devargs;
	const char *dpdk_eal;
	const char *write_path;  /* --write FILE.pcap|.pcapng; NULL = write nothing */
	const char *read_path;   /* --read FILE: decode a capture file instead (cap_read.c) */
	uint64_t group_size;     /* frames per group (--group-size); 0 = no groups */
	uint64_t groups;         /* groups the generator sends (--groups); 0 = unknown */
	int64_t rx_clock_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, for kernel timestamps */
	struct app_load load;
	uint64_t count;          /* stop after this many capbench frames; 0 = no limit */
	double duration_s;       /* 0 = until a signal */
	double interval_s;
	int cpu;                 /* -1 = not pinned */
	/* Worker threads: 1, --workers for fanout, one per --queue for afxdp;
	 * each pinned to its CPU (-1 = not pinned, it runs where the process
	 * is pinned). */
	unsigned int workers;
	int worker_cpus[CAP_MAX_WORKERS];
};

/* Counts of one worker. The worker owns the struct; the fields under
 * "published" are stored atomically once per batch so the main thread can
 * print interval lines while the capture runs. */
struct cap_worker {
	const struct cap_cfg *cfg;
	volatile int *stop;        /* set by the main thread; read with __atomic */
	unsigned int index;        /* 0 .. cfg->workers - 1: which socket is ours */
	/* With several workers: the union of their sequence numbers, fed
	 * through this worker's stage once per batch (seqmerge.h). */
	struct cb_seqmerge *merge;
	struct cb_seqstage *stage;
	uint64_t packets;          /* every frame read */
	uint64_t bytes;            /* their length on the wire (without FCS) */
	uint64_t foreign;          /* frames without the capbench stamp */
	uint64_t trailers;         /* trailer frames (stamp.h): neither received nor foreign */
	uint64_t received;         /* capbench frames, each sequence number once */
	uint64_t alloc_failures;
	struct cb_seqset seq;
	struct cap_rx_stats rx;    /* lengths, inter-arrival, latency, groups (rx_stats.h) */
	struct cap_writer *writer; /* --write (one worker only); NULL = none */
	struct app_load_state load;
	struct {
		uint64_t packets, bytes, received;
	} published;
	/* The drain after a stop (cap_drain_may_read): armed when this worker
	 * first sees the stop, then counted down. */
	int draining;
	int drain_cut;             /* the budget ended the drain: frames may be left unread */
	uint64_t drain_left;       /* frames the drain may still read */
	uint64_t drain_end_ns;     /* CLOCK_MONOTONIC */
	int done;                  /* the worker left its loop (count reached, error) */
	int err;                   /* 0 or -errno from the read loop */
};

/* The backend's own kernel statistics as 64-bit running totals. */
struct cap_kstats {
	uint64_t packets;   /* frames the kernel handed to the socket, drops included */
	uint64_t drops;     /* frames the socket dropped: ring or buffer full */
	uint64_t freeze_q;  /* TPACKET_V3: how often the ring froze (not packets) */
	uint64_t ifdrop;    /* libpcap: the interface's own drop count */
	int has_freeze_q, has_ifdrop;
	/* AF_XDP: XDP_STATISTICS, 64-bit running totals in the kernel already */
	uint64_t rx_dropped, rx_invalid_descs, rx_ring_full, rx_fill_ring_empty_descs;
	int has_xsk;
	/* Backends with their own XDP program: what it saw (the "delivered"
	 * stage; for afxdp before the redirect). */
	uint64_t xdp_packets, xdp_bytes, xdp_capbench, xdp_not_redirected;
	int has_xdp;
	/* Row i of the backend's declared account (account.h): its packets. */
	uint64_t account[CAP_ACCOUNT_ROWS];
};

/* What a backend can do and where its numbers come from: the rest of
 * capbench-cap (and, through --describe, capbench) asks these instead of
 * naming backends. */
enum cap_clock {
	CAP_CLOCK_KERNEL, /* the kernel's receive timestamp of each packet */
	CAP_CLOCK_READ,   /* the time the read loop took the batch */
};

/* Where a backend applies a capture filter (--filter). */
enum cap_filter_at {
	CAP_FILTER_NONE,    /* takes none: refused */
	CAP_FILTER_SOCKET,  /* SO_ATTACH_FILTER on each of its packet sockets */
	CAP_FILTER_LIBPCAP, /* pcap_setfilter() */
};

struct cap_caps {
	/* Attaches its own XDP program, which counts the "delivered" stage. */
	int own_xdp;
	/* "OPTION=VALUE": with that option value it attaches none (dpdk's
	 * net_af_packet), and the test bed's counter is on the interface;
	 * NULL: own_xdp whatever its options. */
	const char *own_xdp_unless;
	/* Counts in the kernel and tracks no sequence numbers of its own: no
	 * application sees the packets (no --app-load, no --write), and the
	 * summary leaves out the tracker's fields. */
	int kernel_counter;
	/* Its kernel drops are AF_XDP ring drops (XDP_STATISTICS). */
	int xsk_stats;
	/* PACKET_STATISTICS' tp_packets counts every frame queued to the
	 * socket, so the application's share of the drops can be derived. */
	int queue_count;
	const char *kernel_stats; /* pcap_stats | packet_statistics | xdp_statistics | xdp_program */
	enum cap_clock clock;
	int workers;              /* several worker threads (--workers / --worker-cpus) */
	int queues;               /* binds receive queues (--queue) */
	enum cap_filter_at filter;
	/* Its workers poll without sleeping: their CPUs are busy whatever
	 * the traffic (a profile's idle polling is the backend's own). */
	int polls;
	/* Its option that names the port instead of --iface (without the
	 * dashes), or NULL: given, --iface need not be a kernel interface. */
	const char *port_option;
	/* What preflight must find: libpcap, packet_socket, tpacket_v2,
	 * tpacket_v3, fanout, libxdp, libdpdk, af_xdp, xdp_link. NULL-terminated. */
	const char *needs[8];
};

/* How a kernel buffer of B bytes (capbench --ring) maps to the backend's
 * options: count_option gets max(1, B / unit_bytes) units; unit_option, if
 * any, is set to unit_bytes, or when B < unit_bytes to the largest power of
 * two <= B (at least min_unit_bytes) with a count of 1; power_of_two rounds
 * the count down to one; the count is clamped to min..max; same_as_count
 * are further options given the same count. */
struct cap_ring_map {
	const char *count_option;
	uint64_t unit_bytes;
	const char *unit_option;
	uint64_t min_unit_bytes;
	int power_of_two;
	uint64_t min, max;
	const char *same_as_count[4];
};

struct cap_backend {
	const char *name;
	const char *describe;     /* one line: what it is */
	const char *seed;         /* one line: the seed idea it stands for */
	/* Its own options (opt_table.h), values into struct cap_cfg; an
	 * option several backends take is a row in each table. */
	const struct cb_opt *options;
	struct cap_caps caps;
	const struct cap_ring_map *ring; /* NULL: no kernel buffer to size */
	/* Its loss account (account.h), ending with a row whose layer is NULL;
	 * NULL: not declared yet (the named cap_kstats fields above). */
	const struct cap_account_row *account;
	unsigned int account_cross_checks; /* CAP_ACCOUNT_CROSS_CHECK (account.h) */
	/* Open the capture; prints one line on failure and returns 0 or
	 * -errno. A failure the user can fix is printed with cb_user_fault()
	 * (util.h: exit status 2); anything else is exit status 1. */
	int (*open)(const struct cap_cfg *cfg, void **state);
	/* The read loop, on worker thread w->index (of cfg->workers): until
	 * *w->stop, then drain what is already queued and return 0 or -errno. */
	int (*run)(void *state, struct cap_worker *w);
	/* Kernel statistics so far, over all sockets; callable from the main
	 * thread while run() goes on. */
	void (*stats)(void *state, struct cap_kstats *out);
	/* Optional, for backends with a socket per worker: that worker's share
	 * of the totals the last stats() call took. */
	void (*worker_stats)(void *state, unsigned int worker, struct cap_kstats *out);
	/* Optional: called by the main thread after setting *w->stop, to wake
	 * a read loop that may be blocked in the kernel, or to stop new packets
	 * from arriving while the workers drain. */
	void (*wake)(void *state);
	/* Optional: the backend's own fields of the summary line. */
	void (*summary)(void *state, struct cb_json *j);
	void (*close)(void *state);
	/* Optional, for backends with a kernel buffer to size (packet rings,
	 * UMEMs, a socket's receive buffer): the bytes one socket's buffer
	 * takes as cfg's options make it (what capbench --ring sets; the
	 * summary's ring_bytes), *sockets the sockets that have one, with their
	 * geometry written to `what` ("a ring of 32 blocks of 1048576 B").
	 * cap.c refuses more than half of the machine's memory for all of
	 * them together, naming ring_options as the fix. */
	uint64_t (*ring_bytes)(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len);
	const char *ring_options;
	/* Why this build cannot run it (a library it was built without), or
	 * NULL: listed all the same, refused with this line. */
	const char *absent;
};

/* The counts the main thread takes from the workers (or the --read loop)
 * for an interval line. */
struct cap_published {
	uint64_t packets, bytes, received;
	int any_done;
};

/* The workers' final counts merged into one (summary.c): sums, and the
 * sequence numbers over the union of what they saw (seqmerge.h) when there
 * are several. */
struct cap_totals {
	uint64_t packets, bytes, foreign, received, trailers, alloc_failures;
	struct cb_seqtotals seq;
	struct cap_rx_stats rx;   /* owned: cap_totals_free() */
	int err;
	int drain_cut;            /* a worker's drain ended on its budget (cap.h) */
};

/* summary.c: what a live capture and --read print alike. */
void cap_totals_merge(const struct cap_cfg *cfg, const struct cap_worker *const *w, unsigned int n,
		      const struct cb_seqmerge *merge, struct cap_totals *m);
void cap_totals_free(struct cap_totals *m);
/* One interval line: the tick's wall-clock time at_ns (cb_tick_take; with
 * --read, the file's time), t_s since the start, rates over dt_s since
 * *prev. */
void cap_print_interval(FILE *out, uint64_t at_ns, double t_s, double dt_s, const struct cap_published *now,
			struct cap_published *prev);
/* "packets" .. "streams": the counts, the tracker's fields unless no
 * stamps were read or the backend counts in the kernel (which has only
 * trailer.seen). */
void cap_put_counts(struct cb_json *j, const struct cap_totals *m, int stamps_read,
		    int kernel_counter);
/* "rx_clock", the rx_stats fields and, with one worker's set `one` (NULL:
 * several), "per_stream". */
void cap_put_rx(struct cb_json *j, const struct cap_cfg *cfg, const struct cap_totals *m,
		const struct cb_seqset *one, const char *rx_clock);

/* cap_read.c: capbench-cap --read FILE. Decode the file through
 * cap_packet() and print the summary on `out` (docs/programs.md); returns
 * the exit status (bad input: one line on stderr, CB_EXIT_USAGE). */
int cap_read_file(const struct cap_cfg *cfg, FILE *out);

/* capbench-cap --describe: the registry as one JSON document
 * (docs/programs.md); returns 0 or -EIO. The version goes up when a field
 * changes meaning or goes away. */
#define CAP_DESCRIBE_VERSION 1
int cap_describe(FILE *out);

/* cap_config.c: the command line as a checked configuration and its
 * backend; every problem ends the program with one line and exit status 2.
 * *check: --check was given (print the check line, capture nothing).
 * With --read it returns NULL: no backend, cfg->read_path names the file. */
const struct cap_backend *cap_configure(int argc, char **argv, struct cap_cfg *cfg, int *check);

/* NULL-terminated registry (backends.c). */
extern const struct cap_backend *const cap_backends[];
/* The capabilities a backend needs (CB_CAP_* bits, cap_config.c). */
uint64_t cap_backend_caps(const struct cap_backend *be);
const struct cap_backend *cap_backend_find(const char *name);

/*
 * For read loops whose kernel hands packets over one at a time (raw,
 * afp-v2): a reader that keeps up finds its queue empty after nearly every
 * packet, and blocking in poll() then costs a wake-up and a system call per
 * packet (measured here at 100 kpps: half a CPU for afp-v2). So a reader
 * that finds the queue empty first sleeps CAP_BATCH_WAIT_NS, letting a batch
 * gather (PF_RING's poll watermark has the same purpose), and blocks in
 * poll() only if the queue is still empty after that. 200 us is 20 frames
 * at 100 kpps and 300 at 1.5 Mpps, far below any queue's capacity.
 */
#define CAP_BATCH_WAIT_NS 200000L

static inline void cap_batch_wait(void)
{
	struct timespec ts = { 0, CAP_BATCH_WAIT_NS };

	nanosleep(&ts, NULL);
}

static inline int cap_should_stop(const struct cap_worker *w)
{
	return __atomic_load_n(w->stop, __ATOMIC_RELAXED);
}

/*
 * Stopping. A read loop looks at the stop flag before every packet (as
 * libpcap's TPACKET_V3 loop looks at break_loop), not only when its ring is
 * empty: under a sustained overload the ring is never empty, and a loop that
 * waited for that would never stop. Once stopped, it drains what is queued,
 * within a budget: at most CAP_DRAIN_FRAMES frames and CAP_DRAIN_NS of time,
 * whichever ends first; an empty ring ends the drain earlier.
 *
 * Why these values. In a trial the traffic ends and the rings have had the
 * settle time (0.3 s) to empty before the stop, so the drain reads only what
 * a slow counter had not reached yet: 2^18 frames are more than the largest
 * default ring holds (afp-v3's 32 MiB of 64 B frames, about 233,000), and
 * 250 ms read 62,500 frames at 4 us of work each, more than the default
 * rings of afp-v2 (4,096 frames), afxdp (16,384) and raw and pcap (their
 * buffers hold about 14,000 64 B frames); only a full 32 MiB V3 ring of a
 * counter that slow outlasts settle time and budget. Under traffic that goes
 * on, the budget is what ends the drain: 250 ms leave most of the second a
 * stop may take to the join, the last statistics and the summary on a busy
 * 2-CPU machine (tests/e2e/test_e2e_stop.py). A frame left in the ring is
 * the kernel's: AF_PACKET and libpcap count it in PACKET_STATISTICS'
 * tp_packets (queued, not read), AF_XDP among the frames its program
 * redirected; the summary says "drained": false when that can have happened.
 */
#define CAP_DRAIN_FRAMES (1u << 18)
#define CAP_DRAIN_NS     250000000ull

/* Before handing a packet to cap_packet(): nonzero if the loop may read it,
 * 0 if it must end now (stopped, and the drain's budget spent). One relaxed
 * load per packet until the stop. */
static inline int cap_drain_may_read(struct cap_worker *w)
{
	if (!w->draining) {
		if (!cap_should_stop(w))
			return 1;
		w->draining = 1;
		w->drain_left = CAP_DRAIN_FRAMES;
		w->drain_end_ns = cap_now_mono_ns() + CAP_DRAIN_NS;
	}
	if (w->drain_left && cap_now_mono_ns() < w->drain_end_ns) {
		w->drain_left--;
		return 1;
	}
	w->drain_cut = 1;
	return 0;
}

/* One packet received at rx_ns (CLOCK_MONOTONIC; 0 = no time): count it,
 * read its stamp, do the application's work. Returns nonzero when --count is
 * reached by this worker (with several workers the main thread also stops
 * them when their sum reaches it). */
static inline int cap_packet(struct cap_worker *w, const uint8_t *data, uint32_t caplen,
			     uint32_t wirelen, uint64_t rx_ns)
{
	uint64_t seq, tx_ns;
	unsigned int stream, magic;

	/* --count reached: the frames a batch or a drain still holds are left
	 * alone, so one worker counts and writes exactly N, as tcpdump -c. */
	if (w->cfg->count && w->packets >= w->cfg->count)
		return 1;
	w->packets++;
	w->bytes += wirelen;
	if (w->writer)
		cap_writer_add(w->writer, data, caplen, wirelen,
			       (rx_ns ? rx_ns : cap_now_mono_ns()) + (uint64_t)w->cfg->rx_clock_offset_ns);
	if (w->cfg->load.kind == APP_LOAD_NONE) {
		w->received++;
		goto out;
	}
	magic = cb_stamp_read(data, caplen, &seq, &tx_ns, &stream);
	if (magic == CB_STAMP_MAGIC) {
		int r = cb_seqset_add(&w->seq, stream, seq);
		uint32_t len = wirelen + CB_FCS_LEN;

		if (r > 0) {
			w->received++;
			if (w->merge)
				cb_seqstage_add(w->stage, w->merge, stream, seq);
			if (w->cfg->group_size)
				cap_rx_stats_group(&w->rx, seq / w->cfg->group_size);
		} else if (r < 0) {
			w->alloc_failures++;
		}
		w->rx.lengths[len <= CB_FRAME_MAX ? len : CB_FRAME_MAX]++;
		if (rx_ns) {
			if (w->rx.last_rx_ns && rx_ns >= w->rx.last_rx_ns)
				cap_hist_add(&w->rx.iat, rx_ns - w->rx.last_rx_ns);
			w->rx.last_rx_ns = rx_ns;
			/* A receipt time below CLOCK_MONOTONIC's zero (a --read
			 * file written before this boot, shifted by the clock
			 * offset) wrapped to above 2^63: like a stamp later
			 * than its receipt, it gives no latency. */
			if (rx_ns >= tx_ns && rx_ns <= (uint64_t)INT64_MAX)
				cap_hist_add(&w->rx.latency, rx_ns - tx_ns);
			else
				w->rx.early++;
		}
	} else if (magic == CB_TRAILER_MAGIC) {
		/* A trailer carries the stream's last sequence number in the
		 * seq field and its sent count in the tx_ns field. */
		w->trailers++;
		if (cb_seqset_trailer(&w->seq, stream, seq, tx_ns) < 0 ||
		    (w->merge && cb_seqmerge_trailer(w->merge, stream, seq, tx_ns) < 0))
			w->alloc_failures++;
	} else {
		w->foreign++;
	}
	app_load_apply(&w->cfg->load, &w->load, data, caplen);
out:
	/* --count counts every frame, as tcpdump's -c. */
	return w->cfg->count && w->packets >= w->cfg->count;
}

/* Make the counts so far visible to the main thread, and add the batch's
 * sequence numbers to the union of all workers (once per batch). */
static inline void cap_publish(struct cap_worker *w)
{
	if (w->merge && w->stage->n)
		cb_seqstage_flush(w->stage, w->merge);
	__atomic_store_n(&w->published.packets, w->packets, __ATOMIC_RELAXED);
	__atomic_store_n(&w->published.bytes, w->bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&w->published.received, w->received, __ATOMIC_RELAXED);
}

#endif
