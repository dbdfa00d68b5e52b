/* SPDX-License-Identifier: MIT */
/*
 * capbench-cap's options: from the command line to a checked configuration.
 * Every problem ends the program with one line naming the value and the fix,
 * exit status 2. Nothing here opens a socket or starts a thread, so the
 * parse can be run on its own (tests/fuzz/fuzz_cap_args.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cap.h"
#include "util.h"
#include "xdp_common.h"

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
"                          fanout: --workers threads, each its own TPACKET_V3\n"
"                          ring, in one PACKET_FANOUT group\n"
"                          afxdp: AF_XDP socket with capbench's XDP program\n"
"                          xdp: count and drop in XDP, the ceiling (not a capture)\n"
"      --pcap-api API      pcap: next (pcap_next per packet, the seed's counter;\n"
"                          default) or dispatch (pcap_dispatch per buffer)\n"
"      --immediate         pcap: immediate mode (deliver each packet at once)\n"
"      --buffer-size BYTES pcap: kernel buffer (4M, 64M; default libpcap's 2M)\n"
"                          raw: socket receive buffer, SO_RCVBUF (default 64M)\n"
"      --snaplen N         pcap: bytes kept per packet (default 262144)\n"
"      --batch N           raw: packets per recvmmsg call, 1..1024 (default 64);\n"
"                          afxdp: RX descriptors taken per peek, 1..4096 (default 64)\n"
"      --frame-size BYTES  afp-v2: ring frame size, a multiple of 16 from 128\n"
"                          (the stamp must fit) to 64k (default 2048)\n"
"      --frame-count N     afp-v2: frames in the ring (default 4096; rounded up\n"
"                          to whole blocks); afxdp: UMEM frames of 2 KiB,\n"
"                          64..1048576 (default: --ring-size)\n"
"      --block-size BYTES  afp-v3, fanout: ring block size, a power-of-two\n"
"                          multiple of the page size (default 1M)\n"
"      --block-count N     afp-v3, fanout: blocks per ring (default 32)\n"
"      --block-timeout MS  afp-v3, fanout: hand over a partly filled block after\n"
"                          MS ms (default 10)\n"
"      --workers N         fanout: worker threads, one socket and ring each\n"
"                          (default 1, or one per --worker-cpus); more than\n"
"                          the CPUs share them, wrapping around\n"
"      --worker-cpus LIST  fanout, afxdp: pin worker i to the i-th CPU of LIST\n"
"                          (0,1 or 0-3); default: consecutive CPUs from --cpu\n"
"                          (fanout: or 0), wrapping around\n"
"      --fanout-mode MODE  fanout: how the kernel spreads packets over the\n"
"                          workers: hash (of the flow; default), lb (round\n"
"                          robin), cpu (the receiving CPU), qm (the receive\n"
"                          queue), rollover (stay on one worker, move on when\n"
"                          its ring is full)\n"
"      --xdp-bind MODE     afxdp: copy, zerocopy (fails where the driver has\n"
"                          none, e.g. veth) or auto (zero-copy if the driver\n"
"                          has it, else copy; default)\n"
"      --queue N|LIST|all  afxdp: receive queue(s) to bind to, one socket and one\n"
"                          worker each (default 0); frames of other queues go\n"
"                          on to the stack, counted as not redirected\n"
"      --ring-size N       afxdp: RX ring descriptors, a power of two (default 16384)\n"
"      --no-need-wakeup    afxdp: bind without XDP_USE_NEED_WAKEUP\n"
"      --busy-poll         afxdp: busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL\n"
"                          20 us, SO_BUSY_POLL_BUDGET = --batch): spins a CPU\n"
"      --write FILE        write the captured frames to FILE, pcap or, if the\n"
"                          name ends in .pcapng, pcapng (one worker only)\n"
"      --group-size N      number the frames in groups of N by sequence number\n"
"                          (capbench-gen --group-size) and count each group\n"
"      --groups N          the groups the generator sends, so that groups that\n"
"                          never arrived are counted too\n"
"      --no-promisc        do not put IF into promiscuous mode\n"
"      --app-load LOAD     work per packet, in every worker (not with xdp, which\n"
"                          counts in the kernel): touch (read the\n"
"                          stamp; default), none (count frames only, no stamp\n"
"                          check), copy (copy each packet once), zlib:N (copy\n"
"                          and compress each packet with zlib level 0-9, the\n"
"                          seeds' packzip), spin:NS (NS ns of CPU per packet)\n"
"  -c, --count N           stop after N capbench frames (fanout: all workers\n"
"                          together, checked every 50 ms)\n"
"  -d, --duration S        stop after S seconds (5, 5s, 250ms, 2m)\n"
"      --cpu N             pin the counter to CPU N\n"
"      --interval S        seconds between interval lines (default 1)\n"
"      --check             check the options (and that the backend's ring\n"
"                          fits), print one \"check\" line and exit without\n"
"                          capturing; --iface may be left out (no root needed)\n"
"  -h, --help              this help\n"
"\n"
"Example: capbench-cap --iface eth1 --backend afp-v3 --cpu 1 --duration 10\n"
"The XDP programs of afxdp and xdp are detached when capbench-cap exits.\n");
}

struct cap_args {
	const char *iface, *backend, *pcap_api, *buffer_size, *snaplen, *block_size;
	const char *block_count, *block_timeout, *app_load, *count, *duration, *cpu, *interval;
	const char *batch, *frame_size, *frame_count, *workers, *worker_cpus, *fanout_mode;
	const char *xdp_bind, *queue, *ring_size, *group_size, *groups, *write;
	int immediate, no_promisc, no_need_wakeup, busy_poll, check;
};

static void parse_args(int argc, char **argv, struct cap_args *a)
{
	enum { OPT_PCAP_API = 256, OPT_IMMEDIATE, OPT_BUFFER_SIZE, OPT_SNAPLEN, OPT_BLOCK_SIZE,
	       OPT_BLOCK_COUNT, OPT_BLOCK_TIMEOUT, OPT_NO_PROMISC, OPT_APP_LOAD, OPT_CPU,
	       OPT_INTERVAL, OPT_BATCH, OPT_FRAME_SIZE, OPT_FRAME_COUNT,
	       OPT_WORKERS, OPT_WORKER_CPUS, OPT_FANOUT_MODE, OPT_XDP_BIND, OPT_QUEUE,
	       OPT_RING_SIZE, OPT_NO_NEED_WAKEUP, OPT_BUSY_POLL, OPT_GROUP_SIZE, OPT_GROUPS, OPT_WRITE,
	       OPT_CHECK };
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
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "worker-cpus", required_argument, NULL, OPT_WORKER_CPUS },
		{ "fanout-mode", required_argument, NULL, OPT_FANOUT_MODE },
		{ "xdp-bind", required_argument, NULL, OPT_XDP_BIND },
		{ "queue", required_argument, NULL, OPT_QUEUE },
		{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
		{ "no-need-wakeup", no_argument, NULL, OPT_NO_NEED_WAKEUP },
		{ "busy-poll", no_argument, NULL, OPT_BUSY_POLL },
		{ "group-size", required_argument, NULL, OPT_GROUP_SIZE },
		{ "groups", required_argument, NULL, OPT_GROUPS },
		{ "write", required_argument, NULL, OPT_WRITE },
		{ "check", no_argument, NULL, OPT_CHECK },
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
		case OPT_WORKERS: a->workers = optarg; break;
		case OPT_WORKER_CPUS: a->worker_cpus = optarg; break;
		case OPT_FANOUT_MODE: a->fanout_mode = optarg; break;
		case OPT_XDP_BIND: a->xdp_bind = optarg; break;
		case OPT_QUEUE: a->queue = optarg; break;
		case OPT_RING_SIZE: a->ring_size = optarg; break;
		case OPT_NO_NEED_WAKEUP: a->no_need_wakeup = 1; break;
		case OPT_BUSY_POLL: a->busy_poll = 1; break;
		case OPT_GROUP_SIZE: a->group_size = optarg; break;
		case OPT_GROUPS: a->groups = optarg; break;
		case OPT_WRITE: a->write = optarg; break;
		case OPT_CHECK: a->check = 1; break;
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

/* --worker-cpus: how many CPUs it lists (0 when not given). */
static int parse_worker_cpus(const struct cap_args *a, struct cap_cfg *cfg)
{
	long nconf = sysconf(_SC_NPROCESSORS_CONF);
	int usable = cb_cpu_count(), listed;

	if (!a->worker_cpus)
		return 0;
	if (usable > CAP_MAX_WORKERS)
		usable = CAP_MAX_WORKERS;
	listed = cb_parse_cpu_list(a->worker_cpus, (int)nconf, cfg->worker_cpus, usable);
	if (listed < 0)
		cb_usage_error("bad --worker-cpus '%s': give up to %d distinct CPUs of 0..%ld, "
			       "e.g. 0,1 or 0-3", a->worker_cpus, usable, nconf - 1);
	return listed;
}

