/* SPDX-License-Identifier: MIT */
/*
 * capbench-cap: the seed's "counter". Captures with a runtime-selected
 * backend, reads each packet's stamp, counts and discards it. See
 * docs/programs.md for the output.
 *
 * Threads: the worker runs the backend's read loop; the main thread keeps
 * time, prints interval lines, waits for SIGINT/SIGTERM and stops the worker.
 * Both signals are blocked in every thread and taken by the main thread
 * with sigtimedwait(), so none can be lost between a check and a wait.
 */
#include <errno.h>
#include <getopt.h>
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

static void usage(FILE *out)
{
	fprintf(out,
"Usage: capbench-cap --iface IF [options]\n"
"\n"
"Capture on IF, read each frame's capbench stamp (sequence number, TX time),\n"
"count and discard it. Prints JSON Lines: one \"ready\" line once capturing,\n"
"one \"interval\" line per --interval, one \"summary\" line at exit (after\n"
"--duration, --count, SIGINT or SIGTERM). Needs root.\n"
"\n"
"  -i, --iface IF          interface to capture on (required)\n"
"  -b, --backend NAME      pcap (default): libpcap\n"
"                          raw: AF_PACKET socket without a ring, recvmmsg batches\n"
"                          afp-v2: AF_PACKET with its own TPACKET_V2 frame ring\n"
"                          afp-v3: AF_PACKET with its own TPACKET_V3 block ring\n"
"      --pcap-api API      pcap: next (pcap_next per packet, the seed's counter;\n"
"                          default) or dispatch (pcap_dispatch per buffer)\n"
"      --immediate         pcap: immediate mode (deliver each packet at once)\n"
"      --buffer-size BYTES pcap: kernel buffer (4M, 64M; default libpcap's 2M)\n"
"                          raw: socket receive buffer, SO_RCVBUF (default 32M)\n"
"      --snaplen N         pcap: bytes kept per packet (default 262144)\n"
"      --batch N           raw: packets per recvmmsg call, 1..1024 (default 64)\n"
"      --frame-size BYTES  afp-v2: ring frame size, a multiple of 16 from 128\n"
"                          (the stamp must fit) to 64k (default 2048)\n"
"      --frame-count N     afp-v2: frames in the ring (default 4096; rounded up\n"
"                          to whole blocks)\n"
"      --block-size BYTES  afp-v3: ring block size, a power-of-two multiple of\n"
"                          the page size (default 1M)\n"
"      --block-count N     afp-v3: blocks in the ring (default 32)\n"
"      --block-timeout MS  afp-v3: hand over a partly filled block after MS ms\n"
"                          (default 10)\n"
"      --no-promisc        do not put IF into promiscuous mode\n"
"      --app-load LOAD     work per packet: touch (read the stamp; default),\n"
"                          none (count frames only, no stamp check), copy (copy\n"
"                          each packet once), spin:NS (busy NS ns per packet)\n"
"  -c, --count N           stop after N capbench frames\n"
"  -d, --duration S        stop after S seconds (5, 5s, 250ms, 2m)\n"
"      --cpu N             pin the counter to CPU N\n"
"      --interval S        seconds between interval lines (default 1)\n"
"  -h, --help              this help\n"
"\n"
"Example: capbench-cap --iface eth1 --backend afp-v3 --cpu 1 --duration 10\n");
}

struct cap_args {
	const char *iface, *backend, *pcap_api, *buffer_size, *snaplen, *block_size;
	const char *block_count, *block_timeout, *app_load, *count, *duration, *cpu, *interval;
	const char *batch, *frame_size, *frame_count;
	int immediate, no_promisc;
};

