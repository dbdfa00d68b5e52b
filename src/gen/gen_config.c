/* SPDX-License-Identifier: MIT */
/*
 * capbench-gen's options: from the command line to a checked plan of one or
 * more lanes (sending threads). Every problem ends the program with one line
 * naming the value and the fix, exit status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "rate.h"
#include "util.h"

#define DEFAULT_ENGINE "xdp"

/* The engines, one line each (src/gen/engine_NAME.c defines
 * gen_engine_NAME): this line and the file's in meson.build are all that
 * adding one takes. */
#define GEN_ENGINES(X) \
	X(xdp)         \
	X(xdploop)     \
	X(afpacket)

#define DECLARE(name) extern const struct gen_engine gen_engine_##name;
#define ENTRY(name) &gen_engine_##name,

GEN_ENGINES(DECLARE)

const struct gen_engine *const gen_engines[] = {
	GEN_ENGINES(ENTRY)
	NULL,
};

#define AT(field) CB_OPT_AT(struct gen_args, field)

/* The options every engine takes; their values are checked by configure()
 * and the functions it calls (the rows' ranges say the same for --help and
 * --describe). */
static const struct cb_opt common_options[] = {
	{ .name = "iface", .short_name = 'i', .type = CB_OPT_STRING, .arg = "IF",
	  .help = "interface to send on (required)", AT(iface) },
	{ .name = "engine", .short_name = 'e', .type = CB_OPT_STRING, .arg = "NAME", .has_default = 1,
	  .def_text = DEFAULT_ENGINE, .help = "the engine (below; afpacket with --replay)", AT(engine) },
	{ .name = "size", .short_name = 's', .type = CB_OPT_STRING, .arg = "SIZE", .has_default = 1,
	  .def_text = "64", .help = "frame length incl. 4 B FCS, 64..MTU+18, or a profile (below)",
	  AT(size) },
	{ .name = "seed", .type = CB_OPT_COUNT, .arg = "N", .has_default = 1, .def = 1,
	  .help = "seed of the drawn profiles: the same seed, the same frames", AT(seed) },
	{ .name = "rate", .short_name = 'r', .type = CB_OPT_STRING, .arg = "RATE",
	  .help = "(required) 1.2Mpps, 800kpps, 5000pps; 1g, 950m (bits/s on the wire, incl. "
	  "20 B preamble+gap); 100% of --link; max = unpaced; original = a --replay capture's own "
	  "timing. Bit rates give every frame its own wire time; packet rates give every frame the "
	  "same gap", AT(rate) },
	{ .name = "link", .short_name = 'l', .type = CB_OPT_STRING, .arg = "SPEED", .has_default = 1,
	  .def_text = "1g", .help = "emulated link: 1g, 10g, 25g, 40g, 100g", AT(link) },
	{ .name = "count", .short_name = 'c', .type = CB_OPT_COUNT, .arg = "N", .min = 1,
	  .max = CB_COUNT_MAX, .help = "send exactly N frames, then stop", AT(count) },
	{ .name = "duration", .short_name = 'd', .type = CB_OPT_SECONDS, .arg = "S",
	  .max = (uint64_t)CB_SECONDS_MAX, .has_default = 1, .def = GEN_DURATION_DEFAULT_S,
	  .help = "send for S seconds (5, 5s, 250ms, 2m), timed from the first departure: a paced "
	  "--rate R sends exactly round(R x S) frames (a bit rate or a size mix: its mean frames per "
	  "second); max sends for S seconds. The default holds without --count, --groups and "
	  "--replay; 0 sends until SIGINT or SIGTERM", AT(duration) },
	{ .name = "trailer", .type = CB_OPT_COUNT, .arg = "N", .min = 0, .max = GEN_TRAILER_MAX,
	  .has_default = 1, .def = GEN_TRAILER_DEFAULT, .help = "end every stream with N trailer "
	  "frames carrying its last sequence number and sent count, 50 ms apart after a 50 ms "
	  "pause, so a counter can count tail loss (0 = none; not with --replay)", AT(trailer) },
	{ .name = "catch-up", .type = CB_OPT_COUNT, .arg = "N", .min = 0, .max = GEN_CATCHUP_MAX,
	  .has_default = 1, .def = GEN_CATCHUP_DEFAULT,
	  .help = "a paced generator that fell behind may send up to N frames faster than the "
		  "link's wire rate to catch up; beyond that it keeps the wire rate and the lag "
		  "stays (256: a veth's and a small NIC's receive ring)", AT(catchup) },
	{ .name = "cpu", .type = CB_OPT_CPU, .arg = "N", .help = "pin the generator to CPU N",
	  AT(cpu) },
	{ .name = "threads", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = GEN_MAX_THREADS,
	  .has_default = 1, .def = 1, .help = "N sending threads, each its own stream (UDP source "
	  "port 52224 + stream) and sequence numbers; --rate and --count are totals split between "
	  "them", AT(threads) },
	{ .name = "cpus", .type = CB_OPT_CPUS, .arg = "LIST", .has_default = 1,
	  .def_text = "from --cpu on", .help = "their CPUs, e.g. 0,1 or 0-1", AT(cpus) },
	{ .name = "burst", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = UINT32_MAX,
	  .help = "N frames back to back at the link's wire rate, then a pause that keeps the "
	  "mean --rate (RFC 2544 back-to-back)", AT(burst) },
	{ .name = "groups", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = CB_COUNT_MAX,
	  .help = "send N groups of --group-size frames, --group-gap apart; the counter reports "
	  "every group (seed 004)", AT(groups) },
	{ .name = "group-size", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = CB_COUNT_MAX,
	  .help = "frames per group", AT(group_size) },
	{ .name = "group-gap", .type = CB_OPT_SECONDS, .arg = "S", .has_default = 1, .def = 0,
	  .max = (uint64_t)CB_SECONDS_MAX, .help = "pause between groups", AT(group_gap) },
	{ .name = "interval", .type = CB_OPT_SECONDS, .arg = "S", .has_default = 1, .def = 1,
	  .help = "seconds between interval lines", AT(interval) },
	{ .name = "dst-mac", .type = CB_OPT_STRING, .arg = "MAC", .help = "(required but with "
	  "--replay) destination MAC: the receiver's (`ip neigh` shows the neighbours'), or one no "
	  "host has, which a receiver sees as PACKET_OTHERHOST", AT(dst_mac) },
	{ .name = "src-mac", .type = CB_OPT_STRING, .arg = "MAC", .has_default = 1,
	  .def_text = "the interface's", .help = "source MAC", AT(src_mac) },
	{ .name = "check", .type = CB_OPT_FLAG, .help = "check the options, print one \"check\" "
	  "line (frame lengths, mean wire rate) and exit without sending; --iface may then be left "
	  "out (it needs no privileges: it opens nothing)", AT(check) },
	{ .name = "probe", .type = CB_OPT_FLAG, .help = "with --check: first ask the kernel whether "
	  "it runs --engine, sending nothing (xdp: BPF_PROG_RUN with live frames, which some "
	  "kernels refuse); exit status 2 and one line when it does not (this needs the engine's "
	  "privileges)", AT(probe) },
	{ .name = "mtu", .type = CB_OPT_COUNT, .arg = "N", .min = 46, .max = 65535, .has_default = 1,
	  .def_text = "--iface's", .help = "with --check: the MTU to check --size against", AT(mtu) },
	{ .name = "describe", .type = CB_OPT_FLAG, .help = "print the engines, size profiles and "
	  "options as one JSON document and exit", AT(describe) },
	{ .name = "version", .short_name = 'V', .type = CB_OPT_FLAG, .help = "print the version and exit",
	  AT(version) },
	{ .name = "help", .short_name = 'h', .type = CB_OPT_FLAG, .help = "this help", AT(help) },
	CB_OPT_END,
};

