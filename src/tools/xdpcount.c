/* SPDX-License-Identifier: MIT */
/*
 * capbench-xdpcount: attach the pass-and-count XDP program (xdp_count.bpf.c)
 * to an interface, print "ready", and at SIGINT/SIGTERM print how many frames
 * (and capbench frames) reached the interface. With --clone-to it is the tap
 * of several sensors instead: the count-and-clone program sends every frame
 * to each interface of the list (cb_tap in xdp_count.bpf.c). With --ring N
 * --ring-cpu C it is the receive ring of a NIC's depth (--rx-mode cpumap):
 * every frame goes into a cpumap queue of N frames whose kernel thread runs
 * on CPU C, "delivered" is counted there, and the queue's overflow is
 * counted from the kernel's tracepoints (cb_to_ring, cb_deliver,
 * cb_ring_* in xdp_count.bpf.c).
 *
 * The program is attached through a bpf_link: the kernel detaches it when
 * the last reference to the link goes away, i.e. when this process exits
 * for whatever reason, so a killed run leaves no XDP program behind.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/if_link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "jsonl.h"
#include "bpf_log.h"
#include "util.h"
#include "xdp_count.skel.h"
#include "xdp_prog.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* --clone-to IF,IF,...: each an interface of this namespace, none twice, not
 * the tap's own; their ifindexes into `out`; how many. */
static unsigned int parse_targets(const char *list, const char *iface, int *out)
{
	char buf[4096], *save = NULL, *name;
	unsigned int n = 0;

	if (strlen(list) >= sizeof(buf))
		cb_usage_error("--clone-to is too long: give at most %d interfaces", CB_TAP_MAX_TARGETS);
	strcpy(buf, list);
	for (name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int ifindex = cb_ifindex(name);

		if (ifindex < 0)
			cb_usage_error("--clone-to: unknown interface '%s': check `ip link` (and the namespace)", name);
		if (!strcmp(name, iface))
			cb_usage_error("--clone-to: %s is the tap's own interface", name);
		for (unsigned int i = 0; i < n; i++)
			if (out[i] == ifindex)
				cb_usage_error("--clone-to names %s twice", name);
		if (n == CB_TAP_MAX_TARGETS)
			cb_usage_error("--clone-to: at most %d interfaces", CB_TAP_MAX_TARGETS);
		out[n++] = ifindex;
	}
	if (!n)
		cb_usage_error("--clone-to is empty: give the interfaces to clone to, e.g. --clone-to t1,t2");
	return n;
}

/* --ring N --ring-cpu C: load the ring's programs, make the cpumap entry of
 * CPU C with a queue of N frames (its kernel thread starts then, bound to C)
 * and attach the tracepoint counters. Returns the map's id. */
static __u32 make_ring(struct xdp_count_bpf *skel, __u32 cpu, __u32 frames)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	struct bpf_cpumap_val val = { .qsize = frames };
	int err;

	if (bpf_obj_get_info_by_fd(bpf_map__fd(skel->maps.rx_ring), &info, &len))
		cb_fatal("cannot read the ring's map id: %s", strerror(errno));
	/* The tracepoints report every cpumap of the host: theirs filter on this id. */
	skel->bss->ring_map_id = info.id;
	val.bpf_prog.fd = bpf_program__fd(skel->progs.cb_deliver);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.rx_ring), &cpu, &val, BPF_ANY)) {
		err = errno;
		if (err == ENODEV || err == E2BIG)
			cb_usage_error("--ring-cpu %u is not a CPU of this machine", cpu);
		cb_fatal("cannot make the receive ring of %u frames on CPU %u: %s", frames, cpu, strerror(err));
	}
	if (!bpf_program__attach(skel->progs.cb_ring_enqueue) || !bpf_program__attach(skel->progs.cb_ring_kthread))
		cb_usage_error("cannot attach to the xdp:xdp_cpumap_enqueue/xdp_cpumap_kthread tracepoints "
			       "(%s): this kernel cannot count the ring's drops; use --rx-mode napi", strerror(errno));
	return info.id;
}