static void parse_args(int argc, char **argv, struct cap_args *a)
{
	enum { OPT_PCAP_API = 256, OPT_IMMEDIATE, OPT_BUFFER_SIZE, OPT_SNAPLEN, OPT_BLOCK_SIZE,
	       OPT_BLOCK_COUNT, OPT_BLOCK_TIMEOUT, OPT_NO_PROMISC, OPT_APP_LOAD, OPT_CPU,
	       OPT_INTERVAL, OPT_BATCH, OPT_FRAME_SIZE, OPT_FRAME_COUNT };
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "backend", required_argument, NULL, 'b' },
		{ "pcap-api", required_argument, NULL, OPT_PCAP_API },
		{ "immediate", no_argument, NULL, OPT_IMMEDIATE },
		{ "buffer-size", required_argument, NULL, OPT_BUFFER_SIZE },
		{ "snaplen", required_argument, NULL, OPT_SNAPLEN },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "frame-size", required_argument, NULL, OPT_FRAME_SIZE },
		{ "frame-count", required_argument, NULL, OPT_FRAME_COUNT },
		{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
		{ "block-count", required_argument, NULL, OPT_BLOCK_COUNT },
		{ "block-timeout", required_argument, NULL, OPT_BLOCK_TIMEOUT },
		{ "no-promisc", no_argument, NULL, OPT_NO_PROMISC },
		{ "app-load", required_argument, NULL, OPT_APP_LOAD },
		{ "count", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:b:c:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': a->iface = optarg; break;
		case 'b': a->backend = optarg; break;
		case OPT_PCAP_API: a->pcap_api = optarg; break;
		case OPT_IMMEDIATE: a->immediate = 1; break;
		case OPT_BUFFER_SIZE: a->buffer_size = optarg; break;
		case OPT_SNAPLEN: a->snaplen = optarg; break;
		case OPT_BATCH: a->batch = optarg; break;
		case OPT_FRAME_SIZE: a->frame_size = optarg; break;
		case OPT_FRAME_COUNT: a->frame_count = optarg; break;
		case OPT_BLOCK_SIZE: a->block_size = optarg; break;
		case OPT_BLOCK_COUNT: a->block_count = optarg; break;
		case OPT_BLOCK_TIMEOUT: a->block_timeout = optarg; break;
		case OPT_NO_PROMISC: a->no_promisc = 1; break;
		case OPT_APP_LOAD: a->app_load = optarg; break;
		case 'c': a->count = optarg; break;
		case 'd': a->duration = optarg; break;
		case OPT_CPU: a->cpu = optarg; break;
		case OPT_INTERVAL: a->interval = optarg; break;
		case 'h': usage(stdout); exit(CB_EXIT_OK);
		default: cb_opt_fail(c, argv);
		}
	}
	if (optind < argc)
		cb_usage_error("unexpected argument '%s' (see --help)", argv[optind]);
}

static const struct cap_backend *find_backend(const char *name)
{
	const struct cap_backend *b = cap_backend_find(name);
	char names[256] = "";

	if (b)
		return b;
	for (int i = 0; cap_backends[i]; i++) {
		strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
		strncat(names, cap_backends[i]->name, sizeof(names) - strlen(names) - 1);
	}
	cb_usage_error("unknown backend '%s': use one of %s", name, names);
}