uint64_t gen_engine_caps(const struct gen_engine *e)
{
	return CB_CAP_NET_RAW | (strcmp(e->caps.pacing, "kernel") ? 0 : CB_CAP_NET_ADMIN | CB_CAP_BPF) |
	       (e->caps.own_netns ? CB_CAP_SYS_ADMIN : 0);
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: capbench-gen --iface IF [options]\n"
"\n"
"Send Ethernet/IPv4/UDP test frames, each stamped with a sequence number and\n"
"a TX timestamp, at a precise rate. Prints JSON Lines: one \"interval\" line\n"
"per --interval and one \"summary\" line at exit. Needs its engine's capabilities\n"
"(below), as root or granted (docs/capabilities.md).\n"
"\n");
	cb_opt_help(out, common_options);
	fprintf(out, "\n--size SIZE:\n");
	for (const struct cb_size_form *f = cb_size_forms; f->name; f++) {
		char forms[64] = "";

		for (int i = 0; i < 4 && f->forms[i]; i++)
			snprintf(forms + strlen(forms), sizeof(forms) - strlen(forms), "%s%s",
				 i ? ", " : "", f->forms[i]);
		fprintf(out, "  %-26s %s\n", forms, f->help);
	}
	for (int i = 0; gen_engines[i]; i++) {
		char caps[160];

		cb_caps_text(gen_engine_caps(gen_engines[i]), caps, sizeof(caps), 0);
		fprintf(out, "\n--engine %s%s: %s\n  needs %s\n", gen_engines[i]->name,
			strcmp(gen_engines[i]->name, DEFAULT_ENGINE) ? "" : " (default)",
			gen_engines[i]->describe, caps);
		cb_opt_help(out, gen_engines[i]->options);
	}
	fprintf(out,
"\n"
"It sends only what it is told to, wherever --iface leads: --rate and --dst-mac\n"
"are required, and without --count, --groups or --replay it stops after\n"
"--duration's default; --duration 0 sends until SIGINT or SIGTERM.\n"
"Example: capbench-gen --iface veth0 --size 64 --rate 100%% --link 1g --duration 5 \\\n"
"           --dst-mac 02:00:00:00:00:02\n");
}

