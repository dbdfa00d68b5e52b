/* SPDX-License-Identifier: MIT */
/*
 * capbench-cap's options: from the command line to a checked configuration.
 * The options are rows of tables (opt_table.h): the common ones below and
 * each backend's own, in its file; the getopt table, --help, --describe and
 * the "is an option of --backend X, not of Y" checks all come from them.
 * Every problem ends the program with one line naming the value and the
 * fix, exit status 2. Nothing here opens a socket or starts a thread, so the
 * parse can be run on its own (tests/fuzz/fuzz_cap_args.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "cap.h"
#include "util.h"
#include "xdp_common.h"

#define DEFAULT_BACKEND "pcap"

/* --snaplen: 0 (the default) or at least the 60 bytes a stamp needs. */
static int snaplen_invalid(uint64_t v)
{
	return v != 0 && v < CB_STAMP_OFF + CB_STAMP_LEN;
}

static double duration_s(const char *flag, const char *s)
{
	return cb_opt_seconds(flag, s, 0, CB_SECONDS_MAX);
}

/* The options every backend takes. Rows without a destination are read by
 * configure() (cb_opt_value). */
static const struct cb_opt common_options[] = {
	{ .name = "iface", .short_name = 'i', .type = CB_OPT_STRING, .arg = "IF",
	  .help = "interface to capture on (required, unless --read)", CB_OPT_AT(struct cap_cfg, iface) },
	{ .name = "backend", .short_name = 'b', .type = CB_OPT_STRING, .arg = "NAME",
	  .has_default = 1, .def_text = DEFAULT_BACKEND, .help = "the capture backend (below)" },
	{ .name = "app-load", .type = CB_OPT_STRING, .arg = "LOAD", .has_default = 1,
	  .def_text = APP_LOAD_DEFAULT, .help = "work per packet, in every worker (not with a "
	  "backend that counts in the kernel): the forms below" },
	{ .name = "filter", .type = CB_OPT_STRING, .arg = "EXPR",
	  .help = "capture only the frames that match EXPR, a libpcap filter (pcap-filter(7)); as "
	  "with tcpdump, EXPR may also follow the options, without --filter. Applied in the kernel: "
	  "on each packet socket (raw, afp-v2, afp-v3, fanout) or by libpcap (pcap)",
	  CB_OPT_AT(struct cap_cfg, filter) },
	{ .name = "write", .short_name = 'w', .type = CB_OPT_STRING, .arg = "FILE",
	  .help = "write the captured frames to FILE, pcap or, if the name ends in .pcapng, "
		  "pcapng (one worker only)", CB_OPT_AT(struct cap_cfg, write_path) },
	{ .name = "snaplen", .short_name = 's', .type = CB_OPT_COUNT, .arg = "N", .max = CAP_SNAPLEN_MAX,
	  .has_default = 1, .def = CAP_SNAPLEN_MAX, .valid = snaplen_invalid,
	  .help = "bytes kept per packet: what --write writes and, with --backend pcap, what the "
	  "kernel copies (0: the default, as tcpdump's -s 0)",
	  .fix = "give 60..262144 bytes (the stamp needs 60), or 0 for the default",
	  CB_OPT_AT(struct cap_cfg, snaplen) },
	{ .name = "group-size", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = CB_COUNT_MAX,
	  .what = "frames", .help = "number the frames in groups of N by sequence number "
	  "(capbench-gen --group-size) and count each group", CB_OPT_AT(struct cap_cfg, group_size) },
	{ .name = "groups", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = CB_COUNT_MAX,
	  .what = "groups", .help = "the groups the generator sends, so that groups that never "
	  "arrived are counted too", CB_OPT_AT(struct cap_cfg, groups) },
	{ .name = "no-promisc", .type = CB_OPT_FLAG, .flag_value = 0,
	  .help = "do not put IF into promiscuous mode", CB_OPT_AT(struct cap_cfg, promisc) },
	{ .name = "count", .short_name = 'c', .type = CB_OPT_COUNT, .arg = "N", .min = 1,
	  .max = CB_COUNT_MAX, .what = "frames", .help = "stop after N frames, every frame counted as "
	  "tcpdump's -c does (the summary counts capbench's own apart: received, foreign); several "
	  "workers: all together, checked every 50 ms", CB_OPT_AT(struct cap_cfg, count) },
	{ .name = "duration", .short_name = 'd', .type = CB_OPT_SECONDS, .arg = "S",
	  .max = (uint64_t)CB_SECONDS_MAX, .seconds = duration_s,
	  .help = "stop after S seconds (5, 5s, 250ms, 2m)", CB_OPT_AT(struct cap_cfg, duration_s) },
	{ .name = "cpu", .type = CB_OPT_CPU, .arg = "N", .help = "pin the counter to CPU N",
	  CB_OPT_AT(struct cap_cfg, cpu) },
	{ .name = "interval", .type = CB_OPT_SECONDS, .arg = "S", .has_default = 1, .def = 1,
	  .seconds = cb_opt_interval, .help = "seconds between interval lines",
	  CB_OPT_AT(struct cap_cfg, interval_s) },
	{ .name = "check", .type = CB_OPT_FLAG, .help = "check the options (and that the backend's "
	  "ring fits), print one \"check\" line and exit without capturing; --iface may be left "
	  "out (it needs no privileges: it opens nothing)" },
	{ .name = "describe", .type = CB_OPT_FLAG, .help = "print the backends, their options and "
	  "capabilities as one JSON document and exit" },
	{ .name = "read", .short_name = 'r', .type = CB_OPT_STRING, .arg = "FILE",
	  .help = "capture nothing: decode FILE, a pcap or pcapng capture of Ethernet frames "
	  "(tcpdump, dumpcap, tshark, netsniff-ng), through the same counting and print its "
	  "summary; no root; takes only --group-size, --groups and --interval (interval lines by "
	  "the file's time)", CB_OPT_AT(struct cap_cfg, read_path) },
	{ .name = "version", .short_name = 'V', .type = CB_OPT_FLAG, .help = "print the version and exit" },
	{ .name = "help", .short_name = 'h', .type = CB_OPT_FLAG, .help = "this help" },
	CB_OPT_END,
};

