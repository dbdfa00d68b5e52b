/* SPDX-License-Identifier: MIT */
/*
 * capbench-cap: the seed's "counter". Captures with a runtime-selected
 * backend, reads each packet's stamp, counts and discards it. See
 * docs/programs.md for the output.
 *
 * Threads: each worker runs the backend's read loop on its own socket (one
 * worker, or --workers for fanout, each pinned to its CPU); the main thread
 * keeps time, prints interval lines with the workers' sums, waits for
 * SIGINT/SIGTERM, stops the workers and prints the merged summary.
 * Both signals are blocked in every thread and taken by the main thread
 * with sigtimedwait(), so none can be lost between a check and a wait.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cap.h"
#include "jsonl.h"
#include "util.h"
#include "xdp_common.h"

/* More fanout workers than CPUs is allowed (the group still splits the
 * frames the same way) but they take turns on the CPUs they share. Said
 * once the options and privileges are accepted, so a usage error stays one
 * line. */
/*
 * How often the main thread folds the backends' kernel counters into 64-bit
 * totals, whatever --interval says. PACKET_STATISTICS answers with 32-bit
 * tp_packets and tp_drops and zeroes them on every read (net/packet/
 * af_packet.c, packet_getsockopt(): the copy is taken and the stats memset
 * under the receive queue's lock), so a read sees only what arrived since
 * the last one: at 148.8 Mpps (100GbE of 64 B frames) 2^32 takes 28.9 s, at
 * 1.488 Mpps 2,886 s, so a read every second misses no wrap at any rate a
 * link can carry. XDP_STATISTICS and the BPF counters are 64-bit; libpcap's
 * 32-bit pcap_stats() is read by the pcap backend's own thread
 * (backend_pcap.c).
 */
#define CAP_STATS_EVERY_NS 1000000000ull

static void note_shared_cpus(const struct cap_backend *be, const struct cap_cfg *cfg)
{
	int usable = cb_cpu_count();

	if (usable > CAP_MAX_WORKERS)
		usable = CAP_MAX_WORKERS;
	if (be->caps.workers && cfg->workers > (unsigned int)usable)
		fprintf(stderr, "capbench-cap: note: %u workers share %d CPUs, so they take turns on "
			"them: their rates measure time-sharing, not parallel capture\n",
			cfg->workers, usable);
}


struct worker_ctx {
	const struct cap_backend *be;
	void *state;
	pthread_t thread;
	struct cap_worker w;
};