static const struct gen_engine *find_engine(const char *name)
{
	char names[256] = "";
	int n = 0;

	for (int i = 0; gen_engines[i]; i++)
		if (!strcmp(gen_engines[i]->name, name))
			return gen_engines[i];
	while (gen_engines[n])
		n++;
	for (int i = 0; i < n; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s--engine %s",
			 i == 0 ? "" : i + 1 == n ? " or " : ", ", gen_engines[i]->name);
	cb_usage_error("unknown engine '%s': use %s", name, names);
}

/* The first engine that sends a capture's frames (caps.replay): --replay's
 * engine when none is given, and the one its error line names. */
static const struct gen_engine *replay_engine(void)
{
	for (int i = 0; gen_engines[i]; i++)
		if (gen_engines[i]->caps.replay)
			return gen_engines[i];
	cb_usage_error("--replay: no engine of this capbench-gen sends a capture's frames");
}

static void set_tables(struct cb_opt_set *s)
{
	cb_opt_set_init(s, common_options, "--engine");
	for (int i = 0; gen_engines[i]; i++)
		cb_opt_set_add(s, gen_engines[i]->name, gen_engines[i]->options);
}

int gen_describe(FILE *out)
{
	static struct cb_json j;

	cb_opt_describe_begin(&j, "capbench-gen", GEN_DESCRIBE_VERSION);
	cb_json_arr_begin(&j, "engines");
	for (int i = 0; gen_engines[i]; i++) {
		const struct gen_engine *e = gen_engines[i];

		cb_opt_describe_variant(&j, e->name, e->describe, e->seed, e->options);
		cb_json_obj_begin(&j, "capabilities");
		cb_json_str(&j, "pacing", e->caps.pacing);
		cb_json_bool(&j, "replay", e->caps.replay);
		cb_json_bool(&j, "own_netns", e->caps.own_netns);
		cb_json_str(&j, "refusals", e->caps.refusals);
		cb_json_str(&j, "sends_from", e->caps.sends_from);
		cb_json_strs(&j, "needs", e->caps.needs, 4);
		cb_json_obj_end(&j);
		cb_json_obj_end(&j);
	}
	cb_json_arr_end(&j);
	cb_json_arr_begin(&j, "size_profiles");
	for (const struct cb_size_form *f = cb_size_forms; f->name; f++) {
		cb_json_elem_begin(&j);
		cb_json_str(&j, "name", f->name);
		cb_json_strs(&j, "forms", f->forms, 4);
		cb_json_str(&j, "help", f->help);
		if (f->lengths) {
			cb_json_arr_begin(&j, "lengths");
			for (unsigned int i = 0; i < f->n_lengths; i++)
				cb_json_arr_u64(&j, f->lengths[i]);
			cb_json_arr_end(&j);
		}
		cb_json_obj_end(&j);
	}
	cb_json_arr_end(&j);
	cb_opt_describe(&j, "common_options", common_options);
	cb_json_str(&j, "default_engine", DEFAULT_ENGINE);
	return cb_json_end(&j, out);
}