static void configure(const struct cap_args *a, const struct cap_backend *be, struct cap_cfg *cfg)
{
	uint64_t u;

	memset(cfg, 0, sizeof(*cfg));
	cfg->cpu = -1;
	cfg->interval_s = 1.0;
	cfg->promisc = !a->no_promisc;
	if (!a->iface)
		cb_usage_error("no interface given: use --iface IF (see --help)");
	cfg->iface = a->iface;
	if (a->pcap_api) {
		if (!strcmp(a->pcap_api, "dispatch"))
			cfg->pcap_dispatch = 1;
		else if (strcmp(a->pcap_api, "next"))
			cb_usage_error("bad --pcap-api '%s': use next or dispatch", a->pcap_api);
	}
	if ((a->pcap_api || a->immediate || a->snaplen) && be != &cap_backend_pcap)
		cb_usage_error("--pcap-api, --immediate and --snaplen are options of "
			       "--backend pcap, not of %s", be->name);
	if (a->buffer_size && be != &cap_backend_pcap && be != &cap_backend_raw)
		cb_usage_error("--buffer-size is an option of --backend pcap and raw, not of %s",
			       be->name);
	if (a->batch && be != &cap_backend_raw)
		cb_usage_error("--batch is an option of --backend raw, not of %s", be->name);
	if ((a->block_size || a->block_count || a->block_timeout) && be != &cap_backend_afp_v3)
		cb_usage_error("--block-size, --block-count and --block-timeout are options of "
			       "--backend afp-v3, not of %s", be->name);
	cfg->immediate = a->immediate;
	if (a->buffer_size && (cb_parse_bytes(a->buffer_size, &cfg->buffer_size) ||
			       cfg->buffer_size == 0 || cfg->buffer_size > (1ull << 31) - 1))
		cb_usage_error("bad --buffer-size '%s': give bytes up to 2G, e.g. 4M", a->buffer_size);
	if (a->batch && (cb_parse_u64(a->batch, &u) || u == 0 || u > 1024))
		cb_usage_error("bad --batch '%s': give 1..1024 packets per recvmmsg call", a->batch);
	cfg->batch = a->batch ? (unsigned int)u : 0;
	if ((a->frame_size || a->frame_count) && be != &cap_backend_afp_v2)
		cb_usage_error("--frame-size and --frame-count are options of --backend afp-v2, "
			       "not of %s", be->name);
	if (a->frame_size && (cb_parse_bytes(a->frame_size, &cfg->frame_size) ||
			      cfg->frame_size < 128 || cfg->frame_size > 65536 || cfg->frame_size % 16))
		cb_usage_error("bad --frame-size '%s': give a multiple of 16 from 128 B (a frame "
			       "must hold the kernel's header and the stamp) up to 64k", a->frame_size);
	if (a->frame_count) {
		cfg->frame_count = cb_opt_count("--frame-count", a->frame_count, "frames");
		if (cfg->frame_count > (1u << 22))
			cb_usage_error("bad --frame-count '%s': give 1..4194304", a->frame_count);
	}
	if (a->snaplen && (cb_parse_u64(a->snaplen, &cfg->snaplen) || cfg->snaplen < 60 ||
			   cfg->snaplen > 262144))
		cb_usage_error("bad --snaplen '%s': give 60..262144 bytes (the stamp needs 60)",
			       a->snaplen);
	if (a->block_size) {
		long page = sysconf(_SC_PAGESIZE);

		if (cb_parse_bytes(a->block_size, &cfg->block_size) || cfg->block_size < (uint64_t)page ||
		    cfg->block_size > (1ull << 31) || (cfg->block_size & (cfg->block_size - 1)))
			cb_usage_error("bad --block-size '%s': give a power of two from %ld B (the page "
				       "size) up to 2G, e.g. 64k or 1M", a->block_size, page);
	}
	if (a->block_count) {
		cfg->block_count = cb_opt_count("--block-count", a->block_count, "blocks");
		if (cfg->block_count > 65536)
			cb_usage_error("bad --block-count '%s': give 1..65536", a->block_count);
	}
	if (a->block_timeout && (cb_parse_u64(a->block_timeout, &u) || u == 0 || u > 60000))
		cb_usage_error("bad --block-timeout '%s': give 1..60000 ms", a->block_timeout);
	cfg->block_timeout_ms = a->block_timeout ? (unsigned int)u : 0;
	if (app_load_parse(a->app_load ? a->app_load : "touch", &cfg->load))
		cb_usage_error("bad --app-load '%s': use touch, none, copy or spin:NS "
			       "(NS from 1 to 1000000000)", a->app_load);
	if (a->count)
		cfg->count = cb_opt_count("--count", a->count, "capbench frames");
	if (a->duration)
		cfg->duration_s = cb_opt_seconds("--duration", a->duration);
	if (a->interval)
		cfg->interval_s = cb_opt_seconds("--interval", a->interval);
	if (a->cpu)
		cfg->cpu = cb_opt_cpu("--cpu", a->cpu);
	cfg->ifindex = cb_ifindex(cfg->iface);
	if (cfg->ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)",
			       cfg->iface);
}

struct worker_ctx {
	const struct cap_backend *be;
	void *state;
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

static void print_interval(double t_s, double dt_s, const struct cap_worker *w,
			   uint64_t *prev_packets, uint64_t *prev_bytes, uint64_t *prev_received)
{
	struct cb_json j;
	uint64_t packets = __atomic_load_n(&w->published.packets, __ATOMIC_RELAXED);
	uint64_t bytes = __atomic_load_n(&w->published.bytes, __ATOMIC_RELAXED);
	uint64_t received = __atomic_load_n(&w->published.received, __ATOMIC_RELAXED);

	cb_json_begin(&j, "interval");
	cb_json_double(&j, "t_s", t_s);
	cb_json_u64(&j, "packets", packets);
	cb_json_u64(&j, "received", received);
	cb_json_double(&j, "pps", (double)(packets - *prev_packets) / dt_s);
	cb_json_double(&j, "rx_pps", (double)(received - *prev_received) / dt_s);
	/* Bits per second of frame data (no preamble, gap or FCS). */
	cb_json_double(&j, "bps", (double)(bytes - *prev_bytes) * 8.0 / dt_s);
	cb_json_end(&j, stdout);
	*prev_packets = packets;
	*prev_bytes = bytes;
	*prev_received = received;
}

static void print_summary(const struct cap_cfg *cfg, const struct cap_backend *be,
			  struct cap_worker *w, const struct cap_kstats *k, double duration_s)
{
	struct cb_seqtotals t;
	struct cb_json j;
	char load[32];