/* The CPU of each of cfg->workers workers: the `listed` --worker-cpus, or
 * consecutive CPUs from --cpu (or 0), wrapping around. `count_from` says
 * what set the number of workers, for the error. */
static void place_workers(const struct cap_args *a, struct cap_cfg *cfg, int listed,
			  const char *count_from)
{
	long nconf = sysconf(_SC_NPROCESSORS_CONF);

	if (listed && (unsigned int)listed != cfg->workers)
		cb_usage_error("%s gives %u workers but --worker-cpus '%s' names %d CPUs: give one "
			       "CPU per worker", count_from, cfg->workers, a->worker_cpus, listed);
	if (!listed)
		for (unsigned int i = 0; i < cfg->workers; i++)
			cfg->worker_cpus[i] = (int)(((cfg->cpu >= 0 ? cfg->cpu : 0) + (long)i) % nconf);
}

/* fanout: how many workers, on which CPUs, and the fanout mode. */
static void configure_workers(const struct cap_args *a, struct cap_cfg *cfg)
{
	int listed = parse_worker_cpus(a, cfg);
	uint64_t u;

	cfg->fanout_mode = cap_fanout_mode_parse(a->fanout_mode ? a->fanout_mode : "hash");
	if (cfg->fanout_mode < 0)
		cb_usage_error("bad --fanout-mode '%s': use hash, lb, cpu, qm or rollover",
			       a->fanout_mode);
	if (a->workers) {
		if (cb_parse_u64(a->workers, &u) || u == 0 || u > CAP_MAX_WORKERS)
			cb_usage_error("bad --workers '%s': give 1..%d (a fanout group holds at most "
				       "%d sockets)", a->workers, CAP_MAX_WORKERS, CAP_MAX_WORKERS);
		cfg->workers = (unsigned int)u;
	} else {
		cfg->workers = listed ? (unsigned int)listed : 1;
	}
	place_workers(a, cfg, listed, a->workers ? "--workers" : "the default of one worker");
}