static void parse_args(int argc, char **argv, struct gen_args *a, struct cb_opt_set *s)
{
	set_tables(s);
	cb_opt_collect(s, argc, argv);
	cb_opt_apply_text(s, common_options, a);
	for (int i = 0; gen_engines[i]; i++)
		cb_opt_apply_text(s, gen_engines[i]->options, a);
	if (a->help) {
		usage(stdout);
		exit(CB_EXIT_OK);
	}
	if (a->version)
		cb_print_version();
	if (a->describe)
		exit(gen_describe(stdout) ? CB_EXIT_RUNTIME : CB_EXIT_OK);
	if (a->probe && !a->check)
		cb_usage_error("--probe goes with --check (a real run asks the kernel when it starts)");
	if (a->mtu && !a->check)
		cb_usage_error("--mtu goes with --check (a real run uses the interface's MTU)");
	if (a->check && !a->iface && !a->mtu)
		cb_usage_error("--check needs --iface IF or --mtu N to check frame lengths against");
}

/* The MTU frame lengths are checked against: --mtu (with --check), else the
 * interface's; exits 2 for an unknown interface. */
static int check_mtu(const struct gen_args *a)
{
	int mtu;

	if (a->mtu) {
		uint64_t v = cb_opt_count("--mtu", a->mtu, "bytes");

		if (v < 46 || v > 65535)
			cb_usage_error("bad --mtu '%s': give 46..65535", a->mtu);
		return (int)v;
	}
	mtu = cb_if_mtu(a->iface);
	if (mtu < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)", a->iface);
	return mtu;
}

/* Turn the parsed strings into a checked configuration; every problem is
 * one line naming the value and the fix. */
/* The capture's frame lengths as a cycled profile, so that schedule entry i
 * is frame i of the capture. */
static int replay_sizes(const struct gen_replay *r, struct cb_size_profile *p,
			const struct gen_args *a)
{
	unsigned int *lens = malloc(r->n * sizeof(*lens));
	int err;

	if (a->size)
		cb_usage_error("--size and --replay do not go together: a replay sends the "
			       "capture's own frames");
	if (!lens)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n; i++)
		lens[i] = r->len[i] + CB_FCS_LEN;
	err = cb_sizes_cycle(p, lens, r->n);
	free(lens);
	return err;
}

/* --rate original: the capture's own gaps. */
static void replay_timing(const struct gen_replay *r, struct cb_schedule *s)
{
	uint64_t total_ns = 0;

	for (uint32_t i = 0; i < r->n; i++) {
		s->e[i].gap_fp16 = r->gap_ns[i] << 16;
		total_ns += r->gap_ns[i];
	}
	s->paced = 1;
	s->target_pps = total_ns ? (double)r->n * 1e9 / (double)total_ns : 0;
}

/* --duration S, or 0: no time bound (until SIGINT/SIGTERM or a count). */
static double parse_duration(const char *s)
{
	double v;

	if (!cb_parse_double(s, &v) && v == 0)
		return 0;
	if (cb_parse_duration(s, &v))
		cb_usage_error("bad --duration '%s': give seconds, e.g. 5, 5s or 250ms (0: until "
			       "stopped)", s);
	return cb_opt_seconds("--duration", s, 0, CB_SECONDS_MAX);
}

