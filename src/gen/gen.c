/* SPDX-License-Identifier: MIT */
/*
 * capbench-gen: a paced traffic generator that stamps every frame with a
 * sequence number and a TX timestamp. See docs/programs.md for the output.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "jsonl.h"
#include "rate.h"
#include "util.h"

static const struct gen_engine *const engines[] = {
	&gen_engine_xdp,
	&gen_engine_afpacket,
	NULL,
};

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: capbench-gen --iface IF [options]\n"
"\n"
"Send Ethernet/IPv4/UDP test frames, each stamped with a sequence number and\n"
"a TX timestamp, at a precise rate. Prints JSON Lines: one \"interval\" line\n"
"per --interval and one \"summary\" line at exit. Needs root.\n"
"\n"
"  -i, --iface IF        interface to send on (required)\n"
"  -e, --engine NAME     xdp (default): BPF_PROG_RUN live frames, paced in BPF\n"
"                        afpacket: AF_PACKET sendmmsg, paced in user space\n"
"  -s, --size SIZE       frame length incl. 4 B FCS, 64..MTU+18 (default 64), or:\n"
"                        64,594,1518     a list, cycled in order\n"
"                        rfc2544, seed   RFC 2544's 7 / seed 000's 13 lengths, cycled\n"
"                        imix:seed       57/7/16/20 %% of 64/570/594/1518 B\n"
"                        imix:simple     7:4:1 of 64/594/1518 B\n"
"                        random:MIN-MAX  uniform lengths\n"
"                        dist:FILE.csv   'length,weight' rows\n"
"                        trace:FILE.pcap the length distribution of a capture\n"
"      --seed N          seed of the drawn profiles: the same seed, the same\n"
"                        frames (default 1)\n"
"  -r, --rate RATE       1.2Mpps, 800kpps, 5000pps; 1g, 950m (bits/s on the wire,\n"
"                        incl. 20 B preamble+gap); 100%% of --link; max = unpaced\n"
"                        (default 100%%). Bit rates give every frame its own wire\n"
"                        time; packet rates give every frame the same gap\n"
"  -l, --link SPEED      emulated link: 1g (default), 10g, 25g, 40g, 100g\n"
"  -c, --count N         send exactly N frames, then stop\n"
"  -d, --duration S      send for S seconds (5, 5s, 250ms, 2m)\n"
"      --cpu N           pin the generator to CPU N\n"
"      --interval S      seconds between interval lines (default 1)\n"
"      --dst-mac MAC     destination MAC (default 02:cb:00:00:00:02, matches no\n"
"                        host, so the receiver sees it as PACKET_OTHERHOST)\n"
"      --src-mac MAC     source MAC (default: the interface's)\n"
"  -h, --help            this help\n"
"\n"
"Without --count or --duration it sends until SIGINT or SIGTERM.\n"
"Example: capbench-gen --iface veth0 --size 64 --rate 100%% --link 1g --duration 5\n");
}

static const struct gen_engine *find_engine(const char *name)
{
	for (int i = 0; engines[i]; i++)
		if (!strcmp(engines[i]->name, name))
			return engines[i];
	cb_usage_error("unknown engine '%s': use --engine xdp or --engine afpacket", name);
}

struct gen_args {
	const char *iface, *engine, *size, *rate, *link, *count, *duration;
	const char *cpu, *interval, *dst_mac, *src_mac, *seed;
};

static void parse_args(int argc, char **argv, struct gen_args *a)
{
	enum { OPT_CPU = 256, OPT_INTERVAL, OPT_DST_MAC, OPT_SRC_MAC, OPT_SEED };
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "engine", required_argument, NULL, 'e' },
		{ "size", required_argument, NULL, 's' },
		{ "rate", required_argument, NULL, 'r' },
		{ "link", required_argument, NULL, 'l' },
		{ "count", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
		{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:e:s:r:l:c:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': a->iface = optarg; break;
		case 'e': a->engine = optarg; break;
		case 's': a->size = optarg; break;
		case 'r': a->rate = optarg; break;
		case 'l': a->link = optarg; break;
		case 'c': a->count = optarg; break;
		case 'd': a->duration = optarg; break;
		case OPT_CPU: a->cpu = optarg; break;
		case OPT_INTERVAL: a->interval = optarg; break;
		case OPT_DST_MAC: a->dst_mac = optarg; break;
		case OPT_SRC_MAC: a->src_mac = optarg; break;
		case OPT_SEED: a->seed = optarg; break;
		case 'h': usage(stdout); exit(CB_EXIT_OK);
		default: cb_opt_fail(c, argv);
		}
	}
	if (optind < argc)
		cb_usage_error("unexpected argument '%s' (see --help)", argv[optind]);
}

/* Turn the parsed strings into a checked configuration; every problem is
 * one line naming the value and the fix. */