/* afxdp's --queue: a queue number, a list (0,1 or 0-3) or `all`, read from
 * sysfs (/sys/class/net/IF/queues/rx-N, which `ip netns exec` mounts for
 * the namespace). Each queue gets its own socket and worker. */
static void configure_queues(const struct cap_args *a, struct cap_cfg *cfg)
{
	int ids[CAP_MAX_WORKERS], n, listed = parse_worker_cpus(a, cfg);

	if (!a->queue) {
		ids[0] = 0;
		n = 1;
	} else if (!strcmp(a->queue, "all")) {
		n = cfg->iface ? (int)cap_rx_queue_count(cfg->iface) : 1;
		if (n == 0)
			cb_usage_error("cannot tell how many receive queues %s has (no "
				       "/sys/class/net/%s/queues here): give --queue N or a list",
				       cfg->iface, cfg->iface);
		if (n > CAP_MAX_WORKERS)
			cb_usage_error("%s has %d receive queues, more than the %d workers capbench-cap "
				       "runs: give --queue a list", cfg->iface, n, CAP_MAX_WORKERS);
		for (int i = 0; i < n; i++)
			ids[i] = i;
	} else {
		/* The CPU-list syntax, for any distinct small numbers. */
		n = cb_parse_cpu_list(a->queue, CAP_MAX_QUEUE + 1, ids, CAP_MAX_WORKERS);
		if (n < 0)
			cb_usage_error("bad --queue '%s': give a receive queue number (0..%d), a list of "
				       "distinct ones (0,1 or 0-3) or all", a->queue, CAP_MAX_QUEUE);
	}
	cfg->n_queues = (unsigned int)n;
	for (int i = 0; i < n; i++)
		cfg->queues[i] = (unsigned int)ids[i];
	cfg->workers = cfg->n_queues;
	/* Without --worker-cpus, one queue's worker stays where --cpu pins the
	 * process, as with the other backends, and without --cpu the workers
	 * are left to the scheduler. */
	for (int i = 0; !listed && i < n; i++)
		cfg->worker_cpus[i] = -1;
	if (listed || (n > 1 && cfg->cpu >= 0))
		place_workers(a, cfg, listed, "--queue");
}