/* The options --read takes: those of the counting, none of a capture. */
static const char *const read_options[] = { "read", "group-size", "groups", "interval", NULL };

/* CAP_NET_RAW for a packet or AF_XDP socket; CAP_NET_ADMIN, CAP_BPF and
 * CAP_PERFMON to load and attach its own XDP program (the verifier refuses
 * its packet accesses without CAP_PERFMON, measured on 6.18). An AF_XDP UMEM
 * is locked memory: without CAP_IPC_LOCK it must fit RLIMIT_MEMLOCK
 * (net/xdp/xdp_umem.c), which the kernel decides at registration and open()
 * reports. */
uint64_t cap_backend_caps(const struct cap_backend *be)
{
	return CB_CAP_NET_RAW | (be->caps.own_xdp ? CB_CAP_NET_ADMIN | CB_CAP_BPF | CB_CAP_PERFMON : 0);
}

static void usage(FILE *out)
{
	char loads[256];

	fprintf(out,
"Usage: capbench-cap --iface IF [options] [EXPR]\n"
"\n"
"Capture on IF, read each frame's capbench stamp (sequence number, TX time),\n"
"count and discard it. Prints JSON Lines: one \"ready\" line once capturing,\n"
"one \"interval\" line per --interval, one \"summary\" line at exit (after\n"
"--duration, --count, SIGINT or SIGTERM). Needs its backend's capabilities\n"
"(below), as root or granted (docs/capabilities.md); an AF_XDP UMEM also\n"
"CAP_IPC_LOCK unless it fits the locked-memory limit (ulimit -l).\n"
"\n"
"   or: capbench-cap --read FILE [--group-size N [--groups N]] [--interval S]\n"
"\n");
	cb_opt_help(out, common_options);
	app_load_grammar(loads, sizeof(loads));
	fprintf(out, "\n--app-load LOAD: %s\n", loads);
	for (const struct app_load_form *f = app_load_forms; f->name; f++) {
		char form[32];

		snprintf(form, sizeof(form), "%s%s%s", f->name, f->param ? ":" : "",
			 f->param ? f->param : "");
		fprintf(out, "  %-14s %s\n", form, f->help);
	}
	for (int i = 0; cap_backends[i]; i++) {
		const struct cap_backend *b = cap_backends[i];
		char caps[160];

		cb_caps_text(cap_backend_caps(b), caps, sizeof(caps), 0);
		fprintf(out, "\n--backend %s%s: %s\n  needs %s\n", b->name,
			strcmp(b->name, DEFAULT_BACKEND) ? "" : " (default)", b->describe, caps);
		cb_opt_help(out, b->options);
	}
	fprintf(out,
"\n"
"Example: capbench-cap --iface eth1 --backend afp-v3 --cpu 1 --duration 10\n"
"The XDP programs of the backends with their own are detached when capbench-cap exits.\n");
}