static void configure(const struct gen_args *a, struct gen_cfg *cfg, struct cb_rate *rate_out,
		      const struct gen_replay *replay)
{
	struct cb_rate rate;
	char errbuf[512];
	int mtu, err, original;

	memset(cfg, 0, sizeof(*cfg));
	cfg->cpu = -1;
	cfg->interval_s = 1.0;
	cfg->link_bps = 1e9;
	cb_frame_spec_default(&cfg->spec);

	if (!a->iface && !a->check)
		cb_usage_error("no interface given: use --iface IF (see --help)");
	cfg->iface = a->iface;
	if (a->link && cb_parse_link(a->link, &cfg->link_bps))
		cb_usage_error("bad --link '%s': use 1g, 10g, 25g, 40g or 100g", a->link);
	cfg->size_spec = replay ? "replay" : a->size ? a->size : "64";
	if (a->seed && cb_parse_u64(a->seed, &cfg->seed))
		cb_usage_error("bad --seed '%s': give a whole number", a->seed);
	else if (!a->seed)
		cfg->seed = 1;
	if (replay)
		err = replay_sizes(replay, &cfg->sizes, a);
	else
		err = cb_sizes_parse(cfg->size_spec, &cfg->sizes, errbuf, sizeof(errbuf));
	if (err == -ENOMEM)
		cb_fatal("out of memory");
	if (err)
		cb_usage_error("%s", errbuf);
	/* The frames leave on whatever link --iface is, a real one too: nothing
	 * is sent at a rate nobody chose. */
	if (!a->rate)
		cb_usage_error("no --rate given: say how fast to send, e.g. --rate 10kpps, --rate 10%% "
			       "--link 1g or --rate max (unpaced)%s",
			       replay ? ", or --rate original for the capture's own timing" : "");
	original = replay && !strcmp(a->rate, "original");
	if (original)
		rate = (struct cb_rate){ CB_RATE_MAX, 0 };
	else if (!strcmp(a->rate, "original"))
		cb_usage_error("--rate original keeps the timing of a --replay capture: give --replay FILE");
	else if (cb_parse_rate(a->rate, &rate))
		cb_usage_error("bad --rate '%s': use e.g. 1.2Mpps, 800kpps, 1g, 100%% or max", a->rate);
	err = cb_schedule_build(&cfg->sched, &cfg->sizes, cfg->seed, &rate, cfg->link_bps);
	if (!err && original)
		replay_timing(replay, &cfg->sched);
	cfg->replay_original = original;
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
	if (cfg->sched.paced && !original && cfg->sched.target_pps < GEN_RATE_MIN_PPS)
		cb_usage_error("--rate %s is %.3g frames per second, below the %g capbench-gen paces: "
			       "give a higher --rate", a->rate, cfg->sched.target_pps, GEN_RATE_MIN_PPS);
	cfg->pps = cfg->sched.target_pps;
	if (rate.kind == CB_RATE_BPS)
		cfg->target_wire_bps = rate.value;
	else if (rate.kind == CB_RATE_PERCENT)
		cfg->target_wire_bps = cfg->link_bps * rate.value / 100.0;
	cfg->spec.frame_len = cfg->sched.max_len;
	if (a->count)
		cfg->count = cb_opt_count("--count", a->count, "frames");
	if (a->duration)
		cfg->duration_s = parse_duration(a->duration);
	if (a->interval)
		cfg->interval_s = cb_opt_interval("--interval", a->interval);
	if (a->cpu)
		cfg->cpu = cb_opt_cpu("--cpu", a->cpu);
	/* A made-up destination would still leave on a real link, to every
	 * port a switch floods it to: the frames go where they are sent. A
	 * replay sends the capture's frames, MACs and all. */
	if (!a->dst_mac && !replay)
		cb_usage_error("no --dst-mac given: say whose MAC the frames go to, e.g. the "
			       "receiver's (`ip neigh` shows the neighbours')");
	if (a->dst_mac && cb_parse_mac(a->dst_mac, cfg->spec.dst_mac))
		cb_usage_error("bad --dst-mac '%s': use aa:bb:cc:dd:ee:ff", a->dst_mac);
	if (a->src_mac && cb_parse_mac(a->src_mac, cfg->spec.src_mac))
		cb_usage_error("bad --src-mac '%s': use aa:bb:cc:dd:ee:ff", a->src_mac);

	if (cfg->iface) {
		cfg->ifindex = cb_ifindex(cfg->iface);
		if (cfg->ifindex < 0)
			cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)",
				       cfg->iface);
	}
	mtu = check_mtu(a);
	if (mtu > 0 && cfg->spec.frame_len > (unsigned int)mtu + 18 && a->mtu)
		cb_usage_error("--size %s holds %u B frames, longer than the %d B an MTU of %d "
			       "carries: lower --size", cfg->size_spec, cfg->spec.frame_len, mtu + 18, mtu);
	if (mtu > 0 && cfg->spec.frame_len > (unsigned int)mtu + 18)
		cb_usage_error("--size %s holds %u B frames, which do not fit %s (MTU %d allows "
			       "frames up to %d B): lower --size or raise the MTU", cfg->size_spec,
			       cfg->spec.frame_len, cfg->iface, mtu, mtu + 18);
	if (cfg->iface && !a->src_mac)
		cb_if_mac(cfg->iface, cfg->spec.src_mac);
	*rate_out = rate;
}