/* afxdp's own options (--batch and --frame-count are checked with raw's and afp-v2's). */
static void configure_afxdp(const struct cap_args *a, const struct cap_backend *be,
			    struct cap_cfg *cfg)
{
	uint64_t u;

	cfg->need_wakeup = !a->no_need_wakeup;
	cfg->busy_poll = a->busy_poll;
	if ((a->xdp_bind || a->queue || a->ring_size || a->no_need_wakeup || a->busy_poll) &&
	    be != &cap_backend_afxdp)
		cb_usage_error("--xdp-bind, --queue, --ring-size, --no-need-wakeup and --busy-poll "
			       "are options of --backend afxdp, not of %s", be->name);
	if (!a->xdp_bind || !strcmp(a->xdp_bind, "auto"))
		cfg->xdp_bind = CAP_XDP_BIND_AUTO;
	else if (!strcmp(a->xdp_bind, "copy"))
		cfg->xdp_bind = CAP_XDP_BIND_COPY;
	else if (!strcmp(a->xdp_bind, "zerocopy"))
		cfg->xdp_bind = CAP_XDP_BIND_ZEROCOPY;
	else
		cb_usage_error("bad --xdp-bind '%s': use copy, zerocopy or auto", a->xdp_bind);
	if (a->ring_size && (cb_parse_u64(a->ring_size, &u) || u < 64 || u > (1u << 20) ||
			     (u & (u - 1))))
		cb_usage_error("bad --ring-size '%s': give a power of two from 64 to 1048576",
			       a->ring_size);
	cfg->ring_size = a->ring_size ? (uint32_t)u : 0;
	if (be == &cap_backend_afxdp && a->frame_count) {
		if (cb_parse_u64(a->frame_count, &u) || u < 64 || u > (1u << 20))
			cb_usage_error("bad --frame-count '%s': give 64..1048576 frames (of 2 KiB each)",
				       a->frame_count);
		cfg->frame_count = u;
	}
}

/* "1.5 GiB", "32.0 MiB": a size for an error line. */
static void format_bytes(uint64_t bytes, char *out, size_t len)
{
	if (bytes >= 1ull << 30)
		snprintf(out, len, "%.1f GiB", (double)bytes / (double)(1ull << 30));
	else
		snprintf(out, len, "%.1f MiB", (double)bytes / (double)(1ull << 20));
}

