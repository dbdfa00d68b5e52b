/* SPDX-License-Identifier: MIT */
/*
 * capbench-xdpcount: attach the pass-and-count XDP program (xdp_count.bpf.c)
 * to an interface, print "ready", and at SIGINT/SIGTERM print how many frames
 * (and capbench frames) reached the interface. With --clone-to it is the tap
 * of several sensors instead: the count-and-clone program sends every frame
 * to each interface of the list (cb_tap in xdp_count.bpf.c).
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

/* The verifier refuses the counter's packet accesses without CAP_PERFMON
 * (measured on 6.18). */
#define XDPCOUNT_CAPS (CB_CAP_NET_ADMIN | CB_CAP_BPF | CB_CAP_PERFMON)

static void usage(FILE *out)
{
	char caps[160];

	fprintf(out,
"Usage: capbench-xdpcount --iface IF [--mode native|generic] [--clone-to IF,IF,...]\n"
"       capbench-xdpcount --help | --version\n"
"\n"
"Count the frames that reach IF with an XDP program that passes them on;\n"
"with --clone-to, count them and send a copy of each to every interface of\n"
"the list instead (a tap: each target veth's peer must run an XDP program).\n"
"Prints {\"type\":\"ready\"} once attached and one {\"type\":\"summary\"} line\n"
"with packets, bytes and capbench frames at SIGINT/SIGTERM.\n"
"The program is detached when this process exits.\n");
	cb_caps_text(XDPCOUNT_CAPS, caps, sizeof(caps), 0);
	fprintf(out, "Needs %s, as root or granted (docs/capabilities.md).\n", caps);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "clone-to", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *iface = NULL, *mode = "native", *clone_to = NULL;
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
	while ((c = getopt_long(argc, argv, ":i:m:t:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'i': iface = optarg; break;
		case 'm': mode = optarg; break;
		case 't': clone_to = optarg; break;
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

	cb_libbpf_quiet();
	skel = xdp_count_bpf__open_and_load();
	if (!skel)
		cb_fatal("cannot load the XDP counter: %s", strerror(errno));

	/* The devmap holds ifindexes of this process's namespace (the tap's). */
	for (unsigned int i = 0; i < n_targets; i++) {
		__u32 key = i, value = (__u32)targets[i];

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.clone_to), &key, &value, BPF_ANY))
			cb_fatal("cannot add interface %d to the tap: %s", targets[i], strerror(errno));
	}
	link_fd = cb_xdp_attach(bpf_program__fd(clone_to ? skel->progs.cb_tap : skel->progs.cb_count), iface, ifindex,
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
	cb_json_end(&j, stdout);

	while (!stop_requested)
		sigsuspend(&waitmask);

	err = cb_xdp_read_counts(bpf_map__fd(skel->maps.counts), &counts);
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
	cb_json_end(&j, stdout);
	return CB_EXIT_OK;
}