/* The values the program checks itself (rows without a destination). */
struct cap_args {
	const char *worker_cpus, *queue;
};

static void set_tables(struct cb_opt_set *s)
{
	cb_opt_set_init(s, common_options, "--backend");
	for (int i = 0; cap_backends[i]; i++)
		cb_opt_set_add(s, cap_backends[i]->name, cap_backends[i]->options);
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

/* Worker threads of their own (fanout): how many, on which CPUs. */
static void configure_workers(const struct cap_args *a, struct cap_cfg *cfg)
{
	int listed = parse_worker_cpus(a, cfg);

	/* --workers, stored by its row; 0: not given. */
	int given = cfg->workers != 0;

	if (!given)
		cfg->workers = listed ? (unsigned int)listed : 1;
	place_workers(a, cfg, listed, given ? "--workers" : "the default of one worker");
}


/* --queue (afxdp): a queue number, a list (0,1 or 0-3) or `all`, read from
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
	unsigned int sockets;

	if (!be->ring_bytes || pages <= 0 || page <= 0)
		return;
	bytes = be->ring_bytes(cfg, &sockets, what, sizeof(what)) * sockets;
	max = (uint64_t)pages * (uint64_t)page / 2;
	if (bytes <= max)
		return;
	format_bytes(bytes, size, sizeof(size));
	format_bytes(max, limit, sizeof(limit));
	cb_usage_error("refuses %s: %s, more than %s (half of this machine's memory); %s", what, size,
		       limit, be->ring_options);
}

/* --describe (docs/programs.md): the registry, each backend's table,
 * capabilities and ring mapping, the common options and the --app-load
 * grammar, as one JSON document. */
static void put_ring(struct cb_json *j, const struct cap_backend *b)
{
	const struct cap_ring_map *r = b->ring;
	const struct cb_opt *count, *unit;

	if (!r) {
		cb_json_str(j, "ring", NULL);
		return;
	}
	count = cb_opt_find(b->options, r->count_option + 2);
	unit = r->unit_option ? cb_opt_find(b->options, r->unit_option + 2) : NULL;
	cb_json_obj_begin(j, "ring");
	cb_json_str(j, "count_option", r->count_option);
	cb_json_u64(j, "unit_bytes", r->unit_bytes);
	if (unit) {
		cb_json_str(j, "unit_option", r->unit_option);
		cb_json_u64(j, "min_unit_bytes", unit->min);
	}
	cb_json_bool(j, "power_of_two", r->power_of_two);
	/* The count's bounds are its option's. */
	cb_json_u64(j, "min", count ? count->min : 1);
	if (count && count->max)
		cb_json_u64(j, "max", count->max);
	cb_json_strs(j, "same_as_count", r->same_as_count, 4);
	cb_json_obj_end(j);
}

static void put_caps(struct cb_json *j, const struct cap_caps *c)
{
	cb_json_obj_begin(j, "capabilities");
	cb_json_bool(j, "own_xdp", c->own_xdp);
	if (c->own_xdp_unless)
		cb_json_str(j, "own_xdp_unless", c->own_xdp_unless);
	cb_json_bool(j, "kernel_counter", c->kernel_counter);
	cb_json_bool(j, "xsk_stats", c->xsk_stats);
	cb_json_bool(j, "queue_count", c->queue_count);
	cb_json_str(j, "kernel_stats", c->kernel_stats);
	cb_json_str(j, "clock", c->clock == CAP_CLOCK_READ ? "user" : "kernel");
	cb_json_bool(j, "writes_pcap", !c->kernel_counter);
	cb_json_bool(j, "workers", c->workers);
	cb_json_bool(j, "queues", c->queues);
	cb_json_bool(j, "polls", c->polls);
	cb_json_strs(j, "needs", c->needs, 8);
	cb_json_obj_end(j);
}

/* The backend's loss account (account.h): its rows with what explains them. */
static void put_account_rows(struct cb_json *j, const struct cap_backend *b)
{
	const struct cap_account_row *rows = b->account;

	if (!rows) {
		cb_json_str(j, "account", NULL);
		return;
	}
	cb_json_arr_begin(j, "account");
	for (unsigned int i = 0; i < CAP_ACCOUNT_ROWS && rows[i].layer; i++) {
		cb_json_elem_begin(j);
		cb_json_str(j, "layer", rows[i].layer);
		cb_json_str(j, "counter", rows[i].counter);
		cb_json_str(j, "explains", rows[i].explains);
		cb_json_bool(j, "cross_check", CAP_ACCOUNT_CROSS_CHECK(b, i));
		cb_json_obj_end(j);
	}
	cb_json_arr_end(j);
}

int cap_describe(FILE *out)
{
	static struct cb_json j;

	cb_opt_describe_begin(&j, "capbench-cap", CAP_DESCRIBE_VERSION);
	cb_json_arr_begin(&j, "backends");
	for (int i = 0; cap_backends[i]; i++) {
		const struct cap_backend *b = cap_backends[i];

		cb_opt_describe_variant(&j, b->name, b->describe, b->seed, b->options);
		put_caps(&j, &b->caps);
		put_ring(&j, b);
		put_account_rows(&j, b);
		cb_json_str(&j, "absent", b->absent);
		cb_json_obj_end(&j);
	}
	cb_json_arr_end(&j);
	cb_opt_describe(&j, "common_options", common_options);
	cb_json_arr_begin(&j, "app_loads");
	for (const struct app_load_form *f = app_load_forms; f->name; f++) {
		cb_json_elem_begin(&j);
		cb_json_str(&j, "name", f->name);
		if (f->param) {
			cb_json_str(&j, "param", f->param);
			cb_json_u64(&j, "min", f->min);
			cb_json_u64(&j, "max", f->max);
		}
		cb_json_str(&j, "help", f->help);
		cb_json_obj_end(&j);
	}
	cb_json_arr_end(&j);
	cb_json_str(&j, "default_backend", DEFAULT_BACKEND);
	cb_json_str(&j, "default_app_load", APP_LOAD_DEFAULT);
	return cb_json_end(&j, out);
}

/* The names of the backends that take a filter, for the line refusing it. */
static void filter_backends(char *out, size_t len)
{
	out[0] = 0;
	for (int i = 0; cap_backends[i]; i++) {
		if (cap_backends[i]->caps.filter == CAP_FILTER_NONE)
			continue;
		strncat(out, out[0] ? ", " : "", len - strlen(out) - 1);
		strncat(out, cap_backends[i]->name, len - strlen(out) - 1);
	}
}

/* The operands after the options, joined by spaces as tcpdump joins them;
 * NULL when there are none. */
static const char *operand_filter(const struct cb_opt_set *s)
{
	static char *joined;
	size_t len = 0;

	if (s->first_operand >= s->argc)
		return NULL;
	for (int i = s->first_operand; i < s->argc; i++)
		len += strlen(s->argv[i]) + 1;
	free(joined);
	joined = calloc(1, len);
	if (!joined)
		cb_fatal("out of memory");
	for (int i = s->first_operand; i < s->argc; i++) {
		if (i > s->first_operand)
			strcat(joined, " ");
		strcat(joined, s->argv[i]);
	}
	return joined;
}

/*
 * The capture filter, compiled here so that a bad expression is refused
 * before anything is opened (and by --check): pcap_compile() on a dead
 * handle of Ethernet frames. Its accepting return value is the snap length
 * given here, which a socket filter uses as the bytes to keep: the packet
 * sockets must keep whole frames (their own rings and buffers decide what is
 * copied, and raw reads a frame's length through MSG_TRUNC), so they get
 * CAP_SNAPLEN_MAX; libpcap keeps --snaplen. An empty expression is no filter,
 * as in tcpdump.
 *
 * afxdp and xdp take no filter: their frames leave the kernel's path in
 * their XDP program, before any socket filter. A filter run in user space
 * (pcap_offline_filter) there would not do what it does for the others (keep
 * the frames out of the socket's queue, where they cost the kernel nothing
 * more), so the comparison across backends would not be like for like:
 * refused in one line naming the backends that take one.
 */
static void configure_filter(const struct cb_opt_set *s, const struct cap_backend *be, struct cap_cfg *cfg)
{
	static struct bpf_program prog; /* the last one compiled (a fuzzer configures many times) */
	const char *operands = operand_filter(s);
	char names[256];
	pcap_t *dead;
	int snaplen;

	if (operands && cfg->filter)
		cb_usage_error("two filters: '%s' (--filter) and '%s' (after the options); give one",
			       cfg->filter, operands);
	if (operands)
		cfg->filter = operands;
	if (cfg->filter && !cfg->filter[0])
		cfg->filter = NULL;
	if (!cfg->filter)
		return;
	if (be->caps.filter == CAP_FILTER_NONE) {
		filter_backends(names, sizeof(names));
		cb_usage_error("--backend %s takes no capture filter (its XDP program takes the frames "
			       "before any socket filter): use one of %s", be->name, names);
	}
	snaplen = be->caps.filter == CAP_FILTER_LIBPCAP && cfg->snaplen ? (int)cfg->snaplen : CAP_SNAPLEN_MAX;
	dead = pcap_open_dead(DLT_EN10MB, snaplen);
	if (!dead)
		cb_fatal("libpcap cannot open a dead handle to compile the filter");
	pcap_freecode(&prog);
	if (pcap_compile(dead, &prog, cfg->filter, 1, PCAP_NETMASK_UNKNOWN) < 0) {
		char why[PCAP_ERRBUF_SIZE];

		snprintf(why, sizeof(why), "%s", pcap_geterr(dead));
		pcap_close(dead); /* nothing left behind (the fuzzer catches the exit) */
		cb_usage_error("bad filter '%s': %s", cfg->filter, why);
	}
	pcap_close(dead);
	cfg->filter_insns = prog.bf_insns;
	cfg->filter_len = prog.bf_len;
}

static void check_groups(const struct cap_cfg *cfg)
{
	if (cfg->groups && !cfg->group_size)
		cb_usage_error("--groups needs --group-size (frames per group)");
}

static void configure(const struct cb_opt_set *s, const struct cap_backend *be, struct cap_cfg *cfg)
{
	struct cap_args a = { cb_opt_value(s, "worker-cpus"), cb_opt_value(s, "queue") };
	const char *app_load = cb_opt_value(s, "app-load");
	int check = cb_opt_value(s, "check") != NULL;
	/* A backend's own port option (dpdk's --dpdk-devargs) names a port
	 * the kernel may not see (bound to vfio-pci): no interface then. */
	const char *port = be->caps.port_option ? cb_opt_value(s, be->caps.port_option) : NULL;
	char errbuf[512];

	memset(cfg, 0, sizeof(*cfg));
	/* What a row does not default to 0 (0 is a backend's own default, and
	 * PACKET_FANOUT_HASH). */
	cfg->cpu = -1;
	cfg->interval_s = 1.0;
	cfg->promisc = 1;
	cfg->need_wakeup = 1;
	if (!cb_opt_value(s, "iface") && !check && !port)
		cb_usage_error("no interface given: use --iface IF, or --read FILE to decode a capture "
			       "(see --help)");
	cb_opt_check_owner(s, be->options, be->name);
	if (be->absent)
		cb_usage_error("--backend %s: %s", be->name, be->absent);
	cb_opt_apply(s, common_options, cfg);
	cb_opt_apply(s, be->options, cfg);
	check_groups(cfg);
	configure_filter(s, be, cfg);
	cfg->rx_clock_offset_ns = cap_rx_clock_offset_ns();
	if (cfg->write_path && be->caps.kernel_counter)
		cb_usage_error("--write does not apply to --backend %s: no application sees the packets",
			       be->name);
	/* A real run opens the file (cap_writer_open) and says the same. */
	if (cfg->write_path && check && cap_writer_probe(cfg->write_path, errbuf, sizeof(errbuf)))
		cb_usage_error("%s", errbuf);
	if (cb_opt_value(s, "snaplen") && be->caps.kernel_counter)
		cb_usage_error("--snaplen does not apply to --backend %s: no application sees the packets",
			       be->name);
	if (app_load && be->caps.kernel_counter)
		cb_usage_error("--app-load does not apply to --backend %s: it counts in the kernel, "
			       "no application sees the packets", be->name);
	if (app_load_parse(app_load ? app_load : APP_LOAD_DEFAULT, &cfg->load)) {
		app_load_grammar(errbuf, sizeof(errbuf));
		cb_usage_error("bad --app-load '%s': use %s", app_load, errbuf);
	}
	/* --check without --iface: the options alone (an afxdp --queue all then
	 * stands for one queue). */
	if (port && !cfg->iface)
		cfg->iface = port; /* the name the lines give it */
	cfg->ifindex = cfg->iface && !port ? cb_ifindex(cfg->iface) : 0;
	if (cfg->ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)",
			       cfg->iface);
	if (be->caps.queues) {
		configure_queues(&a, cfg);
	} else if (be->caps.workers) {
		configure_workers(&a, cfg);
	} else {
		cfg->workers = 1;
		cfg->worker_cpus[0] = -1; /* the worker runs where the process is pinned */
	}
	if (cfg->write_path && cfg->workers > 1)
		cb_usage_error("--write takes the frames of one worker in the order they arrive: "
			       "use one worker (not %u)", cfg->workers);
	check_ring_memory(be, cfg);
}