/* The verifier refuses the counter's packet accesses without CAP_PERFMON
 * (measured on 6.18). */
#define XDPCOUNT_CAPS (CB_CAP_NET_ADMIN | CB_CAP_BPF | CB_CAP_PERFMON)

static void usage(FILE *out)
{
	char caps[160];

	fprintf(out,
"Usage: capbench-xdpcount --iface IF [--mode native|generic] [--clone-to IF,IF,...]\n"
"                         [--ring FRAMES --ring-cpu CPU]\n"
"       capbench-xdpcount --help | --version\n"
"\n"
"Count the frames that reach IF with an XDP program that passes them on;\n"
"with --clone-to, count them and send a copy of each to every interface of\n"
"the list instead (a tap: each target veth's peer must run an XDP program).\n"
"With --ring, put every frame into a cpumap queue of FRAMES frames (1-%d)\n"
"whose kernel thread runs on CPU, count \"delivered\" there and the queue's\n"
"overflow from the xdp:xdp_cpumap_enqueue tracepoint (a NIC's receive ring).\n"
"Prints {\"type\":\"ready\"} once attached and one {\"type\":\"summary\"} line\n"
"with packets, bytes and capbench frames at SIGINT/SIGTERM.\n"
"The program is detached when this process exits.\n", CB_RX_RING_MAX);
	cb_caps_text(XDPCOUNT_CAPS, caps, sizeof(caps), 0);
	fprintf(out, "Needs %s, as root or granted (docs/capabilities.md).\n", caps);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "clone-to", required_argument, NULL, 't' },
		{ "ring", required_argument, NULL, 'r' },
		{ "ring-cpu", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *iface = NULL, *mode = "native", *clone_to = NULL;
	uint64_t ring = 0, ring_cpu = UINT64_MAX;
	__u32 ring_map_id = 0;
	struct cb_ring_counts ring_counts = { 0 };
	int targets[CB_TAP_MAX_TARGETS];
	unsigned int n_targets = 0;
	struct xdp_count_bpf *skel;
	struct sigaction sa = { .sa_handler = on_stop };
	struct cb_xdp_counts counts;
	char why[256];
	struct cb_json j;
	sigset_t block, waitmask;
	int c, ifindex, link_fd, err;

	cb_set_progname(argv[0]);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:m:t:r:c:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'i': iface = optarg; break;
		case 'm': mode = optarg; break;
		case 't': clone_to = optarg; break;
		case 'r':
			if (cb_parse_u64(optarg, &ring) || ring < 1 || ring > CB_RX_RING_MAX)
				cb_usage_error("bad --ring '%s': give the receive ring's depth in frames, 1 to %d",
					       optarg, CB_RX_RING_MAX);
			break;
		case 'c':
			if (cb_parse_u64(optarg, &ring_cpu) || ring_cpu >= 65536)
				cb_usage_error("bad --ring-cpu '%s': give a CPU number", optarg);
			break;
		case 'h': usage(stdout); return CB_EXIT_OK;
		case 'V': cb_print_version();
		default: cb_opt_fail(c, argv);
		}
	}
	if (!iface)
		cb_usage_error("no interface given: use --iface IF");
	if (strcmp(mode, "native") && strcmp(mode, "generic"))
		cb_usage_error("bad --mode '%s': use native or generic", mode);
	cb_require_caps(XDPCOUNT_CAPS, "attaching XDP");
	ifindex = cb_ifindex(iface);
	if (ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)", iface);
	if (clone_to)
		n_targets = parse_targets(clone_to, iface, targets);
	if (!ring != (ring_cpu == UINT64_MAX))
		cb_usage_error("--ring and --ring-cpu go together: the ring's depth and the CPU of its thread");
	if (ring && clone_to)
		cb_usage_error("--ring with --clone-to: a tap clones, it has no receive ring of its own");

	cb_libbpf_quiet();
	skel = xdp_count_bpf__open();
	if (!skel)
		cb_fatal("cannot open the XDP counter: %s", strerror(errno));
	if (ring) {
		skel->rodata->ring_cpu = (__u32)ring_cpu;
		bpf_map__set_max_entries(skel->maps.rx_ring, (__u32)ring_cpu + 1);
	} else {
		/* No cpumap, no tracepoint: nothing a plain count does not need. */
		bpf_map__set_autocreate(skel->maps.rx_ring, false);
		bpf_program__set_autoload(skel->progs.cb_to_ring, false);
		bpf_program__set_autoload(skel->progs.cb_deliver, false);
		bpf_program__set_autoload(skel->progs.cb_ring_enqueue, false);
		bpf_program__set_autoload(skel->progs.cb_ring_kthread, false);
	}
	if (xdp_count_bpf__load(skel))
		cb_fatal("cannot load the XDP counter: %s", strerror(errno));
	if (ring)
		ring_map_id = make_ring(skel, (__u32)ring_cpu, (__u32)ring);

	/* The devmap holds ifindexes of this process's namespace (the tap's). */
	for (unsigned int i = 0; i < n_targets; i++) {
		__u32 key = i, value = (__u32)targets[i];

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.clone_to), &key, &value, BPF_ANY))
			cb_fatal("cannot add interface %d to the tap: %s", targets[i], strerror(errno));
	}
	link_fd = cb_xdp_attach(bpf_program__fd(clone_to ? skel->progs.cb_tap
						: ring ? skel->progs.cb_to_ring : skel->progs.cb_count), iface, ifindex,
				!strcmp(mode, "generic") ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE,
				why, sizeof(why));
	if (link_fd < 0) {
		xdp_count_bpf__destroy(skel);
		cb_fatal("%s", why);
	}

	/* Block the stop signals and wait for them with sigsuspend, so one
	 * arriving between the check and the wait is not lost. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &waitmask);

	cb_json_begin(&j, "ready");
	cb_json_str(&j, "iface", iface);
	if (clone_to)
		cb_json_str(&j, "clone_to", clone_to);
	cb_json_str(&j, "mode", mode);
	if (ring) {
		/* The ring's kernel thread is "cpumap/<cpu>/map:<id>". */
		cb_json_u64(&j, "ring", ring);
		cb_json_u64(&j, "ring_cpu", ring_cpu);
		cb_json_u64(&j, "ring_map_id", ring_map_id);
	}
	cb_json_end(&j, stdout);

	while (!stop_requested)
		sigsuspend(&waitmask);

	err = cb_xdp_read_counts(bpf_map__fd(skel->maps.counts), &counts);
	if (!err && ring) {
		uint64_t v[sizeof(ring_counts) / sizeof(uint64_t)] = { 0 };

		err = cb_xdp_percpu_fold(bpf_map__fd(skel->maps.ring_counts), 0, v, sizeof(v), 0);
		ring_counts.enqueued = v[0];
		ring_counts.drops = v[1];
		ring_counts.kthread_drops = v[2];
	}
	close(link_fd); /* detaches the program */
	xdp_count_bpf__destroy(skel);
	if (err)
		cb_fatal("cannot read the XDP counters: %s", strerror(-err));

	cb_json_begin(&j, "summary");
	cb_json_str(&j, "iface", iface);
	if (clone_to)
		cb_json_str(&j, "clone_to", clone_to);
	cb_json_u64(&j, "packets", counts.packets);
	cb_json_u64(&j, "bytes", counts.bytes);
	cb_json_u64(&j, "capbench", counts.capbench);
	cb_json_u64(&j, "trailer", counts.trailer);
	if (ring) {
		cb_json_u64(&j, "ring", ring);
		cb_json_u64(&j, "ring_map_id", ring_map_id);
		cb_json_u64(&j, "ring_enqueued", ring_counts.enqueued);
		cb_json_u64(&j, "ring_drops", ring_counts.drops);
		cb_json_u64(&j, "ring_kthread_drops", ring_counts.kthread_drops);
	}
	cb_json_end(&j, stdout);
	return CB_EXIT_OK;
}