static void configure(const struct gen_args *a, struct gen_cfg *cfg)
{
	struct cb_rate rate;
	char errbuf[512];
	int mtu, err;

	memset(cfg, 0, sizeof(*cfg));
	cfg->cpu = -1;
	cfg->interval_s = 1.0;
	cfg->link_bps = 1e9;
	cb_frame_spec_default(&cfg->spec);

	if (!a->iface)
		cb_usage_error("no interface given: use --iface IF (see --help)");
	cfg->iface = a->iface;
	if (a->link && cb_parse_link(a->link, &cfg->link_bps))
		cb_usage_error("bad --link '%s': use 1g, 10g, 25g, 40g or 100g", a->link);
	cfg->size_spec = a->size ? a->size : "64";
	if (a->seed && cb_parse_u64(a->seed, &cfg->seed))
		cb_usage_error("bad --seed '%s': give a whole number", a->seed);
	else if (!a->seed)
		cfg->seed = 1;
	err = cb_sizes_parse(cfg->size_spec, &cfg->sizes, errbuf, sizeof(errbuf));
	if (err == -ENOMEM)
		cb_fatal("out of memory");
	if (err)
		cb_usage_error("%s", errbuf);
	if (cb_parse_rate(a->rate ? a->rate : "100%", &rate))
		cb_usage_error("bad --rate '%s': use e.g. 1.2Mpps, 800kpps, 1g, 100%% or max", a->rate);
	err = cb_schedule_build(&cfg->sched, &cfg->sizes, cfg->seed, &rate, cfg->link_bps);
	if (err == -ENOMEM)
		cb_fatal("out of memory");
	if (err == -ERANGE && cfg->sizes.min_len == cfg->sizes.max_len)
		cb_usage_error("--rate %s is above the wire rate of a %g Gbit/s link at %u B "
			       "(%.0f pps): lower it or raise --link", a->rate, cfg->link_bps / 1e9,
			       cfg->sizes.min_len, cb_wire_pps(cfg->link_bps, cfg->sizes.min_len));
	if (err == -ERANGE)
		cb_usage_error("--rate %s is above the wire rate of a %g Gbit/s link for --size %s "
			       "(mean frame %.1f B): lower it or raise --link", a->rate,
			       cfg->link_bps / 1e9, cfg->size_spec, cfg->sched.mean_len);
	if (err)
		cb_usage_error("bad --rate '%s'", a->rate);
	cfg->pps = cfg->sched.target_pps;
	if (rate.kind == CB_RATE_BPS)
		cfg->target_wire_bps = rate.value;
	else if (rate.kind == CB_RATE_PERCENT)
		cfg->target_wire_bps = cfg->link_bps * rate.value / 100.0;
	cfg->spec.frame_len = cfg->sched.max_len;
	if (a->count)
		cfg->count = cb_opt_count("--count", a->count, "frames");
	if (a->duration)
		cfg->duration_s = cb_opt_seconds("--duration", a->duration);
	if (a->interval)
		cfg->interval_s = cb_opt_seconds("--interval", a->interval);
	if (a->cpu)
		cfg->cpu = cb_opt_cpu("--cpu", a->cpu);
	if (a->dst_mac && cb_parse_mac(a->dst_mac, cfg->spec.dst_mac))
		cb_usage_error("bad --dst-mac '%s': use aa:bb:cc:dd:ee:ff", a->dst_mac);
	if (a->src_mac && cb_parse_mac(a->src_mac, cfg->spec.src_mac))
		cb_usage_error("bad --src-mac '%s': use aa:bb:cc:dd:ee:ff", a->src_mac);

	cfg->ifindex = cb_ifindex(cfg->iface);
	if (cfg->ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)",
			       cfg->iface);
	mtu = cb_if_mtu(cfg->iface);
	if (mtu > 0 && cfg->spec.frame_len > (unsigned int)mtu + 18)
		cb_usage_error("--size %s holds %u B frames, which do not fit %s (MTU %d allows "
			       "frames up to %d B): lower --size or raise the MTU", cfg->size_spec,
			       cfg->spec.frame_len, cfg->iface, mtu, mtu + 18);
	if (!a->src_mac)
		cb_if_mac(cfg->iface, cfg->spec.src_mac);
}