/* Bursts and groups (pacing.h). */
static void configure_shapes(const struct gen_args *a, struct gen_cfg *cfg)
{
	uint64_t groups = 0;

	if (a->burst) {
		uint64_t b = cb_opt_count("--burst", a->burst, "frames");

		if (b > UINT32_MAX)
			cb_usage_error("--burst %s is too long: at most %u frames", a->burst, UINT32_MAX);
		if (!cfg->sched.paced)
			cb_usage_error("--burst needs a paced --rate (bursts keep the mean rate), not max");
		cfg->pace.burst = (unsigned int)b;
	}
	if (a->groups)
		groups = cb_opt_count("--groups", a->groups, "groups");
	if (a->group_size)
		cfg->pace.group_size = cb_opt_count("--group-size", a->group_size, "frames");
	if (a->group_gap)
		cfg->pace.group_gap_fp16 = (uint64_t)(
			cb_opt_seconds("--group-gap", a->group_gap, 0, CB_SECONDS_MAX) * 1e9 * 65536.0);
	if ((a->groups || a->group_gap) && !a->group_size)
		cb_usage_error("--groups and --group-gap need --group-size (frames per group)");
	if (groups) {
		if (a->count)
			cb_usage_error("give either --count or --groups, not both "
				       "(--groups N sends N x --group-size frames)");
		if (cfg->pace.group_size > UINT64_MAX / groups)
			cb_usage_error("--groups %s x --group-size %s is too many frames", a->groups,
				       a->group_size);
		cfg->count = groups * cfg->pace.group_size;
	}
	if (cfg->pace.group_gap_fp16 && !cfg->sched.paced)
		cb_usage_error("--group-gap needs a paced --rate, not max");
}

static struct cb_rate rate_share(struct cb_rate r, unsigned int n)
{
	if (r.kind != CB_RATE_MAX)
		r.value /= n;
	return r;
}

/* One lane per thread: its own stream id, CPU, share of the rate and count,
 * and a schedule drawn from seed + stream. */
static void make_lanes(const struct gen_args *a, struct gen_plan *plan, const struct cb_rate *rate)
{
	const struct gen_cfg *t = &plan->total;
	int cpus[GEN_MAX_THREADS], ncpus = 0;
	uint64_t n = 1;

	if (a->threads) {
		n = cb_opt_count("--threads", a->threads, "threads");
		if (n > (uint64_t)cb_cpu_count() || n > GEN_MAX_THREADS)
			cb_usage_error("--threads %s is more than the %d CPUs this process may use: one "
				       "thread per core at most", a->threads, cb_cpu_count());
	}
	if (n > 1 && t->pace.group_size)
		cb_usage_error("--groups and --group-size work with one thread: leave out --threads");
	if (n > 1 && t->replay)
		cb_usage_error("--replay sends from one thread: leave out --threads");
	if (a->cpus) {
		ncpus = cb_opt_cpu_list("--cpus", a->cpus, cpus, GEN_MAX_THREADS);
		if ((uint64_t)ncpus != n)
			cb_usage_error("--cpus %s names %d CPUs for %llu threads: give one per thread",
				       a->cpus, ncpus, (unsigned long long)n);
	} else if (t->cpu >= 0) {
		for (uint64_t i = 0; i < n; i++) {
			cpus[i] = (int)((uint64_t)t->cpu + i);
			if (cpus[i] >= cb_cpu_count())
				cb_usage_error("--threads %s from --cpu %d runs past the last CPU: "
					       "give --cpus", a->threads, t->cpu);
		}
		ncpus = (int)n;
	}
	plan->n = (unsigned int)n;
	for (unsigned int i = 0; i < plan->n; i++) {
		struct gen_cfg *l = &plan->lanes[i];
		struct cb_rate share = rate_share(*rate, plan->n);

		*l = *t;
		l->spec.stream = (uint8_t)i;
		l->cpu = ncpus ? cpus[i] : -1;
		l->lanes = plan->n;
		l->seed = t->seed + i;
		if (t->count)
			l->count = cb_lane_count(t->count, plan->n, i);
		if (cb_schedule_build(&l->sched, &t->sizes, l->seed, &share, t->link_bps))
			cb_fatal("cannot build the schedule of stream %u", i);
		if (t->replay_original)
			replay_timing(t->replay, &l->sched);
		l->pps = l->sched.target_pps;
		l->target_wire_bps = t->target_wire_bps / n;
		l->pace.sched_len = l->sched.n;
	}
	if (t->count && t->count < n && a->count)
		cb_usage_error("--count %llu is less than one frame per thread (--threads %llu)",
			       (unsigned long long)t->count, (unsigned long long)n);
	if (t->count && t->count < n)
		cb_usage_error("--duration %g at %.6g pps is %llu frames, less than one per thread "
			       "(--threads %llu): give a longer --duration", t->duration_s, t->pps,
			       (unsigned long long)t->count, (unsigned long long)n);
}