static int is_read_option(const char *name)
{
	for (const char *const *r = read_options; *r; r++)
		if (!strcmp(*r, name))
			return 1;
	return 0;
}

/* --read FILE: no capture, so none of a capture's options (an interface, a
 * backend, where and how long to run); refused in one line naming them. */
static void configure_read(const struct cb_opt_set *s, struct cap_cfg *cfg)
{
	char bad[512] = "";
	unsigned int nbad = 0;

	for (unsigned int i = 0; i < s->n; i++) {
		if (!s->given[i] || is_read_option(s->row[i]->name))
			continue;
		strncat(bad, nbad++ ? ", --" : "--", sizeof(bad) - strlen(bad) - 1);
		strncat(bad, s->row[i]->name, sizeof(bad) - strlen(bad) - 1);
	}
	if (nbad)
		cb_usage_error("--read decodes a file and captures nothing: %s %s not apply (it takes "
			       "only --group-size, --groups and --interval)", bad, nbad > 1 ? "do" : "does");
	memset(cfg, 0, sizeof(*cfg));
	cfg->cpu = -1;
	cfg->workers = 1;
	cfg->worker_cpus[0] = -1;
	cfg->interval_s = 0; /* no interval lines unless --interval is given */
	cb_opt_apply(s, common_options, cfg);
	check_groups(cfg);
	/* Read once, as a live capture does when it opens: the file's times
	 * are CLOCK_REALTIME, the stamps CLOCK_MONOTONIC (cap_read.c). */
	cfg->rx_clock_offset_ns = cap_rx_clock_offset_ns();
	if (app_load_parse(APP_LOAD_DEFAULT, &cfg->load))
		cb_fatal("the default --app-load '%s' does not parse", APP_LOAD_DEFAULT);
}

const struct cap_backend *cap_configure(int argc, char **argv, struct cap_cfg *cfg, int *check)
{
	static struct cb_opt_set s;
	const struct cap_backend *be;
	const char *name;

	set_tables(&s);
	s.takes_operands = 1; /* a filter, as tcpdump takes it */
	cb_opt_collect(&s, argc, argv);
	if (cb_opt_value(&s, "help")) {
		usage(stdout);
		exit(CB_EXIT_OK);
	}
	if (cb_opt_value(&s, "version"))
		cb_print_version();
	if (cb_opt_value(&s, "describe"))
		exit(cap_describe(stdout) ? CB_EXIT_RUNTIME : CB_EXIT_OK);
	*check = 0;
	if (cb_opt_value(&s, "read")) {
		if (s.first_operand < s.argc)
			cb_usage_error("unexpected argument '%s': --read decodes the whole file (no filter)",
				       s.argv[s.first_operand]);
		configure_read(&s, cfg);
		return NULL;
	}
	name = cb_opt_value(&s, "backend");
	be = find_backend(name ? name : DEFAULT_BACKEND);
	configure(&s, be, cfg);
	*check = cb_opt_value(&s, "check") != NULL;
	return be;
}