	cb_seqset_totals(&w->seq, &t);
	app_load_format(&cfg->load, load, sizeof(load));
	cb_json_begin(&j, "summary");
	cb_json_str(&j, "backend", be->name);
	cb_json_str(&j, "iface", cfg->iface);
	cb_json_str(&j, "app_load", load);
	if (be == &cap_backend_pcap)
		cb_json_str(&j, "pcap_api", cfg->pcap_dispatch ? "dispatch" : "next");
	cb_json_double(&j, "duration_s", duration_s);
	cb_json_u64(&j, "packets", w->packets);
	cb_json_u64(&j, "bytes", w->bytes);
	cb_json_u64(&j, "received", w->received);
	cb_json_u64(&j, "foreign", w->foreign);
	cb_json_u64(&j, "lost", t.lost);
	cb_json_u64(&j, "duplicates", t.duplicates);
	cb_json_u64(&j, "reordered", t.reordered);
	cb_json_u64(&j, "too_old", t.too_old);
	cb_json_u64(&j, "max_seq", t.max_seq);
	cb_json_u64(&j, "streams", t.streams);
	cb_json_u64(&j, "kernel_drops", k->drops);
	cb_json_obj_begin(&j, "kernel");
	cb_json_u64(&j, "packets", k->packets);
	cb_json_u64(&j, "drops", k->drops);
	if (k->has_freeze_q)
		cb_json_u64(&j, "freeze_q", k->freeze_q);
	if (k->has_ifdrop)
		cb_json_u64(&j, "ifdrop", k->ifdrop);
	cb_json_obj_end(&j);
	if (w->alloc_failures)
		cb_json_u64(&j, "untracked", w->alloc_failures);
	cb_json_i64(&j, "cpu", cfg->cpu);
	if (w->err)
		cb_json_str(&j, "error", strerror(-w->err));
	cb_json_end(&j, stdout);
}

int main(int argc, char **argv)
{
	struct cap_args args = { 0 };
	struct cap_cfg cfg;
	const struct cap_backend *be;
	struct worker_ctx *ctx;
	struct cap_kstats k;
	struct cb_json j;
	pthread_t thread;
	sigset_t sigs;
	volatile int stop = 0;
	uint64_t start, end, next_tick, prev_tick, pp = 0, pb = 0, pr = 0;
	int err;

	cb_set_progname(argv[0]);
	parse_args(argc, argv, &args);
	be = find_backend(args.backend ? args.backend : "pcap");
	configure(&args, be, &cfg);
	if (geteuid() != 0)
		cb_usage_error("must run as root (packet capture needs CAP_NET_RAW): run it with sudo");

	/* Pin the whole process before any thread exists: the worker inherits it. */
	if (cfg.cpu >= 0 && (err = cb_pin_cpu(cfg.cpu)))
		cb_usage_error("cannot pin to CPU %d: %s", cfg.cpu, strerror(-err));
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		cb_fatal("out of memory");
	ctx->be = be;
	ctx->w.cfg = &cfg;
	ctx->w.stop = &stop;
	err = be->open(&cfg, &ctx->state);
	if (err)
		return err == -ENODEV || err == -EPERM || err == -EINVAL ? CB_EXIT_USAGE
									  : CB_EXIT_RUNTIME;
	err = pthread_create(&thread, NULL, worker_main, ctx);
	if (err)
		cb_fatal("cannot start the capture thread: %s", strerror(err));
	start = cb_now_ns();
	cb_json_begin(&j, "ready");
	cb_json_str(&j, "backend", be->name);
	cb_json_str(&j, "iface", cfg.iface);
	cb_json_i64(&j, "cpu", cfg.cpu);
	cb_json_end(&j, stdout);

	end = cfg.duration_s > 0 ? start + (uint64_t)(cfg.duration_s * 1e9) : UINT64_MAX;
	prev_tick = start;
	next_tick = start + (uint64_t)(cfg.interval_s * 1e9);
	for (;;) {
		uint64_t now = cb_now_ns(), wake;
		struct timespec ts;

		if (now >= end || __atomic_load_n(&ctx->w.done, __ATOMIC_ACQUIRE))
			break;
		if (now >= next_tick) {
			/* Reading the kernel statistics every interval also keeps
			 * their 32-bit counters from wrapping. */
			be->stats(ctx->state, &k);
			print_interval((double)(now - start) / 1e9, (double)(now - prev_tick) / 1e9,
				       &ctx->w, &pp, &pb, &pr);
			prev_tick = now;
			next_tick += (uint64_t)(cfg.interval_s * 1e9);
			continue;
		}
		wake = next_tick < end ? next_tick : end;
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
		be->wake(ctx->state);
	pthread_join(thread, NULL);
	be->stats(ctx->state, &k);
	print_summary(&cfg, be, &ctx->w, &k, (double)(cb_now_ns() - start) / 1e9);
	err = ctx->w.err;
	be->close(ctx->state);
	cb_seqset_free(&ctx->w.seq);
	free(ctx);
	return err ? CB_EXIT_RUNTIME : CB_EXIT_OK;
}