static void print_interval(double t_s, const struct gen_progress *p,
			   const struct gen_progress *prev, double dt_s)
{
	struct cb_json j;

	cb_json_begin(&j, "interval");
	cb_json_double(&j, "t_s", t_s);
	cb_json_u64(&j, "sent", p->sent);
	cb_json_double(&j, "pps", dt_s > 0 ? (double)(p->sent - prev->sent) / dt_s : 0);
	cb_json_double(&j, "wire_bps",
		       dt_s > 0 ? (double)(p->wire_bytes - prev->wire_bytes) * 8.0 / dt_s : 0);
	cb_json_end(&j, stdout);
}

/* The lengths of the `sent` frames: they left in schedule order, so the
 * schedule tells them without any count on the hot path. */
static void put_sent_lengths(struct cb_json *j, const struct cb_schedule *s, uint64_t sent)
{
	uint64_t *hist = calloc(CB_FRAME_MAX + 1, sizeof(*hist));
	uint64_t cycles = sent / s->n, rest = sent % s->n;
	char key[16];

	if (!hist)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		hist[s->e[i].len] += cycles + (i < rest);
	cb_json_obj_begin(j, "sent_lengths");
	for (unsigned int len = 0; len <= CB_FRAME_MAX; len++) {
		if (!hist[len])
			continue;
		snprintf(key, sizeof(key), "%u", len);
		cb_json_u64(j, key, hist[len]);
	}
	cb_json_obj_end(j);
	free(hist);
}