/*
 * The kernel takes a packet ring as large as memory allows: PACKET_RX_RING
 * allocates every block at once, and the ring is then mapped with
 * MAP_POPULATE (an AF_XDP UMEM is anonymous memory, populated the same way
 * and pinned when it is registered). A ring of most of the memory pushes
 * everything else out, or brings the OOM killer, before a frame arrives.
 * So the backend's rings, all sockets together, may take at most half of
 * the machine's physical memory: a sanity bound, not a kernel limit.
 */
static void check_ring_memory(const struct cap_backend *be, const struct cap_cfg *cfg)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
	char what[128], size[32], limit[32];
	uint64_t bytes, max;

	if (!be->ring_bytes || pages <= 0 || page <= 0)
		return;
	bytes = be->ring_bytes(cfg, what, sizeof(what));
	max = (uint64_t)pages * (uint64_t)page / 2;
	if (bytes <= max)
		return;
	format_bytes(bytes, size, sizeof(size));
	format_bytes(max, limit, sizeof(limit));
	cb_usage_error("refuses %s: %s, more than %s (half of this machine's memory); %s", what, size,
		       limit, be->ring_options);
}

static void configure(const struct cap_args *a, const struct cap_backend *be, struct cap_cfg *cfg)
{
	char errbuf[512];
	uint64_t u;

	memset(cfg, 0, sizeof(*cfg));
	cfg->cpu = -1;
	cfg->interval_s = 1.0;
	cfg->promisc = !a->no_promisc;
	if (!a->iface && !a->check)
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
	if (a->batch && be != &cap_backend_raw && be != &cap_backend_afxdp)
		cb_usage_error("--batch is an option of --backend raw and afxdp, not of %s", be->name);
	if ((a->block_size || a->block_count || a->block_timeout) && be != &cap_backend_afp_v3 &&
	    be != &cap_backend_fanout)
		cb_usage_error("--block-size, --block-count and --block-timeout are options of "
			       "--backend afp-v3 and fanout, not of %s", be->name);
	if ((a->workers || a->fanout_mode) && be != &cap_backend_fanout)
		cb_usage_error("--workers and --fanout-mode are options of --backend fanout, not of %s",
			       be->name);
	if (a->worker_cpus && be != &cap_backend_fanout && be != &cap_backend_afxdp)
		cb_usage_error("--worker-cpus is an option of --backend fanout and afxdp, not of %s",
			       be->name);
	cfg->immediate = a->immediate;
	if (a->buffer_size && (cb_parse_bytes(a->buffer_size, &cfg->buffer_size) ||
			       cfg->buffer_size == 0 || cfg->buffer_size > (1ull << 31) - 1))
		cb_usage_error("bad --buffer-size '%s': give bytes up to 2147483647 (2G - 1), e.g. 4M",
			       a->buffer_size);
	if (a->batch && be == &cap_backend_raw && (cb_parse_u64(a->batch, &u) || u == 0 || u > 1024))
		cb_usage_error("bad --batch '%s': give 1..1024 packets per recvmmsg call", a->batch);
	if (a->batch && be == &cap_backend_afxdp && (cb_parse_u64(a->batch, &u) || u == 0 || u > 4096))
		cb_usage_error("bad --batch '%s': give 1..4096 descriptors", a->batch);
	cfg->batch = a->batch ? (unsigned int)u : 0;
	if (a->frame_size && be != &cap_backend_afp_v2)
		cb_usage_error("--frame-size is an option of --backend afp-v2, not of %s", be->name);
	if (a->frame_count && be != &cap_backend_afp_v2 && be != &cap_backend_afxdp)
		cb_usage_error("--frame-count is an option of --backend afp-v2 and afxdp, not of %s",
			       be->name);
	if (a->frame_size && (cb_parse_bytes(a->frame_size, &cfg->frame_size) ||
			      cfg->frame_size < 128 || cfg->frame_size > 65536 || cfg->frame_size % 16))
		cb_usage_error("bad --frame-size '%s': give a multiple of 16 from 128 B (a frame "
			       "must hold the kernel's header and the stamp) up to 64k", a->frame_size);
	if (a->frame_count && be == &cap_backend_afp_v2) {
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

		/* packet_set_ring() reads tp_block_size as an int and refuses one <= 0,
		 * so 2G (1 << 31) is out: the largest power of two it takes is 1G. */
		if (cb_parse_bytes(a->block_size, &cfg->block_size) || cfg->block_size < (uint64_t)page ||
		    cfg->block_size > (1ull << 30) || (cfg->block_size & (cfg->block_size - 1)))
			cb_usage_error("bad --block-size '%s': give a power of two from %ld B (the page "
				       "size) up to 1G, e.g. 64k or 1M", a->block_size, page);
	}
	if (a->block_count) {
		cfg->block_count = cb_opt_count("--block-count", a->block_count, "blocks");
		if (cfg->block_count > 65536)
			cb_usage_error("bad --block-count '%s': give 1..65536", a->block_count);
	}
	if (a->block_timeout && (cb_parse_u64(a->block_timeout, &u) || u == 0 || u > 60000))
		cb_usage_error("bad --block-timeout '%s': give 1..60000 ms", a->block_timeout);
	cfg->block_timeout_ms = a->block_timeout ? (unsigned int)u : 0;
	configure_afxdp(a, be, cfg);
	if (a->group_size)
		cfg->group_size = cb_opt_count("--group-size", a->group_size, "frames");
	if (a->groups) {
		if (!a->group_size)
			cb_usage_error("--groups needs --group-size (frames per group)");
		cfg->groups = cb_opt_count("--groups", a->groups, "groups");
	}
	cfg->rx_clock_offset_ns = cap_rx_clock_offset_ns();
	if (a->write && be->kernel_counter)
		cb_usage_error("--write does not apply to --backend %s: no application sees the packets",
			       be->name);
	cfg->write_path = a->write;
	/* A real run opens the file (cap_writer_open) and says the same. */
	if (a->write && a->check && cap_writer_probe(a->write, errbuf, sizeof(errbuf)))
		cb_usage_error("%s", errbuf);
	if (a->app_load && be->kernel_counter)
		cb_usage_error("--app-load does not apply to --backend %s: it counts in the kernel, "
			       "no application sees the packets", be->name);
	if (app_load_parse(a->app_load ? a->app_load : "touch", &cfg->load))
		cb_usage_error("bad --app-load '%s': use touch, none, copy, zlib:N (N from 0 to 9) "
			       "or spin:NS (NS from 1 to 1000000000)", a->app_load);
	if (a->count)
		cfg->count = cb_opt_count("--count", a->count, "capbench frames");
	if (a->duration)
		cfg->duration_s = cb_opt_seconds("--duration", a->duration, 0, CB_SECONDS_MAX);
	if (a->interval)
		cfg->interval_s = cb_opt_interval("--interval", a->interval);
	if (a->cpu)
		cfg->cpu = cb_opt_cpu("--cpu", a->cpu);
	cfg->workers = 1;
	cfg->worker_cpus[0] = -1; /* the worker runs where the process is pinned */
	/* --check without --iface: the options alone (an afxdp --queue all then
	 * stands for one queue). */
	cfg->ifindex = cfg->iface ? cb_ifindex(cfg->iface) : 0;
	if (cfg->ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)",
			       cfg->iface);
	if (be == &cap_backend_fanout)
		configure_workers(a, cfg);
	if (be == &cap_backend_afxdp)
		configure_queues(a, cfg);
	if (cfg->write_path && cfg->workers > 1)
		cb_usage_error("--write takes the frames of one worker in the order they arrive: "
			       "use one worker (not %u)", cfg->workers);
	check_ring_memory(be, cfg);
}

const struct cap_backend *cap_configure(int argc, char **argv, struct cap_cfg *cfg, int *check)
{
	struct cap_args args = { 0 };
	const struct cap_backend *be;

	parse_args(argc, argv, &args);
	be = find_backend(args.backend ? args.backend : "pcap");
	configure(&args, be, cfg);
	*check = args.check;
	return be;
}