static void load_replay(const struct gen_args *a, struct gen_plan *plan);

/* --duration at a paced rate: the frames its schedule holds from the first
 * departure, round(target_pps x S), so the count is exact and does not
 * depend on how long the engine took to start; with --count (or --groups)
 * too, the smaller of the two. Unpaced, the duration stays a time bound. */
static void configure_count(const struct gen_args *a, struct gen_cfg *cfg)
{
	uint64_t n;

	if (!cfg->duration_s || !cfg->sched.paced)
		return;
	n = cb_frames_in(cfg->pps, cfg->duration_s);
	if (!n)
		cb_usage_error("--duration %s at %.6g pps is less than one frame: give a longer "
			       "--duration or a higher --rate", a->duration, cfg->pps);
	if (!cfg->count || n < cfg->count)
		cfg->count = n;
}

/* A plan's frames, at most CB_COUNT_MAX (--groups x --group-size and
 * --loop x the capture's frames may multiply past it), and how long a paced
 * plan with a count sends, from its first departure: its frames at the mean
 * rate plus the pauses between groups. Each departure is
 * a 64-bit count of 1/65536 ns from the first (pacing.h), which wraps after
 * 78 hours: a plan longer than CB_SECONDS_MAX (a day) is refused, so it
 * never gets near. */
static void check_span(const struct gen_args *a, const struct gen_cfg *cfg)
{
	double span_s;

	if (cfg->count > CB_COUNT_MAX)
		cb_usage_error("%s makes %llu frames, more than the 10^15 capbench-gen sends",
			       a->groups ? "--groups x --group-size" : "--loop",
			       (unsigned long long)cfg->count);
	if (!cfg->sched.paced || !cfg->count || !(cfg->pps > 0))
		return;
	span_s = (double)cfg->count / cfg->pps;
	if (cfg->pace.group_size)
		span_s += (double)(cfg->count / cfg->pace.group_size) *
			  ((double)cfg->pace.group_gap_fp16 / 65536e9);
	if (span_s > CB_SECONDS_MAX)
		cb_usage_error("%s at %.6g pps takes %.0f s, more than the %.0f s (a day) capbench-gen "
			       "sends for: send fewer frames or at a higher --rate",
			       a->groups ? "--groups x --group-size" : a->replay ? "--replay" : "--count",
			       cfg->pps, span_s, CB_SECONDS_MAX);
}

static void configure_trailer(const struct gen_args *a, struct gen_cfg *cfg)
{
	uint64_t n = GEN_TRAILER_DEFAULT;

	if (a->trailer && (cb_parse_u64(a->trailer, &n) || n > GEN_TRAILER_MAX))
		cb_usage_error("bad --trailer '%s': give 0..%u trailer frames per stream", a->trailer,
			       GEN_TRAILER_MAX);
	if (cfg->replay && a->trailer && n)
		cb_usage_error("--trailer goes with stamped frames, and a --replay sends the "
			       "capture's own: leave it out or give --trailer 0");
	cfg->trailer = cfg->replay ? 0 : (unsigned int)n;
}

uint64_t gen_catchup_ns(const struct gen_cfg *cfg)
{
	unsigned int lanes = cfg->lanes ? cfg->lanes : 1;

	return (uint64_t)((double)cfg->catchup * (cfg->sched.mean_len + CB_WIRE_OVERHEAD) * 8e9 /
			  cfg->link_bps * lanes);
}