static void *worker_main(void *arg)
{
	struct worker_ctx *c = arg;

	c->w.err = c->be->run(c->state, &c->w);
	cap_publish(&c->w);
	__atomic_store_n(&c->w.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Start worker c on its own thread, pinned to `cpu` (-1: not pinned). */
static void start_worker(struct worker_ctx *c, int cpu)
{
	pthread_attr_t attr;
	int err;

	pthread_attr_init(&attr);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	err = pthread_create(&c->thread, &attr, worker_main, c);
	pthread_attr_destroy(&attr);
	if (err == EINVAL && cpu >= 0)
		cb_usage_error("cannot pin worker %u to CPU %d: %s", c->w.index, cpu, strerror(err));
	if (err)
		cb_fatal("cannot start capture thread %u: %s", c->w.index, strerror(err));
}

/* The counts the workers have published so far, summed. */
static void read_published(const struct worker_ctx *ctx, unsigned int n, struct cap_published *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned int i = 0; i < n; i++) {
		const struct cap_worker *w = &ctx[i].w;

		p->packets += __atomic_load_n(&w->published.packets, __ATOMIC_RELAXED);
		p->bytes += __atomic_load_n(&w->published.bytes, __ATOMIC_RELAXED);
		p->received += __atomic_load_n(&w->published.received, __ATOMIC_RELAXED);
		p->any_done |= __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
	}
}

/* The CPU worker i is pinned to: its own, else the process's (-1: none). */
static int worker_cpu(const struct cap_cfg *cfg, unsigned int i)
{
	return cfg->worker_cpus[i] >= 0 ? cfg->worker_cpus[i] : cfg->cpu;
}

/* "worker_cpus": [the CPU of each worker], in the ready and summary lines. */
static void put_worker_cpus(struct cb_json *j, const struct cap_cfg *cfg)
{
	cb_json_arr_begin(j, "worker_cpus");
	for (unsigned int i = 0; i < cfg->workers; i++)
		cb_json_arr_i64(j, worker_cpu(cfg, i));
	cb_json_arr_end(j);
}

/* "account": the backend's declared loss account (account.h), a row per
 * layer with its packets; nothing for a backend that declares none yet. */
static void put_account(struct cb_json *j, const struct cap_backend *be, const struct cap_kstats *k)
{
	if (!be->account)
		return;
	cb_json_arr_begin(j, "account");
	for (unsigned int i = 0; i < CAP_ACCOUNT_ROWS && be->account[i].layer; i++) {
		cb_json_elem_begin(j);
		cb_json_str(j, "layer", be->account[i].layer);
		cb_json_str(j, "counter", be->account[i].counter);
		cb_json_u64(j, "packets", k->account[i]);
		if (CAP_ACCOUNT_CROSS_CHECK(be, i))
			cb_json_bool(j, "cross_check", 1);
		cb_json_obj_end(j);
	}
	cb_json_arr_end(j);
}

/* "ring_bytes": one socket's kernel buffer as this run's options made it
 * (the last of each option wins), and "ring_sockets": how many have one.
 * capbench records and labels a trial's ring from this, not from what it
 * asked for. */
static void put_ring(struct cb_json *j, const struct cap_backend *be, const struct cap_cfg *cfg)
{
	unsigned int sockets;
	char what[128];
	uint64_t bytes;

	if (!be->ring_bytes)
		return;
	bytes = be->ring_bytes(cfg, &sockets, what, sizeof(what));
	cb_json_u64(j, "ring_bytes", bytes);
	cb_json_u64(j, "ring_sockets", sockets);
}

static void print_summary(const struct cap_cfg *cfg, const struct cap_backend *be, void *state,
			  const struct worker_ctx *ctx, const struct cap_totals *m,
			  const struct cap_kstats *k, double duration_s)
{
	/* --app-load none reads no stamp (cap_put_counts). */
	bool stamps_read = be->caps.kernel_counter || cfg->load.kind != APP_LOAD_NONE;
	struct cb_json j;
	char load[32];

	app_load_format(&cfg->load, load, sizeof(load));
	cb_json_begin(&j, "summary");
	cb_json_str(&j, "backend", be->name);
	cb_json_str(&j, "iface", cfg->iface);
	if (cfg->filter) /* only the frames it matched were captured */
		cb_json_str(&j, "filter", cfg->filter);
	if (!be->caps.kernel_counter)
		cb_json_str(&j, "app_load", load);
	cb_json_double(&j, "duration_s", duration_s);
	cap_put_counts(&j, m, stamps_read, be->caps.kernel_counter);
	if (k->has_xdp) {
		/* What the backend's own XDP program saw: the "delivered" stage. */
		cb_json_u64(&j, "delivered", k->xdp_capbench);
		cb_json_obj_begin(&j, "xdp");
		cb_json_u64(&j, "packets", k->xdp_packets);
		cb_json_u64(&j, "bytes", k->xdp_bytes);
		cb_json_u64(&j, "capbench", k->xdp_capbench);
		if (k->has_xsk) /* frames the program passed on instead of to a socket */
			cb_json_u64(&j, "not_redirected", k->xdp_not_redirected);
		cb_json_obj_end(&j);
	}
	cb_json_u64(&j, "kernel_drops", k->drops);
	cb_json_obj_begin(&j, "kernel");
	cb_json_u64(&j, "packets", k->packets);
	cb_json_u64(&j, "drops", k->drops);
	if (k->has_freeze_q)
		cb_json_u64(&j, "freeze_q", k->freeze_q);
	if (k->has_ifdrop)
		cb_json_u64(&j, "ifdrop", k->ifdrop);
	if (k->has_xsk) {
		cb_json_u64(&j, "rx_dropped", k->rx_dropped);
		cb_json_u64(&j, "rx_invalid_descs", k->rx_invalid_descs);
		cb_json_u64(&j, "rx_ring_full", k->rx_ring_full);
		cb_json_u64(&j, "rx_fill_ring_empty_descs", k->rx_fill_ring_empty_descs);
	}
	cb_json_obj_end(&j);
	put_account(&j, be, k);
	put_ring(&j, be, cfg);
	if (be->summary)
		be->summary(state, &j);
	if (!be->caps.kernel_counter && cfg->load.kind != APP_LOAD_NONE) {
		/* A backend without a per-packet time from the kernel (afxdp)
		 * times each batch when its read loop takes it. */
		cap_put_rx(&j, cfg, m, cfg->workers == 1 ? &ctx[0].w.seq : NULL,
			   be->caps.clock == CAP_CLOCK_READ ? "read" : "kernel");
	}
	if (ctx[0].w.writer) {
		const struct cap_writer *wr = ctx[0].w.writer;

		cb_json_obj_begin(&j, "write");
		cb_json_str(&j, "path", wr->path);
		cb_json_str(&j, "format", wr->pcapng ? "pcapng" : "pcap");
		cb_json_u64(&j, "records", wr->records);
		if (wr->err)
			cb_json_str(&j, "error", strerror(-wr->err));
		cb_json_obj_end(&j);
	}
	if (cfg->load.kind == APP_LOAD_ZLIB) {
		uint64_t in = 0, out = 0;

		for (unsigned int i = 0; i < cfg->workers; i++) {
			in += ctx[i].w.load.z_in;
			out += ctx[i].w.load.z_out;
		}
		cb_json_obj_begin(&j, "zlib");
		cb_json_u64(&j, "level", (uint64_t)cfg->load.zlib_level);
		cb_json_u64(&j, "bytes_in", in);
		cb_json_u64(&j, "bytes_out", out);
		cb_json_obj_end(&j);
	}
	if (m->alloc_failures)
		cb_json_u64(&j, "untracked", m->alloc_failures);
	cb_json_i64(&j, "cpu", cfg->cpu);
	put_worker_cpus(&j, cfg);
	cb_json_arr_begin(&j, "workers");
	for (unsigned int i = 0; i < cfg->workers; i++) {
		cb_json_elem_begin(&j);
		cb_json_u64(&j, "worker", i);
		cb_json_i64(&j, "cpu", worker_cpu(cfg, i));
		cb_json_u64(&j, "packets", ctx[i].w.packets);
		cb_json_u64(&j, "received", ctx[i].w.received);
		if (be->worker_stats) {
			struct cap_kstats wk;

			be->worker_stats(state, i, &wk);
			cb_json_u64(&j, "kernel_drops", wk.drops);
			put_account(&j, be, &wk);
		}
		cb_json_obj_end(&j);
	}
	cb_json_arr_end(&j);
	/* false: the stop's drain ended on its budget, so frames can be left
	 * in a ring, counted by the kernel as queued but not read (cap.h). */
	cb_json_bool(&j, "drained", !m->drain_cut);
	if (m->err)
		cb_json_str(&j, "error", strerror(-m->err));
	cb_json_end(&j, stdout);
}

int main(int argc, char **argv)
{
	struct cap_cfg cfg;
	const struct cap_backend *be;
	struct worker_ctx *ctx;
	struct cb_seqmerge *merge = NULL;
	const struct cap_worker *ws[CAP_MAX_WORKERS];
	struct cap_published prev = { 0 }, now_pub;
	struct cap_totals m;
	struct cap_kstats k;
	struct cb_json j;
	struct cap_writer writer;
	sigset_t sigs;
	volatile int stop = 0;
	uint64_t start, end, prev_tick, next_stats;
	struct cb_tick tick;
	void *state;
	unsigned int n;
	int err, check;

	cb_set_progname(argv[0]);
	be = cap_configure(argc, argv, &cfg, &check);
	if (cfg.read_path) /* no capture: decode a file (cap_read.c) */
		return cap_read_file(&cfg, stdout);
	if (check) {
		cb_json_begin(&j, "check");
		cb_json_str(&j, "backend", be->name);
		if (cfg.iface)
			cb_json_str(&j, "iface", cfg.iface);
		cb_json_u64(&j, "workers", cfg.workers);
		return cb_json_end(&j, stdout) ? CB_EXIT_RUNTIME : CB_EXIT_OK;
	}
	cb_require_caps(cap_backend_caps(be), "packet capture");
	note_shared_cpus(be, &cfg);

	/* Pin the whole process before any thread exists: the workers inherit
	 * it, unless they have CPUs of their own (fanout). */
	if (cfg.cpu >= 0 && (err = cb_pin_cpu(cfg.cpu)))
		cb_usage_error("cannot pin to CPU %d: %s", cfg.cpu, strerror(-err));
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	n = cfg.workers;
	ctx = calloc(n, sizeof(*ctx));
	if (!ctx)
		cb_fatal("out of memory");
	if (n > 1) {
		merge = malloc(sizeof(*merge));
		if (!merge)
			cb_fatal("out of memory");
		cb_seqmerge_init(merge);
	}
	for (unsigned int i = 0; i < n; i++) {
		ctx[i].be = be;
		ctx[i].w.cfg = &cfg;
		ctx[i].w.stop = &stop;
		ctx[i].w.index = i;
		if (cap_rx_stats_init(&ctx[i].w.rx))
			cb_fatal("out of memory");
		if (merge) {
			ctx[i].w.merge = merge;
			ctx[i].w.stage = calloc(1, sizeof(*ctx[i].w.stage));
			if (!ctx[i].w.stage)
				cb_fatal("out of memory");
		}
	}
	if (cfg.write_path) {
		/* Opened before the backend, so a path that cannot be written is
		 * refused before anything is attached; an existing file keeps its
		 * contents until the capture has opened (cap_writer_begin). */
		err = cap_writer_open(&writer, cfg.write_path, cfg.snaplen ? (uint32_t)cfg.snaplen : CAP_SNAPLEN_MAX);
		if (err)
			return CB_EXIT_USAGE;
		ctx[0].w.writer = &writer;
	}
	err = be->open(&cfg, &state);
	if (err) {
		if (cfg.write_path)
			cap_writer_abandon(&writer); /* removes the file only if it is ours */
		/* open() printed its line and said whether it is the user's
		 * (cb_user_fault): that, not the errno, picks 2 or 1. */
		return cb_fault_status();
	}
	if (cfg.write_path && cap_writer_begin(&writer)) {
		be->close(state);
		cap_writer_abandon(&writer);
		return CB_EXIT_USAGE;
	}
	for (unsigned int i = 0; i < n; i++) {
		ctx[i].state = state;
		start_worker(&ctx[i], cfg.worker_cpus[i]);
	}
	start = cb_now_ns();
	cb_json_begin(&j, "ready");
	cb_json_str(&j, "backend", be->name);
	cb_json_str(&j, "iface", cfg.iface);
	cb_json_i64(&j, "cpu", cfg.cpu);
	cb_json_u64(&j, "workers", n);
	put_worker_cpus(&j, &cfg);
	cb_json_end(&j, stdout);

	end = cfg.duration_s > 0 ? start + (uint64_t)(cfg.duration_s * 1e9) : UINT64_MAX;
	prev_tick = start;
	cb_tick_start(&tick, cfg.interval_s);
	next_stats = start + CAP_STATS_EVERY_NS;
	for (;;) {
		uint64_t now = cb_now_ns(), wake;
		struct timespec ts;

		read_published(ctx, n, &now_pub);
		/* A worker that is done reached --count or failed: stop them all.
		 * Several workers reach --count together, seen here. */
		if (now >= end || now_pub.any_done || (cfg.count && now_pub.packets >= cfg.count))
			break;
		if (now >= next_stats) {
			be->stats(state, &k);
			next_stats = now + CAP_STATS_EVERY_NS;
		}
		if (now >= tick.mono_ns) {
			uint64_t at = cb_tick_take(&tick, now);

			cap_print_interval(stdout, at, (double)(now - start) / 1e9,
					   (double)(now - prev_tick) / 1e9, &now_pub, &prev);
			prev_tick = now;
			continue;
		}
		wake = tick.mono_ns < end ? tick.mono_ns : end;
		if (wake > next_stats)
			wake = next_stats;
		/* Wake at least every 50 ms to notice a worker that is done. */
		if (wake - now > 50000000ull)
			wake = now + 50000000ull;
		ts.tv_sec = (time_t)((wake - now) / 1000000000ull);
		ts.tv_nsec = (long)((wake - now) % 1000000000ull);
		if (sigtimedwait(&sigs, NULL, &ts) > 0)
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	if (be->wake)
		be->wake(state);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(ctx[i].thread, NULL);
	be->stats(state, &k);
	if (ctx[0].w.writer && cap_writer_close(&writer) && !ctx[0].w.err)
		ctx[0].w.err = writer.err;
	for (unsigned int i = 0; i < n; i++)
		ws[i] = &ctx[i].w;
	cap_totals_merge(&cfg, ws, n, merge, &m);
	print_summary(&cfg, be, state, ctx, &m, &k, (double)(cb_now_ns() - start) / 1e9);
	be->close(state);
	for (unsigned int i = 0; i < n; i++) {
		cb_seqset_free(&ctx[i].w.seq);
		cap_rx_stats_free(&ctx[i].w.rx);
		app_load_free(&ctx[i].w.load);
		free(ctx[i].w.stage);
	}
	cap_totals_free(&m);
	if (merge) {
		cb_seqmerge_free(merge);
		free(merge);
	}
	free(ctx);
	return m.err ? CB_EXIT_RUNTIME : CB_EXIT_OK;
}