static void print_summary(const struct gen_cfg *cfg, const char *engine,
			  const struct gen_progress *p, double wall_s, int err)
{
	static struct cb_json j;
	double span_s = (double)(p->last_tx_ns - p->first_tx_ns) / 1e9;
	double achieved = p->sent > 1 && span_s > 0 ? (double)(p->sent - 1) / span_s : 0;
	double achieved_bps = p->sent ? achieved * (double)p->wire_bytes * 8.0 / (double)p->sent : 0;
	double offered_share = 0;

	cb_json_begin(&j, "summary");
	cb_json_str(&j, "engine", engine);
	cb_json_str(&j, "iface", cfg->iface);
	cb_json_str(&j, "size", cfg->size_spec);
	if (cfg->sched.min_len == cfg->sched.max_len)
		cb_json_u64(&j, "frame_len", cfg->sched.max_len);
	cb_json_double(&j, "mean_frame_len", cfg->sched.mean_len);
	cb_json_u64(&j, "min_frame_len", cfg->sched.min_len);
	cb_json_u64(&j, "max_frame_len", cfg->sched.max_len);
	cb_json_u64(&j, "schedule_len", cfg->sched.n);
	cb_json_u64(&j, "seed", cfg->seed);
	cb_json_double(&j, "link_bps", cfg->link_bps);
	cb_json_double(&j, "target_pps", cfg->pps);
	cb_json_u64(&j, "sent", p->sent);
	/* The sending time: the span of departures plus one gap, so that
	 * sent / duration_s is the mean departure rate. */
	cb_json_double(&j, "duration_s", achieved > 0 ? (double)p->sent / achieved : wall_s);
	cb_json_double(&j, "wall_s", wall_s);
	cb_json_double(&j, "achieved_pps", achieved);
	cb_json_u64(&j, "wire_bytes", p->wire_bytes);
	/* Each frame's own wire time: the mean wire bytes of what was sent. */
	cb_json_double(&j, "achieved_wire_bps", achieved_bps);
	/* How much of the offered load left: by bits for a bit rate (a drawn
	 * profile's first frames need not have the cycle's mean length), by
	 * frames for a packet rate; 0 when unpaced. */
	if (cfg->target_wire_bps > 0)
		offered_share = achieved_bps / cfg->target_wire_bps;
	else if (cfg->pps > 0)
		offered_share = achieved / cfg->pps;
	cb_json_double(&j, "offered_share", offered_share);
	cb_json_u64(&j, "late", p->late);
	cb_json_u64(&j, "max_lag_ns", p->max_lag_ns);
	cb_json_u64(&j, "tx_busy", p->tx_busy);
	cb_json_i64(&j, "cpu", cfg->cpu);
	cb_json_u64(&j, "first_tx_ns", p->first_tx_ns);
	cb_json_u64(&j, "last_tx_ns", p->last_tx_ns);
	put_sent_lengths(&j, &cfg->sched, p->sent);
	if (err)
		cb_json_str(&j, "error", strerror(-err));
	if (cb_json_end(&j, stdout))
		fprintf(stderr, "capbench-gen: cannot write the summary line: %s\n", strerror(errno));
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };

	/* Returns early with EINTR on SIGINT/SIGTERM: that is what we want. */
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int main(int argc, char **argv)
{
	struct gen_args args = { 0 };
	struct gen_cfg cfg;
	const struct gen_engine *engine;
	struct gen_progress p = { 0 }, prev = { 0 };
	struct sigaction sa = { .sa_handler = on_stop_signal };
	void *state = NULL;
	uint64_t start, next_tick, end, prev_tick;
	int err;

	cb_set_progname(argv[0]);
	parse_args(argc, argv, &args);
	engine = find_engine(args.engine ? args.engine : "xdp");
	configure(&args, &cfg);
	if (geteuid() != 0)
		cb_usage_error("must run as root (sending raw frames and BPF_PROG_RUN need "
			       "CAP_NET_ADMIN and CAP_BPF): run it with sudo");

	/* Pin before the engine starts its thread, which inherits it. */
	if (cfg.cpu >= 0 && (err = cb_pin_cpu(cfg.cpu)))
		cb_usage_error("cannot pin to CPU %d: %s", cfg.cpu, strerror(-err));

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	err = engine->open(&cfg, &state);
	if (err)
		return err == -EPERM || err == -EINVAL ? CB_EXIT_USAGE : CB_EXIT_RUNTIME;

	start = cb_now_ns();
	err = engine->start(state);
	if (err) {
		fprintf(stderr, "capbench-gen: cannot start the %s engine: %s\n", engine->name,
			strerror(-err));
		engine->close(state);
		return CB_EXIT_RUNTIME;
	}
	end = cfg.duration_s > 0 ? start + (uint64_t)(cfg.duration_s * 1e9) : UINT64_MAX;
	prev_tick = start;
	next_tick = start + (uint64_t)(cfg.interval_s * 1e9);

	while (!stop_requested && !engine->finished(state)) {
		uint64_t now = cb_now_ns(), wake = next_tick < end ? next_tick : end;

		if (now >= end)
			break;
		if (cfg.count) {
			engine->progress(state, &p);
			if (p.sent >= cfg.count)
				break;
			/* Poll the count every millisecond. */
			if (wake > now + 1000000)
				wake = now + 1000000;
		}
		if (now >= next_tick) {
			engine->progress(state, &p);
			print_interval((double)(now - start) / 1e9, &p, &prev,
				       (double)(now - prev_tick) / 1e9);
			prev = p;
			prev_tick = now;
			next_tick += (uint64_t)(cfg.interval_s * 1e9);
			continue;
		}
		sleep_until(wake);
	}
	err = engine->stop(state);
	engine->progress(state, &p);
	print_summary(&cfg, engine->name, &p, (double)(cb_now_ns() - start) / 1e9, err);
	engine->close(state);
	cb_schedule_free(&cfg.sched);
	cb_sizes_free(&cfg.sizes);
	return err ? CB_EXIT_RUNTIME : CB_EXIT_OK;
}