static void configure_catchup(const struct gen_args *a, struct gen_cfg *cfg)
{
	uint64_t n = GEN_CATCHUP_DEFAULT;

	if (a->catchup && (cb_parse_u64(a->catchup, &n) || n > GEN_CATCHUP_MAX))
		cb_usage_error("bad --catch-up '%s': give 0..%u frames", a->catchup, GEN_CATCHUP_MAX);
	cfg->catchup = (unsigned int)n;
}

/* A count option of the engine's own table: the value given, else its row's
 * default, within its row's range (0 when the engine has no such option). */
static unsigned int engine_count(const struct gen_engine *e, const char *name, const char *given)
{
	const struct cb_opt *o = cb_opt_find(e->options, name);
	uint64_t n;

	if (!o)
		return 0;
	n = o->def;
	if (given && (cb_parse_u64(given, &n) || n < o->min || n > o->max))
		cb_usage_error("bad --%s '%s': give %llu..%llu", name, given, (unsigned long long)o->min,
			       (unsigned long long)o->max);
	return (unsigned int)n;
}

void gen_configure(int argc, char **argv, struct gen_plan *plan)
{
	static struct cb_opt_set opts;
	struct gen_args args = { 0 };
	struct cb_rate rate;

	parse_args(argc, argv, &args, &opts);
	plan->engine = args.engine ? find_engine(args.engine) : args.replay ? replay_engine() :
		       find_engine(DEFAULT_ENGINE);
	if (args.replay)
		load_replay(&args, plan);
	else if (args.loop)
		cb_usage_error("--loop repeats a --replay capture: give --replay FILE");
	/* After the lines above, which name the fix for --replay and --loop. */
	cb_opt_check_owner(&opts, plan->engine->options, plan->engine->name);
	configure(&args, &plan->total, &rate, args.replay ? &plan->replay : NULL);
	configure_shapes(&args, &plan->total);
	if (args.replay) {
		uint64_t loops = args.loop ? cb_opt_count("--loop", args.loop, "times") : 1;

		plan->total.replay = &plan->replay;
		if (args.loop && (args.count || args.duration))
			cb_usage_error("give --loop, or --count / --duration, not both");
		if (!args.count && !args.duration) {
			if (loops > UINT64_MAX / plan->replay.n)
				cb_usage_error("--loop %s is too many times", args.loop);
			plan->total.count = loops * plan->replay.n;
		}
	}
	/* Bounded unless told otherwise: a count of its own, or --duration 0. */
	if (!args.duration && !args.count && !args.groups && !args.replay) {
		plan->total.duration_s = GEN_DURATION_DEFAULT_S;
		plan->default_duration = 1;
	}
	configure_count(&args, &plan->total);
	check_span(&args, &plan->total);
	configure_trailer(&args, &plan->total);
	configure_catchup(&args, &plan->total);
	plan->total.loop_frames = engine_count(plan->engine, "loop-frames", args.loop_frames);
	plan->total.copies = engine_count(plan->engine, "copies", args.copies);
	make_lanes(&args, plan, &rate);
	plan->check_only = args.check;
	plan->probe = args.probe;
}

static void load_replay(const struct gen_args *a, struct gen_plan *plan)
{
	char errbuf[512];
	int mtu, err;

	if (!plan->engine->caps.replay)
		cb_usage_error("--replay works with --engine %s (the %s engine does not replay "
			       "captures)", replay_engine()->name, plan->engine->name);
	if (!a->iface && !a->check)
		cb_usage_error("no interface given: use --iface IF (see --help)");
	mtu = check_mtu(a);
	err = gen_replay_load(a->replay, (unsigned int)mtu + CB_ETH_HLEN, &plan->replay, errbuf,
			      sizeof(errbuf));
	if (err == -ENOMEM)
		cb_fatal("out of memory reading %s", a->replay);
	if (err)
		cb_usage_error("%s", errbuf);
}

void gen_plan_free(struct gen_plan *plan)
{
	for (unsigned int i = 0; i < plan->n; i++)
		cb_schedule_free(&plan->lanes[i].sched);
	cb_schedule_free(&plan->total.sched);
	cb_sizes_free(&plan->total.sizes);
	gen_replay_free(&plan->replay);
}

